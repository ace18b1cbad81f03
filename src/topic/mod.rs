//! Topic patterns: parsing and matching with AMQP topic-exchange rules.
//!
//! A *topic* is a dot-separated string such as `warn.app.db`: the level, then
//! the segments of the record's target. A *pattern* is dot-separated too, and
//! two segments are wildcards:
//!
//! - `*` matches exactly one segment: `warn.*` matches `warn.app` but neither
//!   `warn` nor `warn.app.db`;
//! - `#` matches zero or more segments: `error.#` matches `error` and
//!   `error.x.y`, and `#` alone matches every topic.
//!
//! [`TopicPattern::matches`] tests one pattern directly. The broker instead puts
//! the patterns of all subscriptions into a `PatternTrie` and asks it once per
//! topic.

// NOTE: the doctests below say `use logbus::…`, which relies on `lib.rs`
// re-exporting `TopicPattern`, `TopicParseError` and `TopicParseErrorKind`
// at the crate root.

mod trie;

pub(crate) use trie::PatternTrie;

mod source;
pub(crate) use source::{parse_patterns, PatternSource};

use std::error::Error;
use std::fmt;
use std::str::FromStr;

/// A parsed topic pattern.
///
/// Segments are separated by `.`; `*` matches exactly one topic segment and
/// `#` matches zero or more. Any other segment matches itself, byte for byte.
/// See [`TopicPattern::parse`] for what is rejected.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopicPattern {
    /// The text the pattern was parsed from, returned by [`TopicPattern::as_str`].
    source: Box<str>,
    /// Never empty: `parse` rejects the empty string.
    segments: Box<[Segment]>,
}

/// One segment of a [`TopicPattern`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Segment {
    /// Matches a topic segment equal to this text (never empty, no `*`, `#`
    /// or whitespace).
    Literal(Box<str>),
    /// `*`: matches exactly one segment.
    Star,
    /// `#`: matches zero or more segments.
    Hash,
}

impl TopicPattern {
    /// Where no topic logbus publishes can match this pattern (see
    /// [`TopicParseErrorKind::NeverMatches`]): the byte offset of the
    /// segment at fault.
    pub(crate) fn never_matches(&self) -> Option<usize> {
        const LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];
        let mut offset = 0;
        for (i, segment) in self.segments.iter().enumerate() {
            if let Segment::Literal(text) = segment {
                if (i == 0 && !LEVELS.contains(&&**text)) || text.contains("::") {
                    return Some(offset);
                }
                offset += text.len() + 1;
            } else {
                offset += 2;
            }
        }
        None
    }

    /// Parses a pattern such as `error.#` or `*.app.db`.
    ///
    /// # Errors
    ///
    /// Returns a [`TopicParseError`] naming the pattern and the byte position
    /// of the problem when:
    ///
    /// - the pattern is empty ([`TopicParseErrorKind::Empty`], position 0);
    /// - a segment is empty, as in `a..b`, `.a` or `a.`
    ///   ([`TopicParseErrorKind::EmptySegment`], position where the empty
    ///   segment starts);
    /// - a segment mixes a wildcard with other characters, as in `a#`, `*b`
    ///   or `##` ([`TopicParseErrorKind::MixedWildcard`], position of the
    ///   segment's first `*` or `#`);
    /// - a segment contains whitespace ([`TopicParseErrorKind::Whitespace`],
    ///   position of the whitespace character), which topics never do.
    ///
    /// Within a segment, the first offending character decides the kind.
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus::TopicPattern;
    ///
    /// let pattern = TopicPattern::parse("error.#")?;
    /// assert!(pattern.matches("error"));
    /// assert!(pattern.matches("error.app.db"));
    /// assert!(!pattern.matches("warn.app"));
    ///
    /// // `FromStr` gives the same value.
    /// assert_eq!("error.#".parse::<TopicPattern>()?, TopicPattern::parse("error.#")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parse(pattern: &str) -> Result<TopicPattern, TopicParseError> {
        if pattern.is_empty() {
            return Err(TopicParseError::new(pattern, 0, TopicParseErrorKind::Empty));
        }
        let mut segments = Vec::new();
        let mut start = 0;
        for text in pattern.split('.') {
            segments.push(parse_segment(pattern, start, text)?);
            // `+ 1` skips the `.` separator; after the last segment `start`
            // is no longer used.
            start += text.len() + 1;
        }
        Ok(TopicPattern {
            source: pattern.into(),
            segments: segments.into(),
        })
    }

    /// The pattern that matches every topic: `#`.
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus::TopicPattern;
    ///
    /// let all = TopicPattern::match_all();
    /// assert_eq!(all, TopicPattern::parse("#")?);
    /// assert!(all.matches("trace.any.target"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn match_all() -> TopicPattern {
        TopicPattern {
            source: "#".into(),
            segments: Box::new([Segment::Hash]),
        }
    }

    /// The text this pattern was parsed from.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `topic` matches this pattern.
    ///
    /// The topic is not validated: it is split on every `.` and its segments
    /// are compared byte for byte. This checks one pattern in
    /// `O(pattern segments × topic segments)` time at worst and allocates
    /// nothing; to find which of many patterns match, the broker uses a trie
    /// instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus::TopicPattern;
    ///
    /// let pattern = TopicPattern::parse("*.app.db.#")?;
    /// assert!(pattern.matches("warn.app.db"));
    /// assert!(pattern.matches("info.app.db.pool"));
    /// assert!(!pattern.matches("info.app"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn matches(&self, topic: &str) -> bool {
        let pattern = &self.segments;
        // Glob matching with backtracking to the last `#` only (`*` is a
        // glob's `?`, `#` its `*`): a later `#` can eat whatever an earlier
        // one would have, so retrying the earlier ones finds nothing new.
        // `p` is the next pattern segment, `rest` the topic after those
        // matched (`None` once none is left); `resume` the last `#` met and
        // the topic after what it ate.
        let mut p = 0;
        let mut rest = Some(topic);
        let mut resume = None;
        loop {
            if let Some(Segment::Hash) = pattern.get(p) {
                p += 1;
                if p == pattern.len() {
                    // A trailing `#` eats whatever is left.
                    return true;
                }
                // `#` eats nothing first.
                resume = Some((p, rest));
                continue;
            }
            let Some((segment, ahead)) = rest.map(split_first) else {
                // The topic is done; so must the pattern be (no `#` is left
                // at `p`, and eating more cannot help).
                return p == pattern.len();
            };
            let fits = match pattern.get(p) {
                Some(Segment::Literal(text)) => **text == *segment,
                Some(Segment::Star) => true,
                Some(Segment::Hash) | None => false,
            };
            if fits {
                p += 1;
                rest = ahead;
                continue;
            }
            // A mismatch: the last `#` eats one more segment, if any is left.
            let Some((after_hash, Some(eaten))) = resume else {
                return false;
            };
            let after = split_first(eaten).1;
            resume = Some((after_hash, after));
            p = after_hash;
            rest = after;
        }
    }
}

/// A topic's first segment, and the rest after its `.` (`None` if it was
/// the last).
fn split_first(topic: &str) -> (&str, Option<&str>) {
    match topic.find('.') {
        Some(dot) => (&topic[..dot], Some(&topic[dot + 1..])),
        None => (topic, None),
    }
}

/// Parses one segment, `text`, which starts at byte `start` of `pattern`.
fn parse_segment(pattern: &str, start: usize, text: &str) -> Result<Segment, TopicParseError> {
    match text {
        "" => {
            return Err(TopicParseError::new(
                pattern,
                start,
                TopicParseErrorKind::EmptySegment,
            ))
        }
        "*" => return Ok(Segment::Star),
        "#" => return Ok(Segment::Hash),
        _ => {}
    }
    for (offset, c) in text.char_indices() {
        let kind = match c {
            // The segment has more than one character, or it would have
            // been returned above.
            '*' | '#' => TopicParseErrorKind::MixedWildcard,
            c if c.is_whitespace() => TopicParseErrorKind::Whitespace,
            _ => continue,
        };
        return Err(TopicParseError::new(pattern, start + offset, kind));
    }
    Ok(Segment::Literal(text.into()))
}

impl FromStr for TopicPattern {
    type Err = TopicParseError;

    /// Same as [`TopicPattern::parse`].
    fn from_str(pattern: &str) -> Result<Self, Self::Err> {
        TopicPattern::parse(pattern)
    }
}

impl fmt::Display for TopicPattern {
    /// Writes the text the pattern was parsed from.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// Why a pattern was rejected by [`TopicPattern::parse`].
///
/// It names the pattern, the byte position of the problem and its
/// [kind](TopicParseErrorKind).
///
/// # Examples
///
/// Each kind of error a user can trigger:
///
/// ```
/// use logbus::{TopicParseError, TopicParseErrorKind, TopicPattern};
///
/// let err: TopicParseError = TopicPattern::parse("").unwrap_err();
/// assert_eq!((err.kind(), err.position()), (TopicParseErrorKind::Empty, 0));
///
/// let err = TopicPattern::parse("warn..db").unwrap_err();
/// assert_eq!((err.kind(), err.position()), (TopicParseErrorKind::EmptySegment, 5));
/// assert_eq!(err.pattern(), "warn..db");
/// assert_eq!(err.to_string(), r#"invalid topic pattern "warn..db" at byte 5: empty segment"#);
///
/// let err = TopicPattern::parse("warn.app.").unwrap_err();
/// assert_eq!((err.kind(), err.position()), (TopicParseErrorKind::EmptySegment, 9));
///
/// let err = TopicPattern::parse("warn.app*").unwrap_err();
/// assert_eq!((err.kind(), err.position()), (TopicParseErrorKind::MixedWildcard, 8));
///
/// let err = TopicPattern::parse("warn.my app").unwrap_err();
/// assert_eq!((err.kind(), err.position()), (TopicParseErrorKind::Whitespace, 7));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicParseError {
    pattern: String,
    position: usize,
    kind: TopicParseErrorKind,
}

impl TopicParseError {
    pub(crate) fn new(
        pattern: &str,
        position: usize,
        kind: TopicParseErrorKind,
    ) -> TopicParseError {
        TopicParseError {
            pattern: pattern.to_owned(),
            position,
            kind,
        }
    }

    /// The rejected pattern, as given to [`TopicPattern::parse`].
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The byte offset into [`pattern`](TopicParseError::pattern) where the
    /// problem is.
    pub fn position(&self) -> usize {
        self.position
    }

    /// What is wrong with the pattern.
    pub fn kind(&self) -> TopicParseErrorKind {
        self.kind
    }
}

impl fmt::Display for TopicParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid topic pattern {:?} at byte {}: {}",
            self.pattern,
            self.position,
            self.kind.description()
        )
    }
}

impl Error for TopicParseError {}

/// The kind of a [`TopicParseError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopicParseErrorKind {
    /// The pattern is the empty string. Use `#` to match every topic.
    Empty,
    /// A segment is empty: `a..b`, `.a` or `a.`.
    EmptySegment,
    /// A `*` or `#` shares its segment with other characters: `a#`, `*b`, `##`.
    MixedWildcard,
    /// A segment contains whitespace, which topics never do.
    Whitespace,
    /// Well-formed, but no topic logbus publishes can match it: the first
    /// segment is not a level (`error`, `warn`, `info`, `debug`, `trace`),
    /// `*` or `#` (as in `app::db.#` or `WARN.#`: levels are lower case),
    /// or a segment holds `::` (topics write a target's `::` as `.`: write
    /// `*.app.db`). A target with a dot (`a.b`) has the same topic as
    /// `a::b`. Reported by subscribing, not by [`TopicPattern::parse`].
    NeverMatches,
}

impl TopicParseErrorKind {
    /// The lower-case text `Display` ends with.
    fn description(self) -> &'static str {
        match self {
            TopicParseErrorKind::Empty => "empty pattern",
            TopicParseErrorKind::EmptySegment => "empty segment",
            TopicParseErrorKind::MixedWildcard => {
                "wildcard mixed with other characters in a segment"
            }
            TopicParseErrorKind::Whitespace => "whitespace in a segment",
            TopicParseErrorKind::NeverMatches => {
                "no topic can match: topics are <level>.<target with :: as .>, the level in lower case"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(pattern: &str, topic: &str, expected: bool) {
        let parsed = TopicPattern::parse(pattern).unwrap();
        assert_eq!(
            parsed.matches(topic),
            expected,
            "pattern {pattern:?}, topic {topic:?}"
        );
    }

    #[test]
    fn matching() {
        #[rustfmt::skip]
        let cases = [
            // `#` alone.
            ("#", "warn", true),
            ("#", "warn.app.db", true),
            // Literals only.
            ("warn", "warn", true),
            ("warn", "error", false),
            ("warn", "warn.app", false),
            ("warn.app", "warn", false),
            ("warn.app.db", "warn.app.db", true),
            ("warn.app.db", "warn.app.dbx", false),
            // Trailing `#`.
            ("error.#", "error", true),
            ("error.#", "error.x", true),
            ("error.#", "error.x.y", true),
            ("error.#", "warn.x", false),
            ("error.#", "errors", false),
            // `*` is exactly one segment.
            ("warn.*", "warn.app", true),
            ("warn.*", "warn", false),
            ("warn.*", "warn.app.db", false),
            ("*", "warn", true),
            ("*", "warn.app", false),
            ("*.*", "warn.app", true),
            ("*.*", "warn", false),
            // `*` then `#`.
            ("*.app.db.#", "warn.app.db", true),
            ("*.app.db.#", "info.app.db.pool", true),
            ("*.app.db.#", "app.db", false),
            ("*.app.db.#", "info.app.web", false),
            ("*.#", "warn", true),
            ("#.*", "warn", true),
            ("#.*", "warn.app", true),
            // Leading `#`.
            ("#.db", "warn.db", true),
            ("#.db", "warn.app.db", true),
            ("#.db", "db", true),
            ("#.db", "warn.db.pool", false),
            // `#` in the middle, and several of them.
            ("warn.#.db", "warn.db", true),
            ("warn.#.db", "warn.app.pool.db", true),
            ("warn.#.db", "warn.app.pool", false),
            ("a.#.b.#.c", "a.b.c", true),
            ("a.#.b.#.c", "a.x.b.y.z.c", true),
            ("a.#.b.#.c", "a.b.b.c", true),
            ("a.#.b.#.c", "a.c.b", false),
            ("a.#.b.#.c", "a.c", false),
            ("#.#", "a", true),
            ("#.#.#", "a.b", true),
            ("#.a.#", "b.a", true),
            ("#.a.#", "b.c", false),
            ("#.*.#", "a", true),
            ("#.*.*.#", "a", false),
            // The topic is not validated; an empty topic is one empty segment.
            ("#", "", true),
            ("*", "", true),
            ("warn", "", false),
            // Non-ASCII literals compare byte for byte.
            ("warn.café", "warn.café", true),
            ("warn.café", "warn.cafe", false),
        ];
        for (pattern, topic, expected) in cases {
            check(pattern, topic, expected);
        }
    }

    #[test]
    fn many_hashes_do_not_blow_up() {
        // Backtracking to every `#` would try about C(60, 30) splits here;
        // backtracking to the last one only, at most 61 per segment.
        let pattern = TopicPattern::parse(&format!("{}.z", ["#.a"; 30].join("."))).unwrap();
        assert!(!pattern.matches(&["a"; 60].join(".")));
        assert!(pattern.matches(&format!("{}.z", ["a"; 60].join("."))));
    }

    #[test]
    fn rejects_malformed_patterns() {
        use TopicParseErrorKind::*;
        #[rustfmt::skip]
        let cases = [
            ("", Empty, 0),
            (".", EmptySegment, 0),
            ("a..b", EmptySegment, 2),
            (".a", EmptySegment, 0),
            ("a.", EmptySegment, 2),
            ("warn.app.", EmptySegment, 9),
            ("a#", MixedWildcard, 1),
            ("*b", MixedWildcard, 0),
            ("a*c", MixedWildcard, 1),
            ("##", MixedWildcard, 0),
            ("**", MixedWildcard, 0),
            ("*#", MixedWildcard, 0),
            ("warn.a#", MixedWildcard, 6),
            ("warn.#.x*", MixedWildcard, 8),
            (" ", Whitespace, 0),
            ("a b", Whitespace, 1),
            ("warn.my\tapp", Whitespace, 7),
            ("warn.app ", Whitespace, 8),
            ("é.a b", Whitespace, 4), // byte, not char, positions
            ("a b#", Whitespace, 1),  // the first offending character wins
            ("a#b c", MixedWildcard, 1),
            ("a..b c", EmptySegment, 2), // and the first offending segment
        ];
        for (pattern, kind, position) in cases {
            let err = TopicPattern::parse(pattern).unwrap_err();
            assert_eq!(
                (err.kind(), err.position()),
                (kind, position),
                "pattern {pattern:?}"
            );
            assert_eq!(err.pattern(), pattern);
        }
    }

    #[test]
    fn error_display() {
        let err = TopicPattern::parse("a..b").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid topic pattern "a..b" at byte 2: empty segment"#
        );
        let err = TopicPattern::parse("").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid topic pattern "" at byte 0: empty pattern"#
        );
        let err = TopicPattern::parse("*b").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid topic pattern "*b" at byte 0: wildcard mixed with other characters in a segment"#
        );
        let err = TopicPattern::parse("a\tb").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid topic pattern "a\tb" at byte 1: whitespace in a segment"#
        );
    }

    #[test]
    fn round_trips_and_match_all() {
        for source in ["#", "warn", "*.app.db.#", "a.#.b.#.c"] {
            let pattern: TopicPattern = source.parse().unwrap();
            assert_eq!(pattern.as_str(), source);
            assert_eq!(pattern.to_string(), source);
        }
        assert_eq!(TopicPattern::match_all(), TopicPattern::parse("#").unwrap());
    }
}
