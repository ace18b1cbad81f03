//! JSON output: whatever a message or value holds, every record is one line
//! that parses back to the same values.

mod common;

use std::borrow::Cow;

use common::Capture;
use logbus_appenders::{Appender, FileAppender, Json, JsonAppender, Level, Record, Topic, Value};
use proptest::prelude::*;

/// Text rich in what breaks naive encoders.
fn nasty_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just('"'),
            Just('\\'),
            Just('\n'),
            Just('\r'),
            Just('\u{0}'),
            Just('\u{1b}'),
            Just('\u{7f}'),
            Just('\u{85}'),
            Just('\u{2028}'),
            Just('é'),
            Just('😀'),
            Just('{'),
            Just('}'),
            any::<char>(),
        ],
        0..24,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        nasty_text().prop_map(Value::from),
        any::<i64>().prop_map(Value::I64),
        any::<u64>().prop_map(Value::U64),
        (-1e300f64..1e300).prop_map(Value::F64),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ]
}

fn expected_json(value: &Value) -> serde_json::Value {
    match value {
        Value::Str(s) => serde_json::Value::from(s.as_ref()),
        Value::I64(v) => serde_json::Value::from(*v),
        Value::U64(v) => serde_json::Value::from(*v),
        Value::F64(v) => serde_json::Value::from(*v),
        Value::Bool(v) => serde_json::Value::from(*v),
        _ => serde_json::Value::Null,
    }
}

proptest! {
    #[test]
    fn every_line_parses_back_to_the_same_values(
        records in prop::collection::vec(
            (nasty_text(), prop::collection::btree_map(nasty_text(), value(), 0..6)),
            1..8,
        )
    ) {
        let out = Capture::default();
        let mut json = JsonAppender::writer(out.clone());
        for (seq, (message, kv)) in records.iter().enumerate() {
            let kv: Vec<(Cow<'static, str>, Value)> =
                kv.iter().map(|(k, v)| (Cow::Owned(k.clone()), v.clone())).collect();
            let record = Record::builder(Topic::new(Level::Debug, "app::prop"))
                .seq(seq as u64)
                .message(message.clone())
                .key_values(kv)
                .build();
            json.append(&record).unwrap();
        }
        json.flush().unwrap();
        let text = out.text();
        let lines: Vec<&str> = text.split_terminator('\n').collect();
        prop_assert_eq!(lines.len(), records.len());
        for (seq, (line, (message, kv))) in lines.iter().zip(&records).enumerate() {
            let parsed: serde_json::Value = serde_json::from_str(line).unwrap();
            prop_assert_eq!(&parsed["msg"], &serde_json::Value::from(message.as_str()));
            prop_assert_eq!(&parsed["seq"], &serde_json::Value::from(seq as u64));
            prop_assert_eq!(&parsed["level"], "DEBUG");
            prop_assert_eq!(&parsed["topic"], "debug.app.prop");
            let object = parsed["kv"].as_object().unwrap();
            prop_assert_eq!(object.len(), kv.len());
            for (key, value) in kv {
                let got = &object[key.as_str()];
                if let Value::F64(v) = value {
                    // serde_json writes the shortest exact representation,
                    // but its default parser may be off by one ulp.
                    let got = got.as_f64().unwrap();
                    prop_assert!((got - v).abs() <= v.abs() * 1e-15, "{got} != {v}");
                } else {
                    prop_assert_eq!(got, &expected_json(value));
                }
            }
        }
    }
}

/// Serialises as serde_json's raw value marker: serde_json writes the text
/// as it is, JSON or not.
struct Forged(&'static str);

impl serde::Serialize for Forged {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        const TOKEN: &str = "$serde_json::private::RawValue";
        let mut raw = s.serialize_struct(TOKEN, 1)?;
        raw.serialize_field(TOKEN, self.0)?;
        raw.end()
    }
}

#[test]
fn raw_values_are_checked_and_compacted_into_one_line() {
    let raw = serde_json::value::RawValue::from_string("[1,\n 2]".into()).unwrap();
    let json = Json::from_serialize(&raw).unwrap();
    assert_eq!(json.as_str(), "[1,2]");
    let out = Capture::default();
    let mut appender = JsonAppender::writer(out.clone());
    appender
        .append(
            &Record::builder(Topic::new(Level::Info, "a"))
                .kv("raw", json)
                .build(),
        )
        .unwrap();
    appender.flush().unwrap();
    let text = out.text();
    assert_eq!(text.lines().count(), 1, "{text}");
    let parsed: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
    assert_eq!(parsed["kv"]["raw"], serde_json::json!([1, 2]));

    // What serde_json wrote is not one JSON value: refused, with where.
    let err = Json::from_serialize(&Forged("1]\n{\"forged\":true}")).unwrap_err();
    assert_eq!((err.line(), err.column()), (1, 2));
    assert_eq!(err.to_string(), "invalid JSON at line 1, column 2");
    assert!(Json::from_serialize(&Forged("")).is_err());
    // `RawValue::from_string` lets a lone surrogate escape in; `Json` does not.
    let raw = serde_json::value::RawValue::from_string(r#"["\ud800"]"#.into()).unwrap();
    assert!(Json::from_serialize(&raw).is_err());
}

#[test]
fn json_parse_reads_strictly() {
    for text in [
        r#"{"a":"\ud800"}"#,
        r#"["\udc00"]"#,
        r#"["\ud800\u0041"]"#,
        r#"["\ud800\n"]"#,
        r#"{"\ud800":1}"#,
        "1e400",
    ] {
        assert!(Json::parse(text).is_err(), "{text}");
        assert!(
            serde_json::from_str::<serde_json::Value>(text).is_err(),
            "{text}"
        );
    }
    let pair = Json::parse("{\"a\": \"\\ud83d\\ude00 \\u0041\"}").unwrap();
    assert_eq!(pair.as_str(), r#"{"a":"\ud83d\ude00 \u0041"}"#);
    let back: serde_json::Value = serde_json::from_str(pair.as_str()).unwrap();
    assert_eq!(back["a"], "\u{1f600} A");
}

#[test]
fn the_timestamp_is_rfc3339_utc_with_microseconds() {
    let out = Capture::default();
    let mut json = JsonAppender::writer(out.clone());
    let time = std::time::UNIX_EPOCH + std::time::Duration::new(1_795_983_923, 941_824_000);
    json.append(
        &Record::builder(Topic::new(Level::Info, "a"))
            .time(time)
            .build(),
    )
    .unwrap();
    json.flush().unwrap();
    let text = out.text();
    let parsed: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
    assert_eq!(parsed["ts"], "2026-11-29T20:25:23.941824Z");
}

#[test]
fn dead_letter_metadata_lands_inside_kv() {
    let out = Capture::default();
    let mut json = JsonAppender::writer(out.clone());
    let record = Record::builder(Topic::new(Level::Error, "app"))
        .message("m")
        .build()
        .with_extra_kv(vec![
            ("dead_letter.appender".into(), Value::from("file")),
            ("dead_letter.attempts".into(), Value::U64(3)),
        ]);
    json.append(&record).unwrap();
    json.flush().unwrap();
    let text = out.text();
    let parsed: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
    assert_eq!(parsed["kv"]["dead_letter.appender"], "file");
    assert_eq!(parsed["kv"]["dead_letter.attempts"], 3);
}

#[test]
fn json_files_rotate_with_the_shared_rolling_code() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.ndjson");
    let mut json =
        JsonAppender::file(FileAppender::builder(&path).max_bytes(600).keep(50)).unwrap();
    let total = 40u64;
    for seq in 0..total {
        let record = Record::builder(Topic::new(Level::Info, "app"))
            .seq(seq)
            .message("line\nbreak")
            .build();
        json.append(&record).unwrap();
    }
    json.flush().unwrap();
    assert!(dir.path().join("app.ndjson.1").exists());
    let mut seqs = Vec::new();
    for index in (1..=50).rev() {
        let rotated = dir.path().join(format!("app.ndjson.{index}"));
        if let Ok(text) = std::fs::read_to_string(rotated) {
            assert!(text.len() <= 600);
            seqs.extend(text.lines().map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                    .as_u64()
                    .unwrap()
            }));
        }
    }
    let live = std::fs::read_to_string(&path).unwrap();
    seqs.extend(live.lines().map(|l| {
        serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
            .as_u64()
            .unwrap()
    }));
    assert_eq!(seqs, (0..total).collect::<Vec<_>>());
}
