//! The parallel/exclusive gate: one fair `RwLock` per dispatcher (a `parallel` tool's call holds
//! a read guard, any other a write guard, an `ungated` one none) and the optional concurrency
//! cap; and, for the calls of a nested dispatcher that outlive the call that made it
//! ([`Dispatcher::detach`]), the lock that keeps them from changing things while an exclusive
//! call of the dispatcher it was made from runs.
//!
//! [`Dispatcher::detach`]: super::Dispatcher::detach

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{
    Mutex, OwnedMutexGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, OwnedSemaphorePermit, RwLock,
};
use tokio_util::sync::CancellationToken;

use super::Inner;
use super::cancel::until_cancelled;

/// A dispatcher's gate: the lock its calls take their turns with, and the one its exclusive
/// calls hold while they run, which the detached calls of its nested dispatchers take too.
#[derive(Clone, Default)]
pub(crate) struct Gate {
    turns: Arc<RwLock<()>>,
    changes: Arc<Mutex<()>>,
}

/// The gate of the dispatcher a nested one was made from, and whether the call that made it has
/// returned while its calls go on.
pub(crate) struct Outer {
    changes: Arc<Mutex<()>>,
    pub(crate) detached: AtomicBool,
}

impl Gate {
    /// What a nested dispatcher of this gate's keeps of it.
    pub(crate) fn outer(&self) -> Outer {
        Outer { changes: self.changes.clone(), detached: AtomicBool::new(false) }
    }
}

/// How a call takes its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Alongside the other shared calls (a `parallel` tool, a command that only reads).
    Shared,
    /// Alone.
    Exclusive,
    /// Without the gate (an `ungated` tool).
    Ungated,
}

/// The guards a running call holds; dropped after its finished event.
pub(crate) struct Slot {
    _turn: Option<Guard>,
    /// An exclusive call's hold of its dispatcher's changes lock, and of the caller's for a
    /// nested call that started after its caller returned.
    _changes: Option<OwnedMutexGuard<()>>,
    _outer: Option<OwnedMutexGuard<()>>,
    _permit: Option<OwnedSemaphorePermit>,
}

enum Guard {
    Shared(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
    Exclusive(#[allow(dead_code)] OwnedRwLockWriteGuard<()>),
}

impl Inner {
    /// The caller's changes lock, once this nested dispatcher's calls outlive the call that
    /// made it.
    fn outer_changes(&self) -> Option<&Arc<Mutex<()>>> {
        self.outer.as_ref().filter(|outer| outer.detached.load(Ordering::Acquire)).map(|outer| &outer.changes)
    }

    /// Takes the call's guards and a concurrency permit if all are free at once. The locks and
    /// the cap are fair: while a call waits for any, this takes nothing.
    pub(crate) fn try_acquire(&self, turn: Turn) -> Option<Slot> {
        let guard = match turn {
            Turn::Shared => Some(Guard::Shared(self.gate.turns.clone().try_read_owned().ok()?)),
            Turn::Exclusive => Some(Guard::Exclusive(self.gate.turns.clone().try_write_owned().ok()?)),
            Turn::Ungated => None,
        };
        let (changes, outer) = match turn {
            Turn::Exclusive => {
                let changes = self.gate.changes.clone().try_lock_owned().ok()?;
                let outer = match self.outer_changes() {
                    Some(lock) => Some(lock.clone().try_lock_owned().ok()?),
                    None => None,
                };
                (Some(changes), outer)
            }
            _ => (None, None),
        };
        let permit = match &self.cap {
            None => None,
            Some(cap) => Some(cap.clone().try_acquire_owned().ok()?),
        };
        Some(Slot { _turn: guard, _changes: changes, _outer: outer, _permit: permit })
    }

    /// Waits for the call's guards (shared for parallel tools, exclusive otherwise, none for
    /// ungated ones) and a concurrency permit, or `None` if `cancel` fires first. Callers try
    /// [`Inner::try_acquire`] first, so that a call that need not wait never builds this future.
    ///
    /// An exclusive call also holds its dispatcher's changes lock, and a nested one that starts
    /// after its caller returned the caller's too, taken last: it waits for the caller's
    /// exclusive call that runs, and keeps the next from running until it ends, without ever
    /// waiting for the caller's gate (where a caller's call waiting for the nested calls' end,
    /// `code_output`, could hold a turn).
    pub(crate) async fn acquire(&self, turn: Turn, cancel: &CancellationToken) -> Option<Slot> {
        let guard = match turn {
            Turn::Shared => {
                Some(Guard::Shared(until_cancelled!(cancel, self.gate.turns.clone().read_owned())?))
            }
            Turn::Exclusive => {
                Some(Guard::Exclusive(until_cancelled!(cancel, self.gate.turns.clone().write_owned())?))
            }
            Turn::Ungated => None,
        };
        let (changes, outer) = match turn {
            Turn::Exclusive => {
                let changes = until_cancelled!(cancel, self.gate.changes.clone().lock_owned())?;
                let outer = match self.outer_changes() {
                    Some(lock) => Some(until_cancelled!(cancel, lock.clone().lock_owned())?),
                    None => None,
                };
                (Some(changes), outer)
            }
            _ => (None, None),
        };
        let permit = match &self.cap {
            None => None,
            Some(cap) => until_cancelled!(cancel, cap.clone().acquire_owned())?.ok(),
        };
        Some(Slot { _turn: guard, _changes: changes, _outer: outer, _permit: permit })
    }
}
