//! One anchor per epoch of ticks, shared by every converting thread: how
//! the copies of a record, converted by several workers, get one time.
//!
//! A record that travels as copies to several workers (the direct path's
//! fan-out) carries the caller's counter reading, as every record does.
//! Each worker converting it with its own thread's anchor would print
//! times a few nanoseconds apart (`convert.rs`, "Accuracy"), so copies are
//! converted with the anchor of their *epoch*, the ticks' high bits
//! (`ticks >> shift`, an epoch no longer than 0.5 ms, `tsc.rs`): the first
//! thread to convert a tick of an epoch publishes the anchor it read in
//! the epoch's [`Slot`], and every conversion of that epoch's ticks, on
//! any thread, uses it. This file is that slot and its protocol; `tsc.rs`
//! keeps the table of slots and decides what an anchor is.
//!
//! # Protocol
//!
//! A slot holds a tag (the epoch, the fork generation of its last claim, a
//! state: `VACANT`, `WRITING`, `READY`) and the anchor's words. The tag's
//! epoch never decreases.
//!
//! - **Finding** an epoch's anchor ([`Slot::find`]): load the tag
//!   (`Acquire`). `READY` for the epoch: load the words (`Relaxed`), issue
//!   an `Acquire` fence, load the tag again (`Relaxed`); unchanged, the
//!   words are the anchor, else the slot was taken by a later epoch
//!   meanwhile: look at that tag. A later epoch's tag: the anchor is
//!   [`Found::Gone`]. `WRITING` (this or an earlier epoch) by this process:
//!   the writer is a few stores from done; wait for it, loading the tag
//!   again. Otherwise (vacant, an earlier epoch's anchor, or a claim made
//!   before a fork by a thread that did not come along): [`Found::Vacant`].
//! - **Publishing** one ([`Slot::publish`]): claim the slot with a
//!   compare-and-swap from the tag seen vacant to `WRITING` for the epoch
//!   (`Acquire`), issue a `Release` fence, store the words (`Relaxed`),
//!   store `READY` (`Release`). A failed claim looks at the tag it read:
//!   another thread's anchor for the epoch, which it then takes, or a tag
//!   still vacant to claim from.
//!
//! **Why every thread takes one anchor for an epoch.** A claim succeeds
//! only from a vacant tag of the epoch or an earlier one, and moves the
//! tag to the epoch's `WRITING`; after it no claim for the epoch succeeds
//! (the tag is the epoch's, `WRITING` or `READY`, until a later epoch's
//! claim), but in a forked child, over a claim its parent's writer never
//! finished there, of which no thread of the child can have taken an
//! anchor. So one writer publishes each epoch's anchor in a process, and a
//! finder takes only a `READY` tag of its epoch.
//!
//! **Why a finder's words are that writer's, whole.** Its `Acquire` load
//! of `READY` reads the writer's `Release` store, so the writer's words,
//! and every earlier writer's (each claim's `Acquire` reads the previous
//! `READY`, so their stores come before in every word's modification
//! order), happen before its loads: it reads the writer's words or later
//! ones. A later one is a later epoch's writer's store, made after that
//! writer's `Release` fence; the finder's `Acquire` fence after the load
//! that read it then synchronises with that fence, so the later claim
//! happens before the finder's second load of the tag, which reads that
//! claim's tag or a later one, not the `READY` it began with. (The
//! sequence lock's argument, with the writer's claim as its odd count.)
//!
//! A writer waited for is a few stores from `READY`, unless it was
//! preempted; a finder waits for it, spinning and yielding its core, up to
//! [`YIELDS`] yields (a millisecond or more), then gives up
//! ([`Found::Busy`]: a writer of lower priority than a real-time finder on
//! its core never runs). The fork generation in the tag (its low
//! [`GENERATION_BITS`] bits: a child 65,536 forks deep mistakes its
//! ancestor's claim for its own) tells a claim by a thread that is gone.
//! Not covered: a fork from a signal handler that interrupted a conversion
//! between its claim and `READY` (the child's interrupted writer then
//! races a child's claim over it). `loom/src/keyed.rs` model-checks the
//! protocol on this code, with the broken variants it rules out (a finder
//! without the second load reads words torn between two epochs' anchors;
//! a publisher without the claim publishes two anchors for one epoch).

use crate::sync::{fence, spin_loop, thread, AtomicU64, Ordering};

/// A tag's state, in its low two bits; the fork generation above them,
/// then the epoch.
const STATE: u64 = 0b11;
const VACANT: u64 = 0;
const WRITING: u64 = 1;
const READY: u64 = 2;

/// The fork generation's bits in a tag (its low bits).
pub(crate) const GENERATION_BITS: u32 = 16;

/// Where a tag's epoch starts: an epoch must be below `2^(64 - EPOCH_AT)`.
pub(crate) const EPOCH_AT: u32 = 2 + GENERATION_BITS;

/// Spins of a finder that waits for a writer before each yield of its
/// core: the writer is a few stores from done unless it was preempted.
const SPINS: u32 = 64;

/// Yields of a finder that waits for a writer before it gives up, each
/// after [`SPINS`] spins: a millisecond or more if the writer does not run.
const YIELDS: u32 = 1024;

/// One epoch's anchor at a time, as `N` words; a cache line of its own
/// (neighbouring epochs' slots are written by their writers).
#[derive(Debug)]
#[repr(align(64))]
pub(crate) struct Slot<const N: usize> {
    tag: AtomicU64,
    words: [AtomicU64; N],
}

/// A tag a finder saw: vacant for its epoch, to claim from
/// ([`Slot::publish`]), or a writer's it gave up waiting for
/// ([`Slot::holds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seen(u64);

/// What a slot holds for an epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found<const N: usize> {
    /// The epoch's anchor, as its writer published it.
    Anchor([u64; N]),
    /// A later epoch holds the slot: this epoch's anchor is gone.
    Gone,
    /// No anchor for the epoch yet (the slot is vacant or an earlier
    /// epoch's): publish one, claiming from what was seen.
    Vacant(Seen),
    /// A writer of the epoch (or an earlier one) in this process did not
    /// finish within [`YIELDS`] yields: no anchor; the slot held what was
    /// seen ([`Slot::holds`]).
    Busy(Seen),
}

/// The fork generation's bits, as a tag keeps them.
const GENERATION_MASK: u64 = (1 << GENERATION_BITS) - 1;

/// A tag's epoch.
fn epoch_of(tag: u64) -> u64 {
    tag >> EPOCH_AT
}

/// The tag of `epoch` in `state`, claimed in fork generation `generation`.
fn tag(epoch: u64, generation: u64, state: u64) -> u64 {
    epoch << EPOCH_AT | (generation & GENERATION_MASK) << 2 | state
}

/// Whether `tag` was claimed in fork generation `generation`.
fn claimed_in(tag: u64, generation: u64) -> bool {
    (tag >> 2) & GENERATION_MASK == generation & GENERATION_MASK
}

impl<const N: usize> Slot<N> {
    /// A vacant slot.
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Slot<N> {
        Slot {
            tag: AtomicU64::new(VACANT),
            words: [const { AtomicU64::new(0) }; N],
        }
    }

    /// A vacant slot (loom's atomics are not made in constants).
    #[cfg(loom)]
    pub(crate) fn new() -> Slot<N> {
        Slot {
            tag: AtomicU64::new(VACANT),
            words: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// The anchor of `epoch` (below `2^(64 - EPOCH_AT)`), if the slot
    /// holds it, in fork generation `generation` (`fork::generation`; see
    /// the module's protocol).
    pub(crate) fn find(&self, epoch: u64, generation: u64) -> Found<N> {
        // Acquire: pairs with the writer's `Release` store of `READY`.
        self.look(epoch, generation, self.tag.load(Ordering::Acquire))
    }

    /// [`find`](Slot::find), from `tag`, loaded with `Acquire` (or read by
    /// a failed claim).
    fn look(&self, epoch: u64, generation: u64, mut tag: u64) -> Found<N> {
        let (mut spins, mut yields) = (0, 0);
        loop {
            if epoch_of(tag) > epoch {
                return Found::Gone;
            }
            match tag & STATE {
                READY if epoch_of(tag) == epoch => {
                    let words = std::array::from_fn(|i| self.words[i].load(Ordering::Relaxed));
                    // Acquire: a word stored by a later epoch's writer makes
                    // its claim visible to the load below.
                    fence(Ordering::Acquire);
                    let again = self.tag.load(Ordering::Relaxed);
                    if again == tag {
                        return Found::Anchor(words);
                    }
                    // A later epoch's claim: look at what was read.
                    tag = again;
                    continue;
                }
                WRITING if claimed_in(tag, generation) => {
                    spins += 1;
                    // Under loom, which runs one thread at a time, a yield
                    // each time.
                    if cfg!(loom) || spins % SPINS == 0 {
                        yields += 1;
                        if yields == YIELDS {
                            return Found::Busy(Seen(tag));
                        }
                        thread::yield_now();
                    } else {
                        spin_loop();
                    }
                }
                _ => return Found::Vacant(Seen(tag)),
            }
            // Acquire, as in `find`.
            tag = self.tag.load(Ordering::Acquire);
        }
    }

    /// Whether the slot still holds what was `seen` (a finder that found
    /// it [`Found::Busy`] need not wait again for the same claim).
    pub(crate) fn holds(&self, seen: Seen) -> bool {
        self.tag.load(Ordering::Relaxed) == seen.0
    }

    /// Publishes `words` as the anchor of `epoch`, claiming the slot from
    /// `seen` (which [`find`](Slot::find) returned for `epoch`) in fork
    /// generation `generation`, unless another thread published one first:
    /// returns the epoch's anchor (these words or the other thread's), or
    /// [`Found::Gone`] if a later epoch took the slot meanwhile, or
    /// [`Found::Busy`]. Never [`Found::Vacant`].
    pub(crate) fn publish(
        &self,
        epoch: u64,
        generation: u64,
        seen: Seen,
        words: [u64; N],
    ) -> Found<N> {
        let mut seen = seen;
        loop {
            // Acquire: pairs with the previous writer's `Release` store of
            // `READY`, so that its words come before ours in every word's
            // modification order; and on failure with this epoch's writer's.
            let claim = self.tag.compare_exchange(
                seen.0,
                tag(epoch, generation, WRITING),
                Ordering::Acquire,
                Ordering::Acquire,
            );
            if let Err(now) = claim {
                match self.look(epoch, generation, now) {
                    Found::Vacant(now) => seen = now,
                    found => return found,
                }
                continue;
            }
            // Release: a finder whose load reads one of the words below
            // then sees the claim (the module's argument).
            fence(Ordering::Release);
            for (word, value) in self.words.iter().zip(words) {
                word.store(value, Ordering::Relaxed);
            }
            // Release: pairs with the finders' `Acquire` load.
            self.tag
                .store(tag(epoch, generation, READY), Ordering::Release);
            return Found::Anchor(words);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sync::{thread, Arc, Barrier};

    /// This process's fork generation in the tests.
    const GENERATION: u64 = 3;

    /// An anchor of `epoch` published by `writer`: each word says both.
    fn words(epoch: u64, writer: u64) -> [u64; 3] {
        [epoch << 8 | writer; 3]
    }

    fn published(slot: &Slot<3>, epoch: u64, writer: u64) -> Found<3> {
        match slot.find(epoch, GENERATION) {
            Found::Vacant(seen) => slot.publish(epoch, GENERATION, seen, words(epoch, writer)),
            found => found,
        }
    }

    #[test]
    fn an_epochs_anchor_is_the_first_published_until_a_later_epoch_takes_the_slot() {
        let slot = Slot::<3>::new();
        assert_eq!(slot.find(5, GENERATION), Found::Vacant(Seen(0)));
        assert_eq!(published(&slot, 5, 1), Found::Anchor(words(5, 1)));
        assert_eq!(published(&slot, 5, 2), Found::Anchor(words(5, 1)));
        // An earlier epoch's claim from what it saw before fails, and finds
        // a later epoch's anchor: gone.
        assert_eq!(slot.find(4, GENERATION), Found::Gone);
        assert_eq!(
            slot.publish(4, GENERATION, Seen(0), words(4, 3)),
            Found::Gone
        );
        // A later epoch claims from the earlier one's anchor.
        assert!(matches!(slot.find(9, GENERATION), Found::Vacant(_)));
        assert_eq!(published(&slot, 9, 4), Found::Anchor(words(9, 4)));
        assert_eq!(slot.find(5, GENERATION), Found::Gone);
        assert_eq!(slot.find(9, GENERATION), Found::Anchor(words(9, 4)));
        // A claim from a tag seen before a later claim fails, and takes
        // the later one's anchor.
        let before = match slot.find(12, GENERATION) {
            Found::Vacant(seen) => seen,
            found => panic!("{found:?}"),
        };
        assert_eq!(published(&slot, 12, 5), Found::Anchor(words(12, 5)));
        assert_eq!(
            slot.publish(12, GENERATION, before, words(12, 6)),
            Found::Anchor(words(12, 5))
        );
        // The largest epoch a tag holds.
        let last = u64::MAX >> EPOCH_AT;
        assert_eq!(published(&slot, last, 7), Found::Anchor(words(last, 7)));
        assert_eq!(slot.find(last, GENERATION), Found::Anchor(words(last, 7)));
    }

    /// A claim a writer of this process has not finished is waited for, up
    /// to a bound; one made in another fork generation (a parent's writer,
    /// which the child does not have) is claimed over.
    #[test]
    fn an_unfinished_claim_is_waited_for_in_its_process_and_claimed_over_in_a_child() {
        let slot = Slot::<3>::new();
        let writing = tag(8, GENERATION, WRITING);
        slot.tag.store(writing, Ordering::Relaxed);
        assert_eq!(slot.find(8, GENERATION), Found::Busy(Seen(writing)));
        assert!(slot.holds(Seen(writing)));
        assert_eq!(
            slot.find(9, GENERATION),
            Found::Busy(Seen(writing)),
            "an earlier epoch's"
        );
        assert_eq!(slot.find(7, GENERATION), Found::Gone, "a later epoch's");
        // In a child, one fork further.
        assert_eq!(
            slot.find(8, GENERATION + 1),
            Found::Vacant(Seen(tag(8, GENERATION, WRITING)))
        );
        let child = GENERATION + 1;
        match slot.find(8, child) {
            Found::Vacant(seen) => {
                assert_eq!(
                    slot.publish(8, child, seen, words(8, 2)),
                    Found::Anchor(words(8, 2))
                );
            }
            found => panic!("{found:?}"),
        }
        assert_eq!(slot.find(8, child), Found::Anchor(words(8, 2)));
        assert!(!slot.holds(Seen(writing)));
        assert_eq!(
            slot.find(8, GENERATION + (1 << GENERATION_BITS)),
            Found::Anchor(words(8, 2)),
            "a ready anchor is any generation's"
        );
    }

    /// Threads that each publish their own anchor for one epoch all take
    /// the same one, whole, while another thread moves the slot on to later
    /// epochs: each takes the first writer's anchor of its epoch or finds it
    /// gone.
    #[test]
    fn racing_publishers_of_an_epoch_take_one_anchor() {
        const THREADS: u64 = 4;
        const ROUNDS: u64 = if cfg!(miri) { 5 } else { 500 };
        let slot = Arc::new(Slot::<3>::new());
        let barrier = Arc::new(Barrier::new(THREADS as usize + 1));
        let threads: Vec<_> = (0..THREADS)
            .map(|writer| {
                let (slot, barrier) = (Arc::clone(&slot), Arc::clone(&barrier));
                thread::spawn(move || {
                    (0..ROUNDS)
                        .map(|round| {
                            barrier.wait();
                            published(&slot, round * 2 + 1, writer)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mover = {
            let (slot, barrier) = (Arc::clone(&slot), Arc::clone(&barrier));
            thread::spawn(move || {
                for round in 0..ROUNDS {
                    barrier.wait();
                    // Sometimes the next even epoch takes the slot while the
                    // odd one is being published: its finders see it gone.
                    if round % 3 == 0 {
                        published(&slot, round * 2 + 2, THREADS);
                    }
                }
            })
        };
        let found: Vec<Vec<Found<3>>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        mover.join().unwrap();
        for round in 0..ROUNDS as usize {
            let epoch = round as u64 * 2 + 1;
            let anchors: Vec<[u64; 3]> = found
                .iter()
                .filter_map(|f| match f[round] {
                    Found::Anchor(words) => Some(words),
                    // A writer preempted for a millisecond in its few
                    // stores: rare, and no anchor either.
                    Found::Gone | Found::Busy(_) => None,
                    found => panic!("round {round}: {found:?}"),
                })
                .collect();
            for words in &anchors {
                assert_eq!(words[0] >> 8, epoch, "round {round}: its epoch's");
                assert!(words.iter().all(|w| *w == words[0]), "round {round}: torn");
                assert_eq!(*words, anchors[0], "round {round}: one anchor");
            }
        }
    }
}

/// The protocol's broken variants, which `loom/src/keyed.rs` shows loom
/// rejecting: each is the code above less one step.
#[cfg(loom)]
impl<const N: usize> Slot<N> {
    /// [`find`](Slot::find) without the second load of the tag.
    pub(crate) fn find_unchecked(&self, epoch: u64, generation: u64) -> Found<N> {
        loop {
            let tag = self.tag.load(Ordering::Acquire);
            if epoch_of(tag) > epoch {
                return Found::Gone;
            }
            match tag & STATE {
                READY if epoch_of(tag) == epoch => {
                    return Found::Anchor(std::array::from_fn(|i| {
                        self.words[i].load(Ordering::Relaxed)
                    }));
                }
                WRITING if claimed_in(tag, generation) => thread::yield_now(),
                _ => return Found::Vacant(Seen(tag)),
            }
        }
    }

    /// The slot as a writer of `epoch` in fork generation `generation` left
    /// it, halfway through `words`, when a fork took it away.
    pub(crate) fn left_writing(&self, epoch: u64, generation: u64, words: [u64; N]) {
        self.tag
            .store(tag(epoch, generation, WRITING), Ordering::Relaxed);
        for (word, value) in self.words.iter().zip(words).take(N / 2) {
            word.store(value, Ordering::Relaxed);
        }
    }

    /// [`publish`](Slot::publish) with a store of `WRITING` for the claim.
    pub(crate) fn publish_unclaimed(
        &self,
        epoch: u64,
        generation: u64,
        words: [u64; N],
    ) -> Found<N> {
        self.tag
            .store(tag(epoch, generation, WRITING), Ordering::Relaxed);
        fence(Ordering::Release);
        for (word, value) in self.words.iter().zip(words) {
            word.store(value, Ordering::Relaxed);
        }
        self.tag
            .store(tag(epoch, generation, READY), Ordering::Release);
        Found::Anchor(words)
    }
}
