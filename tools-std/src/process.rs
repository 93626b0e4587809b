//! Local shell processes: `bash -c` in its own process group, output on one pipe, killed as a group.

use std::io;

use crate::ops::{ShellProcess, ShellRequest};

#[cfg(unix)]
pub(crate) fn spawn_local(request: &ShellRequest) -> io::Result<ShellProcess> {
    use std::os::fd::OwnedFd;
    use std::process::Stdio;

    // One pipe for both streams keeps them interleaved exactly as the command wrote them.
    let (reader, writer) = io::pipe()?;
    let mut command = tokio::process::Command::new("bash");
    command
        .arg("-c")
        .arg(&request.command)
        .current_dir(&request.cwd)
        .envs(request.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0)
        .kill_on_drop(false);
    let child = command.spawn()?;
    // The command holds the parent's copies of the write end: drop them so the pipe reaches
    // end-of-file once every process that inherited it is gone.
    drop(command);
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    let receiver = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    Ok(ShellProcess {
        output: Box::pin(receiver),
        control: Box::new(unix::LocalControl { child, pgid, exited: false }),
    })
}

#[cfg(not(unix))]
pub(crate) fn spawn_local(_request: &ShellRequest) -> io::Result<ShellProcess> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "running commands is only supported on Unix"))
}

#[cfg(unix)]
mod unix {
    use std::io;
    use std::os::unix::process::ExitStatusExt;

    use nix::errno::Errno;
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    use tool_runtime::BoxFuture;

    use crate::ops::{ShellControl, ShellExit};

    pub(super) struct LocalControl {
        pub(super) child: tokio::process::Child,
        /// The shell's pid, which is also its process group's id (`process_group(0)`).
        pub(super) pgid: Option<i32>,
        /// Set once the shell was reaped; from then on its pid may be reused, so the group is
        /// only signalled while the shell is known to exist (as a zombie at least).
        pub(super) exited: bool,
    }

    impl ShellControl for LocalControl {
        fn wait(&mut self) -> BoxFuture<'_, io::Result<ShellExit>> {
            Box::pin(async move {
                let status = self.child.wait().await?;
                self.exited = true;
                Ok(ShellExit { code: status.code(), signal: status.signal() })
            })
        }

        fn kill_all(&mut self) -> io::Result<()> {
            if self.exited {
                return Ok(());
            }
            if let Some(pgid) = self.pgid {
                match killpg(Pid::from_raw(pgid), Signal::SIGKILL) {
                    Ok(()) | Err(Errno::ESRCH) => {}
                    Err(e) => return Err(io::Error::from(e)),
                }
            }
            match self.child.start_kill() {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::InvalidInput => Ok(()),
                Err(e) => Err(e),
            }
        }
    }

    impl Drop for LocalControl {
        fn drop(&mut self) {
            // A call abandoned midway (its future dropped by a timeout or cancellation) must not
            // leave the command running.
            let _ = self.kill_all();
        }
    }
}
