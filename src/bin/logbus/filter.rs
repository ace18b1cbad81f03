//! Which lines `logbus tail` keeps: `--topic` patterns (logbus' own
//! [`TopicPattern`] matcher, so a pattern means here what it means in a
//! subscription) and a `--level` threshold.
//!
//! A text line has no topic, and a layout need not show the level, so any
//! filter drops text lines; without a filter every line is kept.

use logbus::{Level, TopicPattern};

/// The `--topic` patterns (any may match) and the `--level` threshold.
#[derive(Debug, Default)]
pub(crate) struct Filter {
    topics: Vec<TopicPattern>,
    level: Option<Level>,
}

impl Filter {
    /// Keeps records matching any of `topics` (all when empty) at `level`
    /// or more severe (all when `None`).
    pub(crate) fn new(topics: Vec<TopicPattern>, level: Option<Level>) -> Filter {
        Filter { topics, level }
    }

    /// Whether nothing is filtered out.
    pub(crate) fn is_empty(&self) -> bool {
        self.topics.is_empty() && self.level.is_none()
    }

    /// Whether a record on `topic` at `level` is kept.
    pub(crate) fn keeps_record(&self, topic: &str, level: Level) -> bool {
        // `Level` orders Error < Warn < ... < Trace: "more severe" is less.
        self.level.map_or(true, |threshold| level <= threshold)
            && (self.topics.is_empty() || self.topics.iter().any(|p| p.matches(topic)))
    }

    /// Whether a text line is kept: only when nothing is filtered.
    pub(crate) fn keeps_text(&self) -> bool {
        self.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(topics: &[&str], level: Option<Level>) -> Filter {
        let topics = topics.iter().map(|p| p.parse().unwrap()).collect();
        Filter::new(topics, level)
    }

    /// (patterns, threshold, topic, level, kept)
    type Case = (
        &'static [&'static str],
        Option<Level>,
        &'static str,
        Level,
        bool,
    );

    #[test]
    fn table() {
        use Level::*;
        let cases: &[Case] = &[
            (&[], None, "trace.x", Trace, true),
            (&[], Some(Warn), "error.x", Error, true),
            (&[], Some(Warn), "warn.x", Warn, true),
            (&[], Some(Warn), "info.x", Info, false),
            (&["*.app.db.#"], None, "info.app.db", Info, true),
            (&["*.app.db.#"], None, "info.app.db.pool", Info, true),
            (&["*.app.db.#"], None, "info.app.http", Info, false),
            (
                &["*.app.db.#", "error.#"],
                None,
                "error.app.http",
                Error,
                true,
            ),
            (
                &["*.app.db.#", "error.#"],
                Some(Info),
                "debug.app.db",
                Debug,
                false,
            ),
        ];
        for &(patterns, threshold, topic, level, kept) in cases {
            assert_eq!(
                filter(patterns, threshold).keeps_record(topic, level),
                kept,
                "{patterns:?} {threshold:?} {topic} {level}"
            );
        }
    }

    #[test]
    fn text_lines_pass_only_without_a_filter() {
        assert!(filter(&[], None).keeps_text());
        assert!(!filter(&["#"], None).keeps_text());
        assert!(!filter(&[], Some(Level::Trace)).keeps_text());
    }
}
