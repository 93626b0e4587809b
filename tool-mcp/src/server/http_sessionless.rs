//! The one server state of the HTTP requests of revision 2026-07-28 on, which has no sessions:
//! made with the first such request, shared by every later one (all of them passed the same
//! token check), and ended, as an idle session is, once no request has used it for the session
//! idle time limit: its background commands are killed, its tasks and todo list dropped.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::McpServer;

/// The state, when there is one.
pub(crate) struct Sessionless {
    slot: Arc<Mutex<Option<Shared>>>,
    idle: Duration,
    shutdown: CancellationToken,
}

struct Shared {
    server: McpServer,
    /// Held by every request whose answer is still streaming: a state in use is not idle.
    in_use: Arc<()>,
    /// When a request last took part.
    last: Instant,
    /// Tells this state from one made after it.
    made: u64,
}

impl Sessionless {
    pub(crate) fn new(idle: Duration, shutdown: CancellationToken) -> Self {
        Sessionless { slot: Arc::default(), idle, shutdown }
    }

    /// The state for one request (made with `make` if there is none), and the mark that it is
    /// in use, to hold for as long as the request's answer streams.
    pub(crate) fn take_part(&self, make: impl FnOnce() -> McpServer) -> (McpServer, Arc<()>) {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        let shared = match slot.as_mut() {
            Some(shared) => shared,
            None => {
                use std::sync::atomic::{AtomicU64, Ordering};
                static MADE: AtomicU64 = AtomicU64::new(0);
                let made = MADE.fetch_add(1, Ordering::Relaxed);
                self.watch(made);
                slot.insert(Shared { server: make(), in_use: Arc::new(()), last: Instant::now(), made })
            }
        };
        shared.last = Instant::now();
        (shared.server.clone(), shared.in_use.clone())
    }

    /// Ends the state `made` once it is idle (or at shutdown, with the server).
    fn watch(&self, made: u64) {
        let (slot, idle, shutdown) = (Arc::downgrade(&self.slot), self.idle, self.shutdown.clone());
        let every = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(5));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(every) => {}
                }
                let Some(slot) = slot.upgrade() else { return };
                let ended = {
                    let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
                    match slot.as_ref() {
                        Some(shared) if shared.made == made => {
                            let idle_now =
                                Arc::strong_count(&shared.in_use) == 1 && shared.last.elapsed() >= idle;
                            if !idle_now {
                                continue;
                            }
                            slot.take()
                        }
                        _ => return,
                    }
                };
                // Dropped outside the lock: ending the state kills its commands.
                drop(ended);
                return;
            }
        });
    }
}
