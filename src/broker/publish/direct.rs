//! The direct path of the caller's path (`mod.rs` is the rest): a plain
//! or deferred record routed to one to [`COPIES`] subscriptions, none with
//! a predicate, and no journal or flight recorder, travels as its parts,
//! copied into each subscription's lane (`queue/slot.rs`); no record is
//! built on the caller's thread, and each worker builds its own. One
//! subscription takes [`publish_direct`](BrokerShared::publish_direct)'s
//! [`LaneGate`], its one lane; several take
//! [`publish_copies`](BrokerShared::publish_copies), which the usual path
//! offers them first, through [`CopiesGate`] (a [`LaneGate`] for each
//! lane), with the stamp converted on this thread so that the copies have
//! one time. Every step
//! the usual path takes for a record (`seq`, the gate, the generation and
//! shutdown re-checks, the overflow policy, the wake-up) is taken here for
//! the parts, in the same order.

use logbus_appenders::__private_api as produce;

use super::{leave, Make};
use crate::broker::BrokerShared;
use crate::queue::{self, Item, LaneProducer};
use crate::recycle::Stash;
use crate::route::{self, Snapshot};
use crate::subscription::SubShared;
use crate::sync::Ordering;
use crate::thread_role;

impl BrokerShared {
    /// The direct path on a route the usual path looked up. If it does not
    /// take the call, the usual path does, with the message formatted
    /// already if `call.text` was called.
    pub(super) fn publish_direct(
        &self,
        snapshot: &Snapshot,
        route: &route::Route,
        lanes: &mut [Option<LaneProducer>],
        stash: &mut Stash,
        call: &mut impl Make,
    ) -> Direct {
        let [i] = *route.entries else {
            return Direct::Usual;
        };
        let entry = &snapshot.entries[i as usize];
        if route.journal || route.recorders || entry.predicate.is_some() {
            return Direct::Usual;
        }
        // The stamp before the user's `Display` code, as the usual path's.
        let Some(mut parts) = parts_of(route, call, crate::clock::stamp()) else {
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
        if item.seq() < entry.start {
            return Direct::Done;
        }
        let sub = &*entry.sub;
        let gate = LaneGate::enter(sub, &mut lanes[i as usize]);
        queue::gate_fence();
        // Relaxed, after the fence: as in `publish_usual`.
        if self.generation.load(Ordering::Relaxed) != snapshot.generation {
            // Route again, with the text made; the seq taken is left unused.
            return Direct::Reroute;
        }
        if self.closed.load(Ordering::Relaxed) {
            self.count_after_shutdown(snapshot, &route.entries);
            return Direct::Done;
        }
        sub.push_lane(gate.lane, item, |dropped| stash.reclaim(dropped));
        Direct::Done
        // `gate` drops here: the lane leaves, the worker is woken.
    }
}

/// The most subscriptions a direct call copies its parts to; a route to
/// more takes the usual path, one shared record. A copy costs the caller
/// about 160 instructions (its push, in logbus; 75 in the stand-alone
/// experiment) and a wide ring (128-byte slots) in each subscription's
/// lane of the thread; a shared pointer about 57, on top of the record's
/// fill (about 210) and its reference and holders counts, which every
/// worker then writes from its own core (`benches/README.md`, "Fan-out
/// shapes without logbus" and "Nineteenth session"). Past four, the
/// copies' instructions and rings outgrow what they save.
const COPIES: usize = 4;

impl BrokerShared {
    /// The direct path for a route to two to [`COPIES`] subscriptions,
    /// none with a predicate, and no journal or flight recorder: the parts
    /// are copied into each one's lane under one gate (every lane marked
    /// busy, one fence, the generation re-checked), with the stamp
    /// converted on this thread (`clock::stamp_converted`), so that every
    /// copy has one time. Each subscription's overflow policy and counters
    /// see its own copy, as they see the shared record on the usual path.
    ///
    /// Called by the usual path (`publish_usual`, out of line) for every
    /// plain call to several subscriptions before it builds a record, not
    /// from [`publish_direct`](Self::publish_direct): with that branch
    /// there, the one-subscription path's p50 at a call every 2 ms read
    /// 86-105 ns more than before (1 of 8 paired rounds won), and +6-10 ns
    /// (4 of 8) with the branch here (`benches/README.md`). Out of line
    /// too, so that the usual path's frame stays what it was.
    #[inline(never)]
    pub(super) fn publish_copies(
        &self,
        snapshot: &Snapshot,
        route: &route::Route,
        lanes: &mut [Option<LaneProducer>],
        stash: &mut Stash,
        call: &mut impl Make,
    ) -> Direct {
        let entries = &*route.entries;
        let entry = |i: u32| &snapshot.entries[i as usize];
        if route.journal
            || route.recorders
            || entries.len() > COPIES
            || entries.iter().any(|&i| entry(i).predicate.is_some())
        {
            return Direct::Usual;
        }
        let Some(mut parts) = parts_of(route, call, crate::clock::stamp_converted()) else {
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
        for &i in entries {
            if parts.seq >= entry(i).start {
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

/// A direct call's parts on `route`, made on this thread with `stamp`, the
/// message formatted (`Make::text`); their `seq` is set once they are known
/// to fit a slot (`Item::parts_with_seq`). `None` where the topic is not
/// interned or the call has no text for the direct path: the usual path
/// takes it (with the text made, if it was).
#[inline(always)]
fn parts_of<'c>(
    route: &route::Route,
    call: &'c mut impl Make,
    stamp: produce::Stamp,
) -> Option<produce::Parts<'c>> {
    let topic = produce::static_topic(&route.topic)?;
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
            lanes: [None, None, None, None],
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
