//! The parallel/exclusive gate: one fair `RwLock` per dispatcher (a `parallel` tool's call holds
//! a read guard, any other a write guard) and the optional concurrency cap.

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

use super::Inner;
use super::cancel::until_cancelled;

/// The guards a running call holds; dropped after its finished event.
pub(crate) struct Slot {
    _gate: Gate,
    _permit: Option<OwnedSemaphorePermit>,
}

enum Gate {
    Shared(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
    Exclusive(#[allow(dead_code)] OwnedRwLockWriteGuard<()>),
}

impl Inner {
    /// Takes the call's guard and a concurrency permit if both are free at once. The lock and
    /// the cap are fair: while a call waits for either, this takes nothing.
    pub(crate) fn try_acquire(&self, parallel: bool) -> Option<Slot> {
        let gate = if parallel {
            Gate::Shared(self.gate.clone().try_read_owned().ok()?)
        } else {
            Gate::Exclusive(self.gate.clone().try_write_owned().ok()?)
        };
        let permit = match &self.cap {
            None => None,
            Some(cap) => Some(cap.clone().try_acquire_owned().ok()?),
        };
        Some(Slot { _gate: gate, _permit: permit })
    }

    /// Waits for the call's guard (shared for parallel tools, exclusive otherwise) and a
    /// concurrency permit, or `None` if `cancel` fires first. Callers try
    /// [`Inner::try_acquire`] first, so that a call that need not wait never builds this future.
    pub(crate) async fn acquire(&self, parallel: bool, cancel: &CancellationToken) -> Option<Slot> {
        let gate = if parallel {
            Gate::Shared(until_cancelled!(cancel, self.gate.clone().read_owned())?)
        } else {
            Gate::Exclusive(until_cancelled!(cancel, self.gate.clone().write_owned())?)
        };
        let permit = match &self.cap {
            None => None,
            Some(cap) => until_cancelled!(cancel, cap.clone().acquire_owned())?.ok(),
        };
        Some(Slot { _gate: gate, _permit: permit })
    }
}
