//! The drain: the worker's end of a subscription's queue. It takes batches
//! from the queue's *sources* merged by `seq`, keeps the worker's copy of
//! the lane list (forgetting the lanes of exited threads as it goes), and
//! draws flush barriers.
//!
//! # Sources and the merge
//!
//! A [`Source`] is anything that holds records in `seq` order and can tell
//! its oldest `seq` without giving the record up: each lane (one thread's
//! records), the shared channel, and the front (a replay, `front.rs`),
//! whose every `seq` is below every live one's, so it simply comes first. A
//! k-way merge on the sources' oldest `seq` gives the appender the records
//! of all threads in `seq` order, as one shared queue would: repeatedly
//! take, from the source with the lowest oldest `seq`, the run of records
//! below the next source's oldest `seq`. A source's head can move under
//! the merge (an evicting publisher); a take is limited by `seq`, so a
//! moved head yields nothing and is read again, and a record never
//! overtakes an older one that was queued when the merge looked.
//!
//! # Flush barriers
//!
//! A [`Barrier`] notes each source's tail index when the flush request is
//! seen: everything enqueued before the request is below it (eviction only
//! removes from the head), so taking until every head passes its mark
//! writes everything the request must wait for.

use logbus_appenders::{__private_api as produce, Record};

use super::budget::Budget;
use super::lane::{Lane, Taker};
use super::shared::SharedChannel;
use super::waker::{self, Work};
use super::Queue;
use crate::sync::{Arc, Ordering};

/// Records in `seq` order that the drain merges with other sources.
pub(crate) trait Source {
    /// The `seq` of the oldest record, if any. A hint: the record may be
    /// taken or evicted meanwhile.
    fn peek_seq(&self) -> Option<u64>;

    /// Takes up to `max` of the oldest records whose `seq` is below `limit`
    /// into `out`; returns how many (0 if the oldest is not below `limit`).
    /// A record that travelled as parts is rebuilt in one of `taker`'s
    /// spares. The records' sizes go back to `bytes`, the queue's byte
    /// bound if it has one, as they leave the source.
    fn take_below(
        &self,
        limit: u64,
        max: usize,
        out: &mut Vec<Arc<Record>>,
        taker: &mut Taker,
        bytes: Option<&Budget>,
    ) -> usize;
}

impl Source for Lane {
    fn peek_seq(&self) -> Option<u64> {
        Lane::peek_seq(self)
    }

    fn take_below(
        &self,
        limit: u64,
        max: usize,
        out: &mut Vec<Arc<Record>>,
        taker: &mut Taker,
        bytes: Option<&Budget>,
    ) -> usize {
        Lane::take_below(self, limit, max, out, taker, bytes)
    }
}

/// The worker's end of a queue.
pub(crate) struct Drain {
    /// The lanes this drain takes from: the queue's registry as of version
    /// `lanes_seen`.
    lanes: Vec<Arc<Lane>>,
    lanes_seen: usize,
    /// Scratch for the merge: each source's oldest `seq`.
    heads: Vec<Option<u64>>,
    /// The worker's records to rebuild records that travelled as parts
    /// in (`slot.rs`), fed by its written batches (`recycle::Spares`), and
    /// its buffer of slot readings.
    pub(crate) taker: Taker,
    /// The highest `seq` taken since [`take_newest`](Drain::take_newest)
    /// last asked, noted as each take ends, from the record it wrote last
    /// (still in the core's cache): the worker's cursor, without a pass
    /// over the batch.
    newest: Option<u64>,
}

/// What a flush must wait for: see the module docs.
pub(crate) struct Barrier {
    /// The shared channel's tail index at the request.
    shared: usize,
    /// Each lane and the `tail` it had at the request.
    marks: Vec<(Arc<Lane>, usize)>,
}

impl Barrier {
    fn reached(&self, queue: &Queue) -> bool {
        queue.front.len() == 0
            && queue.shared.head() >= self.shared
            && self.marks.iter().all(|(lane, mark)| lane.head() >= *mark)
    }
}

impl Drain {
    pub(crate) fn new() -> Drain {
        Drain {
            lanes: Vec::new(),
            lanes_seen: usize::MAX,
            heads: Vec::new(),
            taker: Taker::default(),
            newest: None,
        }
    }

    /// Takes queued records into `batch` until it holds `max`, from every
    /// source merged in `seq` order; returns how many it added. Their bytes
    /// leave the byte budget as each source gives them up (before a record
    /// that travelled as parts is rebuilt), and the worker's thread notes
    /// that it took them (`clock::note_taken`). Forgets the lanes it finds
    /// finished.
    pub(crate) fn take_batch(
        &mut self,
        queue: &Queue,
        batch: &mut Vec<Arc<Record>>,
        max: usize,
    ) -> usize {
        if queue.front.is_active() {
            // Held: nothing may overtake the replay still to come. Front
            // records are outside the byte budget.
            if queue.front.is_held() {
                return 0;
            }
            let taken = queue.front.take(max.saturating_sub(batch.len()), batch);
            if taken > 0 {
                note_newest(&mut self.newest, batch);
                crate::clock::note_taken();
                return taken;
            }
        }
        self.refresh(queue);
        let before = batch.len();
        self.taker.rebuilt = 0;
        merge(
            &self.lanes,
            &queue.shared,
            &mut self.heads,
            batch,
            max,
            &mut self.taker,
            &mut self.newest,
            queue.bytes.as_ref(),
        );
        if batch.len() > before {
            crate::clock::note_taken();
            // After the note, as a render of them would, but without a
            // compare-and-swap each: when every record taken is one the
            // take rebuilt (the direct path's), none is shared. (A take
            // with shared ones leaves each to its first reader.)
            if self.taker.rebuilt == batch.len() - before {
                for record in &batch[before..] {
                    produce::settle_time(record);
                }
            }
        }
        self.forget_finished(queue);
        batch.len() - before
    }

    /// The highest `seq` taken since the last call, if any was: a source
    /// gives its records in `seq` order, so each take's last record is its
    /// highest. A hint, like the cursor it moves (`SubShared::cursor`).
    pub(crate) fn take_newest(&mut self) -> Option<u64> {
        self.newest.take()
    }

    /// The worker's look before it parks (`waker::look_all`, whose order
    /// the loom models check): each source's gate first, then its records;
    /// then new lanes, the registry's version read last.
    pub(crate) fn look(&self, queue: &Queue) -> Work {
        if queue.front.is_active() {
            // Held, the worker sleeps until `Front::fill` wakes it.
            return Work::from(!queue.front.is_held());
        }
        let shared =
            std::iter::once_with(|| waker::look(queue.gate.is_set(), || queue.shared.len() > 0));
        let lanes = self
            .lanes
            .iter()
            .map(|lane| waker::look(lane.busy().is_set(), || lane.len() > 0));
        // Acquire: pairs with `Registry::change`.
        let added = || queue.registry.version.load(Ordering::Acquire) != self.lanes_seen;
        waker::look_all(shared.chain(lanes), added)
    }

    /// Forgets lanes whose publisher is gone and which are drained: the
    /// lanes of exited threads, which would otherwise pile up (and be
    /// scanned by every take) while the worker is busy.
    pub(crate) fn forget_finished(&mut self, queue: &Queue) {
        if !self.lanes.iter().any(|lane| lane.is_finished()) {
            return;
        }
        let version = queue
            .registry
            .change(|lanes| lanes.retain(|lane| !lane.is_finished()));
        // The change bumped the version; anything registered meanwhile is in
        // the list, which we copy whole.
        self.lanes_seen = queue.registry.copy(&mut self.lanes).max(version);
    }

    /// Notes what a flush requested now must wait for.
    pub(crate) fn barrier(&mut self, queue: &Queue) -> Barrier {
        let shared = queue.shared.tail();
        self.refresh(queue);
        let marks = self
            .lanes
            .iter()
            .map(|lane| (Arc::clone(lane), lane.tail()))
            .collect();
        Barrier { shared, marks }
    }

    /// Takes the next records towards `barrier` into `batch` (up to `max`),
    /// merged as usual (records published after the request may come along;
    /// each round takes the lowest `seq`s first, so the marks are reached);
    /// returns how many, 0 once the barrier is reached or what it waited
    /// for was evicted meanwhile.
    pub(crate) fn take_towards(
        &mut self,
        barrier: &Barrier,
        queue: &Queue,
        batch: &mut Vec<Arc<Record>>,
        max: usize,
    ) -> usize {
        if barrier.reached(queue) {
            return 0;
        }
        self.take_batch(queue, batch, max)
    }

    /// Picks up lanes registered (or forgotten) since we last looked.
    fn refresh(&mut self, queue: &Queue) {
        // Acquire: pairs with `Registry::change`.
        if queue.registry.version.load(Ordering::Acquire) != self.lanes_seen {
            self.lanes_seen = queue.registry.copy(&mut self.lanes);
        }
    }
}

/// Fills `batch` up to `max` from the lanes and the shared channel, merged
/// in `seq` order (see the module docs), giving their sizes back to
/// `bytes`. `heads` is scratch space.
#[allow(clippy::too_many_arguments)]
fn merge(
    lanes: &[Arc<Lane>],
    shared: &SharedChannel,
    heads: &mut Vec<Option<u64>>,
    batch: &mut Vec<Arc<Record>>,
    max: usize,
    taker: &mut Taker,
    newest: &mut Option<u64>,
    bytes: Option<&Budget>,
) {
    let source = |i: usize| -> &dyn Source {
        match lanes.get(i) {
            Some(lane) => &**lane,
            None => shared,
        }
    };
    if let ([only], 0) = (lanes, shared.len()) {
        if only.take_below(
            u64::MAX,
            max.saturating_sub(batch.len()),
            batch,
            taker,
            bytes,
        ) > 0
        {
            note_newest(newest, batch);
        }
        return;
    }
    // The oldest `seq` of each source, read once and then again only for
    // the source we took from: the others' oldest records stay put (or are
    // evicted, which only makes our value a harmless underestimate).
    // Sources that were empty wait for the next batch.
    heads.clear();
    heads.extend((0..=lanes.len()).map(|i| source(i).peek_seq()));
    while batch.len() < max {
        let mut lowest: Option<(usize, u64)> = None;
        let mut next = u64::MAX;
        for (i, head) in heads.iter().enumerate() {
            let Some(seq) = *head else { continue };
            match lowest {
                Some((_, low)) if seq >= low => next = next.min(seq),
                _ => {
                    if let Some((_, low)) = lowest {
                        next = next.min(low);
                    }
                    lowest = Some((i, seq));
                }
            }
        }
        let Some((i, low)) = lowest else { break };
        // Our value may be stale: a publisher may have evicted the records
        // we saw. Look again before taking, so that the source's real
        // oldest record does not overtake another source's.
        let now = source(i).peek_seq();
        if now == Some(low) {
            // Seqs are unique; should two heads tie, take one of them.
            let limit = next.max(low + 1);
            if source(i).take_below(limit, max - batch.len(), batch, taker, bytes) > 0 {
                note_newest(newest, batch);
            }
        }
        heads[i] = source(i).peek_seq();
    }
}

/// Notes the `seq` of `batch`'s last record, which a take just added, in
/// `newest`.
fn note_newest(newest: &mut Option<u64>, batch: &[Arc<Record>]) {
    *newest = (*newest).max(batch.last().map(|record| record.seq()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::budget::Budget;
    use crate::queue::test_record as record;
    use crate::queue::OverflowPolicy;
    use crate::stats::Counters;
    use crate::sync::lock;
    use logbus_appenders::{Level, Topic};

    fn seqs(batch: &[Arc<Record>]) -> Vec<u64> {
        batch.iter().map(|r| r.seq()).collect()
    }

    #[test]
    fn lanes_and_the_shared_channel_come_out_in_seq_order() {
        let (queue, mut drain) = Queue::new(64, None, OverflowPolicy::Block);
        let counters = Counters::default();
        let (mut a, mut b) = (queue.new_lane(false), queue.new_lane(false));
        for seq in [0, 3, 4, 8] {
            queue.push_lane(&mut a, record(seq), &counters, drop);
        }
        for seq in [1, 2, 5, 7] {
            queue.push_lane(&mut b, record(seq), &counters, drop);
        }
        queue.push_shared(record(6), &counters);
        let mut batch = Vec::new();
        assert_eq!(drain.look(&queue), Work::Ready);
        assert_eq!(drain.take_batch(&queue, &mut batch, 5), 5);
        assert_eq!(seqs(&batch), [0, 1, 2, 3, 4]);
        batch.clear();
        drain.take_batch(&queue, &mut batch, 100);
        assert_eq!(seqs(&batch), [5, 6, 7, 8]);
        assert_eq!(drain.look(&queue), Work::None);
        a.busy().enter();
        assert_eq!(drain.look(&queue), Work::Busy);
    }

    /// A take whose records all travelled as parts converts their times as
    /// it takes them (no compare-and-swap on a first read later); one with
    /// a shared record among them leaves each to its first reader.
    #[test]
    fn a_take_of_rebuilt_records_converts_their_times() {
        use crate::queue::{test_parts, Item};
        use crate::sync::AtomicUsize;
        use logbus_appenders::__private_api::{Parts, Stamp};
        static CONVERSIONS: AtomicUsize = AtomicUsize::new(0);
        fn convert(ticks: u64) -> i64 {
            CONVERSIONS.fetch_add(1, Ordering::Relaxed);
            ticks as i64 * 1_000
        }
        let converted = || CONVERSIONS.load(Ordering::Relaxed);
        let (queue, mut drain) = Queue::new(64, None, OverflowPolicy::Block);
        let counters = Counters::default();
        let mut lane = queue.new_lane(true);
        let thread = crate::thread_role::thread_info();
        let mut push = |seq: u64, shared: bool| {
            let parts = Parts {
                stamp: Stamp::Ticks(seq + 1, convert),
                ..test_parts(seq, "m", thread)
            };
            let item = Item::parts(&parts).unwrap();
            let item = if shared {
                Item::Shared(item.into_record())
            } else {
                item
            };
            lane.busy().enter();
            queue.push_lane(&mut lane, item, &counters, drop);
            lane.leave();
        };
        for seq in 0..3 {
            push(seq, false);
        }
        let mut batch = Vec::new();
        assert_eq!(drain.take_batch(&queue, &mut batch, 10), 3);
        assert_eq!(converted(), 3, "each converted as it was taken");
        let times: Vec<_> = batch.iter().map(|r| r.time()).collect();
        assert_eq!(converted(), 3, "and kept");
        let second = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(2);
        assert_eq!(times[1], second);

        push(3, false);
        push(4, true);
        batch.clear();
        assert_eq!(drain.take_batch(&queue, &mut batch, 10), 2);
        assert_eq!(converted(), 3, "a take with a shared record converts none");
        batch.iter().for_each(|r| {
            let _ = r.time();
        });
        assert_eq!(converted(), 5, "each reader's first read does");
    }

    #[test]
    fn a_barrier_takes_what_was_queued_before_it() {
        let (queue, mut drain) = Queue::new(64, None, OverflowPolicy::Block);
        let counters = Counters::default();
        let mut lane = queue.new_lane(false);
        for seq in 0..10 {
            queue.push_lane(&mut lane, record(seq), &counters, drop);
        }
        let barrier = drain.barrier(&queue);
        queue.push_lane(&mut lane, record(10), &counters, drop);
        let mut written = Vec::new();
        let mut batch = Vec::new();
        while drain.take_towards(&barrier, &queue, &mut batch, 4) > 0 {
            written.extend(seqs(&batch));
            batch.clear();
        }
        // Rounds of 4: the third round brings the later record along.
        assert_eq!(written, (0..=10).collect::<Vec<_>>());
        assert_eq!(drain.take_towards(&barrier, &queue, &mut batch, 4), 0);
    }

    #[test]
    fn finished_lanes_are_forgotten_once_drained() {
        let (queue, mut drain) = Queue::new(8, None, OverflowPolicy::Block);
        let counters = Counters::default();
        let mut lane = queue.new_lane(false);
        queue.push_lane(&mut lane, record(0), &counters, drop);
        drop(lane);
        let mut batch = Vec::new();
        drain.forget_finished(&queue);
        assert_eq!(lock(&queue.registry.lanes).len(), 1, "not drained yet");
        // The take that drains it forgets it, busy or not.
        drain.take_batch(&queue, &mut batch, 8);
        assert_eq!(lock(&queue.registry.lanes).len(), 0);
        assert_eq!(queue.len(), 0);
    }

    /// A linger round that takes a shared record older than the batch's
    /// first gives back exactly the bytes it took (a review found an earlier
    /// drain, which sorted the batch, giving back the wrong records' bytes).
    /// The record comes after the round before it: it was not queued when
    /// that round looked.
    #[test]
    fn linger_rounds_give_back_exactly_the_bytes_they_took() {
        let (queue, mut drain) = Queue::new(64, Some(1 << 20), OverflowPolicy::DropNewest);
        let counters = Counters::default();
        let mut lane = queue.new_lane(false);
        let big = Record::builder(Topic::new(Level::Info, "t"))
            .seq(10)
            .message("x".repeat(1000))
            .build();
        queue.push_lane(&mut lane, Arc::new(big), &counters, drop);
        let mut batch = Vec::new();
        assert_eq!(drain.take_batch(&queue, &mut batch, 512), 1);
        {
            let _pass = queue.enter_shared();
            queue.push_shared(record(5), &counters);
        }
        queue.push_lane(&mut lane, record(11), &counters, drop);
        assert_eq!(drain.take_batch(&queue, &mut batch, 512), 2);
        assert_eq!(seqs(&batch), [10, 5, 11]);
        assert_eq!(queue.bytes.as_ref().map(Budget::used), Some(0));
    }
}
