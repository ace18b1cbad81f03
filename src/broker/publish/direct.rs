//! The direct path of the caller's path (`mod.rs` is the rest): a plain
//! or deferred record routed to one to [`COPIES`] subscriptions, none with
//! a predicate, and no journal or flight recorder, travels as its parts,
//! copied into each subscription's lane (`queue/slot.rs`); no record is
//! built on the caller's thread, and each worker builds its own. One
//! subscription takes [`push_direct`](BrokerShared::push_direct)'s
//! [`LaneGate`], its one lane; several take
//! [`publish_copies`](BrokerShared::publish_copies), which the usual path
//! offers them first, and its push (`push_copies`) through [`CopiesGate`]
//! (a [`LaneGate`] for each lane), with a stamp each worker converts with
//! the anchor of its epoch (`clock::stamp_keyed`), so that the copies
//! have one time. Every step
//! the usual path takes for a record (`seq`, the gate, the generation and
//! shutdown re-checks, the overflow policy, the wake-up) is taken here for
//! the parts, in the same order. A route taken this way, to one
//! subscription or to several, is remembered by the thread's view for the
//! next call with the same level and target (`push_remembered`,
//! `publish_remembered`): that call skips the lookup and the rest of the
//! caller's path's setup (for copies, the detour through the usual path
//! too), and takes every step from the shutdown check on as the direct
//! path does.

use logbus_appenders::__private_api as produce;

use super::{leave, Make};
use crate::broker::BrokerShared;
use crate::queue::{self, Item, LaneProducer};
use crate::recycle::Stash;
use crate::route::{
    self, CopiesRoute, DirectRoute, RememberedCopies, RememberedLane, Snapshot, COPIES,
};
use crate::subscription::SubShared;
use crate::sync::Ordering;
use crate::thread_role;

impl BrokerShared {
    /// The direct path on a route the usual path looked up. If it does not
    /// take the call, the usual path does, with the message formatted
    /// already if `call.text` was called. With the route, if it is a direct
    /// one ([`direct_route`]): the view remembers it for the next call of a
    /// kind that looks for it (`Make::REMEMBERS`, `push_remembered`,
    /// `publish_remembered`).
    pub(super) fn publish_direct(
        &self,
        snapshot: &Snapshot,
        route: &route::Route,
        lanes: &mut [Option<LaneProducer>],
        stash: &mut Stash,
        call: &mut impl Make,
    ) -> (Direct, Option<DirectRoute>) {
        let Some(direct) = direct_route(snapshot, route) else {
            return (Direct::Usual, None);
        };
        let lane = &mut lanes[direct.index as usize];
        (
            self.push_direct(snapshot, direct, lane, stash, call),
            Some(direct),
        )
    }

    /// The direct path on the route `view` remembers for `level` and
    /// `target` (the last route a call of a [`Make::REMEMBERS`] kind took
    /// it on), before the caller's path's other steps: no lookup, no record
    /// kept for a re-route. `Usual` if it is not this call's route (or the
    /// message does not fit a slot): the caller's path takes the call.
    /// A view remembers a route only for its snapshot (`refresh` forgets
    /// it), so it is the route a lookup would give. (The copies' route the
    /// view remembers apart is not looked for here:
    /// [`push_remembered_copies`](Self::push_remembered_copies).)
    #[inline(always)]
    pub(super) fn push_remembered(
        &self,
        view: &mut route::BrokerView,
        level: log::Level,
        target: &str,
        call: &mut impl Make,
    ) -> Direct {
        let Some(RememberedLane {
            snapshot,
            route,
            lane,
            stash,
        }) = view.remembered(level, target)
        else {
            return Direct::Usual;
        };
        if self.closed_counted(snapshot, &[route.index]) {
            return Direct::Done;
        }
        self.push_direct(snapshot, route, lane, stash, call)
    }

    /// The copies' push ([`push_copies`](Self::push_copies)) on the route to
    /// several subscriptions `view` remembers for `level` and `target`
    /// (apart from the one-subscription route `push_remembered` takes),
    /// after the shutdown check; `Usual` if it is not this call's route.
    /// Called by `publish_made`'s pass after `push_remembered` (and by
    /// `publish_remembered_copies`), not from inside `push_remembered`: a
    /// call there cost the one-subscription route 13 instructions a call
    /// (`benches/README.md`, "Twenty-seventh session").
    #[inline(never)]
    pub(super) fn push_remembered_copies(
        &self,
        view: &mut route::BrokerView,
        level: log::Level,
        target: &str,
        call: &mut impl Make,
    ) -> Direct {
        let Some(RememberedCopies {
            snapshot,
            route,
            lanes,
            stash,
        }) = view.remembered_copies(level, target)
        else {
            return Direct::Usual;
        };
        if self.closed_counted(snapshot, route.ids()) {
            return Direct::Done;
        }
        self.push_copies(snapshot, route, lanes, stash, call)
    }

    /// After shutdown, counts the call on the subscriptions `ids` and says
    /// so, before anything is made of it: the check `publish_in` makes
    /// before the direct path, for a call that takes the remembered route
    /// instead. (A publisher that misses the flag here is caught inside the
    /// gate, in `push_direct` or `push_copies`.)
    #[inline(always)]
    fn closed_counted(&self, snapshot: &Snapshot, ids: &[u32]) -> bool {
        // Acquire: pairs with the SeqCst store in `shutdown`.
        if self.closed.load(Ordering::Acquire) {
            self.count_after_shutdown(snapshot, ids);
            return true;
        }
        false
    }

    /// The direct path on the route this thread's view remembers for
    /// `level` and `target` (the last route a call of a
    /// [`Make::REMEMBERS`] kind took it on), before the caller's path's
    /// other steps: no lookup, no record kept for a re-route. Whether the
    /// call is done; if not (another route, a stale view, a message a slot
    /// does not hold, a re-route under the gate), the caller's path
    /// (`publish_made`) takes it, with the text made if it was. A view
    /// remembers a route only for its snapshot (`refresh` forgets it), so
    /// it is the route a lookup would give.
    ///
    /// Its own small pass through the thread's view: inside
    /// `publish_made`'s, whose frame holds the whole caller's path, a
    /// deferred call read 3-4 ns slower at p50 than here
    /// (`benches/README.md`, "Twenty-sixth session"). A call whose key is
    /// not the remembered one does not enter the view here
    /// (`route::maybe_remembered`): a route to more than [`COPIES`]
    /// subscriptions, or with a predicate, pays only that check and
    /// `maybe_remembered_copies`'s. A call on the copies' route the view
    /// remembers apart takes it in a pass of its own
    /// (`publish_remembered_copies`).
    #[inline(always)]
    pub(crate) fn publish_remembered(
        &self,
        level: log::Level,
        target: &str,
        call: &mut impl Make,
    ) -> bool {
        if !route::maybe_remembered(self.id, level, target) {
            return route::maybe_remembered_copies(self.id, level, target)
                && self.publish_remembered_copies(level, target, call);
        }
        self.remembered_pass(move |view| self.push_remembered(view, level, target, call))
    }

    /// [`publish_remembered`](Self::publish_remembered) on the copies'
    /// route the view remembers apart
    /// ([`push_remembered_copies`](Self::push_remembered_copies)): a pass
    /// of its own, out of line, so that the one-subscription route's pass
    /// stays what it was.
    #[inline(never)]
    fn publish_remembered_copies(
        &self,
        level: log::Level,
        target: &str,
        call: &mut impl Make,
    ) -> bool {
        self.remembered_pass(move |view| self.push_remembered_copies(view, level, target, call))
    }

    /// A pass through this thread's view for a remembered route: `push` on
    /// a view of the current generation; whether it took the call. A
    /// forked child's call, a stale view, or a view gone at thread exit:
    /// not taken, for the caller's path (which counts a forked child's
    /// call before any lock, `fork.rs`, and refreshes a stale view).
    #[inline(always)]
    fn remembered_pass(&self, push: impl FnOnce(&mut route::BrokerView) -> Direct) -> bool {
        if self.in_forked_child() {
            return false;
        }
        route::with_view(
            self.id,
            || self.snapshot(),
            |view| {
                // Acquire: as in `with_view`.
                self.generation.load(Ordering::Acquire) == view.generation()
                    && matches!(push(view), Direct::Done)
            },
        )
        .unwrap_or(false)
    }

    /// The direct path's push on a route to one subscription
    /// ([`direct_route`]): the parts made, their `seq` taken, the gate, the
    /// generation and shutdown re-checks, the push under the overflow
    /// policy.
    #[inline]
    fn push_direct(
        &self,
        snapshot: &Snapshot,
        direct: DirectRoute,
        lane: &mut Option<LaneProducer>,
        stash: &mut Stash,
        call: &mut impl Make,
    ) -> Direct {
        // The stamp before the user's `Display` code, as the usual path's.
        let Some(mut parts) = parts_of(direct.topic, call, crate::clock::stamp()) else {
            return Direct::Usual;
        };
        // The seq is taken once the parts fit a slot: parts that do not (a
        // deferred message's string argument, or too many arguments) take
        // the usual path, which takes its own. Relaxed: see `seq`.
        let take_seq = || self.seq.fetch_add(1, Ordering::Relaxed);
        let Some(item) = Item::parts_with_seq(&mut parts, take_seq) else {
            return Direct::Usual;
        };
        // A subscription replaying from an offset ahead of the journal
        // starts there (`journal/replay.rs`): it skips the record, as
        // `Chosen` says.
        if item.seq() < direct.start {
            return Direct::Done;
        }
        let sub = &*snapshot.entries[direct.index as usize].sub;
        let gate = LaneGate::enter(sub, lane);
        queue::gate_fence();
        // Relaxed, after the fence: as in `publish_usual`.
        if self.generation.load(Ordering::Relaxed) != snapshot.generation {
            // Route again, with the text made; the seq taken is left unused.
            return Direct::Reroute;
        }
        if self.closed.load(Ordering::Relaxed) {
            self.count_after_shutdown(snapshot, &[direct.index]);
            return Direct::Done;
        }
        sub.push_lane(gate.lane, item, |dropped| stash.reclaim(dropped));
        Direct::Done
        // `gate` drops here: the lane leaves, the worker is woken.
    }
}

/// The direct path's route, if `route` is one: one subscription, none
/// with a predicate, no journal or flight recorder, an interned topic.
#[inline(always)]
fn direct_route(snapshot: &Snapshot, route: &route::Route) -> Option<DirectRoute> {
    let [index] = *route.entries else {
        return None;
    };
    let entry = &snapshot.entries[index as usize];
    if route.journal || route.recorders || entry.predicate.is_some() {
        return None;
    }
    Some(DirectRoute {
        index,
        start: entry.start,
        topic: produce::static_topic(&route.topic)?,
    })
}

// `COPIES` (`route.rs`), the most subscriptions a direct call copies its
// parts to: a route to more takes the usual path, one shared record. A copy
// costs the caller about 160 instructions (its push, in logbus; 75 in the
// stand-alone experiment) and a wide ring (128-byte slots) in each
// subscription's lane of the thread; a shared pointer about 57, on top of
// the record's fill (about 210) and its reference and holders counts, which
// every worker then writes from its own core (`benches/README.md`,
// "Fan-out shapes without logbus" and "Nineteenth session"). Past four,
// the copies' instructions and rings outgrow what they save.

impl BrokerShared {
    /// The direct path for a route to two to [`COPIES`] subscriptions,
    /// none with a predicate, and no journal or flight recorder: the parts
    /// are copied into each one's lane under one gate (every lane marked
    /// busy, one fence, the generation re-checked), with a stamp each worker
    /// converts with the anchor of its epoch (`clock::stamp_keyed`), so
    /// that every copy has one time (but in the rare cases `clock/tsc.rs`'s
    /// `keyed_in` lists). Each subscription's overflow policy and counters
    /// see its own copy, as they see the shared record on the usual path.
    ///
    /// Called by the usual path (`publish_usual`, out of line) for every
    /// plain call to several subscriptions before it builds a record, not
    /// from [`publish_direct`](Self::publish_direct): with that branch
    /// there, the one-subscription path's p50 at a call every 2 ms read
    /// 86-105 ns more than before (1 of 8 paired rounds won), and +6-10 ns
    /// (4 of 8) with the branch here (`benches/README.md`). Out of line
    /// too, so that the usual path's frame stays what it was. With the
    /// route, if it is a copies' route ([`copies_route`]): the view
    /// remembers it for the next call of a kind that looks for it
    /// (`Make::REMEMBERS`), which then takes `push_copies` before the
    /// lookup ([`push_remembered_copies`](Self::push_remembered_copies),
    /// [`publish_remembered_copies`](Self::publish_remembered_copies)).
    #[inline(never)]
    pub(super) fn publish_copies(
        &self,
        snapshot: &Snapshot,
        route: &route::Route,
        lanes: &mut [Option<LaneProducer>],
        stash: &mut Stash,
        call: &mut impl Make,
    ) -> (Direct, Option<CopiesRoute>) {
        let Some(copies) = copies_route(snapshot, route) else {
            return (Direct::Usual, None);
        };
        (
            self.push_copies(snapshot, copies, lanes, stash, call),
            Some(copies),
        )
    }

    /// The copies' push on a route to two to [`COPIES`] subscriptions
    /// ([`copies_route`]): the parts made with the converted stamp, their
    /// `seq` taken, the subscriptions whose replay starts ahead left out,
    /// the gate, the generation and shutdown re-checks, a push into each
    /// lane under its overflow policy.
    #[inline]
    fn push_copies(
        &self,
        snapshot: &Snapshot,
        route: CopiesRoute,
        lanes: &mut [Option<LaneProducer>],
        stash: &mut Stash,
        call: &mut impl Make,
    ) -> Direct {
        let Some(mut parts) = parts_of(route.topic, call, crate::clock::stamp_keyed()) else {
            return Direct::Usual;
        };
        // Relaxed: see `seq`; taken only once the parts fit, as on the
        // one-subscription path.
        let take_seq = || self.seq.fetch_add(1, Ordering::Relaxed);
        let Some(Item::Parts(parts)) = Item::parts_with_seq(&mut parts, take_seq) else {
            return Direct::Usual;
        };
        // A subscription replaying from an offset ahead of the journal
        // skips the record (`journal/replay.rs`), as `Chosen` says.
        let mut chosen = [0; COPIES];
        let mut count = 0;
        for &i in route.ids() {
            if parts.seq >= snapshot.entries[i as usize].start {
                chosen[count] = i;
                count += 1;
            }
        }
        let ids = &chosen[..count];
        if ids.is_empty() {
            return Direct::Done;
        }
        let mut gate = CopiesGate::enter(snapshot, lanes, ids);
        queue::gate_fence();
        // Relaxed, after the fence: as in `publish_usual`.
        if self.generation.load(Ordering::Relaxed) != snapshot.generation {
            return Direct::Reroute;
        }
        if self.closed.load(Ordering::Relaxed) {
            // Not in a subscription whose replay starts ahead: the usual
            // path leaves it out too (`count_built_after_shutdown`).
            self.count_after_shutdown(snapshot, ids);
            return Direct::Done;
        }
        for (lane, sub) in gate.lanes.iter_mut().flatten() {
            sub.push_lane(lane, Item::Parts(parts), |dropped| stash.reclaim(dropped));
        }
        Direct::Done
        // `gate` drops here: every lane leaves, the workers are woken.
    }
}

/// The copies' route, if `route` is one: two to [`COPIES`]
/// subscriptions, none with a predicate, no journal or flight recorder, an
/// interned topic.
#[inline(always)]
fn copies_route(snapshot: &Snapshot, route: &route::Route) -> Option<CopiesRoute> {
    let entries = &*route.entries;
    if route.journal
        || route.recorders
        || !(2..=COPIES).contains(&entries.len())
        || entries
            .iter()
            .any(|&i| snapshot.entries[i as usize].predicate.is_some())
    {
        return None;
    }
    let mut ids = [0; COPIES];
    ids[..entries.len()].copy_from_slice(entries);
    Some(CopiesRoute {
        ids,
        count: entries.len() as u8,
        topic: produce::static_topic(&route.topic)?,
    })
}

/// A direct call's parts on the interned `topic`, made on this thread with
/// `stamp`, the message formatted (`Make::text`); their `seq` is set once
/// they are known to fit a slot (`Item::parts_with_seq`). `None` where the
/// call has no text for the direct path: the usual path takes it (with the
/// text made, if it was).
#[inline(always)]
fn parts_of<'c>(
    topic: produce::StaticTopic,
    call: &'c mut impl Make,
    stamp: produce::Stamp,
) -> Option<produce::Parts<'c>> {
    let text = call.text()?;
    Some(produce::Parts {
        seq: 0,
        topic,
        stamp,
        module_path: text.module_path,
        file: text.file,
        line: text.line,
        thread: thread_role::thread_info(),
        message: text.message,
        literal: text.literal,
        deferred: text.deferred,
        kv: text.kv,
    })
}

/// What the direct path did with a call.
pub(super) enum Direct {
    /// Enqueued, or counted (after shutdown), or skipped (a replay's start).
    Done,
    /// Not a direct route, or a message longer than a slot: the usual path
    /// takes it on the same route.
    Usual,
    /// The snapshot changed under the gate: route again.
    Reroute,
}

/// The direct path's gate: [`PublishGate`](super::PublishGate) for one subscription, whose
/// lane the call always uses (a direct call never goes through a temporary
/// view). The lane is marked busy by `enter` (made, wide, if this thread
/// has none yet); dropping the gate leaves it (also on unwinding) and wakes
/// the worker if it said it sleeps, as `PublishGate` does.
struct LaneGate<'v> {
    lane: &'v mut LaneProducer,
    sub: &'v SubShared,
}

impl<'v> LaneGate<'v> {
    /// Marks this thread's lane into `sub` busy; the caller then issues the
    /// fence.
    #[inline]
    fn enter(sub: &'v SubShared, lane: &'v mut Option<LaneProducer>) -> LaneGate<'v> {
        let lane = lane.get_or_insert_with(|| sub.queue.new_lane(true));
        lane.busy().enter();
        LaneGate { lane, sub }
    }
}

impl Drop for LaneGate<'_> {
    /// As [`PublishGate`](super::PublishGate)'s drop, for its one lane.
    #[inline]
    fn drop(&mut self) {
        let cede = leave(self.lane, self.sub);
        self.sub.queue.waker.wake_if_sleeping();
        if cede {
            queue::cede();
        }
    }
}

/// The copies' gate: [`LaneGate`] for each of up to [`COPIES`]
/// subscriptions, as [`PublishGate`](super::PublishGate) is for a chosen
/// set: every lane is marked busy by `enter` (made, wide, where this thread
/// has none yet); dropping the gate leaves every lane, then wakes the
/// workers that said they sleep, then cedes the core if a lane asked
/// (outside every gate). Each lane is held as it is found, not looked up
/// again by its index for each step.
struct CopiesGate<'v> {
    lanes: [Option<(&'v mut LaneProducer, &'v SubShared)>; COPIES],
}

impl<'v> CopiesGate<'v> {
    /// Marks this thread's lanes into the subscriptions `ids` names busy
    /// (`ids`: ascending snapshot indices, at most [`COPIES`], as a route's
    /// entries are); the caller then issues the fence.
    #[inline]
    fn enter(
        snapshot: &'v Snapshot,
        lanes: &'v mut [Option<LaneProducer>],
        ids: &[u32],
    ) -> CopiesGate<'v> {
        debug_assert!(ids.len() <= COPIES, "one lane held per copy");
        let mut gate = CopiesGate {
            lanes: [const { None }; COPIES],
        };
        // Each lane split off the rest in turn: ascending indices give
        // disjoint borrows of the view's lanes.
        let mut rest = lanes;
        let mut base = 0;
        for (held, &i) in gate.lanes.iter_mut().zip(ids) {
            debug_assert!(i as usize >= base, "route entries ascend");
            let (_, from) = std::mem::take(&mut rest).split_at_mut(i as usize - base);
            let (lane, after) = from.split_at_mut(1);
            let lane = &mut lane[0];
            rest = after;
            base = i as usize + 1;
            let sub = &*snapshot.entries[i as usize].sub;
            // Wide from the start: the first parts would widen a narrow ring.
            let lane = lane.get_or_insert_with(|| sub.queue.new_lane(true));
            lane.busy().enter();
            *held = Some((lane, sub));
        }
        gate
    }
}

impl Drop for CopiesGate<'_> {
    /// As [`PublishGate`](super::PublishGate)'s drop, for its lanes.
    #[inline]
    fn drop(&mut self) {
        let mut cede = false;
        for (lane, sub) in self.lanes.iter_mut().flatten() {
            // `|=`, not `||`: every lane's cede state is updated.
            cede |= leave(lane, sub);
        }
        for (_, sub) in self.lanes.iter().flatten() {
            sub.queue.waker.wake_if_sleeping();
        }
        if cede {
            queue::cede();
        }
    }
}
