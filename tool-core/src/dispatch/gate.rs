//! The parallel/exclusive gate: one fair `RwLock` per dispatcher (a `parallel` tool's call holds
//! a read guard, any other a write guard) and the optional concurrency cap. A nested
//! dispatcher's calls (a script's) also take the gate of the dispatcher it was made from once
//! the call that made it has returned while they go on ([`Dispatcher::detach`]).
//!
//! [`Dispatcher::detach`]: super::Dispatcher::detach

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, OwnedSemaphorePermit, RwLock};
use tokio_util::sync::CancellationToken;

use super::Inner;
use super::cancel::until_cancelled;

/// The guards a running call holds; dropped after its finished event.
pub(crate) struct Slot {
    _gate: Gate,
    /// A shared guard of the caller's gate, for a nested call that started after its caller
    /// returned.
    _outer: Option<Gate>,
    _permit: Option<OwnedSemaphorePermit>,
}

enum Gate {
    Shared(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
    Exclusive(#[allow(dead_code)] OwnedRwLockWriteGuard<()>),
}

impl Gate {
    fn try_take(lock: &Arc<RwLock<()>>, parallel: bool) -> Option<Gate> {
        Some(match parallel {
            true => Gate::Shared(lock.clone().try_read_owned().ok()?),
            false => Gate::Exclusive(lock.clone().try_write_owned().ok()?),
        })
    }

    async fn take(lock: &Arc<RwLock<()>>, parallel: bool, cancel: &CancellationToken) -> Option<Gate> {
        Some(match parallel {
            true => Gate::Shared(until_cancelled!(cancel, lock.clone().read_owned())?),
            false => Gate::Exclusive(until_cancelled!(cancel, lock.clone().write_owned())?),
        })
    }
}

/// The gate of the dispatcher a nested one was made from, and whether the call that made it has
/// returned while its calls go on.
pub(crate) struct Outer {
    pub(crate) gate: Arc<RwLock<()>>,
    pub(crate) detached: AtomicBool,
}

impl Inner {
    /// The caller's gate, once this nested dispatcher's calls outlive the call that made it.
    fn outer_gate(&self) -> Option<&Arc<RwLock<()>>> {
        self.outer.as_ref().filter(|outer| outer.detached.load(Ordering::Acquire)).map(|outer| &outer.gate)
    }

    /// Takes the call's guard and a concurrency permit if both are free at once. The lock and
    /// the cap are fair: while a call waits for either, this takes nothing.
    pub(crate) fn try_acquire(&self, parallel: bool) -> Option<Slot> {
        let outer = match self.outer_gate() {
            Some(gate) => Some(Gate::try_take(gate, true)?),
            None => None,
        };
        let gate = Gate::try_take(&self.gate, parallel)?;
        if outer.is_none() && self.outer_gate().is_some() {
            // Detached meanwhile: the slow path takes both, in their order.
            return None;
        }
        let permit = match &self.cap {
            None => None,
            Some(cap) => Some(cap.clone().try_acquire_owned().ok()?),
        };
        Some(Slot { _gate: gate, _outer: outer, _permit: permit })
    }

    /// Waits for the call's guard (shared for parallel tools, exclusive otherwise) and a
    /// concurrency permit, or `None` if `cancel` fires first. Callers try
    /// [`Inner::try_acquire`] first, so that a call that need not wait never builds this future.
    ///
    /// A nested call whose caller has returned takes a shared guard of its caller's gate first
    /// (no exclusive call of the caller's runs meanwhile, and it waits for those running), then
    /// its own gate's (the one order, so two such calls never wait for each other's); one that
    /// got its own guard just as the caller returned lets it go and takes both.
    pub(crate) async fn acquire(&self, parallel: bool, cancel: &CancellationToken) -> Option<Slot> {
        let mut outer = None;
        let gate = loop {
            if outer.is_none()
                && let Some(lock) = self.outer_gate()
            {
                outer = Some(Gate::take(lock, true, cancel).await?);
            }
            let gate = Gate::take(&self.gate, parallel, cancel).await?;
            if outer.is_some() || self.outer_gate().is_none() {
                break gate;
            }
        };
        let permit = match &self.cap {
            None => None,
            Some(cap) => until_cancelled!(cancel, cap.clone().acquire_owned())?.ok(),
        };
        Some(Slot { _gate: gate, _outer: outer, _permit: permit })
    }
}
