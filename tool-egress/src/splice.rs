//! A tunnel between two TCP sockets through a pipe with `splice(2)`: the kernel moves its own
//! pages from one socket to the other, and no byte is copied through the proxy's memory.
//!
//! Writing into a socket whose peer has gone raises `SIGPIPE` (`splice` has no `MSG_NOSIGNAL`);
//! Rust programs ignore that signal from the start, and the write fails with `EPIPE` instead.

use std::io;
use std::os::fd::OwnedFd;

use rustix::pipe::{PipeFlags, SpliceFlags};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// How much one direction holds in flight: the pipe's size, which bounds each `splice` call.
/// 1 MiB is Linux's default ceiling for an unprivileged process (`/proc/sys/fs/pipe-max-size`);
/// where it is lower, the pipe keeps the size it gets.
const PIPE_SIZE: usize = 1024 * 1024;

/// One pipe per direction.
pub(crate) struct Pipes {
    up: Pipe,
    down: Pipe,
}

struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    size: usize,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let (read, write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        // A larger pipe moves more per call; a smaller one still works.
        let size = rustix::pipe::fcntl_setpipe_size(&write, PIPE_SIZE)
            .or_else(|_| rustix::pipe::fcntl_getpipe_size(&write))?;
        Ok(Pipe { read, write, size })
    }
}

impl Pipes {
    /// Makes the two pipes; an error (out of file descriptors) leaves the caller to copy.
    pub(crate) fn new() -> io::Result<Pipes> {
        Ok(Pipes { up: Pipe::new()?, down: Pipe::new()? })
    }

    /// Moves bytes both ways until both directions have ended, passing each end on as a
    /// half-close, or until either fails.
    pub(crate) async fn relay(self, client: &TcpStream, upstream: &TcpStream) -> io::Result<()> {
        tokio::try_join!(one_way(client, upstream, &self.up), one_way(upstream, client, &self.down))?;
        Ok(())
    }
}

/// Moves bytes from `from` to `to` until `from` ends, then shuts `to` for writing.
async fn one_way(from: &TcpStream, to: &TcpStream, pipe: &Pipe) -> io::Result<()> {
    let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
    loop {
        // The pipe is empty here, so a "would block" can only be the socket's.
        let filled = from
            .async_io(Interest::READABLE, || {
                Ok(rustix::pipe::splice(from, None, &pipe.write, None, pipe.size, flags)?)
            })
            .await?;
        if filled == 0 {
            // The peer may already be gone: then there is nobody to tell.
            let _ = rustix::net::shutdown(to, rustix::net::Shutdown::Write);
            return Ok(());
        }
        let mut left = filled;
        while left > 0 {
            // The pipe holds `left` bytes, so a "would block" can only be the socket's.
            let moved = to
                .async_io(Interest::WRITABLE, || {
                    Ok(rustix::pipe::splice(&pipe.read, None, to, None, left, flags)?)
                })
                .await?;
            if moved == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            left -= moved;
        }
    }
}
