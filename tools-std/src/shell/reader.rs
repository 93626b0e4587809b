//! A command's output read into its capture apart from the task that waits for the command,
//! until the output ends or the reading is stopped.
//!
//! A command printing fast is read once per piece of a few KiB, hundreds of thousands of times
//! for a GiB. Read in the task that also waits for the command's exit, its timers and its
//! cancellation, each piece would wake all of those. A local pipe is read on a thread of its own
//! with plain reads, as `cat` reads it (a wake-up through the runtime's reactor per piece costs
//! more than the piece's own work); other output, a terminal's, by a task of its own.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};

use rustix::event::{PollFd, PollFlags};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::shell::capture::Capture;
use crate::shell::process::ShellOutput;

/// The reading of one command's output.
///
/// Dropped, it stops after the piece it is taking in, and the output and capture go with it.
pub(crate) struct Reader {
    stop: Stop,
    reading: oneshot::Receiver<Read>,
    /// What the reading handed back, once it ended.
    read: Option<Result<Read, oneshot::error::RecvError>>,
}

/// What a reading hands back.
pub(crate) struct Read {
    pub(crate) output: ShellOutput,
    pub(crate) capture: Capture,
    /// The output ended (or could no longer be read), rather than the reading being stopped.
    pub(crate) ended: bool,
}

/// Tells a reading to stop, when dropped: it stops between pieces, never in the middle of one.
enum Stop {
    Task(Option<oneshot::Sender<()>>),
    Thread {
        /// Checked before each read: a pipe that always holds more never makes the thread wait.
        stopped: Arc<AtomicBool>,
        /// Closed to wake the thread where it waits for output.
        wake: Option<io::PipeWriter>,
    },
}

impl Drop for Stop {
    fn drop(&mut self) {
        self.signal();
    }
}

impl Stop {
    fn signal(&mut self) {
        match self {
            Stop::Task(sender) => drop(sender.take()),
            Stop::Thread { stopped, wake } => {
                stopped.store(true, Ordering::Release);
                drop(wake.take());
            }
        }
    }
}

impl Reader {
    /// Starts reading `output` into `capture`; `seen` is shown each piece of text taken in.
    /// Must be called within a Tokio runtime. Fails if a pipe's thread cannot be started.
    pub(crate) fn start(
        output: ShellOutput,
        capture: Capture,
        seen: impl FnMut(&str) + Send + 'static,
    ) -> io::Result<Reader> {
        let (done, reading) = oneshot::channel();
        let stop = match output.into_pipe() {
            Ok(pipe) => on_thread(pipe, capture, seen, done)?,
            Err(output) => on_task(output, capture, seen, done),
        };
        Ok(Reader { stop, reading, read: None })
    }

    /// Waits until the output ended. Cancel-safe.
    pub(crate) async fn ended(&mut self) {
        if self.read.is_none() {
            self.read = Some((&mut self.reading).await);
        }
    }

    /// Stops the reading after the piece it is taking in, and hands back the output and the
    /// capture. Fails only if the reading failed (a panic).
    pub(crate) async fn stop(mut self) -> io::Result<Read> {
        self.stop.signal();
        let read = match self.read.take() {
            Some(read) => read,
            None => (&mut self.reading).await,
        };
        read.map_err(|_| io::Error::other("the reading of the output failed"))
    }
}

fn on_task(
    mut output: ShellOutput,
    mut capture: Capture,
    mut seen: impl FnMut(&str) + Send + 'static,
    done: oneshot::Sender<Read>,
) -> Stop {
    let (stop, mut stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let ended = loop {
            tokio::select! {
                biased;
                _ = &mut stopped => break false,
                read = capture.read_from(&mut output) => match read {
                    Ok(0) | Err(_) => break true,
                    Ok(_) => capture.added(&mut seen).await,
                },
            }
        };
        let _ = done.send(Read { output, capture, ended });
    });
    Stop::Task(Some(stop))
}

fn on_thread(
    pipe: OwnedFd,
    capture: Capture,
    seen: impl FnMut(&str) + Send + 'static,
    done: oneshot::Sender<Read>,
) -> io::Result<Stop> {
    let handle = Handle::current();
    // Read without blocking: the thread waits in `poll`, where the stop reaches it.
    let flags = rustix::fs::fcntl_getfl(&pipe)?;
    rustix::fs::fcntl_setfl(&pipe, flags | rustix::fs::OFlags::NONBLOCK)?;
    let (waiting, wake) = io::pipe()?;
    let stopped = Arc::new(AtomicBool::new(false));
    let stop = Stop::Thread { stopped: stopped.clone(), wake: Some(wake) };
    std::thread::Builder::new().name("command output".to_owned()).spawn(move || {
        let (pipe, capture, ended) = read_pipe(pipe, capture, seen, &stopped, &waiting, &handle);
        let _ = done.send(Read { output: ShellOutput::pipe(pipe), capture, ended });
    })?;
    Ok(stop)
}

/// The thread's loop: read what the pipe holds, take it in, wait for more (or to be stopped).
fn read_pipe(
    pipe: OwnedFd,
    mut capture: Capture,
    mut seen: impl FnMut(&str),
    stopped: &AtomicBool,
    waiting: &io::PipeReader,
    handle: &Handle,
) -> (OwnedFd, Capture, bool) {
    // Anything the capture hands to the runtime (its store's writer) finds it.
    let _runtime = handle.enter();
    let ended = loop {
        if stopped.load(Ordering::Acquire) {
            break false;
        }
        match capture.read_fd(pipe.as_fd()) {
            Ok((0, _)) => break true,
            Ok((read, room)) => {
                block_on(handle, capture.added(&mut seen));
                if read == room {
                    // More may be waiting.
                    continue;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => break true,
        }
        // Waits for output, its end, or the stop: read right away, the pipe's pages are reused
        // as they are written, as they are for `cat`.
        let mut fds = [PollFd::new(&pipe, PollFlags::IN), PollFd::new(waiting, PollFlags::IN)];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) if !fds[1].revents().is_empty() => break false,
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => break true,
        }
    };
    (pipe, capture, ended)
}

/// Runs `work` to its end on this thread: at once when it need not wait (the common case),
/// else blocking on the runtime's handle.
fn block_on<F: Future>(handle: &Handle, work: F) -> F::Output {
    let mut work = pin!(work);
    match work.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => handle.block_on(work),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::Duration;

    use tokio::io::AsyncReadExt;
    use tool_runtime::truncate::TruncationLimits;

    use super::*;

    fn capture() -> Capture {
        Capture::new(None, TruncationLimits::new(usize::MAX, usize::MAX, Default::default()), false)
    }

    /// The read end as a command's output, and the write end.
    fn pipe() -> (ShellOutput, io::PipeWriter) {
        let (read, write) = io::pipe().unwrap();
        (ShellOutput::pipe(OwnedFd::from(read)), write)
    }

    /// A `seen` that tells of each piece taken in.
    fn taken_in() -> (impl FnMut(&str) + Send + 'static, std::sync::mpsc::Receiver<()>) {
        let (tell, told) = std::sync::mpsc::channel();
        (
            move |_: &str| {
                let _ = tell.send(());
            },
            told,
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pipe_is_read_on_its_thread_to_its_end_whole_and_in_order() {
        let (output, mut write) = pipe();
        let seen = Arc::new(std::sync::Mutex::new(String::new()));
        let mut reader = {
            let seen = seen.clone();
            Reader::start(output, capture(), move |text| seen.lock().unwrap().push_str(text)).unwrap()
        };
        assert!(matches!(reader.stop, Stop::Thread { .. }));
        // Pieces of every size, characters cut between them, and a pause the thread waits through.
        let text: String = (0..20_000).map(|n| format!("line {n} é ✓\n")).collect();
        let writer = std::thread::spawn(move || {
            let bytes = text.as_bytes();
            let mut at = 0;
            for size in [1, 2, 3, 4095, 4097, 65_536, 300_000].into_iter().cycle() {
                if at == bytes.len() {
                    break;
                }
                let end = (at + size).min(bytes.len());
                write.write_all(&bytes[at..end]).unwrap();
                at = end;
                if size == 3 {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            text
        });
        reader.ended().await;
        let text = writer.join().unwrap();
        let read = reader.stop().await.unwrap();
        assert!(read.ended);
        assert_eq!(read.capture.finish().await.0, text);
        assert_eq!(*seen.lock().unwrap(), text);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stopped_while_waiting_it_hands_back_the_pipe_to_read_on() {
        let (output, mut write) = pipe();
        let (seen, taken) = taken_in();
        let reader = Reader::start(output, capture(), seen).unwrap();
        write.write_all(b"before\n").unwrap();
        // The thread takes it in, then waits for more.
        taken.recv_timeout(Duration::from_secs(10)).unwrap();
        let read = tokio::time::timeout(Duration::from_secs(10), reader.stop()).await.unwrap().unwrap();
        assert!(!read.ended);
        let Read { mut output, capture, .. } = read;
        write.write_all(b"after\n").unwrap();
        drop(write);
        let mut rest = String::new();
        output.read_to_string(&mut rest).await.unwrap();
        assert_eq!(rest, "after\n");
        assert_eq!(capture.finish().await.0, "before\n");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_flood_is_stopped_and_a_dropped_reader_closes_the_pipe() {
        let (output, mut write) = pipe();
        let (seen, taken) = taken_in();
        let reader = Reader::start(output, capture(), seen).unwrap();
        // Writes until the read end is closed: the thread never waits for output.
        let writer = std::thread::spawn(move || {
            let block = vec![b'y'; 64 * 1024];
            let mut written = 0usize;
            loop {
                match write.write(&block) {
                    Ok(n) => written += n,
                    Err(e) => return (e.kind(), written),
                }
            }
        });
        taken.recv_timeout(Duration::from_secs(10)).unwrap();
        let read = tokio::time::timeout(Duration::from_secs(10), reader.stop()).await.unwrap().unwrap();
        assert!(!read.ended);
        let taken = read.capture.total_bytes();
        assert!(taken > 0);
        // Dropped with the pipe's read end: the writer learns the pipe is closed.
        drop(read.output);
        let (error, written) = writer.join().unwrap();
        assert_eq!(error, io::ErrorKind::BrokenPipe);
        assert!(written >= taken);

        // Dropped while reading: the thread stops and closes the pipe too.
        let (output, mut write) = pipe();
        let reader = Reader::start(output, capture(), |_| {}).unwrap();
        write.write_all(b"x").unwrap();
        drop(reader);
        let closed = tokio::task::spawn_blocking(move || {
            loop {
                match write.write_all(b"x") {
                    Ok(()) => std::thread::sleep(Duration::from_millis(1)),
                    Err(e) => return e.kind(),
                }
            }
        });
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(10), closed).await.unwrap().unwrap(),
            io::ErrorKind::BrokenPipe
        );
    }

    #[tokio::test]
    async fn other_output_is_read_by_a_task() {
        let mut reader = Reader::start(ShellOutput::new(&b"streamed\n"[..]), capture(), |_| {}).unwrap();
        assert!(matches!(reader.stop, Stop::Task(_)));
        reader.ended().await;
        let read = reader.stop().await.unwrap();
        assert!(read.ended);
        assert_eq!(read.capture.finish().await.0, "streamed\n");
    }
}
