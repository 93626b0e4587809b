//! What a server has in flight (calls, responses being written): counted, so that a shutdown
//! can wait for them, and calls stopped together once it stops waiting.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A count of things in flight that can be waited on until it is zero. Entering and leaving
/// are an atomic add each (they happen on every call); only reaching zero wakes waiters.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gauge(Arc<GaugeState>);

#[derive(Debug, Default)]
pub(crate) struct GaugeState {
    count: AtomicUsize,
    zero: Notify,
}

impl Gauge {
    /// Counts one more until the returned guard is dropped.
    pub(crate) fn enter(&self) -> Entered {
        self.0.count.fetch_add(1, Ordering::AcqRel);
        Entered(self.0.clone())
    }

    /// Counts one more until the returned guard is dropped, unless `max` are counted already.
    pub(crate) fn enter_below(&self, max: usize) -> Option<Entered> {
        self.0
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1))
            .ok()?;
        Some(Entered(self.0.clone()))
    }

    /// Waits until the count is zero.
    pub(crate) async fn idle(&self) {
        loop {
            // Registered before the count is read, so a drop to zero in between still wakes it.
            let zero = self.0.zero.notified();
            let mut zero = std::pin::pin!(zero);
            zero.as_mut().enable();
            if self.0.count.load(Ordering::Acquire) == 0 {
                return;
            }
            zero.await;
        }
    }

    #[cfg(test)]
    fn count(&self) -> usize {
        self.0.count.load(Ordering::Acquire)
    }
}

/// One thing in flight: counted until dropped, however it ends (a dropped request included).
#[derive(Debug)]
pub(crate) struct Entered(Arc<GaugeState>);

impl Drop for Entered {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.zero.notify_waiters();
        }
    }
}

/// The calls of every session of one served server.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    calls: Gauge,
    stop: CancellationToken,
}

impl InFlight {
    /// Runs `call` as one call in flight. Once [`InFlight::stop`] is called, `cancel` is
    /// cancelled and `call` still runs to its end (the dispatcher then answers within its cancel
    /// grace), so that the client gets its result.
    pub(crate) async fn run<T>(&self, cancel: &CancellationToken, call: impl Future<Output = T>) -> T {
        let _entered = self.calls.enter();
        let mut call = std::pin::pin!(call);
        tokio::select! {
            biased;
            output = &mut call => output,
            () = self.stop.cancelled() => {
                cancel.cancel();
                call.await
            }
        }
    }

    /// Waits until no call is in flight.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) async fn idle(&self) {
        self.calls.idle().await;
    }

    /// Cancels every call in flight and every later one.
    pub(crate) fn stop(&self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_gauge_is_idle_once_every_entry_is_dropped() {
        let gauge = Gauge::default();
        gauge.idle().await;
        let (first, second) = (gauge.enter(), gauge.enter());
        let waiter = tokio::spawn({
            let gauge = gauge.clone();
            async move { gauge.idle().await }
        });
        drop(first);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "one entry is still in flight");
        assert_eq!(gauge.count(), 1);
        drop(second);
        waiter.await.unwrap();
        assert_eq!(gauge.count(), 0);
    }

    #[tokio::test]
    async fn stopping_cancels_calls_in_flight_and_waits_for_their_results() {
        let in_flight = Arc::new(InFlight::default());
        let cancel = CancellationToken::new();
        let (started_tx, started) = tokio::sync::oneshot::channel();
        let call = {
            let in_flight = in_flight.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move {
                let token = cancel.clone();
                in_flight
                    .run(&cancel, async move {
                        let _ = started_tx.send(());
                        token.cancelled().await;
                        "partial"
                    })
                    .await
            })
        };
        started.await.unwrap();
        assert_eq!(in_flight.calls.count(), 1);
        in_flight.stop();
        assert_eq!(call.await.unwrap(), "partial");
        in_flight.idle().await;
        assert!(cancel.is_cancelled());
    }
}
