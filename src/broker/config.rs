//! Configuration as immutable snapshots: subscribing, reconfiguring and
//! unsubscribing build a new [`Snapshot`] under the config lock and bump the
//! generation, which publishers compare with their view's.
//!
//! Publishers still routing with the old snapshot finish under it, wholly
//! (the gate, `queue/gate.rs`); the next publish sees the new one. No user
//! code runs under the lock: retired snapshots (which own predicates) are
//! dropped after it is released.

use super::journal::finish_replay;
use super::BrokerShared;
use crate::directive::Directives;
use crate::error::{ReconfigureError, SubscribeError, UnsubscribeError};
use crate::journal::JournalRoute;
use crate::queue::MAX_CAPACITY;
use crate::route::{Entry, Snapshot};
use crate::stats::SubscriptionStats;
use crate::subscription::{SubShared, SubscriptionBuilder, SubscriptionHandle};
use crate::sync::{lock, thread, Arc, MutexGuard, Ordering};
use crate::thread_role;
use crate::worker::{self, DeadLetters};

/// The config mutex's guard, plus the snapshots it retired. Fields drop in
/// order: the lock is released before the retired snapshots are dropped, so
/// user code they own (predicates and what those capture) never runs under
/// the lock, where a `Drop` that logs could deadlock.
pub(super) struct ConfigLock<'a> {
    config: MutexGuard<'a, Config>,
    retired: Vec<Arc<Snapshot>>,
}

impl std::ops::Deref for ConfigLock<'_> {
    type Target = Config;

    fn deref(&self) -> &Config {
        &self.config
    }
}

impl std::ops::DerefMut for ConfigLock<'_> {
    fn deref_mut(&mut self) -> &mut Config {
        &mut self.config
    }
}

pub(super) struct Config {
    pub(super) snapshot: Arc<Snapshot>,
    /// Broker-wide directives, copied into every new snapshot.
    global: Option<Directives>,
    /// The journal, copied into every new snapshot (`broker/journal.rs`).
    pub(super) journal: Option<JournalRoute>,
    pub(super) shut_down: bool,
    /// Set when a shutdown returned (the exit hook then waits for nothing).
    pub(super) shutdown_finished: bool,
    /// Subscriptions being removed: routing has stopped, their workers are
    /// still draining (possibly feeding the dead-letter route). Shutdown
    /// waits for them before it stops the dead-letter route; each removal
    /// takes itself off the list when its worker is joined.
    pub(super) removing: Vec<Arc<SubShared>>,
}

impl Config {
    /// The index of the subscription called `name` in the snapshot.
    pub(super) fn index_of(&self, name: &str) -> Option<usize> {
        self.snapshot
            .entries
            .iter()
            .position(|e| &*e.sub.name == name)
    }

    pub(super) fn new(snapshot: Snapshot) -> Config {
        Config {
            snapshot: Arc::new(snapshot),
            global: None,
            journal: None,
            shut_down: false,
            shutdown_finished: false,
            removing: Vec::new(),
        }
    }
}

impl BrokerShared {
    /// The current configuration; in a forked child, an empty one, taken
    /// without the lock (`fork.rs`).
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        if self.in_forked_child() {
            return Arc::new(Snapshot::new(0, Vec::new(), None, None));
        }
        Arc::clone(&lock(&self.config).snapshot)
    }

    /// Whether shutdown has begun.
    pub(super) fn is_shut_down(&self) -> bool {
        self.lock_config().shut_down
    }

    /// Locks the configuration.
    pub(super) fn lock_config(&self) -> ConfigLock<'_> {
        ConfigLock {
            config: lock(&self.config),
            retired: Vec::new(),
        }
    }

    /// Publishes `entries` as the new snapshot, with the config lock held.
    pub(super) fn publish_snapshot(&self, config: &mut ConfigLock<'_>, entries: Vec<Entry>) {
        let generation = config.snapshot.generation + 1;
        let next = Arc::new(Snapshot::new(
            generation,
            entries,
            config.global.clone(),
            config.journal.clone(),
        ));
        let old = std::mem::replace(&mut config.snapshot, next);
        config.retired.push(old);
        // Ordered before the removers' gate wait (`queue/gate.rs`), whose
        // heavy fence pairs with the publishers' gate fence. SeqCst: also
        // in one total order with the shared pushers' fences.
        self.generation.store(generation, Ordering::SeqCst);
        if self.installed.load(Ordering::Acquire) {
            log::set_max_level(config.snapshot.max_level);
        }
    }

    /// Adds a subscription; one that replays starts from the journal
    /// (`journal/replay.rs` has the hand-over and why it is exact).
    pub(super) fn subscribe(
        &self,
        builder: SubscriptionBuilder,
    ) -> Result<SubscriptionHandle, SubscribeError> {
        let patterns = builder.parsed_patterns()?;
        let recorder = match &builder.recorder {
            Some(recorder) => Some(Arc::new(recorder.build()?)),
            None => None,
        };
        if self.in_forked_child() {
            return Err(SubscribeError::ShutDown);
        }
        let mut config = self.lock_config();
        self.check_new(&config, &builder)?;
        let journal = config.journal.clone();
        if journal.is_none() && (builder.replay.is_some() || recorder.is_some()) {
            return Err(SubscribeError::NoJournal);
        }
        let (replay, level) = (builder.replay, builder.level);
        let directives = builder.directives.clone();
        let predicate = builder.predicate.clone();
        let dead_letters = DeadLetters::Route(Arc::clone(&self.dead_letters));
        let sub = match worker::spawn(builder, dead_letters, &self.pool, Arc::clone(&self.seq)) {
            Ok(sub) => sub,
            Err(failed) => {
                // The unstarted worker holds the appender: its `Drop` is
                // user code, run with no lock held.
                drop(config);
                return Err(failed.into_error());
            }
        };
        let mut entry = Entry {
            sub: Arc::clone(&sub),
            patterns,
            level,
            directives,
            predicate: predicate.clone(),
            live_from: 0,
            replayed_from: 0,
            start: 0,
            recorder,
        };
        let mut entries = config.snapshot.entries.clone();
        let replayed = match (replay, journal) {
            (Some(replay), Some(journal)) => {
                let ring = journal.core.lock();
                // Relaxed, under the journal's lock: see `journal/replay.rs`.
                let live_from = self.seq.load(Ordering::Relaxed);
                let set = ring.replay(replay, live_from);
                entry.live_from = set.live_from;
                entry.replayed_from = journal.core.id;
                entry.start = set.start;
                let wanted = (entry.clone(), config.snapshot.global.clone());
                entries.push(entry);
                self.publish_snapshot(&mut config, entries);
                drop(ring);
                Some((set, wanted))
            }
            _ => {
                entries.push(entry);
                self.publish_snapshot(&mut config, entries);
                None
            }
        };
        // The predicate is user code: run it with no lock held.
        drop(config);
        if let Some((set, (entry, global))) = replayed {
            finish_replay(
                &sub,
                set,
                |r| entry.wants(global.as_ref(), r),
                predicate.as_deref(),
            );
        }
        Ok(SubscriptionHandle { shared: sub })
    }

    pub(super) fn set_dead_letter(
        &self,
        builder: SubscriptionBuilder,
    ) -> Result<SubscriptionHandle, SubscribeError> {
        if self.in_forked_child() {
            return Err(SubscribeError::ShutDown);
        }
        let config = self.lock_config();
        self.check_new(&config, &builder)?;
        if self.dead_letters.get().is_some() {
            return Err(SubscribeError::DeadLetterExists);
        }
        if builder.replay.is_some() || builder.recorder.is_some() {
            return Err(SubscribeError::NotForDeadLetters);
        }
        let spawned = worker::spawn(
            builder,
            DeadLetters::IsDeadLetter,
            &self.pool,
            Arc::clone(&self.seq),
        );
        let sub = match spawned {
            Ok(sub) => sub,
            Err(failed) => {
                // As in `subscribe`: the appender is dropped unlocked.
                drop(config);
                return Err(failed.into_error());
            }
        };
        // Cannot fail: checked above under the config lock, which every
        // setter holds.
        let _ = self.dead_letters.set(Arc::clone(&sub));
        Ok(SubscriptionHandle { shared: sub })
    }

    /// Validates a new subscription against the current configuration.
    fn check_new(
        &self,
        config: &ConfigLock<'_>,
        builder: &SubscriptionBuilder,
    ) -> Result<(), SubscribeError> {
        self.check_replacing(config, builder, None)
    }

    /// [`check_new`](Self::check_new) for a subscription that takes the
    /// place of `replacing` (whose name it may reuse).
    pub(super) fn check_replacing(
        &self,
        config: &ConfigLock<'_>,
        builder: &SubscriptionBuilder,
        replacing: Option<&str>,
    ) -> Result<(), SubscribeError> {
        if builder.name.is_empty() {
            return Err(SubscribeError::EmptyName);
        }
        if builder.capacity == 0 {
            return Err(SubscribeError::ZeroCapacity);
        }
        if builder.capacity > MAX_CAPACITY {
            return Err(SubscribeError::CapacityTooLarge {
                capacity: builder.capacity,
                max: MAX_CAPACITY,
            });
        }
        if config.shut_down {
            return Err(SubscribeError::ShutDown);
        }
        let taken = config
            .snapshot
            .entries
            .iter()
            .any(|e| *e.sub.name == *builder.name && Some(&*e.sub.name) != replacing)
            || self
                .dead_letters
                .get()
                .is_some_and(|d| *d.name == *builder.name);
        if taken {
            return Err(SubscribeError::DuplicateName(builder.name.clone()));
        }
        Ok(())
    }

    /// Applies `change` to the entry called `name` and publishes the result
    /// as a new snapshot. Publishers still routing with the old snapshot
    /// finish under it (wholly); the next publish sees the new one.
    pub(super) fn reconfigure(
        &self,
        name: &str,
        change: impl FnOnce(&mut Entry) -> Result<(), ReconfigureError>,
    ) -> Result<(), ReconfigureError> {
        if self.in_forked_child() {
            // No subscription is here (`fork.rs`).
            return Err(ReconfigureError::NotFound(name.to_owned()));
        }
        let mut config = self.lock_config();
        let mut entries = config.snapshot.entries.clone();
        let Some(entry) = entries.iter_mut().find(|e| &*e.sub.name == name) else {
            return Err(ReconfigureError::NotFound(name.to_owned()));
        };
        change(entry)?;
        self.publish_snapshot(&mut config, entries);
        Ok(())
    }

    pub(super) fn set_global(&self, directives: Option<Directives>) {
        if self.in_forked_child() {
            return;
        }
        let mut config = self.lock_config();
        config.global = directives;
        let entries = config.snapshot.entries.clone();
        self.publish_snapshot(&mut config, entries);
    }

    pub(super) fn unsubscribe(
        self: &Arc<Self>,
        name: &str,
    ) -> Result<SubscriptionStats, UnsubscribeError> {
        if self.in_forked_child() {
            // Not here: its worker is the parent's (`fork.rs`).
            return Err(UnsubscribeError::NotFound(name.to_owned()));
        }
        let sub = {
            let mut config = self.lock_config();
            let Some(index) = config.index_of(name) else {
                return Err(UnsubscribeError::NotFound(name.to_owned()));
            };
            let mut entries = config.snapshot.entries.clone();
            let entry = entries.remove(index);
            self.publish_snapshot(&mut config, entries);
            config.removing.push(Arc::clone(&entry.sub));
            entry.sub
        };
        Ok(self.finish_removal(sub))
    }

    /// Drains and joins a subscription taken out of the snapshot (and put
    /// on `removing`); returns its final counters. On a worker thread, or
    /// from a predicate (the routing state), it does not wait: a fresh
    /// thread finishes the removal.
    pub(super) fn finish_removal(self: &Arc<Self>, sub: Arc<SubShared>) -> SubscriptionStats {
        let name = &sub.name;
        if thread_role::in_logbus() {
            // We may be this subscription's own worker, or another worker
            // that it waits on; or its replay's predicate, whose return
            // ends the hold its worker waits for before it stops (a review
            // found that removal waiting for ever): finish the removal on
            // a fresh thread.
            let (broker, finisher) = (Arc::clone(self), Arc::clone(&sub));
            let spawned = thread::Builder::new()
                .name("logbus-unsubscribe".into())
                .spawn(move || {
                    worker::stop(&finisher, None);
                    broker.removed(&finisher);
                });
            if spawned.is_err() {
                // Shutdown joins the removals in progress; nothing is lost.
                crate::report::stderr(format_args!(
                    "logbus: could not spawn a thread to finish unsubscribing {name:?}; it completes at shutdown"
                ));
            }
            return sub.stats();
        }
        worker::stop(&sub, None);
        self.removed(&sub);
        sub.stats()
    }

    /// A removal is complete: its worker is joined.
    fn removed(&self, sub: &Arc<SubShared>) {
        self.lock_config()
            .removing
            .retain(|other| !Arc::ptr_eq(other, sub));
    }
}
