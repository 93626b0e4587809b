//! A script's progress as its calls see it, and the scripts still running after the call that
//! started them yielded: held by id, per session, for `code_output` and `code_stop`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tool_core::CancellationToken;

use crate::engine::{Finished, StopFlag};
use crate::limits::Stop;

/// How many scripts one session may leave running (or ended and not read yet).
pub(crate) const PER_SESSION: usize = 4;
/// How many still running all sessions together may leave (each has a thread).
pub(crate) const TOTAL: usize = 32;
/// How long the end of a script nobody read is kept: a session that never reads it (the model
/// forgot it, the client went away) would otherwise keep its place among the [`TOTAL`] for as
/// long as the server runs.
pub(crate) const UNREAD_END_KEPT: Duration = Duration::from_secs(10 * 60);

/// One script's progress: what it printed, how much of that the model has read, and how it
/// ended. Shared by the task that drives the script and the calls that read it.
#[derive(Debug)]
pub(crate) struct Running {
    progress: Mutex<Progress>,
    changed: watch::Sender<u64>,
    /// Stops the script (and its calls).
    pub(crate) stop: CancellationToken,
    /// What the script's thread reads to know it is stopped, and why.
    pub(crate) flag: Arc<StopFlag>,
    /// When it started.
    pub(crate) started: Instant,
    /// When its wall time runs out.
    pub(crate) deadline: Instant,
}

#[derive(Debug, Default)]
struct Progress {
    printed: String,
    /// How much of `printed` a call has returned.
    delivered: usize,
    /// What hooks and checks said to the model about the script's calls, not yet returned: one
    /// line each, at most [`NOTICES_KEPT`] bytes, then how many more there were.
    notices: String,
    notices_left_out: u64,
    end: Option<End>,
}

/// How much of what hooks and checks said about a script's calls is kept between two reads.
const NOTICES_KEPT: usize = 64 * 1024;

/// How a script ended.
#[derive(Debug)]
pub(crate) struct End {
    pub(crate) finished: Finished,
    pub(crate) stop: Option<Stop>,
    /// When it ended.
    at: Instant,
}

/// What a wait for a script gave.
#[derive(Debug)]
pub(crate) enum Waited {
    /// It ended: its output the model has not read (then its final value), and how it ended.
    Ended { unread: String, error: Option<String>, calls: u64, stop: Option<Stop> },
    /// It runs on: what it printed since the last read.
    Running { unread: String },
}

/// What a wait does when the call that waits is cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnCancel {
    /// Stops the script, and waits for its end (the call that started it, before it yielded).
    StopScript,
    /// Returns what the script printed so far; it runs on (a call that only reads it).
    Return,
}

impl Running {
    /// A script that starts now and may run for `wall_time`.
    pub(crate) fn new(wall_time: std::time::Duration) -> Running {
        let started = Instant::now();
        Running {
            progress: Mutex::default(),
            changed: watch::Sender::new(0),
            stop: CancellationToken::new(),
            flag: Arc::default(),
            started,
            deadline: started + wall_time,
        }
    }

    fn progress(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The script printed `text`.
    pub(crate) fn print(&self, text: &str) {
        self.progress().printed.push_str(text);
        self.changed.send_modify(|n| *n += 1);
    }

    /// A hook or a check said `notice` to the model about the script's call `call_id` of
    /// `tool` ([`tool_core::ToolOutput::with_notice`]): the model reads it with the script's
    /// output, whatever the script does with the call's result.
    pub(crate) fn notice(&self, tool: &str, call_id: &str, notice: &str) {
        let line = format!("- `{tool}` ({call_id}): {}\n", notice.trim_end());
        let mut progress = self.progress();
        if progress.notices.len() + line.len() <= NOTICES_KEPT {
            progress.notices.push_str(&line);
        } else {
            progress.notices_left_out += 1;
        }
    }

    /// The notices not returned yet, as a paragraph after `unread` (empty when there are none).
    fn with_notices(progress: &mut Progress, mut unread: String) -> String {
        if progress.notices.is_empty() && progress.notices_left_out == 0 {
            return unread;
        }
        if !unread.is_empty() && !unread.ends_with('\n') {
            unread.push('\n');
        }
        unread.push_str(
            "[What hooks and checks said about the script's calls, which the script did not print:]\n",
        );
        unread.push_str(&std::mem::take(&mut progress.notices));
        let left_out = std::mem::take(&mut progress.notices_left_out);
        if left_out > 0 {
            unread.push_str(&format!("- and {left_out} more, left out\n"));
        }
        unread
    }

    /// What it printed so far.
    pub(crate) fn printed(&self) -> String {
        self.progress().printed.clone()
    }

    /// The script ended.
    pub(crate) fn end(&self, finished: Finished, stop: Option<Stop>) {
        self.progress().end = Some(End { finished, stop, at: Instant::now() });
        self.changed.send_modify(|n| *n += 1);
    }

    /// Stops the script for a host that drops it (the future of the call that waits for it,
    /// the tool that holds it), perhaps with its runtime shutting down: the script's thread is
    /// told before its calls are cancelled, so that it drops them rather than poll them again
    /// (a runtime that is shutting down may not be polled), as a dropped future drops what it
    /// runs.
    pub(crate) fn abandon(&self) {
        if !self.ended() {
            self.flag.host_gone();
        }
        self.stop.cancel();
    }

    /// Whether the script ended.
    pub(crate) fn ended(&self) -> bool {
        self.progress().end.is_some()
    }

    /// Whether the script ended more than `long` ago.
    fn ended_before(&self, now: Instant, long: Duration) -> bool {
        self.progress().end.as_ref().is_some_and(|end| now.saturating_duration_since(end.at) > long)
    }

    /// Waits until the script ends, or `until` passes (then it runs on), or `cancel` fires.
    pub(crate) async fn wait(
        &self,
        until: Option<Instant>,
        cancel: &CancellationToken,
        on_cancel: OnCancel,
    ) -> Waited {
        let mut changed = self.changed.subscribe();
        let yielding = tokio::time::sleep_until(until.unwrap_or(self.deadline).into());
        tokio::pin!(yielding);
        let mut cancelled = false;
        loop {
            if let Some(ended) = self.take_end() {
                return ended;
            }
            tokio::select! {
                biased;
                _ = changed.changed() => {}
                () = cancel.cancelled(), if !cancelled => {
                    cancelled = true;
                    match on_cancel {
                        OnCancel::StopScript => self.stop.cancel(),
                        OnCancel::Return => return self.take_running(),
                    }
                }
                () = &mut yielding, if until.is_some() => return self.take_running(),
            }
        }
    }

    fn take_end(&self) -> Option<Waited> {
        let mut progress = self.progress();
        let delivered = progress.delivered;
        let end = progress.end.as_mut()?;
        // What it printed is the start of its whole output, which ends with its final value.
        let output = std::mem::take(&mut end.finished.output);
        let unread = output.get(delivered..).unwrap_or_default().to_owned();
        progress.delivered = progress.printed.len();
        let unread = Self::with_notices(&mut progress, unread);
        let end = progress.end.as_ref()?;
        Some(Waited::Ended {
            unread,
            error: end.finished.error.clone(),
            calls: end.finished.calls,
            stop: end.stop,
        })
    }

    fn take_running(&self) -> Waited {
        let mut progress = self.progress();
        let unread = progress.printed[progress.delivered..].to_owned();
        progress.delivered = progress.printed.len();
        Waited::Running { unread: Self::with_notices(&mut progress, unread) }
    }
}

/// The scripts left running by calls that yielded, by id and session.
#[derive(Debug, Default)]
pub(crate) struct Held {
    scripts: Mutex<Vec<Entry>>,
    next: AtomicU64,
}

#[derive(Debug)]
struct Entry {
    id: String,
    session: String,
    running: Arc<Running>,
}

impl Held {
    fn scripts(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.scripts.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The scripts held, those whose end nobody read for long forgotten.
    fn kept(&self) -> MutexGuard<'_, Vec<Entry>> {
        let mut scripts = self.scripts();
        let now = Instant::now();
        scripts.retain(|entry| !entry.running.ended_before(now, UNREAD_END_KEPT));
        scripts
    }

    /// Whether `session` may leave one more script running; if not, why, in words that say what
    /// to do (`tool`: the script tool's name). Other sessions' scripts do not count: when all
    /// sessions together hold as many running scripts as they may, a script runs anyway, and its
    /// call waits for its end rather than returning at its yield time ([`Held::hold`]).
    pub(crate) fn room(&self, session: &str, tool: &str) -> Result<(), String> {
        let scripts = self.kept();
        let mine: Vec<&str> =
            scripts.iter().filter(|entry| entry.session == session).map(|entry| entry.id.as_str()).collect();
        if mine.len() >= PER_SESSION {
            return Err(format!(
                "This session already has {PER_SESSION} scripts left running or with an end not read yet ({}), \
                 the most it may: read their ends with {tool}_output or stop one with {tool}_stop, then run \
                 this script.",
                mine.iter().map(|id| format!("`{id}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        Ok(())
    }

    /// Holds `running` for `session` under a new id; `None` when the session holds as many as
    /// it may, or all sessions together hold [`TOTAL`] scripts still running (those that ended,
    /// which have no thread, count only against their session's).
    pub(crate) fn hold(&self, session: &str, running: Arc<Running>) -> Option<String> {
        let mut scripts = self.kept();
        let mine = scripts.iter().filter(|entry| entry.session == session).count();
        let running_now = scripts.iter().filter(|entry| !entry.running.ended()).count();
        if mine >= PER_SESSION || running_now >= TOTAL {
            return None;
        }
        // Numbered, and not guessable: clients that share a session state (sessionless HTTP)
        // cannot read or stop each other's scripts by counting.
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let secret = getrandom::u64().unwrap_or_else(|_| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.map_or(0, |d| d.as_nanos() as u64) ^ n.rotate_left(32)
        });
        let id = format!("script-{n}-{secret:016x}");
        scripts.push(Entry { id: id.clone(), session: session.to_owned(), running });
        Some(id)
    }

    /// The script `id` of `session`.
    pub(crate) fn get(&self, session: &str, id: &str) -> Option<Arc<Running>> {
        let scripts = self.scripts();
        let entry = scripts.iter().find(|entry| entry.session == session && entry.id == id)?;
        Some(entry.running.clone())
    }

    /// Forgets the script `id` of `session` (it ended and its end was read).
    pub(crate) fn release(&self, session: &str, id: &str) {
        self.scripts().retain(|entry| !(entry.session == session && entry.id == id));
    }

    /// The ids `session` holds.
    pub(crate) fn ids(&self, session: &str) -> Vec<String> {
        self.scripts().iter().filter(|entry| entry.session == session).map(|entry| entry.id.clone()).collect()
    }

    /// Stops and forgets the scripts of `session`, which ended.
    fn end_session(&self, session: &str) {
        self.scripts().retain(|entry| {
            let theirs = entry.session == session;
            if theirs {
                entry.running.stop.cancel();
            }
            !theirs
        });
    }
}

/// Kept in a session's state: when the host clears it (the session ended: an HTTP client
/// deleted it, it stayed idle too long), the scripts the session left running are stopped, as
/// its background commands are, and give their places up.
pub(crate) struct SessionScripts {
    session: String,
    held: Mutex<Vec<Weak<Held>>>,
}

impl SessionScripts {
    pub(crate) fn new(session: &str) -> Self {
        SessionScripts { session: session.to_owned(), held: Mutex::default() }
    }

    /// Ends the session's scripts in `held` too when the session ends.
    pub(crate) fn watch(&self, held: &Arc<Held>) {
        let mut watched = self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !watched.iter().any(|known| std::ptr::eq(known.as_ptr(), Arc::as_ptr(held))) {
            watched.push(Arc::downgrade(held));
        }
    }
}

impl Drop for SessionScripts {
    fn drop(&mut self) {
        let watched = self.held.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        for held in watched.iter().filter_map(Weak::upgrade) {
            held.end_session(&self.session);
        }
    }
}

impl Drop for Held {
    /// The scripts still held are stopped with the tool.
    fn drop(&mut self) {
        for entry in self.scripts().iter() {
            entry.running.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A script that ended now.
    fn ended() -> Arc<Running> {
        let running = Running::new(Duration::from_secs(60));
        running.end(Finished::default(), None);
        Arc::new(running)
    }

    /// A script still running.
    fn running() -> Arc<Running> {
        Arc::new(Running::new(Duration::from_secs(60)))
    }

    #[test]
    fn an_end_nobody_read_gives_its_place_up_after_a_while() {
        let held = Held::default();
        for _ in 0..PER_SESSION {
            assert!(held.hold("s0", ended()).is_some());
        }
        assert!(held.hold("s0", running()).is_none(), "past the session's bound");
        assert!(held.room("s0", "code").unwrap_err().starts_with("This session already has 4 scripts"));
        // The ends of the session's scripts were not read for long: they make room.
        for entry in held.scripts().iter() {
            let mut progress = entry.running.progress();
            let end = progress.end.as_mut().unwrap();
            end.at = end.at.checked_sub(UNREAD_END_KEPT + Duration::from_secs(1)).unwrap();
        }
        assert!(held.room("s0", "code").is_ok());
        let id = held.hold("s0", running()).expect("room made");
        assert_eq!(held.ids("s0"), [id]);
    }

    /// Other sessions' scripts never keep a script from starting; the ones still running, each
    /// with its thread, are bounded in all, the ended ones only by their sessions' bounds.
    #[test]
    fn only_running_scripts_count_against_the_bound_of_all_sessions() {
        let held = Held::default();
        for n in 0..TOTAL {
            assert!(held.hold(&format!("s{}", n / PER_SESSION), ended()).is_some());
        }
        assert!(held.room("b", "code").is_ok());
        assert!(held.hold("b", running()).is_some(), "ended scripts of other sessions leave room");
        let others: Vec<Arc<Running>> = (0..TOTAL).map(|_| running()).collect();
        for (n, script) in others.iter().enumerate().skip(1) {
            assert!(held.hold(&format!("r{}", n / PER_SESSION), script.clone()).is_some());
        }
        assert!(held.room("c", "code").is_ok(), "a script may start");
        assert!(held.hold("c", running()).is_none(), "but not go on in the background");
        others[1].end(Finished::default(), None);
        assert!(held.hold("c", running()).is_some(), "once one ended, it may");
    }
}
