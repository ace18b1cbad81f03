//! Records handed back by workers for publishers to reuse.
//!
//! A publisher writes each new record into one a worker has finished with,
//! so a steady stream of log calls allocates nothing and no allocation
//! crosses threads. Proving a record unique costs an atomic
//! compare-and-swap (`Arc::get_mut`) on a cache line the worker's core
//! touched last; a `Recycled` does that once, on the worker, so that the
//! caller's thread only makes plain stores into it.

use crate::appenders::Record;
use crate::sync::{Arc, Ordering};

/// A record no one else holds: no other `Arc`, no `Weak`.
///
/// The invariant holds for the life of the value: `new` checks it, the
/// `Arc` inside is private and never lent out (no clone, no downgrade), so
/// a `Recycled` can only be moved (for example through the pool's channel,
/// which orders the worker's accesses before the publisher's).
pub(crate) struct Recycled(Arc<Record>);

impl Recycled {
    /// `Ok` if `record` is the only reference to its record; otherwise
    /// gives it back.
    pub(crate) fn new(mut record: Arc<Record>) -> Result<Recycled, Arc<Record>> {
        if Arc::get_mut(&mut record).is_none() {
            return Err(record);
        }
        Ok(Recycled(record))
    }

    /// Lets go of one subscription's hold on `record` (the publisher set
    /// [`Record::holders`] to the number it enqueued the record into) and,
    /// if that was the last hold, returns the record for reuse.
    ///
    /// Checking for the only reference alone would race: two workers done
    /// with a record at the same moment could each see the other's
    /// reference, and both drop it. The holders count decides who is last
    /// (one atomic decrement each); the last one then looks `attempts` times
    /// for the others to have dropped their references, which they do right
    /// after their decrement. An appender that keeps references (a memory
    /// appender) just makes the record be freed.
    pub(crate) fn release(record: Arc<Record>, attempts: u32) -> Option<Recycled> {
        // AcqRel: the last decrementer sees everything the others did with
        // the record before their decrement.
        if record.holders().fetch_sub(1, Ordering::AcqRel) != 1 {
            return None; // another subscription is not done with it yet
        }
        let mut record = record;
        for _ in 0..attempts {
            match Recycled::new(record) {
                Ok(recycled) => return Some(recycled),
                Err(back) => record = back,
            }
            std::hint::spin_loop();
        }
        None
    }

    /// Lets `rewrite` change the record, then gives it back shared.
    pub(crate) fn reuse(self, rewrite: impl FnOnce(&mut Record)) -> Arc<Record> {
        let arc = self.0;
        // SAFETY: `arc` is the only reference to the record (the type's
        // invariant, checked by `Arc::get_mut` in `new`), so no other
        // reference can observe this exclusive borrow, which ends before
        // `arc` is returned. `Arc::as_ptr` points into the allocation the
        // `Arc` owns, and `Arc::get_mut` would hand out the same place.
        let record = unsafe { &mut *Arc::as_ptr(&arc).cast_mut() };
        rewrite(record);
        arc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::appenders::{Level, Topic};

    fn record() -> Arc<Record> {
        Arc::new(Record::builder(Topic::new(Level::Info, "t")).seq(1).build())
    }

    #[test]
    fn only_unique_records_are_recycled() {
        let shared = record();
        let other = Arc::clone(&shared);
        assert!(Recycled::new(shared).is_err());
        assert!(Recycled::new(other).is_ok());
    }

    #[test]
    fn only_the_last_holder_gets_the_record_back() {
        let first = record();
        first.holders().store(2, Ordering::Relaxed);
        let second = Arc::clone(&first);
        // One subscription done: not the last, whatever the references.
        assert!(Recycled::release(first, 8).is_none());
        // The last one, holding the only reference.
        assert!(Recycled::release(second, 1).is_some());
        // The last one while something else (an appender) keeps a reference.
        let kept = record();
        let other = Arc::clone(&kept);
        assert!(Recycled::release(kept, 8).is_none());
        assert_eq!(Arc::strong_count(&other), 1);
    }

    /// Under Miri this checks the aliasing of `reuse`, also across the
    /// thread hand-off the pool makes.
    #[test]
    fn a_recycled_record_is_rewritten_in_place_on_another_thread() {
        let Ok(recycled) = Recycled::new(record()) else {
            panic!("a new record is unique")
        };
        let rewritten = crate::sync::thread::spawn(move || {
            recycled.reuse(|r| r.recycle(Topic::new(Level::Warn, "u"), 2, r.time()))
        })
        .join()
        .expect("no panic");
        assert_eq!(rewritten.seq(), 2);
        assert_eq!(rewritten.level(), Level::Warn);
        assert_eq!(Arc::strong_count(&rewritten), 1);
    }
}
