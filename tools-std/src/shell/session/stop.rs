//! Ending a session: signals, `bash_stop`, the end of a call that waited for it, and its exit
//! recorded.

use std::time::Duration;

use tool_runtime::{CancellationToken, ToolError, ToolOutput};

use crate::shell::process::{KillReport, ShellExit};

use super::{End, Ended, FINISH_DRAIN, FINISH_STOP_GRACE, Session, Sessions, far_future};

impl Session {
    /// Sends `signal` to the command's process group.
    pub(crate) fn signal(&self, signal: i32) -> Result<(), ToolError> {
        let Some(handle) = &self.handle else {
            return Err(ToolError::execution("Signals cannot be sent to commands run by these operations."));
        };
        handle
            .signal_group(signal)
            .map_err(|e| ToolError::execution(format!("Could not signal session {}: {e}", self.id)))
    }

    /// Stops the command: `SIGTERM` to its process group, then, after `grace` (or at once if it
    /// is gone by then), `SIGKILL` to every process it started that is still there.
    pub(crate) async fn stop(&self, grace: Duration) -> Option<Result<KillReport, String>> {
        let mut changes = self.changes.subscribe();
        let already_ended = {
            let mut state = self.state();
            state.stop_requested = true;
            state.ended.is_some()
        };
        if !already_ended {
            if let Some(handle) = &self.handle {
                let _ = handle.signal_group(nix_signal::SIGTERM);
            }
            let deadline = tokio::time::Instant::now() + grace;
            while self.is_running() {
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { break },
                    () = tokio::time::sleep_until(deadline) => break,
                }
            }
        }
        let killed = self.handle.as_ref().map(|h| h.kill_all().map_err(|e| e.to_string()));
        {
            let mut state = self.state();
            let after = self.started.elapsed();
            match &mut state.ended {
                Some(ended) => {
                    if ended.killed.is_none() {
                        ended.killed = killed.clone();
                    }
                }
                None => {
                    state.ended = Some(Ended {
                        how: End::Stopped,
                        stopped_by: state.stopped_by,
                        after,
                        exit: None,
                        killed: killed.clone(),
                    })
                }
            }
        }
        // What the killed processes wrote last, and their exit, arrive shortly.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while !self.is_over() {
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { break },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        self.changed();
        killed
    }

    /// Waits for the command to end and renders everything no read took, as the final result of
    /// a call whose rest its caller took over ([`tool_runtime::handoff`]). Processes the command
    /// left behind get [`FINISH_DRAIN`] more to close its output (the result then says they still
    /// run). When `cancel` fires first, the command is stopped as `bash_stop` stops it, with every
    /// process it started.
    pub(crate) async fn finish(&self, sessions: &Sessions, cancel: &CancellationToken) -> ToolOutput {
        let mut changes = self.changes.subscribe();
        let mut drain_until = None;
        while !self.is_over() {
            if drain_until.is_none() && !self.is_running() {
                drain_until = Some(tokio::time::Instant::now() + FINISH_DRAIN);
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { break },
                () = tokio::time::sleep_until(drain_until.unwrap_or_else(far_future)), if drain_until.is_some() => break,
                () = cancel.cancelled() => {
                    self.state().stopped_by = Some("because the task was cancelled");
                    self.stop(FINISH_STOP_GRACE).await;
                    break;
                }
            }
        }
        self.render(sessions).await
    }

    /// Kills everything at once, for a dropped session state.
    pub(super) fn shut_down(&self) {
        if let Some(handle) = &self.handle {
            let _ = handle.kill_all();
        }
        if let Some(feeder) = &self.input {
            feeder.task.abort();
        }
        if let Some(pump) = self.pump.lock().unwrap_or_else(|p| p.into_inner()).take() {
            pump.abort();
        }
    }

    pub(super) fn record_exit(&self, exit: Result<ShellExit, String>) {
        let mut state = self.state();
        let after = self.started.elapsed();
        let (exit, lost) = match exit {
            Ok(exit) => (Some(exit), None),
            Err(error) => (None, Some(error)),
        };
        match &mut state.ended {
            Some(ended) => {
                if ended.exit.is_none() {
                    ended.exit = exit;
                }
            }
            None => {
                let how = match lost {
                    Some(error) => End::Lost(error),
                    None if state.stop_requested => End::Stopped,
                    None => End::Exited,
                };
                state.ended = Some(Ended { how, stopped_by: state.stopped_by, after, exit, killed: None });
            }
        }
        drop(state);
        self.changed();
    }
}

mod nix_signal {
    //! Signal numbers, without naming `nix` outside Unix.
    pub(super) const SIGTERM: i32 = 15;
}
