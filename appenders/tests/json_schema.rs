//! `JsonSchema`: renamed, omitted, nested and added fields, key-values under
//! a key or spread (and what a taken key becomes), constants, level and
//! timestamp formats, unknown values, `Value::Json`; bad schemas are typed
//! errors. Every line is parsed back with serde_json.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{Offset, TimeZone};
use logbus_appenders::{
    Appender, FileAppender, Json, JsonAppender, JsonField, JsonKey, JsonSchema,
    JsonSchemaErrorKind, Layout, Level, LevelFormat, Record, ThreadInfo, TimestampFormat, Topic,
    Value,
};
use serde_json::json;

/// 2026-11-29T20:25:23.941824999Z.
fn time() -> SystemTime {
    UNIX_EPOCH + Duration::new(1_795_983_923, 941_824_999)
}

fn record(level: Level) -> Record {
    Record::builder(Topic::new(level, "app::db"))
        .seq(7)
        .time(time())
        .message("slow")
        .module_path(Some("app::db".into()))
        .file(Some("src/db.rs".into()))
        .line(Some(42))
        .thread(ThreadInfo {
            id: 3,
            name: Some("main"),
        })
        .kv("ms", 1200u64)
        .build()
}

/// The objects `schema` writes for `records`, parsed.
fn render(schema: JsonSchema, records: &[Record]) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.ndjson");
    let mut json = JsonAppender::file(FileAppender::builder(&path))
        .unwrap()
        .schema(schema);
    for record in records {
        json.append(record).unwrap();
    }
    json.flush().unwrap();
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The line `schema` writes for `record`, as text.
fn raw(schema: JsonSchema, record: &Record) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raw.ndjson");
    let mut json = JsonAppender::file(FileAppender::builder(&path))
        .unwrap()
        .schema(schema);
    json.append(record).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    text.strip_suffix('\n').unwrap().to_owned()
}

fn one(schema: JsonSchema, record: &Record) -> serde_json::Value {
    render(schema, std::slice::from_ref(record)).remove(0)
}

#[test]
fn the_default_schema_is_the_object_logbus_always_wrote() {
    assert_eq!(
        one(JsonSchema::default(), &record(Level::Info)),
        json!({
            "ts": "2026-11-29T20:25:23.941824Z", "level": "INFO", "target": "app::db",
            "topic": "info.app.db", "seq": 7, "msg": "slow", "thread": "main", "thread_id": 3,
            "module": "app::db", "file": "src/db.rs", "line": 42, "kv": {"ms": 1200}
        })
    );
}

#[test]
fn every_field_can_be_renamed_or_omitted() {
    let fields = [
        JsonField::TS,
        JsonField::LEVEL,
        JsonField::TARGET,
        JsonField::TOPIC,
        JsonField::SEQ,
        JsonField::MSG,
        JsonField::THREAD,
        JsonField::THREAD_ID,
        JsonField::MODULE,
        JsonField::FILE,
        JsonField::LINE,
        JsonField::KV,
    ];
    let default = one(JsonSchema::default(), &record(Level::Info));
    for field in fields {
        let renamed = one(
            JsonSchema::builder()
                .rename(field, format!("my_{}", field.name()))
                .build()
                .unwrap(),
            &record(Level::Info),
        );
        assert_eq!(
            renamed[format!("my_{}", field.name())],
            default[field.name()]
        );
        assert!(renamed.get(field.name()).is_none());
        let omitted = one(
            JsonSchema::builder().omit(field).build().unwrap(),
            &record(Level::Info),
        );
        assert!(omitted.get(field.name()).is_none());
        assert_eq!(omitted.as_object().unwrap().len(), 11);
    }
}

#[test]
fn fields_nest_under_objects_or_take_dotted_keys() {
    let schema = JsonSchema::builder()
        .clear()
        .field("log.level", JsonField::LEVEL)
        .field(["source", "file"], JsonField::FILE)
        .field("message", JsonField::MSG)
        .field(JsonKey::dotted("source.line"), JsonField::LINE)
        .field(["source", "at", "module"], JsonField::MODULE)
        .build()
        .unwrap();
    let line = one(schema, &record(Level::Error));
    assert_eq!(
        line,
        json!({
            "log.level": "ERROR",
            "source": {"file": "src/db.rs", "line": 42, "at": {"module": "app::db"}},
            "message": "slow"
        })
    );
    // Members keep the order of their first appearance (serde_json's map
    // sorts keys: look at the text).
    let schema = JsonSchema::builder()
        .clear()
        .field("b", JsonField::MSG)
        .field(["a", "file"], JsonField::FILE)
        .field("c", JsonField::SEQ)
        .field(["a", "line"], JsonField::LINE)
        .build()
        .unwrap();
    assert_eq!(
        raw(schema, &record(Level::Info)),
        r#"{"b":"slow","a":{"file":"src/db.rs","line":42},"c":7}"#
    );
}

#[test]
fn spread_key_values_never_shadow_a_field() {
    let record = Record::builder(Topic::new(Level::Info, "app"))
        .time(time())
        .message("real")
        .kv("msg", "forged")
        .kv("kv.msg", "second")
        .kv("source", "not an object")
        .kv("n", -3i64)
        .kv("msg", "twice")
        .build();
    let schema = JsonSchema::builder()
        .clear()
        .field("msg", JsonField::MSG)
        .field(["source", "line"], JsonField::LINE)
        .flatten_kv()
        .build()
        .unwrap();
    let text = raw(schema, &record);
    // The raw line: every key-value is there, in order, none under a
    // field's key (nor its dotted path), no key twice.
    assert_eq!(
        text,
        r#"{"msg":"real","source":{"line":null},"kv.msg":"forged","kv.kv.msg":"second","kv.source":"not an object","n":-3,"kv.kv.kv.msg":"twice"}"#
    );
    let record = Record::builder(Topic::new(Level::Info, "app"))
        .time(time())
        .message("real")
        .kv("source.line", 1u64)
        .kv("source.file", 2u64)
        .build();
    let schema = JsonSchema::builder()
        .clear()
        .field(["source", "line"], JsonField::LINE)
        .flatten_kv()
        .build()
        .unwrap();
    assert_eq!(
        raw(schema, &record),
        r#"{"source":{"line":null},"kv.source.line":1,"source.file":2}"#
    );
    serde_json::from_str::<serde_json::Value>(&text).unwrap();

    // Another prefix; into a nested object.
    let schema = JsonSchema::builder()
        .clear()
        .field(["attrs", "thread"], JsonField::THREAD)
        .flatten_kv_into("attrs")
        .kv_collision_prefix("_")
        .build()
        .unwrap();
    let line = one(
        schema,
        &Record::builder(Topic::new(Level::Info, "app"))
            .kv("thread", "x")
            .kv("k", true)
            .build(),
    );
    assert_eq!(
        line,
        json!({"attrs": {"thread": "0", "_thread": "x", "k": true}})
    );
}

#[test]
fn level_formats() {
    let formats = [
        (
            LevelFormat::UPPER,
            json!(["ERROR", "WARN", "INFO", "DEBUG", "TRACE"]),
        ),
        (
            LevelFormat::LOWER,
            json!(["error", "warn", "info", "debug", "trace"]),
        ),
        (
            LevelFormat::GOOGLE_CLOUD,
            json!(["ERROR", "WARNING", "INFO", "DEBUG", "DEBUG"]),
        ),
        (LevelFormat::OTEL_NUMBER, json!([17, 13, 9, 5, 1])),
    ];
    let records: Vec<Record> = [
        Level::Error,
        Level::Warn,
        Level::Info,
        Level::Debug,
        Level::Trace,
    ]
    .into_iter()
    .map(record)
    .collect();
    for (format, expected) in formats {
        let schema = JsonSchema::builder()
            .clear()
            .field("l", JsonField::LEVEL)
            .level(format);
        let got: Vec<serde_json::Value> = render(schema.build().unwrap(), &records)
            .into_iter()
            .map(|line| line["l"].clone())
            .collect();
        assert_eq!(serde_json::Value::from(got), expected, "{format:?}");
    }
    // A member with its own format ignores the schema's; numbers as strings.
    let schema = JsonSchema::builder()
        .clear()
        .field("text", JsonField::LEVEL)
        .field(
            "number",
            JsonField::level(LevelFormat::OTEL_NUMBER).as_string(),
        )
        .level(LevelFormat::LOWER)
        .build()
        .unwrap();
    assert_eq!(
        one(schema, &record(Level::Warn)),
        json!({"text": "warn", "number": "13"})
    );
}

#[test]
fn timestamp_formats() {
    let schema = JsonSchema::builder()
        .clear()
        .field("utc", JsonField::TS)
        .field("ns", JsonField::timestamp(TimestampFormat::UNIX_NANOS))
        .field(
            "ns_text",
            JsonField::timestamp(TimestampFormat::UNIX_NANOS_STRING),
        )
        .field("ms", JsonField::timestamp(TimestampFormat::UNIX_MILLIS))
        .field(
            "ms_text",
            JsonField::timestamp(TimestampFormat::UNIX_MILLIS).as_string(),
        )
        .field(
            "local",
            JsonField::timestamp(TimestampFormat::RFC3339_LOCAL),
        )
        .build()
        .unwrap();
    let line = one(schema, &record(Level::Info));
    assert_eq!(line["utc"], "2026-11-29T20:25:23.941824Z");
    assert_eq!(line["ns"], 1_795_983_923_941_824_999u64);
    assert_eq!(line["ns_text"], "1795983923941824999");
    assert_eq!(line["ms"], 1_795_983_923_941u64);
    assert_eq!(line["ms_text"], "1795983923941");
    // The local form names the same instant, with the machine's offset.
    let local = chrono::DateTime::parse_from_rfc3339(line["local"].as_str().unwrap()).unwrap();
    assert_eq!(local.timestamp_micros(), 1_795_983_923_941_824);
    let expected_offset = chrono::Local
        .timestamp_opt(1_795_983_923, 0)
        .unwrap()
        .offset()
        .fix();
    assert_eq!(local.offset(), &expected_offset);
}

#[test]
fn unknown_values_are_null_or_left_out() {
    let bare = Record::builder(Topic::new(Level::Info, "app"))
        .time(time())
        .build();
    let schema = || {
        JsonSchema::builder()
            .clear()
            .field("msg", JsonField::MSG)
            .field(["where", "file"], JsonField::FILE)
            .field(["where", "line"], JsonField::LINE)
            .field("module", JsonField::MODULE)
    };
    assert_eq!(
        one(schema().build().unwrap(), &bare),
        json!({"msg": "", "where": {"file": null, "line": null}, "module": null})
    );
    // Left out, and so is the object left empty.
    assert_eq!(
        one(schema().omit_unknown().build().unwrap(), &bare),
        json!({"msg": ""})
    );
}

#[test]
fn constants_of_every_type() {
    let schema = JsonSchema::builder()
        .clear()
        .constant("ecs.version", "8.11.0")
        .constant(["service", "name"], "shop")
        .constant(["service", "replicas"], 3u64)
        .constant("ratio", 0.5f64)
        .constant("on", true)
        .constant("nothing", Value::Null)
        .constant(
            "labels",
            Json::parse(r#"{ "team": "core", "tier": [1, 2] }"#).unwrap(),
        )
        .build()
        .unwrap();
    assert_eq!(
        one(schema, &record(Level::Info)),
        json!({
            "ecs.version": "8.11.0", "service": {"name": "shop", "replicas": 3}, "ratio": 0.5,
            "on": true, "nothing": null, "labels": {"team": "core", "tier": [1, 2]}
        })
    );
}

#[test]
fn json_values_are_json_in_json_and_text_in_text() {
    let list = Json::parse("[1, \"two\\n\", {\"x\": null}]").unwrap();
    let record = Record::builder(Topic::new(Level::Info, "app"))
        .time(time())
        .message("m")
        .kv("list", list)
        .build();
    let line = one(JsonSchema::default(), &record);
    assert_eq!(line["kv"]["list"], json!([1, "two\n", {"x": null}]));
    let mut layout = Layout::parse("{msg}{kv}").unwrap();
    let mut out = Vec::new();
    layout.render(&record, &mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        r#"m list=[1,"two\n",{"x":null}]"#
    );
}

#[test]
fn bad_schemas_are_typed_errors_naming_the_key_and_the_member() {
    let cases = [
        (
            JsonSchema::builder().rename(JsonField::MSG, ""),
            JsonSchemaErrorKind::EmptyKey,
            JsonKey::from(""),
            Some("msg"),
        ),
        (
            JsonSchema::builder().field(JsonKey::from(Vec::<String>::new()), JsonField::MSG),
            JsonSchemaErrorKind::EmptyKey,
            JsonKey::from(Vec::<String>::new()),
            Some("msg"),
        ),
        (
            JsonSchema::builder().constant(["a", ""], 1u64),
            JsonSchemaErrorKind::EmptyKey,
            JsonKey::from(["a", ""]),
            None,
        ),
        (
            JsonSchema::builder().field("seq", JsonField::SEQ),
            JsonSchemaErrorKind::DuplicateKey,
            JsonKey::from("seq"),
            Some("seq"),
        ),
        (
            JsonSchema::builder().constant("level", "x"),
            JsonSchemaErrorKind::DuplicateKey,
            JsonKey::from("level"),
            None,
        ),
        (
            JsonSchema::builder().field(["kv", "x"], JsonField::MSG),
            JsonSchemaErrorKind::DuplicateKey,
            JsonKey::from("kv"),
            Some("msg"),
        ),
        (
            JsonSchema::builder().flatten_kv_into("line"),
            JsonSchemaErrorKind::DuplicateKey,
            JsonKey::from("line"),
            Some("kv"),
        ),
        (
            JsonSchema::builder().clear().rename(JsonField::TS, "t"),
            JsonSchemaErrorKind::NotInSchema,
            JsonKey::from("t"),
            Some("ts"),
        ),
        (
            JsonSchema::builder().kv_collision_prefix(""),
            JsonSchemaErrorKind::EmptyPrefix,
            JsonKey::from(Vec::<String>::new()),
            None,
        ),
    ];
    for (builder, kind, key, field) in cases {
        let err = builder.build().unwrap_err();
        assert_eq!(
            (err.kind(), err.key(), err.field()),
            (kind, &key, field),
            "{err}"
        );
        assert!(
            err.to_string().starts_with("invalid JSON schema: "),
            "{err}"
        );
    }
}
