//! Records handed back by workers for publishers to reuse.
//!
//! A publisher writes each new record into one a worker has finished with,
//! so a steady stream of log calls allocates nothing and no allocation
//! crosses threads. Proving a record unique costs an atomic
//! compare-and-swap (`Arc::get_mut`) on a cache line the worker's core
//! touched last; a `Recycled` does that once, on the worker, so that the
//! caller's thread only makes plain stores into it.

use crate::appenders::Record;
use crate::sync::Arc;

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
