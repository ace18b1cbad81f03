//! The shared channel: the part of a subscription's queue that takes the
//! pushes without a lane (dead letters that other workers push, log calls
//! made after a thread's locals were destroyed).
//!
//! It is a bounded crossbeam channel. crossbeam-channel has no eviction of
//! its own (crossbeam issue #400; the proposal in PR #1135 was not merged),
//! so drop-oldest is ours: the channel keeps a `Receiver` clone beside the
//! `Sender`, and [`SharedChannel::evict_oldest`] pops one record from it:
//! the oldest, since the channel is FIFO. The policy that decides when to
//! evict is in `mod.rs`; why each record is still counted exactly once is
//! argued there.

use std::time::Instant;

use crossbeam_channel::{Receiver, SendTimeoutError, Sender, TrySendError};
use logbus_appenders::Record;

use crate::sync::Arc;

/// A bounded channel of shared records that can evict its oldest one.
pub(crate) struct SharedChannel {
    tx: Sender<Arc<Record>>,
    /// Beside the sender, to pop the oldest record under drop-oldest.
    evict_rx: Receiver<Arc<Record>>,
}

impl SharedChannel {
    /// A channel of `capacity` records, and the worker's end of it.
    pub(crate) fn new(capacity: usize) -> (SharedChannel, Receiver<Arc<Record>>) {
        let (tx, rx) = crossbeam_channel::bounded(capacity);
        let channel = SharedChannel {
            tx,
            evict_rx: rx.clone(),
        };
        (channel, rx)
    }

    /// Records waiting.
    pub(crate) fn len(&self) -> usize {
        self.tx.len()
    }

    /// Appends `record`, or hands it back if the channel is full.
    pub(crate) fn try_push(&self, record: Arc<Record>) -> Result<(), Arc<Record>> {
        self.tx.try_send(record).map_err(|e| match e {
            // Disconnected cannot happen (we hold a receiver); the record
            // is handed back and counted like a full queue's.
            TrySendError::Full(r) | TrySendError::Disconnected(r) => r,
        })
    }

    /// Appends `record`, waiting for room until `deadline` (for ever if
    /// `None`); hands it back if the deadline passed.
    pub(crate) fn push_waiting(
        &self,
        record: Arc<Record>,
        deadline: Option<Instant>,
    ) -> Result<(), Arc<Record>> {
        match deadline {
            None => self.tx.send(record).map_err(|e| e.into_inner()),
            Some(deadline) => self
                .tx
                .send_deadline(record, deadline)
                .map_err(|e| match e {
                    SendTimeoutError::Timeout(r) | SendTimeoutError::Disconnected(r) => r,
                }),
        }
    }

    /// Takes the oldest record out (drop-oldest), or `None` if the worker
    /// took everything meanwhile. crossbeam hands every message to exactly
    /// one receiver, so the record is ours alone: the worker will not write
    /// it.
    pub(crate) fn evict_oldest(&self) -> Option<Arc<Record>> {
        self.evict_rx.try_recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use logbus_appenders::{Level, Topic};

    fn record(seq: u64) -> Arc<Record> {
        Arc::new(
            Record::builder(Topic::new(Level::Info, "t"))
                .seq(seq)
                .build(),
        )
    }

    #[test]
    fn evicts_the_oldest_and_hands_back_when_full() {
        let (channel, rx) = SharedChannel::new(2);
        channel.try_push(record(0)).unwrap();
        channel.try_push(record(1)).unwrap();
        assert_eq!(channel.try_push(record(2)).unwrap_err().seq(), 2);
        assert_eq!(channel.evict_oldest().map(|r| r.seq()), Some(0));
        channel.try_push(record(2)).unwrap();
        let soon = Some(Instant::now());
        assert_eq!(channel.push_waiting(record(3), soon).unwrap_err().seq(), 3);
        assert_eq!(rx.try_iter().map(|r| r.seq()).collect::<Vec<_>>(), [1, 2]);
        assert!(channel.evict_oldest().is_none());
    }
}
