//! The three text parsers (layouts, topic patterns, `RUST_LOG` directives) never panic, and
//! an accepted layout renders any record, at any time, on one line.
//!
//! Each parser takes text from configuration or the environment, so any string must give
//! `Ok` or a typed error. Every parser gets arbitrary strings (mostly rejected early), strings
//! over its own alphabet, and strings built from pieces of its grammar (which reach the deeper
//! rules: strftime formats, widths, level names). The same properties, with coverage guidance,
//! are the cargo-fuzz targets in `fuzz/` (`bash .ci/fuzz`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use logbus::appenders::{Layout, Level, Record, Topic};
use logbus::{Directives, TopicPattern};
use proptest::prelude::*;

/// Parses `pattern` and, when it is accepted, renders one record with it: the strftime part of
/// `{ts:FMT}` is only probed at parse time, so rendering is covered too.
fn layout(pattern: &str) {
    let Ok(mut layout) = Layout::parse(pattern) else {
        return;
    };
    let record = Record::builder(Topic::new(Level::Warn, "app::db"))
        .message("slow query")
        .kv("ms", 1200u64)
        .build();
    let mut line = Vec::new();
    layout.render(&record, &mut line);
}

/// Parses `pattern` and, when it is accepted, renders a record made of the rest, at any time
/// a `SystemTime` holds (a review found `{ts}` panicking on one): no panic, and one line (every
/// field's control characters are escaped).
fn layout_on_record(
    pattern: &str,
    time: Option<SystemTime>,
    message: &str,
    target: &str,
    kv: (&str, &str),
) {
    let Ok(mut layout) = Layout::parse(pattern) else {
        return;
    };
    let mut record = Record::builder(Topic::new(Level::Info, target))
        .message(message.to_owned())
        .kv(kv.0.to_owned(), kv.1.to_owned());
    if let Some(time) = time {
        record = record.time(time);
    }
    let mut line = Vec::new();
    layout.render(&record.build(), &mut line);
    assert!(
        !line.contains(&b'\n'),
        "{pattern:?} rendered more than one line"
    );
}

/// A time `seconds` (and `nanos`) from the epoch, either way, if a `SystemTime` holds it.
fn time(seconds: i64, nanos: u32) -> Option<SystemTime> {
    let span = Duration::new(seconds.unsigned_abs(), nanos);
    if seconds >= 0 {
        UNIX_EPOCH.checked_add(span)
    } else {
        UNIX_EPOCH.checked_sub(span)
    }
}

/// Parses `pattern` and, when it is accepted, matches it against `topic` and against itself.
fn topic_pattern(pattern: &str, topic: &str) {
    if let Ok(parsed) = TopicPattern::parse(pattern) {
        let _ = parsed.matches(topic);
        let _ = parsed.matches(pattern);
    }
}

/// Parses `spec` strictly (through `FromStr`) and lossily.
fn directives(spec: &str) {
    let _ = spec.parse::<Directives>();
    let _ = Directives::parse_lossy(spec);
}

/// Strings made of up to `max` pieces of `fragments`, to reach the grammar's deeper rules (a
/// level name after `=`, a `::` path) far more often than single characters would.
fn joined(fragments: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(fragments), 0..max).prop_map(|parts| parts.concat())
}

/// Every placeholder name but the timestamps'.
const PLACEHOLDERS: &[&str] = &[
    "level", "target", "topic", "seq", "msg", "kv", "thread", "file", "line", "module",
];

/// strftime pieces chrono renders.
const STRFTIME: &[&str] = &[
    "%Y", "%m", "%d", "%H", "%M", "%S", "%.3f", "%.6f", "%.9f", "%f", "%3f", "%:z", "%z", "%::z",
    "%:::z", "%Z", "%s", "%+", "%c", "%%", "%-d", "%_H", "%0e", "T", " ", ":", "é",
];

/// Names, widths and strftime pieces that are wrong, or cut off.
const BAD_PIECES: &[&str] = &[
    "lvl", "", " ts", "TS", "x", "<", "%Q", "%", "%-", "%_", "%0", "%E", "%.", "%#z", "{", "%{",
];

/// Layout-shaped strings: timestamps with or without a strftime format, other placeholders with
/// or without a width, literal text that may hold stray braces. One piece in ten is wrong, so
/// that about half of the layouts parse and the rest fail at some depth.
fn layout_like() -> impl Strategy<Value = String> {
    let bad = || prop::sample::select(BAD_PIECES);
    let strftime_piece = prop_oneof![9 => prop::sample::select(STRFTIME), 1 => bad()];
    let format = prop::collection::vec(strftime_piece, 0..6).prop_map(|f| match f.len() {
        0 => String::new(),
        _ => format!(":{}", f.concat()),
    });
    let timestamp = (prop::sample::select(&["ts", "ts_local"][..]), format);
    let width = prop_oneof![
        9 => "(:[<>^]?[0-9]{1,3})?",
        1 => bad().prop_map(|piece| format!(":{piece}")),
    ];
    let other = (prop::sample::select(PLACEHOLDERS), width);
    let placeholder = prop_oneof![
        2 => timestamp.prop_map(|(name, format)| format!("{{{name}{format}}}")),
        2 => other.prop_map(|(name, width)| format!("{{{name}{width}}}")),
        1 => bad().prop_map(|piece| format!("{{{piece}}}")),
    ];
    let literal = prop_oneof![
        8 => "[a-z %:]{0,3}".boxed(),
        1 => prop::sample::select(&["{{", "}}"][..]).prop_map(String::from).boxed(),
        1 => prop::sample::select(&["{", "}"][..]).prop_map(String::from).boxed(),
    ];
    let item = prop_oneof![4 => placeholder, 1 => literal];
    prop::collection::vec(item, 0..5).prop_map(|items| items.concat())
}

/// Pieces of a `RUST_LOG` spec.
const DIRECTIVE_PIECES: &[&str] = &[
    "app", "app::db", "::", ":", "=", ",", " ", "/", "*", "off", "error", "warn", "info", "debug",
    "trace", "TRACE", "loud", "0", "5", "6", "é",
];

proptest! {
    // One to two seconds for the whole file in a debug build on 2 busy cores.
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn layout_on_any_string(pattern in any::<String>()) {
        layout(&pattern);
    }

    #[test]
    fn layout_on_layout_like_strings(pattern in "[{}a-z:<>^0-9 %_.-]{0,40}") {
        layout(&pattern);
    }

    #[test]
    fn layout_on_layout_shaped_strings(pattern in layout_like()) {
        layout(&pattern);
    }

    #[test]
    fn layout_renders_any_record_on_one_line(
        pattern in layout_like(),
        seconds in prop_oneof![any::<i64>(), -100_000_000_000i64..100_000_000_000],
        nanos in 0u32..1_000_000_000,
        message in any::<String>(),
        target in any::<String>(),
        key in any::<String>(),
        value in any::<String>(),
    ) {
        layout_on_record(&pattern, time(seconds, nanos), &message, &target, (&key, &value));
    }

    #[test]
    fn topic_pattern_on_any_strings(pattern in any::<String>(), topic in any::<String>()) {
        topic_pattern(&pattern, &topic);
    }

    #[test]
    fn topic_pattern_on_pattern_like_strings(
        pattern in "[a-z*#. ]{0,30}",
        topic in "[a-z.]{0,30}",
    ) {
        topic_pattern(&pattern, &topic);
    }

    // A two-letter alphabet, so that patterns and topics share segments and often match.
    #[test]
    fn topic_pattern_on_small_alphabet(pattern in "[ab*#.]{0,12}", topic in "[ab.]{0,12}") {
        topic_pattern(&pattern, &topic);
    }

    #[test]
    fn directives_on_any_string(spec in any::<String>()) {
        directives(&spec);
    }

    #[test]
    fn directives_on_directive_like_strings(spec in "[a-z:=,/.*0-9 ]{0,40}") {
        directives(&spec);
    }

    #[test]
    fn directives_on_directive_pieces(spec in joined(DIRECTIVE_PIECES, 12)) {
        directives(&spec);
    }
}
