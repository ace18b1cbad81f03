//! Drop summaries: when a subscription has dropped records, its worker
//! writes one synthetic WARN record to its own appender saying how many and
//! since when, once per burst rather than per record.

use logbus_appenders::{Level, Operation, Record, Topic};

use super::Worker;
use crate::stats::Counters;
use crate::sync::Ordering;

impl Worker {
    /// Whether a burst of drops waits for its summary. (A drop counted but
    /// not stamped yet is reported with the next burst, or at shutdown.)
    pub(super) fn drops_to_report(&self) -> bool {
        let counters = &self.shared.counters;
        // Relaxed: statistics; see `report_drops`.
        Counters::get(&counters.drops_settled) > self.reported_drops
            && counters.first_drop_micros.load(Ordering::Relaxed) != 0
    }

    /// Emits one synthetic WARN record per burst of drops to our own
    /// appender. It is not counted as `matched` or `written`: it is the
    /// broker talking, not a published record.
    pub(super) fn report_drops(&mut self) {
        let counters = &self.shared.counters;
        // Settled drops only: `dropped` can read one high for an instant
        // (an eviction counted first, then taken back; see `queue/mod.rs`).
        let dropped = Counters::get(&counters.drops_settled);
        if dropped <= self.reported_drops {
            return;
        }
        // Droppers stamp the burst right after settling. No stamp yet means
        // a drop is still being counted: report at the next idle point. At
        // shutdown no dropper is left, so nothing is missed.
        // Relaxed: the timestamp is a plain value; a dropper racing with the
        // swap below starts the next burst.
        if counters.first_drop_micros.load(Ordering::Relaxed) == 0 {
            return;
        }
        let burst = dropped - self.reported_drops;
        self.reported_drops = dropped;
        let since = counters.first_drop_micros.swap(0, Ordering::Relaxed);
        let since = crate::clock::format_micros(since);
        let record = Record::builder(Topic::new(Level::Warn, "logbus"))
            // Relaxed: seq numbers only need to be unique and increasing.
            .seq(self.seq.fetch_add(1, Ordering::Relaxed))
            .message(format!(
                "{burst} records dropped by subscription {:?} since {since} (queue full)",
                self.shared.name
            ))
            .kv("dropped", burst)
            .kv("subscription", self.shared.name.to_string())
            .thread(crate::thread_role::thread_info())
            .build();
        if let Err(error) = self.attempt(&record) {
            if error.operation() == Operation::Panic {
                Counters::add(&self.shared.counters.panics, 1);
            }
            crate::report::stderr(format_args!(
                "logbus: subscription {:?} dropped {burst} records since {since}; the summary could not be written: {}",
                self.shared.name,
                error.chain_text()
            ));
        }
        self.dirty = true;
    }
}
