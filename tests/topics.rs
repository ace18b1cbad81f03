//! Topic patterns through a real broker: malformed patterns are rejected at subscribe time
//! with their position, and a table of (pattern, level, target) says what is delivered.

mod common;

use log::Level;
use logbus::{
    LevelFilter, Memory, SubscribeError, Subscription, TopicParseErrorKind, TopicPattern,
};

#[test]
fn malformed_patterns_are_rejected_at_subscribe_time_with_position() {
    let broker = common::broker();
    #[rustfmt::skip]
    let cases: &[(&str, TopicParseErrorKind, usize)] = &[
        ("", TopicParseErrorKind::Empty, 0),
        ("a..b", TopicParseErrorKind::EmptySegment, 2),
        (".a", TopicParseErrorKind::EmptySegment, 0),
        ("a.", TopicParseErrorKind::EmptySegment, 2),
        ("a#", TopicParseErrorKind::MixedWildcard, 1),
        ("*b", TopicParseErrorKind::MixedWildcard, 0),
        ("a*c", TopicParseErrorKind::MixedWildcard, 1),
        ("##", TopicParseErrorKind::MixedWildcard, 0),
        ("warn.my app", TopicParseErrorKind::Whitespace, 7),
    ];
    for &(pattern, kind, position) in cases {
        // A good pattern beside the bad one does not save it.
        let result = broker.subscribe(
            Subscription::builder("sub", Memory::new().0)
                .pattern("#")
                .pattern(pattern),
        );
        match result {
            Err(SubscribeError::Pattern(e)) => {
                assert_eq!(e.pattern(), pattern);
                assert_eq!(e.kind(), kind, "pattern {pattern:?}");
                assert_eq!(e.position(), position, "pattern {pattern:?}");
            }
            other => panic!("pattern {pattern:?}: expected a pattern error, got {other:?}"),
        }
        // The rejected subscription left nothing behind.
        assert!(
            broker.stats().subscriptions.is_empty(),
            "pattern {pattern:?}"
        );
        assert!(broker.subscription("sub").is_none());
    }
    // The name is still free.
    broker
        .subscribe(Subscription::builder("sub", Memory::new().0).pattern("#"))
        .unwrap();
}

#[test]
fn table_of_patterns_levels_and_targets() {
    common::enable_all_levels();
    #[rustfmt::skip]
    let table: &[(&str, Level, &str, bool)] = &[
        ("#", Level::Info, "app", true),
        ("#", Level::Trace, "", true),
        ("#.#", Level::Info, "app", true),
        ("error.#", Level::Error, "app::db", true),
        ("error.#", Level::Error, "", true),
        ("error.#", Level::Warn, "app::db", false),
        ("*.app.db.#", Level::Warn, "app::db", true),
        ("*.app.db.#", Level::Info, "app::db::pool", true),
        ("*.app.db.#", Level::Info, "app", false),
        ("*.app.db.#", Level::Info, "app::dbx", false),
        ("*.app.db.#", Level::Info, "db", false),
        ("warn.*", Level::Warn, "app", true),
        ("warn.*", Level::Warn, "app::db", false),
        ("warn.*", Level::Warn, "", false),
        ("warn.*", Level::Error, "app", false),
        ("#.db", Level::Debug, "app::db", true),
        ("#.db", Level::Debug, "db", true),
        ("#.db", Level::Debug, "app::db::pool", false),
        ("*.*", Level::Info, "app", true),
        ("*.*", Level::Info, "app::db", false),
        ("info.app", Level::Info, "app", true),
        ("info.app", Level::Info, "app::db", false),
        ("info.app", Level::Debug, "app", false),
        ("info.#.b.#.c", Level::Info, "b::c", true),
        ("info.#.b.#.c", Level::Info, "x::b::y::z::c", true),
        ("info.#.b.#.c", Level::Info, "c::b", false),
        ("trace.#", Level::Trace, "app::db", true),
        ("trace.#", Level::Debug, "app::db", false),
        // A `.` in a target separates segments just like `::`.
        ("info.my.mod", Level::Info, "my.mod", true),
        ("info.my-crate.#", Level::Info, "my-crate::x", true),
        ("info.app", Level::Info, "App", false),
    ];
    for &(pattern, level, target, delivered) in table {
        let broker = logbus::Broker::new();
        let (appender, captured) = Memory::new();
        broker
            .subscribe(Subscription::builder("sub", appender).pattern(pattern))
            .unwrap();
        log::log!(logger: &broker, target: target, level, "hello");
        broker.flush().unwrap();
        let expected: &[&str] = if delivered { &["hello"] } else { &[] };
        assert_eq!(
            common::user_messages(&captured),
            expected,
            "pattern {pattern:?}, level {level}, target {target:?}"
        );
        // The standalone matcher agrees with the broker.
        let topic = logbus::Topic::new(level, target);
        assert_eq!(
            TopicPattern::parse(pattern)
                .unwrap()
                .matches(topic.as_str()),
            delivered,
            "TopicPattern::matches({pattern:?}, {:?})",
            topic.as_str()
        );
    }
}

#[test]
fn level_threshold_combines_with_match_all() {
    let broker = common::broker();
    let (appender, captured) = Memory::new();
    broker
        .subscribe(
            Subscription::builder("warn", appender)
                .pattern("#")
                .level(LevelFilter::Warn),
        )
        .unwrap();
    for target in ["app", "app::db", ""] {
        log::error!(logger: &broker, target: target, "error {target}");
        log::warn!(logger: &broker, target: target, "warn {target}");
        log::info!(logger: &broker, target: target, "info {target}");
        log::debug!(logger: &broker, target: target, "debug {target}");
        log::trace!(logger: &broker, target: target, "trace {target}");
    }
    broker.flush().unwrap();
    assert_eq!(
        common::user_messages(&captured),
        [
            "error app",
            "warn app",
            "error app::db",
            "warn app::db",
            "error ",
            "warn ",
        ]
    );
    assert_eq!(broker.max_level(), LevelFilter::Warn);
    let stats = broker.subscription("warn").unwrap().stats();
    assert_eq!((stats.matched, stats.written), (6, 6));
}

/// A well-formed pattern that no topic can match is refused when
/// subscribing, with the segment at fault, instead of matching nothing.
#[test]
fn a_pattern_that_can_never_match_is_a_typed_error() {
    use logbus::{
        Journal, JournalQuery, Memory, SubscribeError, Subscription, TopicParseErrorKind,
    };
    let broker = common::broker();
    for (pattern, at) in [
        ("app::db", 0),
        ("WARN.#", 0),
        ("app.#", 0),
        ("*.app::db", 2),
        ("#.a::b", 2),
    ] {
        match broker.subscribe(Subscription::builder("s", Memory::new().0).pattern(pattern)) {
            Err(SubscribeError::Pattern(e)) => {
                assert_eq!(e.kind(), TopicParseErrorKind::NeverMatches, "{pattern}");
                assert_eq!((e.pattern(), e.position()), (pattern, at));
                assert!(e.to_string().contains("no topic can match"), "{e}");
            }
            other => panic!("{pattern}: {other:?}"),
        }
    }
    // These can match.
    for pattern in ["info.app", "*.app.db", "#", "#.db", "error.a:b"] {
        let name = format!("ok {pattern}");
        broker
            .subscribe(Subscription::builder(name.as_str(), Memory::new().0).pattern(pattern))
            .unwrap();
    }
    assert!(broker.set_patterns("ok #", &["Info.app"]).is_err());
    assert!(broker
        .set_journal(Journal::new().pattern("app::db"))
        .is_err());
    broker.set_journal(Journal::new()).unwrap();
    let journal = broker.journal().unwrap();
    assert!(journal.iter(JournalQuery::new().pattern("app.#")).is_err());
}
