//! The keyed anchors' slot (`src/clock/keyed.rs`, whose module doc holds
//! the argument), on its own code: copies of a record converted on several
//! threads take one anchor for their epoch, whole.
//!
//! Four models, each with at most one thread that can wait for a writer
//! (loom explores two waiters yielding to each other without end):
//!
//! - two threads publish their own anchor for epoch 1, or take the one
//!   found: both obtain the same one, whole;
//! - with epoch 1's anchor published, a thread finds it while another
//!   moves the slot on to epoch 2 (as the epoch 4,096 later does to a slot
//!   of the table): the finder obtains epoch 1's anchor whole, or finds it
//!   gone;
//! - a thread publishes epoch 1's anchor while another publishes epoch
//!   2's: each obtains its own, whole, or the first finds its epoch gone;
//! - in a forked child, over a claim of epoch 1 its parent's writer left
//!   half-written, two threads obtain epoch 1's anchor: both the same one,
//!   whole (neither the half-written words nor a wait for a writer that is
//!   gone).
//!
//! The broken variants, which loom must reject: a finder without the
//! second load of the tag reads words torn between the two epochs'
//! anchors (the second model); a publisher that stores its claim rather
//! than exchanging it publishes a second anchor for the epoch (the first).

use loom::sync::Arc;
use loom::thread;

use crate::keyed_slot::{Found, Slot};
use crate::models::{check, expected_failure, must_fail};

/// Words of an anchor in the model.
const WORDS: usize = 2;

/// The process's fork generation (a child's, one fork deep).
const GENERATION: u64 = 1;

/// Writer `writer`'s anchor for `epoch`: every word says both.
fn anchor(epoch: u64, writer: u64) -> [u64; WORDS] {
    [epoch * 10 + writer; WORDS]
}

/// How a thread obtains its epoch's anchor (all but `Protocol` broken).
#[derive(Clone, Copy)]
enum Variant {
    Protocol,
    Unchecked,
    Unclaimed,
}

/// The anchor `writer` obtains for `epoch`: the one found, else its own,
/// published.
fn obtain(slot: &Slot<WORDS>, epoch: u64, writer: u64, variant: Variant) -> Found<WORDS> {
    let found = match variant {
        Variant::Unchecked => slot.find_unchecked(epoch, GENERATION),
        _ => slot.find(epoch, GENERATION),
    };
    match (found, variant) {
        (Found::Vacant(_), Variant::Unclaimed) => {
            slot.publish_unclaimed(epoch, GENERATION, anchor(epoch, writer))
        }
        (Found::Vacant(seen), _) => slot.publish(epoch, GENERATION, seen, anchor(epoch, writer)),
        (found, _) => found,
    }
}

/// `found` is one of `anchors`, whole, or (if `gone` allows it) gone.
fn one_of(found: Found<WORDS>, anchors: &[[u64; WORDS]], gone: bool) -> Option<[u64; WORDS]> {
    match found {
        Found::Anchor(words) => {
            assert!(anchors.contains(&words), "torn: {words:?}");
            Some(words)
        }
        Found::Gone if gone => None,
        found => panic!("obtained {found:?}"),
    }
}

/// Two threads obtain epoch 1's anchor from a vacant slot.
fn one_epoch(variant: Variant) {
    let slot = Arc::new(Slot::<WORDS>::new());
    let first = {
        let slot = Arc::clone(&slot);
        thread::spawn(move || obtain(&slot, 1, 1, variant))
    };
    let second = obtain(&slot, 1, 2, variant);
    let first = first.join().unwrap();
    let anchors = [anchor(1, 1), anchor(1, 2)];
    let (first, second) = (
        one_of(first, &anchors, false),
        one_of(second, &anchors, false),
    );
    assert_eq!(first, second, "two anchors for one epoch");
}

/// A thread finds epoch 1's anchor while another publishes epoch 2's.
fn found_while_moved_on(variant: Variant) {
    let slot = Arc::new(Slot::<WORDS>::new());
    assert_eq!(obtain(&slot, 1, 1, variant), Found::Anchor(anchor(1, 1)));
    let later = {
        let slot = Arc::clone(&slot);
        thread::spawn(move || obtain(&slot, 2, 3, variant))
    };
    one_of(obtain(&slot, 1, 2, variant), &[anchor(1, 1)], true);
    assert_eq!(later.join().unwrap(), Found::Anchor(anchor(2, 3)));
}

#[test]
fn copies_of_an_epoch_take_one_anchor() {
    check(|| one_epoch(Variant::Protocol));
}

#[test]
fn an_anchor_found_while_a_later_epoch_takes_the_slot_is_whole_or_gone() {
    check(|| found_while_moved_on(Variant::Protocol));
}

#[test]
fn epochs_published_at_once_each_keep_their_own() {
    check(|| {
        let slot = Arc::new(Slot::<WORDS>::new());
        let later = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || obtain(&slot, 2, 3, Variant::Protocol))
        };
        one_of(
            obtain(&slot, 1, 1, Variant::Protocol),
            &[anchor(1, 1)],
            true,
        );
        assert_eq!(later.join().unwrap(), Found::Anchor(anchor(2, 3)));
        assert_eq!(slot.find(2, GENERATION), Found::Anchor(anchor(2, 3)));
    });
}

#[test]
fn in_a_child_a_parents_unfinished_claim_is_claimed_over_once() {
    check(|| {
        let slot = Arc::new(Slot::<WORDS>::new());
        slot.left_writing(1, GENERATION - 1, anchor(1, 9));
        let first = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || obtain(&slot, 1, 1, Variant::Protocol))
        };
        let second = obtain(&slot, 1, 2, Variant::Protocol);
        let anchors = [anchor(1, 1), anchor(1, 2)];
        let first = one_of(first.join().unwrap(), &anchors, false);
        assert_eq!(first, one_of(second, &anchors, false), "two anchors");
    });
}

#[test]
fn a_finder_without_its_second_look_reads_a_torn_anchor() {
    must_fail("keyed::finder_without_its_second_look", "torn");
}

#[test]
fn finder_without_its_second_look() {
    expected_failure(|| found_while_moved_on(Variant::Unchecked));
}

#[test]
fn a_publisher_that_stores_its_claim_publishes_two_anchors() {
    must_fail("keyed::publisher_that_stores_its_claim", "two anchors");
}

#[test]
fn publisher_that_stores_its_claim() {
    expected_failure(|| one_epoch(Variant::Unclaimed));
}
