//! Which rotated files to remove: by count, by age and by total size, all
//! limits at once, oldest first.
//!
//! The rotated files present (as [`naming::present`](super::naming::present)
//! lists them: the appender's own names only) are taken newest first; the
//! first one past any limit is removed, and so is every older one, so what
//! remains is always the newest files, in an unbroken run:
//!
//! - count: more than `keep` newer files;
//! - age: its newest record is older than `keep_for`, measured with the
//!   appender's clock from the end of the period a dated name gives (the
//!   name, not the file's time, which a copy or a restore resets), or from
//!   the file's modification time for a numbered name, which has no date;
//! - size: with the newer files, more than `keep_total_bytes` bytes (as
//!   stored: compressed files count compressed).

use std::time::Duration;

use super::naming::{Rotated, Stamp};
use super::zone::TimeZone;

/// The retention limits of a rolling file; every limit applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retention {
    /// How many rotated files to keep (`usize::MAX`: no limit).
    pub(crate) keep: usize,
    /// How old a rotated file's newest record may be.
    pub(crate) keep_for: Option<Duration>,
    /// How large the rotated files may be together.
    pub(crate) keep_total_bytes: Option<u64>,
}

impl Retention {
    /// Whether the limits need each file's size or time.
    pub(crate) fn needs_metadata(&self) -> bool {
        self.keep_for.is_some() || self.keep_total_bytes.is_some()
    }

    /// Whether no limit can ever remove a file.
    pub(crate) fn keeps_everything(&self) -> bool {
        self.keep == usize::MAX && !self.needs_metadata()
    }

    /// The files of `present` to remove at `now` (unix seconds), oldest
    /// last; `zone` gives the end of a dated file's period.
    pub(crate) fn expired(
        &self,
        mut present: Vec<Rotated>,
        now: i64,
        zone: TimeZone,
    ) -> Vec<Rotated> {
        present.sort_by(|a, b| Stamp::newest_first(&a.stamp, &b.stamp));
        let mut total: u64 = 0;
        let cut = present.iter().enumerate().position(|(newer, file)| {
            total = total.saturating_add(file.len);
            newer >= self.keep
                || self.keep_total_bytes.is_some_and(|max| total > max)
                || self.keep_for.is_some_and(|max| {
                    newest_record(file, zone).is_some_and(|at| {
                        let age = u64::try_from(now.saturating_sub(at)).unwrap_or(0);
                        Duration::from_secs(age) > max
                    })
                })
        });
        match cut {
            Some(cut) => present.split_off(cut),
            None => Vec::new(),
        }
    }
}

/// When the newest record of a rotated file was written, at the latest
/// (unix seconds): the end of its period for a dated name, its
/// modification time for a numbered one. `None`: unknown, never expired
/// by age.
fn newest_record(file: &Rotated, zone: TimeZone) -> Option<i64> {
    match file.stamp {
        Stamp::Index(_) => file.modified,
        Stamp::Dated { period, start, .. } => zone.period_end(period, start),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::destination::file::zone::Period;
    use chrono::NaiveDate;

    const DAY: i64 = 86_400;
    /// 2026-12-01T00:00:00Z.
    const DEC_1: i64 = 1_796_083_200;

    fn numbered(index: usize, len: u64, modified: i64) -> Rotated {
        Rotated {
            stamp: Stamp::Index(index),
            gz: false,
            symlink: false,
            len,
            modified: Some(modified),
        }
    }

    /// The file of 2026-12-`day`, `counter`.
    fn dated(day: u32, counter: usize) -> Rotated {
        Rotated {
            stamp: Stamp::Dated {
                period: Period::Day,
                start: NaiveDate::from_ymd_opt(2026, 12, day)
                    .unwrap()
                    .and_hms_opt(0, 0, 0)
                    .unwrap(),
                counter,
            },
            gz: false,
            symlink: false,
            len: 10,
            modified: None,
        }
    }

    fn limits(keep: usize, keep_for: Option<u64>, keep_total_bytes: Option<u64>) -> Retention {
        Retention {
            keep,
            keep_for: keep_for.map(Duration::from_secs),
            keep_total_bytes,
        }
    }

    fn indexes(files: &[Rotated]) -> Vec<usize> {
        files
            .iter()
            .map(|f| match f.stamp {
                Stamp::Index(i) => i,
                Stamp::Dated { .. } => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn count_removes_the_oldest() {
        let present = vec![numbered(2, 1, 0), numbered(3, 1, 0), numbered(1, 1, 0)];
        let expired = limits(2, None, None).expired(present.clone(), 0, TimeZone::UTC);
        assert_eq!(indexes(&expired), [3]);
        assert!(limits(usize::MAX, None, None)
            .expired(present.clone(), 0, TimeZone::UTC)
            .is_empty());
        assert_eq!(
            indexes(&limits(0, None, None).expired(present, 0, TimeZone::UTC)),
            [1, 2, 3]
        );
    }

    #[test]
    fn total_size_removes_the_oldest_until_the_rest_fits() {
        let present = vec![numbered(1, 40, 0), numbered(2, 40, 0), numbered(3, 5, 0)];
        let retention = limits(usize::MAX, None, Some(80));
        // 40 + 40 fit; the third passes 80, however small it is.
        assert_eq!(
            indexes(&retention.expired(present.clone(), 0, TimeZone::UTC)),
            [3]
        );
        let retention = limits(usize::MAX, None, Some(79));
        assert_eq!(
            indexes(&retention.expired(present.clone(), 0, TimeZone::UTC)),
            [2, 3]
        );
        // The newest alone may be over: then nothing fits.
        let retention = limits(usize::MAX, None, Some(39));
        assert_eq!(
            indexes(&retention.expired(present, 0, TimeZone::UTC)),
            [1, 2, 3]
        );
    }

    #[test]
    fn a_numbered_file_ages_from_its_modification_time() {
        let now = 100 * DAY;
        let present = vec![
            numbered(1, 1, now - DAY),
            numbered(2, 1, now - 3 * DAY),
            numbered(3, 1, now - 3 * DAY - 1),
        ];
        let retention = limits(usize::MAX, Some(3 * 86_400), None);
        // Exactly three days old is not older than three days.
        assert_eq!(
            indexes(&retention.expired(present, now, TimeZone::UTC)),
            [3]
        );
    }

    #[test]
    fn a_dated_file_ages_from_the_end_of_its_period() {
        let present = vec![dated(1, 0), dated(1, 1), dated(2, 0), dated(3, 0)];
        let retention = limits(usize::MAX, Some(2 * 86_400), None);
        // 2026-12-01 ended at 12-02T00:00Z: two days old at 12-04T00:00Z…
        let kept_all = retention.expired(present.clone(), DEC_1 + 3 * DAY, TimeZone::UTC);
        assert!(kept_all.is_empty(), "{kept_all:?}");
        // …and older a second later: both of its files go.
        let expired = retention.expired(present.clone(), DEC_1 + 3 * DAY + 1, TimeZone::UTC);
        assert_eq!(expired, [dated(1, 1), dated(1, 0)]);
        // In UTC−05:00 the day ends five hours later.
        let ny = TimeZone::fixed_offset(-5 * 3600);
        assert!(retention
            .expired(present, DEC_1 + 3 * DAY + 1, ny)
            .is_empty());
    }

    #[test]
    fn all_limits_apply_and_cut_at_the_first_one_passed() {
        let now = 100 * DAY;
        let present: Vec<Rotated> = (1..=6)
            .map(|i| numbered(i, 10, now - i as i64 * DAY))
            .collect();
        // Count says 5, size 4, age 3: the strictest wins.
        let retention = limits(5, Some(3 * 86_400), Some(40));
        assert_eq!(
            indexes(&retention.expired(present.clone(), now, TimeZone::UTC)),
            [4, 5, 6]
        );
        let retention = limits(2, Some(3 * 86_400), Some(40));
        assert_eq!(
            indexes(&retention.expired(present, now, TimeZone::UTC)),
            [3, 4, 5, 6]
        );
    }
}
