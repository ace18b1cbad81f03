//! Replay: a subscription that starts from an offset receives the retained
//! records it matches, in order, then continues live, with no gap and no
//! duplicate at the hand-over.
//!
//! # The hand-over
//!
//! `subscribe` holds the config lock and the journal's lock while it
//!
//! 1. reads the broker's next `seq` as `h`, the hand-over offset;
//! 2. copies the retained records from the start offset up to `h`;
//! 3. publishes the snapshot with the new subscription, whose entry says
//!    `live_from = h`: a publisher routing with that snapshot (or a later
//!    one) skips it for records whose `seq` is below `h`.
//!
//! Each record the journal keeps is then delivered once:
//!
//! - `seq < h`: it took its `seq` under the journal's lock before step 1,
//!   so it was in the ring at step 2 and is replayed; live, every snapshot
//!   that has the subscription skips it.
//! - `seq >= h`: it took its `seq` under the lock after step 3, so its
//!   publisher's lock acquisition happens after the snapshot was published,
//!   and its gate re-check (`queue/gate.rs`) reads the new generation or a
//!   later one: routed again if need be, it reaches the subscription live.
//!
//! Records the journal does not keep (a level or topic it leaves out) take
//! their `seq` without the lock: the subscription receives those from the
//! moment its snapshot is published, as any new subscription does. So do
//! records another journal kept: one removed while they were routed, before
//! this one was set. Such a record took its `seq` below `h` under the old
//! journal's lock, so the new one's replay never held it, and a re-route
//! reaches the subscription with it: the skip below `live_from` holds only
//! for records kept by the journal the replay came from (`JournalCore::id`,
//! `route::Entry::replayed`).
//!
//! The copied records are filtered by the subscription's patterns, level,
//! directives and predicate after both locks are released, on the
//! subscribing thread (a review measured 172 ms under the locks for a
//! filter that matched nothing in a million records); meanwhile the new
//! subscription's queue holds its live records back (`queue/front.rs`), so
//! its worker writes every replayed record before the first live one.

use std::fmt;

use logbus_appenders::{Level, Record, Topic, Value};

use super::Ring;
use crate::sync::Arc;

/// Where a new subscription starts: see
/// [`SubscriptionBuilder::replay`](crate::SubscriptionBuilder::replay).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Replay {
    /// At this offset (a record's `seq`): the retained records from it on,
    /// then live. An offset the journal no longer holds starts at the oldest
    /// retained record and reports the gap; an offset not yet published
    /// skips live records until it.
    From(u64),
    /// At the oldest retained record.
    Oldest,
    /// With the last `n` retained records the subscription matches.
    Last(usize),
}

/// What a replaying subscription was given, from
/// [`SubscriptionHandle::replay_report`](crate::SubscriptionHandle::replay_report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ReplayReport {
    /// The offset of the first replayed record, if any.
    pub first: Option<u64>,
    /// The hand-over offset: records from it on are delivered live.
    pub live_from: u64,
    /// Records replayed (the gap notice not included).
    pub records: usize,
    /// Set when the start offset was older than what the journal holds.
    pub gap: Option<ReplayGap>,
}

/// Records a replay asked for but the journal no longer held. The
/// subscription's appender also receives one WARN record saying so, before
/// the replayed records, with the `seq` just below the first of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ReplayGap {
    /// The offset asked for.
    pub requested: u64,
    /// The oldest offset still retained (replay started there), if any.
    pub oldest_retained: Option<u64>,
}

impl fmt::Display for ReplayGap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.oldest_retained {
            Some(oldest) => write!(
                f,
                "replay from offset {}: the journal no longer holds records before offset {oldest}",
                self.requested
            ),
            None => write!(
                f,
                "replay from offset {}: the journal no longer holds any of those records",
                self.requested
            ),
        }
    }
}

/// The records copied for a replay, before the predicate.
pub(crate) struct ReplaySet {
    pub(crate) records: Vec<Arc<Record>>,
    /// The hand-over offset `h`.
    pub(crate) live_from: u64,
    /// An offset after `h` asked for (`Replay::From`), or 0.
    pub(crate) start: u64,
    pub(crate) gap: Option<ReplayGap>,
    /// For [`Replay::Last`]: how many to keep after the predicate.
    pub(crate) last: Option<usize>,
}

impl ReplaySet {
    /// Keeps the records `predicate` accepts (then, for `Last(n)`, the last
    /// `n`), and reports.
    pub(crate) fn filter(&mut self, predicate: impl Fn(&Record) -> bool) -> ReplayReport {
        self.records.retain(|r| predicate(r));
        if let Some(n) = self.last {
            let excess = self.records.len().saturating_sub(n);
            self.records.drain(..excess);
        }
        ReplayReport {
            first: self.records.first().map(|r| r.seq()),
            live_from: self.live_from.max(self.start),
            records: self.records.len(),
            gap: self.gap,
        }
    }
}

impl Ring {
    /// Copies the references to the retained records `replay` asks for,
    /// below `live_from` (the hand-over offset, read under this lock); the
    /// subscription's filters run on them after the locks are released
    /// ([`ReplaySet::filter`]).
    pub(crate) fn replay(&self, replay: Replay, live_from: u64) -> ReplaySet {
        let (from, last) = match replay {
            Replay::From(offset) => (offset, None),
            Replay::Oldest => (0, None),
            Replay::Last(n) => (0, Some(n)),
        };
        let gap = match replay {
            Replay::From(offset) if self.released_through.is_some_and(|r| r >= offset) => {
                Some(ReplayGap {
                    requested: offset,
                    oldest_retained: self.oldest(),
                })
            }
            _ => None,
        };
        let records = self
            .records
            .range(self.position(from)..)
            .take_while(|r| r.seq() < live_from)
            .cloned()
            .collect();
        ReplaySet {
            records,
            live_from,
            start: if from > live_from { from } else { 0 },
            gap,
            last,
        }
    }
}

/// The WARN record that tells a replaying appender about a gap, with the
/// `seq` just below the first replayed record (or the hand-over offset):
/// one no record it receives has.
pub(crate) fn gap_notice(gap: &ReplayGap, report: &ReplayReport) -> Record {
    let seq = report.first.unwrap_or(report.live_from).saturating_sub(1);
    let mut builder = Record::builder(Topic::new(Level::Warn, "logbus"))
        .seq(seq)
        .message(gap.to_string())
        .kv("requested", Value::U64(gap.requested));
    if let Some(oldest) = gap.oldest_retained {
        builder = builder.kv("oldest_retained", Value::U64(oldest));
    }
    builder.build()
}
