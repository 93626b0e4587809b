//! The signals that ask the `tools` command to stop: SIGINT (Ctrl-C), SIGTERM and SIGHUP.

use std::io;

/// The stop signals, caught from the moment this is registered: from then on they no longer end
/// the process at once (their default action), so it can stop its commands first.
pub(crate) struct Termination {
    #[cfg(unix)]
    signals: [tokio::signal::unix::Signal; 3],
}

impl Termination {
    /// Catches the stop signals; must be called inside the runtime.
    pub(crate) fn register() -> io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Termination {
                signals: [
                    signal(SignalKind::interrupt())?,
                    signal(SignalKind::terminate())?,
                    signal(SignalKind::hangup())?,
                ],
            })
        }
        #[cfg(not(unix))]
        Ok(Termination {})
    }

    /// Waits for the first stop signal.
    pub(crate) async fn received(&mut self) {
        #[cfg(unix)]
        {
            let [interrupt, terminate, hangup] = &mut self.signals;
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
                _ = hangup.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
