//! The caller's path: everything a log call does on the caller's thread,
//! in order. Read this file and `direct.rs` (the direct path) alone to
//! review the hot path.
//!
//! 1. [`BrokerShared::publish`] finds the thread's view of the broker
//!    (`route.rs`), refreshed if the generation moved (one atomic load);
//! 2. the view's cache gives the route of (level, target): the interned
//!    topic and the subscriptions that match by pattern, level and
//!    directives;
//! 3. the record is built once (`seq`, time, message, location, thread,
//!    key-values), into a recycled record when one is at hand
//!    (`recycle.rs`); if the journal keeps it, its `seq` is taken under the
//!    journal's lock after the message is formatted, and it is appended
//!    there (`journal/mod.rs`);
//! 4. predicates run (user code, before any gate), a replaying
//!    subscription skips what its replay delivered, and a flight
//!    recorder's trigger collects its context from the journal
//!    (`journal/recorder.rs`);
//! 5. the [`PublishGate`] marks the chosen subscriptions' lanes busy (the
//!    direct path's `LaneGate`, its one lane, or `CopiesGate`, the
//!    copies' lanes), one fence, the generation
//!    re-checked (a change routes again; after shutdown the record is
//!    counted instead);
//! 6. the record is pushed into each lane under its overflow policy
//!    (`queue/mod.rs`), the last subscription getting the caller's own
//!    reference; the gate is left, and a worker that said it sleeps is
//!    woken (`queue/waker.rs`).
//!
//! [`BrokerShared::publish_made`] takes the direct path (`direct.rs`) in
//! the common case, a plain record (an interned topic, a `'static`
//! location, key-values a slot carries, packed beside the message) routed
//! to one to four subscriptions, none with
//! a predicate, and no journal or flight recorder: no record is built on
//! the caller's thread. The message is formatted into the caller's stack
//! and its parts are copied into each lane's slot (`queue/slot.rs`); each
//! worker builds its own record. A deferred call of logbus's macros
//! (`logbus::info!`) takes it too, as its template's pointer and its
//! arguments' bits, and the worker formats it. So nothing the caller
//! writes was last touched by another core but the slots, and no
//! reference count or recycled record crosses between the threads.
//!
//! The thread's view remembers the direct route the last such call took
//! to one subscription, and apart from it the last one to several
//! (`route::BrokerView::remember` and `remember_copies`, for its snapshot
//! only), and a call with the same level and target takes it before steps
//! 2-4: a `log::info!`
//! call inside its pass through the view, a deferred call of logbus's
//! macros in a small pass of its own before that (`Remembering`, and
//! `direct.rs`'s `push_remembered`, `publish_remembered` and their
//! copies' forms). Every other
//! step (the gate, the re-checks, the push) is the direct path's.

mod direct;

use logbus_appenders::__private_api as produce;
use logbus_appenders::{Record, Topic};

use self::direct::Direct;

use super::BrokerShared;
use crate::journal::{JournalRoute, Retention};
use crate::queue::{self, Item, LaneProducer, SharedPass};
use crate::recycle::{self, Stash};
use crate::route::{self, Routed, Snapshot};
use crate::stats::Counters;
use crate::subscription::SubShared;
use crate::sync::{Arc, Ordering};
use crate::thread_role;

/// Context records collected for one subscription's trigger.
type Context = Vec<(Arc<SubShared>, Vec<Arc<Record>>)>;

impl BrokerShared {
    /// Whether any subscription accepts `level` from `target`.
    pub(crate) fn enabled(&self, level: log::Level, target: &str) -> bool {
        if thread_role::in_logbus() || self.in_forked_child() {
            return false;
        }
        self.with_view(|view| {
            let route = view.lookup(level, target).route;
            !route.entries.is_empty() || route.journal
        })
        .unwrap_or(false)
    }

    fn with_view<R>(&self, f: impl FnOnce(&mut route::BrokerView) -> R) -> Option<R> {
        route::with_view(
            self.id,
            || self.snapshot(),
            |view| {
                // Acquire: pairs with the SeqCst store in `publish_snapshot`; a
                // stale read only delays the refresh to the gate re-check.
                if self.generation.load(Ordering::Acquire) != view.generation() {
                    view.refresh(self.snapshot());
                }
                f(view)
            },
        )
    }

    /// Takes a recycled record from the pool (or allocates one), stamps it
    /// with `topic`, `seq` and the time, and lets `fill` write the rest.
    #[inline]
    fn build(
        &self,
        stash: Option<&mut Stash>,
        topic: Topic,
        seq: u64,
        fill: impl FnOnce(&mut Record),
    ) -> Arc<Record> {
        let now = crate::clock::stamp();
        match stash.and_then(|stash| stash.take(&self.pool)) {
            Some(recycled) => recycled.reuse(|record| {
                produce::recycle(record, topic, seq, now);
                fill(record);
            }),
            None => {
                let mut record = produce::new_record(topic, seq, now);
                fill(&mut record);
                Arc::new(record)
            }
        }
    }

    /// A record with the next seq.
    #[inline]
    fn make_record(
        &self,
        stash: Option<&mut Stash>,
        topic: Topic,
        fill: impl FnOnce(&mut Record),
    ) -> Arc<Record> {
        // Relaxed: see `seq`.
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        self.build(stash, topic, seq, fill)
    }

    /// A record the journal keeps: its seq is taken under the journal's
    /// lock once `fill` is done, and it is appended there, the records the
    /// limits (or `floor`, under `Retention::UntilWritten`) release going
    /// to the stash. Out of line: the journal's path stays off the plain
    /// one.
    #[inline(never)]
    fn make_journaled(
        &self,
        mut stash: Option<&mut Stash>,
        topic: Topic,
        journal: &JournalRoute,
        floor: Option<u64>,
        fill: impl FnOnce(&mut Record),
    ) -> Arc<Record> {
        let mut ring = None;
        let record = self.build(stash.as_deref_mut(), topic, 0, |record| {
            fill(record);
            // What the journal counts is what it holds (`JOURNAL_SLACK_PER_RECORD`).
            produce::fit_for_retention(record);
            let held = journal.core.lock();
            // Relaxed: the lock orders it (`journal/mod.rs`).
            produce::set_seq(record, self.seq.fetch_add(1, Ordering::Relaxed));
            ring = Some(held);
        });
        if let Some(mut ring) = ring {
            ring.append(Arc::clone(&record), floor, |released| {
                if let Some(stash) = stash.as_deref_mut() {
                    stash.keep(released, &self.pool);
                }
            });
        }
        record
    }

    /// The `seq` every subscription has passed, for
    /// `Retention::UntilWritten`.
    fn floor(snapshot: &Snapshot, journal: &JournalRoute) -> Option<u64> {
        if journal.retention != Retention::UntilWritten {
            return None;
        }
        snapshot.entries.iter().map(|e| e.sub.cursor()).min()
    }

    /// The context of each flight recorder that `record` triggers among
    /// the chosen subscriptions.
    #[cold]
    #[inline(never)]
    fn context(snapshot: &Snapshot, ids: &[u32], record: &Record) -> Context {
        let Some(journal) = &snapshot.journal else {
            return Vec::new();
        };
        let mut context = Vec::new();
        for &i in ids {
            let entry = &snapshot.entries[i as usize];
            if let Some(recorder) = entry.recorder.as_deref().filter(|r| r.triggers(record)) {
                // The guard is a temporary: the lock is released before the
                // copies are made.
                let records = journal.core.lock().context(recorder, record, entry.level);
                let marked = crate::journal::mark_context(records, record);
                context.push((Arc::clone(&entry.sub), marked));
            }
        }
        context
    }

    /// Routes and enqueues one record made by `fill` (called at most once,
    /// and only if some subscription may want the record).
    pub(crate) fn publish(&self, level: log::Level, target: &str, fill: impl FnOnce(&mut Record)) {
        self.publish_made(level, target, Fill(fill));
    }

    /// [`publish`](BrokerShared::publish) for any [`Make`]: a plain call
    /// takes the direct path where its route allows (see the module docs).
    pub(crate) fn publish_made<M: Make>(&self, level: log::Level, target: &str, make: M) {
        if self.in_forked_child() {
            // Before any lock: one held by another thread at the fork stays
            // held in the child for ever (`fork.rs`).
            Counters::add(&self.dropped_after_shutdown, 1);
            return;
        }
        let mut make = Some(make);
        let routed = self.with_view(|view| {
            if let Some(call) = make
                .as_mut()
                .filter(|_| M::REMEMBERS == Remembering::InView)
            {
                match self.push_remembered(view, level, target, call) {
                    Direct::Done => return,
                    Direct::Reroute => view.refresh(self.snapshot()),
                    // The copies' route the view remembers apart, before the
                    // lookup (a deferred call looks for it before this pass,
                    // `publish_remembered`).
                    Direct::Usual if view.remembers_copies() => {
                        match self.push_remembered_copies(view, level, target, call) {
                            Direct::Done => return,
                            Direct::Reroute => view.refresh(self.snapshot()),
                            Direct::Usual => {}
                        }
                    }
                    Direct::Usual => {}
                }
            }
            self.publish_in(view, level, target, &mut make, &mut Made::default());
        });
        if routed.is_none() {
            // This thread's views are gone (a log call from a thread-local
            // destructor at thread exit): route through a temporary view, so
            // the record is still delivered or counted.
            let mut view = route::BrokerView::temporary(self.id, self.snapshot());
            self.publish_in(&mut view, level, target, &mut make, &mut Made::default());
        }
    }

    /// The body of [`publish`](BrokerShared::publish), on one view. `make`
    /// is taken when the record is built (or its direct form enqueued);
    /// `made` holds the record across a re-route.
    ///
    /// User code (formatting the message, predicates) runs before any gate
    /// is entered, so a `Display` impl or predicate that panics or blocks can
    /// never hold up an unsubscribe or a shutdown.
    fn publish_in<M: Make>(
        &self,
        view: &mut route::BrokerView,
        level: log::Level,
        target: &str,
        make: &mut Option<M>,
        made: &mut Made,
    ) {
        loop {
            let outcome = 'route: {
                let Routed {
                    snapshot,
                    route,
                    lanes,
                    stash,
                    temporary,
                } = view.lookup(level, target);
                if route.entries.is_empty() && !route.journal {
                    return;
                }
                // After shutdown: count and return at once, without building
                // the record or running predicates. (A publisher that misses
                // the flag here is caught inside the gate, in `push_direct`,
                // `push_copies` or `publish_usual`.)
                // Acquire: pairs with the SeqCst store in `shutdown`.
                if made.record.is_none() && self.closed.load(Ordering::Acquire) {
                    self.count_after_shutdown(snapshot, &route.entries);
                    return;
                }
                if M::PLAIN && made.record.is_none() && !temporary {
                    if let Some(call) = make.as_mut() {
                        match self.publish_direct(snapshot, route, lanes, stash, call) {
                            (Direct::Done, remembered) => {
                                if let Some(direct) =
                                    remembered.filter(|_| M::REMEMBERS != Remembering::No)
                                {
                                    view.remember(level, target, direct);
                                }
                                return;
                            }
                            (Direct::Reroute, _) => break 'route Usual::Retry,
                            (Direct::Usual, _) => {}
                        }
                    }
                }
                let lanes = Lanes {
                    lanes,
                    stash,
                    temporary,
                };
                self.publish_usual(snapshot, route, lanes, make, made)
            };
            match outcome {
                Usual::Done => return,
                Usual::Copies(copies) => {
                    if M::REMEMBERS != Remembering::No {
                        view.remember_copies(level, target, copies);
                    }
                    return;
                }
                Usual::Retry => {}
            }
            view.refresh(self.snapshot());
        }
    }

    /// The usual path of [`publish_in`](Self::publish_in), on one route:
    /// offers a plain call to several subscriptions the direct path's
    /// copies first (`direct.rs`, `publish_copies`); otherwise builds the
    /// record (once: `made` keeps it across a re-route), chooses the
    /// subscriptions and enqueues it into each. Returns `Retry` if the
    /// snapshot changed (under the gate, or at the re-check of a record no
    /// subscription takes) and the call must route again, and the copies'
    /// route if copies took the call. Out of line, so that the direct
    /// path's frame stays small.
    #[inline(never)]
    fn publish_usual<M: Make>(
        &self,
        snapshot: &Snapshot,
        route: &route::Route,
        lanes: Lanes<'_>,
        make: &mut Option<M>,
        made: &mut Made,
    ) -> Usual {
        let Made {
            record,
            journal: kept_by,
            context,
        } = made;
        let Lanes {
            lanes,
            stash,
            temporary,
        } = lanes;
        let built: &Arc<Record> = match record {
            Some(r) => r,
            None => {
                // A plain call to several subscriptions: copies of its parts
                // where the route allows (`direct.rs`), before any record.
                if M::PLAIN && !temporary && route.entries.len() > 1 {
                    if let Some(call) = make.as_mut() {
                        match self.publish_copies(snapshot, route, lanes, stash, call) {
                            (Direct::Done, Some(copies)) => return Usual::Copies(copies),
                            (Direct::Done, None) => return Usual::Done,
                            (Direct::Reroute, _) => return Usual::Retry,
                            (Direct::Usual, _) => {}
                        }
                    }
                }
                let Some(make) = make.take() else {
                    return Usual::Done;
                };
                let fill = |out: &mut Record| make.fill(out);
                let stash = if temporary { None } else { Some(&mut *stash) };
                let topic = route.topic.clone();
                let journal = snapshot.journal.as_ref().filter(|_| route.journal);
                let built = match journal {
                    None => self.make_record(stash, topic, fill),
                    Some(journal) => {
                        *kept_by = journal.core.id;
                        let floor = Self::floor(snapshot, journal);
                        self.make_journaled(stash, topic, journal, floor, fill)
                    }
                };
                record.insert(built)
            }
        };
        let chosen = Chosen::new(snapshot, &route.entries, built, *kept_by);
        // Only a trigger that reaches the subscription (its predicate
        // and replay passed) draws its context, once.
        if route.recorders && context.is_none() {
            *context = Some(Self::context(snapshot, chosen.ids(), built));
        }
        let retry = if chosen.ids().is_empty() {
            // Only the journal keeps it, or every predicate said no:
            // no gate to pass, but a replaying subscription added
            // meanwhile must still see a record the journal took
            // after its hand-over (`journal/replay.rs`): our lock
            // acquisition came after its snapshot, so this load
            // reads the new generation. Relaxed: that
            // happens-before, not this load, orders it.
            self.generation.load(Ordering::Relaxed) != snapshot.generation
        } else {
            recycle::set_holders(built, chosen.ids().len(), *kept_by != 0);
            // Enter the gate of each chosen subscription: mark our lanes
            // busy, then one fence (see `queue/gate.rs`).
            let mut gate = PublishGate::enter(snapshot, lanes, chosen.ids(), temporary);
            queue::gate_fence();
            // Relaxed: ordered after the fence, which is the re-check
            // half of the gate protocol.
            if self.generation.load(Ordering::Relaxed) != snapshot.generation {
                true
            } else if self.closed.load(Ordering::Relaxed) {
                // Relaxed, after the fence: shutdown stores `closed` before
                // its gate wait, whose heavy fence pairs with ours (see
                // `closed`). Counted like the early check does, whatever
                // the predicates said (not where a replay delivered it).
                self.count_built_after_shutdown(snapshot, &route.entries, built, *kept_by);
                *record = None;
                false
            } else {
                // The last subscription gets our reference itself: one
                // reference-count round trip fewer per record.
                let mut owned = record.take();
                let mut ids = chosen.ids().iter().peekable();
                while let Some(&i) = ids.next() {
                    if let Some(context) = context.as_mut() {
                        let sub = &snapshot.entries[i as usize].sub;
                        if let Some(at) = context.iter().position(|(s, _)| Arc::ptr_eq(s, sub)) {
                            for record in context.swap_remove(at).1 {
                                gate.push(i, record.into(), |dropped| stash.reclaim(dropped));
                            }
                        }
                    }
                    let shared = if ids.peek().is_none() {
                        owned.take()
                    } else {
                        owned.clone()
                    };
                    if let Some(shared) = shared {
                        gate.push(i, shared.into(), |dropped| stash.reclaim(dropped));
                    }
                }
                false
            }
            // `gate` drops here: the lanes leave, also on unwinding.
        };
        if retry {
            Usual::Retry
        } else {
            Usual::Done
        }
    }

    /// [`count_after_shutdown`](Self::count_after_shutdown) for a record
    /// already built: not in a subscription whose replay delivered it.
    #[cold]
    fn count_built_after_shutdown(
        &self,
        snapshot: &Snapshot,
        entries: &[u32],
        record: &Record,
        journal: u64,
    ) {
        for &i in entries {
            let entry = &snapshot.entries[i as usize];
            if !entry.replayed(record, journal) {
                entry.sub.counters.record_drops(1);
            }
        }
        Counters::add(&self.dropped_after_shutdown, 1);
    }

    /// Counts a record published after shutdown, in every subscription of
    /// `entries` (its route, or the direct path's chosen ones; predicates
    /// are not run).
    fn count_after_shutdown(&self, snapshot: &Snapshot, entries: &[u32]) {
        for &i in entries {
            snapshot.entries[i as usize].sub.counters.record_drops(1);
        }
        Counters::add(&self.dropped_after_shutdown, 1);
    }
}

/// A direct log call's message (its text, and the literal it is, if any,
/// or the deferred message it is) and where it was made, all `'static`.
pub(crate) struct Text<'t> {
    pub(crate) message: &'t str,
    pub(crate) literal: Option<&'static str>,
    pub(crate) deferred: Option<produce::DeferredParts<'t>>,
    pub(crate) module_path: Option<&'static str>,
    pub(crate) file: Option<&'static str>,
    pub(crate) line: Option<u32>,
    /// The key-values, packed (`produce::KvPacker`; empty: none).
    pub(crate) kv: produce::Packed<'t>,
}

/// What makes a log call's record: [`fill`](Make::fill) writes it on the
/// usual path; a plain call (a `'static` location, no redaction, and
/// key-values of kinds a slot carries, `produce::Packable`; a `log` call,
/// or a deferred one of logbus's macros) can also give its parts' text for
/// the direct path.
pub(crate) trait Make {
    /// Whether [`text`](Make::text) can give anything.
    const PLAIN: bool;

    /// Whether and where a call of this kind takes the direct route its
    /// thread's view remembers (`direct.rs`).
    const REMEMBERS: Remembering = Remembering::No;

    /// Formats the message for the direct path, with the call's site:
    /// called only on a direct route, and again after a re-route or after
    /// the remembered route gave the call back (`direct.rs`), which gives
    /// the text made the first time (a message is never formatted twice).
    /// `None` if it is longer than a slot (with its key-values), or has a
    /// key-value a slot does not carry.
    fn text(&mut self) -> Option<Text<'_>>;

    /// Fills the record on the usual path, with the message `text` made if
    /// it was called (a message is never formatted twice).
    fn fill(self, out: &mut Record);
}

/// Whether and where a kind of call takes the direct route its thread's
/// view remembers: the route the last call of such a kind took the direct
/// path on, to one subscription or, apart, to several
/// (`route::BrokerView::remember` and `remember_copies`, `direct.rs`).
#[derive(PartialEq, Eq)]
pub(crate) enum Remembering {
    /// Not remembered, not looked for.
    No,
    /// Looked for in the caller's pass through its view
    /// ([`BrokerShared::publish_made`]): a `log::info!` call.
    InView,
    /// Looked for in a small pass of its own, before the caller's path
    /// (`publish_remembered`): a deferred call of logbus's macros, whose
    /// whole path is short enough that `publish_made`'s frame cost it
    /// 3-4 ns at p50 (`benches/README.md`, "Twenty-sixth session").
    Ahead,
}

/// A fill function, as [`publish`](BrokerShared::publish) takes it.
struct Fill<F>(F);

impl<F: FnOnce(&mut Record)> Make for Fill<F> {
    const PLAIN: bool = false;

    fn text(&mut self) -> Option<Text<'_>> {
        None
    }

    fn fill(self, out: &mut Record) {
        (self.0)(out);
    }
}

/// The publisher's side of the gates of the subscriptions it enqueues into
/// (`queue/gate.rs`): its lanes' busy flags, set by `enter` and cleared when
/// dropped (also on unwinding, so a panic cannot leave a subscription's
/// removal waiting). A temporary view has no lanes: it enters each
/// subscription's shared gate and pushes through the shared channel, as
/// dead letters do.
struct PublishGate<'v, 'i> {
    snapshot: &'v Snapshot,
    lanes: &'v mut [Option<LaneProducer>],
    ids: &'i [u32],
    /// With a temporary view: the shared passes held, one per id.
    shared: Option<Vec<SharedPass<'v>>>,
}

impl<'v, 'i> PublishGate<'v, 'i> {
    /// Marks this thread's lane into each subscription `ids` names busy,
    /// making the lanes it lacks (narrow: shared records, `slot.rs`) or,
    /// `shared`, enters their shared gates. The caller then issues the
    /// fence.
    #[inline]
    fn enter(
        snapshot: &'v Snapshot,
        lanes: &'v mut [Option<LaneProducer>],
        ids: &'i [u32],
        shared: bool,
    ) -> PublishGate<'v, 'i> {
        let entry = |i: u32| &*snapshot.entries[i as usize].sub;
        let shared = shared.then(|| ids.iter().map(|&i| entry(i).queue.enter_shared()).collect());
        if shared.is_none() {
            for &i in ids {
                lanes[i as usize]
                    .get_or_insert_with(|| entry(i).queue.new_lane(false))
                    .busy()
                    .enter();
            }
        }
        PublishGate {
            snapshot,
            lanes,
            ids,
            shared,
        }
    }

    /// Enqueues `item` into the subscription at snapshot index `i`; what
    /// the overflow policy drops goes to `spill`.
    #[inline]
    fn push(&mut self, i: u32, item: Item<'_>, spill: impl FnMut(Arc<Record>)) {
        let sub = &*self.snapshot.entries[i as usize].sub;
        match &mut self.lanes[i as usize] {
            Some(lane) if self.shared.is_none() => sub.push_lane(lane, item, spill),
            _ => sub.queue.push_shared(item.into_record(), &sub.counters),
        }
    }
}

impl Drop for PublishGate<'_, '_> {
    /// Leaves every gate, then wakes the workers that said they sleep: the
    /// publisher's half of the wake-up protocol (`queue/waker.rs`).
    #[inline]
    fn drop(&mut self) {
        let mut cede = false;
        // Shared passes leave as they drop.
        if self.shared.take().is_none() {
            for &i in self.ids {
                if let Some(lane) = &mut self.lanes[i as usize] {
                    // `|=`, not `||`: every lane's cede state is updated.
                    cede |= leave(lane, &self.snapshot.entries[i as usize].sub);
                }
            }
        }
        for &i in self.ids {
            let sub = &self.snapshot.entries[i as usize].sub;
            sub.queue.waker.wake_if_sleeping();
        }
        if cede {
            // Outside every gate, after the wake-ups: the worker we
            // outpaced can have our core.
            queue::cede();
        }
    }
}

/// Leaves `lane`'s gate (into `sub`) and says whether the publisher should
/// cede its core once it left every gate (`LaneProducer::should_cede`).
#[inline]
fn leave(lane: &mut LaneProducer, sub: &SubShared) -> bool {
    lane.leave();
    lane.should_cede(|| Counters::get(&sub.counters.taken))
}

/// A view's lanes and record stash, as a lookup gives them, for the usual
/// path.
struct Lanes<'v> {
    lanes: &'v mut [Option<LaneProducer>],
    stash: &'v mut Stash,
    temporary: bool,
}

/// What one publish made, kept across a re-route: the record, the journal
/// that holds it (`JournalCore::id`, 0 for none: a re-route may find
/// another journal, `route::Entry::replayed`), and the flight recorders'
/// context for it.
#[derive(Default)]
struct Made {
    record: Option<Arc<Record>>,
    journal: u64,
    context: Option<Context>,
}

/// What the usual path (`publish_usual`) did with a call.
enum Usual {
    /// Enqueued, or counted, or taken by no subscription.
    Done,
    /// Enqueued as copies on this route, which the view may remember
    /// (`route::BrokerView::remember_copies`).
    Copies(route::CopiesRoute),
    /// The snapshot changed under the gate (or at the re-check of a record
    /// no subscription takes): route again.
    Retry,
}

/// The entries of a route whose predicate accepts the record (and whose
/// replay did not deliver it already: `live_from`).
enum Chosen<'a> {
    /// Every entry of the route (no predicate rejected any).
    All(&'a [u32]),
    Some(Vec<u32>),
}

impl<'a> Chosen<'a> {
    fn new(snapshot: &Snapshot, entries: &'a [u32], record: &Record, journal: u64) -> Chosen<'a> {
        let rejects = |&i: &u32| {
            let entry = &snapshot.entries[i as usize];
            entry.replayed(record, journal) || entry.predicate.as_ref().is_some_and(|p| !p(record))
        };
        // Each predicate runs once: the entries before the first rejection
        // are taken as they are, the rest are looked at once more each (a
        // review found the predicates before it run twice).
        let Some(first) = entries.iter().position(rejects) else {
            return Chosen::All(entries);
        };
        let mut chosen = entries[..first].to_vec();
        chosen.extend(entries[first + 1..].iter().copied().filter(|i| !rejects(i)));
        Chosen::Some(chosen)
    }

    fn ids(&self) -> &[u32] {
        match self {
            Chosen::All(ids) => ids,
            Chosen::Some(ids) => ids,
        }
    }
}
