//! A call's stop switch for its blocking file-system work: once the call is dropped, that work changes nothing more.
//!
//! A call that is stopped (its time limit, its caller) is dropped, but the blocking thread doing
//! its file-system work cannot be interrupted. [`Workspace::blocking`](crate::Workspace) runs that
//! work under a [`StopSwitch`] that the call's future flips when it is dropped; each change the
//! local operations make (a rename, an unlink, a `mkdir`) goes through [`commit`], which refuses
//! once the switch is flipped. The flip waits for a change in progress, so every change happens
//! before the call is reported stopped, or not at all.

use std::cell::RefCell;
use std::io;
use std::sync::{Arc, Mutex};

/// Whether the call that started this work was dropped.
#[derive(Debug, Default)]
pub(crate) struct StopSwitch {
    stopped: Mutex<bool>,
}

impl StopSwitch {
    /// Flips the switch, after the change in progress (if any) is done.
    pub(crate) fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
    }

    fn is_stopped(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Flips its switch when dropped: held by the future of the call's work.
#[derive(Debug)]
pub(crate) struct StopOnDrop(pub(crate) Arc<StopSwitch>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<StopSwitch>>> = const { RefCell::new(None) };
}

/// Runs `work` on this thread under `switch`.
pub(crate) fn under<T>(switch: Arc<StopSwitch>, work: impl FnOnce() -> T) -> T {
    struct Reset(Option<Arc<StopSwitch>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|current| *current.borrow_mut() = previous);
        }
    }
    let previous = CURRENT.with(|current| current.borrow_mut().replace(switch));
    let _reset = Reset(previous);
    work()
}

/// Whether the work running on this thread belongs to a call that was stopped.
pub(crate) fn stopped() -> bool {
    CURRENT.with(|current| current.borrow().as_ref().is_some_and(|switch| switch.is_stopped()))
}

/// Makes `change` unless the work running on this thread belongs to a call that was stopped;
/// the switch is not flipped while it runs.
pub(crate) fn commit<T>(change: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let switch = CURRENT.with(|current| current.borrow().clone());
    let Some(switch) = switch else { return change() };
    let stopped = switch.stopped.lock().unwrap_or_else(|p| p.into_inner());
    if *stopped {
        return Err(stopped_error());
    }
    let changed = change();
    drop(stopped);
    changed
}

/// The error of a change refused because its call was stopped.
pub(crate) fn stopped_error() -> io::Error {
    io::Error::other("the call was stopped before this change was made; nothing was changed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_made_until_the_switch_is_flipped_and_never_after() {
        let switch = Arc::new(StopSwitch::default());
        let made = under(switch.clone(), || {
            assert!(!stopped());
            let first = commit(|| Ok(1));
            switch.stop();
            let second = commit(|| -> io::Result<i32> { panic!("a change after the stop") });
            (first.unwrap(), second.unwrap_err().to_string(), stopped())
        });
        assert_eq!(made.0, 1);
        assert!(made.1.contains("nothing was changed"), "{}", made.1);
        assert!(made.2);
        // Outside any call's work, changes are made.
        assert!(!stopped());
        assert_eq!(commit(|| Ok(2)).unwrap(), 2);
    }

    #[test]
    fn dropping_the_guard_flips_the_switch() {
        let switch = Arc::new(StopSwitch::default());
        drop(StopOnDrop(switch.clone()));
        assert!(switch.is_stopped());
    }
}
