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
