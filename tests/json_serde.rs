//! Feature `serde`: a key-value logged with `:serde` reaches the appenders
//! as JSON (`Value::Json`) when it is structured, keeps its type when it is
//! a primitive, and is bounded and counted like any value.
#![cfg(feature = "serde")]

use std::collections::BTreeMap;

use logbus::appenders::{FileAppender, Json, JsonAppender};
use logbus::{LevelFilter, Memory, Subscription, Value};

#[test]
fn structured_values_arrive_as_json_and_primitives_keep_their_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.ndjson");
    let (memory, captured) = Memory::new();
    let json = JsonAppender::file(FileAppender::builder(&path)).unwrap();
    let broker = logbus::builder()
        .appender(Subscription::builder("memory", memory))
        .appender(Subscription::builder("json", json))
        .build()
        .unwrap();
    log::set_max_level(LevelFilter::Trace);
    let list = vec![1, 2, 3];
    let map = BTreeMap::from([("a", vec!["x y"]), ("b", vec![])]);
    log::info!(
        logger: &broker,
        list:serde = list,
        map:serde = map,
        n:serde = 5u8,
        s:serde = "text",
        none:serde = Option::<u8>::None,
        dbg:? = list;
        "x"
    );
    broker.flush().unwrap();

    let records = captured.records();
    let record = &records[0];
    assert_eq!(
        record.get("list"),
        Some(&Value::Json(Json::parse("[1,2,3]").unwrap()))
    );
    assert_eq!(
        record.get("map"),
        Some(&Value::Json(
            Json::parse(r#"{"a":["x y"],"b":[]}"#).unwrap()
        ))
    );
    assert_eq!(record.get("n"), Some(&Value::U64(5)));
    assert_eq!(record.get("s"), Some(&Value::from("text")));
    assert_eq!(record.get("none"), Some(&Value::Null));
    // `:?` is text, as without the feature.
    assert_eq!(record.get("dbg"), Some(&Value::from("[1, 2, 3]")));
    assert_eq!(broker.stats().truncated, 0);

    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&path).unwrap().trim_end()).unwrap();
    assert_eq!(line["kv"]["list"], serde_json::json!([1, 2, 3]));
    assert_eq!(
        line["kv"]["map"],
        serde_json::json!({"a": ["x y"], "b": []})
    );
    assert_eq!(line["kv"]["n"], 5);
    assert_eq!(line["kv"]["dbg"], "[1, 2, 3]");
}

#[test]
fn a_huge_structured_value_is_cut_at_the_bound_and_counted() {
    let (memory, captured) = Memory::new();
    let broker = logbus::builder()
        .max_record_bytes(1024)
        .appender(Subscription::builder("memory", memory))
        .build()
        .unwrap();
    log::set_max_level(LevelFilter::Trace);
    // About 6.9 MB of JSON: serialisation stops just past the bound.
    let huge: Vec<u64> = (0..1_000_000).collect();
    log::info!(logger: &broker, huge:serde = huge; "x");
    broker.flush().unwrap();

    let records = captured.records();
    let Some(Value::Str(text)) = records[0].get("huge") else {
        panic!("expected a bounded string: {:?}", records[0].get("huge"));
    };
    assert!(text.starts_with("[0,1,2,3"), "{text}");
    assert!(text.ends_with("+ bytes]"), "{text}");
    let kept = text.find('…').unwrap();
    assert!(kept <= 1024, "{kept}");
    assert_eq!(broker.stats().truncated, 1);
}

/// A broker with a memory subscription; `usual`: with a predicate that
/// takes everything, which keeps its records on the usual path.
fn memory_broker(usual: bool) -> (logbus::Broker, logbus::MemoryHandle) {
    let (memory, captured) = Memory::new();
    let mut subscription = Subscription::builder("memory", memory).level(LevelFilter::Trace);
    if usual {
        subscription = subscription.filter(|_: &logbus::Record| true);
    }
    (
        logbus::builder().appender(subscription).build().unwrap(),
        captured,
    )
}

/// Counts the runs of its `Display`; serialises through it, as chrono,
/// uuid, url and `IpAddr` do (`collect_str`).
struct Stamp(&'static str, &'static std::sync::atomic::AtomicU64);

impl std::fmt::Display for Stamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f.write_str(self.0)
    }
}

impl serde::Serialize for Stamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A `:serde` value whose `Serialize` formats through `Display` runs it
/// once, on the direct path (packed into the slot) and the usual path (a
/// predicate keeps the record there) alike, and when the call packs it and
/// then falls back: a later key-value is `Display` (not packed), the text
/// does not fit the slot beside the message, is longer than a key-value
/// packs, or comes after a text that does not fit. Both paths record the
/// same text (reviews found the fallback visiting it again).
#[test]
fn a_serde_value_that_formats_runs_its_display_once_on_either_path() {
    use std::sync::atomic::{AtomicU64, Ordering};
    static RUNS: AtomicU64 = AtomicU64::new(0);
    // `log`'s global filter lets every level through (no logger is set).
    log::set_max_level(log::LevelFilter::Trace);
    let mut values = Vec::new();
    for usual in [false, true] {
        let (broker, captured) = memory_broker(usual);
        let runs = |log: &dyn Fn()| {
            let before = RUNS.load(Ordering::Relaxed);
            log();
            RUNS.load(Ordering::Relaxed) - before
        };
        let short = Stamp("2026-12-07T13:00:00Z", &RUNS);
        let long = Stamp("a text too long to fit the slot beside its message", &RUNS);
        let longer = Stamp(
            "a text longer than a key-value packs, 127 bytes, which a URL easily is: \
             https://example.com/a/path/that/goes/on/and/on?with=a&query=string",
            &RUNS,
        );
        let text = "a text too long for the slot, borrowed: the usual path visits it again, which runs no code at all";
        let shown = std::hint::black_box(7);
        let counts = [
            runs(&|| log::info!(logger: &broker, target: "app", t:serde = short; "fits")),
            runs(
                &|| log::info!(logger: &broker, target: "app", t:serde = short, d:% = shown; "then"),
            ),
            runs(
                &|| log::info!(logger: &broker, target: "app", t:serde = long; "a message of some length"),
            ),
            runs(&|| log::info!(logger: &broker, target: "app", t:serde = longer; "msg")),
            runs(
                &|| log::info!(logger: &broker, target: "app", a = text, b = text, t:serde = long; "msg"),
            ),
        ];
        assert_eq!(counts, [1; 5], "usual path: {usual}");
        broker.flush().unwrap();
        let records = captured.records();
        assert_eq!(records.len(), 5);
        values.push(
            records
                .iter()
                .map(|r| r.key_values().to_vec())
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(
        values[0], values[1],
        "the direct path's key-values, then the usual path's"
    );
    assert_eq!(
        values[0][1][0].1,
        Value::Str("2026-12-07T13:00:00Z".to_owned().into())
    );
}

/// Serialises a number, then fails.
struct Failing;

impl serde::Serialize for Failing {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(7)?;
        Err(<S::Error as serde::ser::Error>::custom("after all, no"))
    }
}

/// A `:serde` value whose `Serialize` fails after a number is not packed
/// as that number: both paths record what the usual path makes of it (a
/// review found the direct path keeping the number).
#[test]
fn a_serde_value_that_fails_after_a_number_is_recorded_as_the_usual_path_records_it() {
    log::set_max_level(log::LevelFilter::Trace);
    let mut values = Vec::new();
    for usual in [false, true] {
        let (broker, captured) = memory_broker(usual);
        log::info!(logger: &broker, target: "app", w:serde = Failing; "msg");
        broker.flush().unwrap();
        values.push(captured.records()[0].get("w").cloned());
    }
    assert_eq!(values[0], values[1]);
    assert_ne!(values[0], Some(Value::U64(7)));
}

/// Serialises a 128-bit number, counting its runs.
struct Wide(u128, &'static std::sync::atomic::AtomicU64);

impl serde::Serialize for Wide {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        s.serialize_u128(self.0)
    }
}

/// A `:serde` value that serialises a 128-bit number, which a slot does
/// not carry, runs its `Serialize` once on either path and is recorded as
/// the usual path records it (a review found it run twice on a call the
/// direct path tried first).
#[test]
fn a_serde_value_of_128_bits_runs_once_and_reads_the_same_on_either_path() {
    use std::sync::atomic::{AtomicU64, Ordering};
    static RUNS: AtomicU64 = AtomicU64::new(0);
    log::set_max_level(log::LevelFilter::Trace);
    let mut values = Vec::new();
    for usual in [false, true] {
        let (broker, captured) = memory_broker(usual);
        let before = RUNS.load(Ordering::Relaxed);
        let wide = Wide(u128::MAX, &RUNS);
        log::info!(logger: &broker, target: "app", n = 1u64, w:serde = wide, m = 2u64; "msg");
        assert_eq!(
            RUNS.load(Ordering::Relaxed) - before,
            1,
            "usual path: {usual}"
        );
        broker.flush().unwrap();
        values.push(captured.records()[0].key_values().to_vec());
    }
    assert_eq!(values[0], values[1]);
    assert_eq!(values[0][1].1, Value::Str(u128::MAX.to_string().into()));
}
