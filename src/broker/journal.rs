//! The broker's side of the journal: setting it up and reading it, a
//! replay's last step, and replacing a subscription without losing or
//! repeating a record.
//!
//! # Replacing a subscription
//!
//! [`BrokerHandle::replace`] swaps the old entry for the new one in one
//! snapshot, and drains the old one as `unsubscribe` does. A publisher
//! pushes a record once, under the one snapshot whose gate re-check it
//! passed (`queue/gate.rs`): under the old snapshot it reaches the old
//! subscription, which the removal drains (it waits for the publishers
//! in its gate); under the new one it reaches the new subscription. So
//! every record is written by exactly one of the two, whatever the
//! publishing threads do; the old one writes everything published before
//! the swap (its last written offset plus one is where the new one
//! starts, up to the records in flight at the swap, which either may
//! take). No journal is needed. An old subscription that replayed also
//! wrote, from its replay, records still being routed live: the new entry
//! takes its hand-over (`live_from`, `start`), so a re-route skips the new
//! one for those too.

use logbus_appenders::Record;

use super::{BrokerHandle, BrokerShared};
use crate::error::JournalError;
use crate::error::{ReplaceError, SubscribeError};
use crate::journal::{gap_notice, Journal, JournalCore, JournalReader, JournalRoute, ReplaySet};
use crate::queue::Queue;
use crate::stats::SubscriptionStats;
use crate::subscription::{SubShared, SubscriptionBuilder, SubscriptionHandle};
use crate::sync::Arc;
use crate::worker::{self, DeadLetters};

/// Ends a front's hold even if the predicate panics (with no records).
struct Release<'q> {
    queue: &'q Queue,
    records: Option<Vec<Arc<Record>>>,
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.queue
            .front
            .fill(self.records.take().unwrap_or_default());
        self.queue.waker.wake();
    }
}

/// A replay's last step, on the subscribing thread with no lock held:
/// the subscription's filters (`wanted`: patterns, level, directives) and
/// its predicate run over the copied records, the gap notice goes first,
/// and the hold on the subscription's queue ends (`queue/front.rs`).
pub(super) fn finish_replay(
    sub: &SubShared,
    mut set: ReplaySet,
    wanted: impl Fn(&Record) -> bool,
    predicate: Option<&(dyn Fn(&Record) -> bool + Send + Sync)>,
) {
    let mut release = Release {
        queue: &sub.queue,
        records: None,
    };
    // The predicate runs as on a publisher, in the routing state: its log
    // calls are discarded (`thread_role.rs`), so it cannot log into the
    // held queue and wait on it (a review found that deadlock).
    let routing = crate::thread_role::RoutingGuard::enter();
    // A flush from the predicate would wait for this queue's worker, which
    // waits for the predicate to return (`FlushError::InPredicate`).
    let replaying = crate::thread_role::ReplayGuard::enter();
    let report = set.filter(|r| wanted(r) && predicate.map_or(true, |p| p(r)));
    drop((replaying, routing));
    let mut records = set.records;
    if let Some(gap) = &report.gap {
        records.insert(0, Arc::new(gap_notice(gap, &report)));
    }
    release.records = Some(records);
    let _ = sub.replay.set(report);
}

impl BrokerShared {
    fn set_journal(&self, journal: Option<&Journal>) -> Result<(), JournalError> {
        let patterns = journal.map(Journal::check).transpose()?;
        if self.in_forked_child() {
            return Err(JournalError::ShutDown);
        }
        let mut released = std::collections::VecDeque::new();
        let mut config = self.lock_config();
        if config.shut_down {
            return Err(JournalError::ShutDown);
        }
        config.journal = match (journal, patterns) {
            (Some(journal), Some(patterns)) => {
                let core = match &config.journal {
                    Some(current) => {
                        released.extend(current.core.lock().set_limits(journal));
                        Arc::clone(&current.core)
                    }
                    None => Arc::new(JournalCore::new(journal)),
                };
                Some(JournalRoute::new(core, journal, patterns))
            }
            _ => {
                // Idle threads' stale snapshots still hold the core: let its
                // records go now.
                if let Some(current) = &config.journal {
                    released = current.core.lock().release_all();
                }
                None
            }
        };
        let entries = config.snapshot.entries.clone();
        self.publish_snapshot(&mut config, entries);
        // The released records are freed with no lock held.
        drop(config);
        drop(released);
        Ok(())
    }

    fn replace(
        self: &Arc<Self>,
        name: &str,
        builder: SubscriptionBuilder,
    ) -> Result<(SubscriptionHandle, SubscriptionStats), ReplaceError> {
        if builder.replay.is_some() {
            return Err(ReplaceError::Replay);
        }
        let patterns = builder.parsed_patterns().map_err(SubscribeError::from)?;
        let recorder = match &builder.recorder {
            Some(recorder) => Some(Arc::new(recorder.build().map_err(SubscribeError::from)?)),
            None => None,
        };
        if self.in_forked_child() {
            return Err(ReplaceError::NotFound(name.to_owned()));
        }
        let (new, old) = {
            let mut config = self.lock_config();
            let Some(index) = config.index_of(name) else {
                return Err(ReplaceError::NotFound(name.to_owned()));
            };
            self.check_replacing(&config, &builder, Some(name))?;
            if recorder.is_some() && config.journal.is_none() {
                return Err(SubscribeError::NoJournal.into());
            }
            let (level, directives) = (builder.level, builder.directives.clone());
            let predicate = builder.predicate.clone();
            let dead_letters = DeadLetters::Route(Arc::clone(&self.dead_letters));
            let spawned = worker::spawn(builder, dead_letters, &self.pool, Arc::clone(&self.seq));
            let sub = match spawned {
                Ok(sub) => sub,
                Err(failed) => {
                    // As in `subscribe`: the appender is dropped unlocked.
                    drop(config);
                    return Err(ReplaceError::Subscribe(failed.into_error()));
                }
            };
            let mut entries = config.snapshot.entries.clone();
            // The old subscription's hand-over carries over: a record its
            // replay delivered, still being routed, skips the new one too
            // (with none, a review found the pair writing it twice).
            let (live_from, replayed_from, start) = {
                let old = &entries[index];
                (old.live_from, old.replayed_from, old.start)
            };
            let old = std::mem::replace(
                &mut entries[index],
                crate::route::Entry {
                    sub: Arc::clone(&sub),
                    patterns,
                    level,
                    directives,
                    predicate,
                    live_from,
                    replayed_from,
                    start,
                    recorder,
                },
            );
            self.publish_snapshot(&mut config, entries);
            config.removing.push(Arc::clone(&old.sub));
            (sub, old.sub)
        };
        let stats = self.finish_removal(old);
        Ok((SubscriptionHandle { shared: new }, stats))
    }
}

impl BrokerHandle {
    /// Sets up the journal, or changes its settings: the records it holds
    /// stay, within the new limits. See [`Journal`].
    ///
    /// # Errors
    ///
    /// [`JournalError`] for a zero limit, a malformed pattern, or a broker
    /// that is shut down.
    pub fn set_journal(&self, journal: Journal) -> Result<(), JournalError> {
        self.shared.set_journal(Some(&journal))
    }

    /// Removes the journal and lets its records go (readers keep theirs).
    /// Subscriptions with a flight recorder then receive no context.
    ///
    /// # Errors
    ///
    /// [`JournalError::ShutDown`] if the broker is shut down.
    pub fn remove_journal(&self) -> Result<(), JournalError> {
        self.shared.set_journal(None)
    }

    /// A reader of the journal, if one is set up.
    #[must_use]
    pub fn journal(&self) -> Option<JournalReader> {
        let snapshot = self.shared.snapshot();
        let journal = snapshot.journal.as_ref()?;
        Some(JournalReader {
            core: Arc::clone(&journal.core),
        })
    }

    /// Replaces the subscription `name` with `builder`'s (which may reuse
    /// the name) without losing or repeating a record: every record
    /// published before the swap is written by the old appender, which is
    /// drained, flushed and removed as by
    /// [`unsubscribe`](BrokerHandle::unsubscribe); every record after it
    /// by the new one. Returns the new subscription and the old one's
    /// final counters. The two appenders may run side by side for the
    /// moment the old one drains; a flush waits for both. Called from
    /// inside an appender (a worker thread) it does not wait for the old
    /// one to drain, and its counters are those of that moment.
    ///
    /// ```
    /// use logbus::{Broker, LevelFilter, Memory, Subscription};
    ///
    /// let broker = Broker::new();
    /// let (old, old_records) = Memory::new();
    /// broker.subscribe(Subscription::builder("app", old))?;
    /// log::set_max_level(LevelFilter::Trace);
    /// log::info!(logger: &broker, "one");
    ///
    /// let (new, new_records) = Memory::new();
    /// let (_, old_stats) = broker.replace("app", Subscription::builder("app", new))?;
    /// log::info!(logger: &broker, "two");
    /// broker.flush()?;
    /// assert_eq!(old_records.messages(), ["one"]);
    /// assert_eq!(new_records.messages(), ["two"]);
    /// assert_eq!(old_stats.written, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ReplaceError::NotFound`] if there is no subscription `name`,
    /// [`ReplaceError::Replay`] if `builder` asks for a replay (the old
    /// appender writes those records), or [`ReplaceError::Subscribe`] as
    /// for [`subscribe`](BrokerHandle::subscribe).
    pub fn replace(
        &self,
        name: &str,
        builder: SubscriptionBuilder,
    ) -> Result<(SubscriptionHandle, SubscriptionStats), ReplaceError> {
        BrokerShared::replace(&self.shared, name, builder)
    }
}
