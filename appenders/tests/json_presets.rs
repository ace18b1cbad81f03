//! The presets against a sample from each convention's own docs: a record
//! with the sample's content is written by logbus and both objects are
//! parsed with serde_json; every member of the sample must be in ours, at
//! the same nesting, with the same JSON type, unless listed as what logbus
//! cannot fill; every member of ours must be in the sample, unless listed
//! as what logbus adds.

use std::time::{Duration, UNIX_EPOCH};

use logbus_appenders::{
    Appender, FileAppender, Json, JsonAppender, JsonSchema, JsonSchemaBuilder, Level, Record,
    ThreadInfo, Topic, ECS_VERSION,
};
use serde_json::Value as J;

/// The JSON type of `value`, as the comparison sees it.
fn kind(value: &J) -> &'static str {
    match value {
        J::Null => "null",
        J::Bool(_) => "boolean",
        J::Number(_) => "number",
        J::String(_) => "string",
        J::Array(_) => "array",
        J::Object(_) => "object",
    }
}

/// The paths (`a > b`) of every member of `value`, objects included, with
/// their JSON types.
fn members(value: &J, at: &str, out: &mut Vec<(String, &'static str)>) {
    if let J::Object(map) = value {
        for (key, inner) in map {
            let path = if at.is_empty() {
                key.clone()
            } else {
                format!("{at} > {key}")
            };
            out.push((path.clone(), kind(inner)));
            members(inner, &path, out);
        }
    }
}

/// Compares the shapes of `ours` and `sample` (see the module docs).
#[track_caller]
fn same_shape(ours: &J, sample: &J, cannot_fill: &[&str], adds: &[&str]) {
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    members(ours, "", &mut mine);
    members(sample, "", &mut theirs);
    for (path, kind) in &theirs {
        if cannot_fill
            .iter()
            .any(|gap| path == gap || path.starts_with(&format!("{gap} > ")))
        {
            assert!(
                !mine.iter().any(|(p, _)| p == path),
                "{path} is listed as a gap but filled"
            );
            continue;
        }
        let found = mine.iter().find(|(p, _)| p == path);
        assert_eq!(
            found.map(|(_, k)| *k),
            Some(*kind),
            "sample member {path}\nours: {ours}"
        );
    }
    for (path, _) in &mine {
        let listed = adds
            .iter()
            .any(|add| path == add || path.starts_with(&format!("{add} > ")));
        assert!(
            listed || theirs.iter().any(|(p, _)| p == path),
            "{path} is not in the sample nor listed as added\nours: {ours}"
        );
    }
}

/// The line `schema` writes for `record`, parsed.
fn write(schema: JsonSchemaBuilder, record: &Record) -> J {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.ndjson");
    let mut json = JsonAppender::file(FileAppender::builder(&path))
        .unwrap()
        .schema(schema.build().unwrap());
    json.append(record).unwrap();
    json.flush().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1);
    serde_json::from_str(&text).unwrap()
}

fn thread() -> ThreadInfo {
    ThreadInfo {
        id: 7,
        name: Some("my-thread-name-001"),
    }
}

#[test]
fn ecs_matches_the_ecs_logging_spec_sample() {
    // Source: the ecs-logging spec, "A richer Event Context",
    // https://github.com/elastic/ecs-logging/tree/main/spec (README.md).
    let sample: J = serde_json::from_str(
        r#"{
            "@timestamp": "2016-05-23T08:05:36.789Z",
            "log.level": "NOTICE",
            "message": "This is an event with a more elaborate context",
            "ecs.version": "1.4.0",
            "log": {
                "logger": "MyLogger",
                "origin": {
                    "file": {
                        "name": "App.java",
                        "line": 42
                    },
                    "function": "methodName"
                }
            },
            "process": {
                "thread": {
                    "name": "my-thread-name-001"
                }
            },
            "labels": {
                "app_version": "1.0.42",
                "app_region": "europe-02",
                "app_uptime": "2016-05-15T14:03:12.345Z"
            },
            "tags": ["production", "env001"],
            "trace.id": "4bf92f3577b34da6a3ce929d0e0e4736",
            "transaction.id": "00f067aa0ba902b7",
            "service.name": "opbeans",
            "service.version": "1.2.3",
            "service.environment": "production",
            "event.dataset": "opbeans"
        }"#,
    )
    .unwrap();
    let record = Record::builder(Topic::new(Level::Warn, "MyLogger"))
        .seq(3)
        .time(UNIX_EPOCH + Duration::from_millis(1_463_990_736_789))
        .message("This is an event with a more elaborate context")
        .file(Some("App.java".into()))
        .line(Some(42))
        .thread(thread())
        // Per-record ids are key-values named as ECS names them.
        .kv("trace.id", "4bf92f3577b34da6a3ce929d0e0e4736")
        .kv("transaction.id", "00f067aa0ba902b7")
        .kv("message", "a key-value that would shadow the message")
        .build();
    // What is the same for every record is a constant.
    let schema = JsonSchema::ecs()
        .constant("labels", Json::parse(r#"{"app_version": "1.0.42", "app_region": "europe-02", "app_uptime": "2016-05-15T14:03:12.345Z"}"#).unwrap())
        .constant("tags", Json::parse(r#"["production", "env001"]"#).unwrap())
        .constant("service.name", "opbeans")
        .constant("service.version", "1.2.3")
        .constant("service.environment", "production")
        .constant("event.dataset", "opbeans");
    let ours = write(schema, &record);
    same_shape(
        &ours,
        &sample,
        // A `log` record has a module path, not a function name.
        &["log > origin > function"],
        &["process > thread > id", "event", "kv.message"],
    );
    assert_eq!(ours["@timestamp"], "2016-05-23T08:05:36.789000Z");
    assert_eq!(ours["log.level"], "WARN");
    assert_eq!(ours["ecs.version"], ECS_VERSION);
    assert_eq!(
        ours["log"]["origin"]["file"],
        sample["log"]["origin"]["file"]
    );
    assert_eq!(
        ours["process"]["thread"]["name"],
        sample["process"]["thread"]["name"]
    );
    assert_eq!(ours["message"], sample["message"]);
    assert_eq!(
        ours["kv.message"],
        "a key-value that would shadow the message"
    );
    assert_eq!(ours["event"]["sequence"], 3);
    // The order the spec requires of the first three keys (in the text:
    // serde_json's map sorts keys).
    let raw = {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw.ndjson");
        let mut json = JsonAppender::file(FileAppender::builder(&path))
            .unwrap()
            .schema(JsonSchema::ecs().build().unwrap());
        json.append(&record).unwrap();
        std::fs::read_to_string(&path).unwrap()
    };
    assert!(
        raw.starts_with(
            r#"{"@timestamp":"2016-05-23T08:05:36.789000Z","log.level":"WARN","message":"#
        ),
        "{raw}"
    );
}

#[test]
fn google_cloud_matches_the_structured_logging_sample() {
    // Source: Google Cloud Logging, "Structured logging", the example of a
    // JSON payload with special fields,
    // https://cloud.google.com/logging/docs/structured-logging
    // The sample spells the time key "times"; the special fields it
    // documents are `time` (or `timestamp`): compared as `time`.
    let sample: J = serde_json::from_str(
        r#"{
            "severity":"ERROR",
            "message":"There was an error in the application.",
            "httpRequest":{
              "requestMethod":"GET"
            },
            "time":"2020-10-12T07:20:50.52Z",
            "logging.googleapis.com/insertId":"42",
            "logging.googleapis.com/labels":{
              "user_label_1":"value_1",
              "user_label_2":"value_2"
            },
            "logging.googleapis.com/operation":{
              "id":"get_data",
              "producer":"github.com/MyProject/MyApplication",
               "first":"true"
            },
            "logging.googleapis.com/sourceLocation":{
              "file":"get_data.py",
              "line":"142",
              "function":"getData"
            },
            "logging.googleapis.com/spanId":"000000000000004a",
            "logging.googleapis.com/trace":"projects/my-projectid/traces/06796866738c859f2f19b7cfb3214824",
            "logging.googleapis.com/trace_sampled":false
        }"#,
    )
    .unwrap();
    let record = Record::builder(Topic::new(Level::Error, "app::data"))
        .seq(9)
        .time(UNIX_EPOCH + Duration::from_millis(1_602_487_250_520))
        .message("There was an error in the application.")
        .file(Some("get_data.py".into()))
        .line(Some(142))
        .thread(thread())
        // Spread to the top level, where Cloud Logging takes them as the
        // special fields they are named after.
        .kv("logging.googleapis.com/spanId", "000000000000004a")
        .kv(
            "logging.googleapis.com/trace",
            "projects/my-projectid/traces/06796866738c859f2f19b7cfb3214824",
        )
        .kv("logging.googleapis.com/trace_sampled", false)
        .kv("severity", "a key-value cannot set the severity")
        .build();
    let schema = JsonSchema::google_cloud().constant(
        "logging.googleapis.com/labels",
        Json::parse(r#"{"user_label_1":"value_1","user_label_2":"value_2"}"#).unwrap(),
    );
    let ours = write(schema, &record);
    same_shape(
        &ours,
        &sample,
        &[
            "httpRequest",
            "logging.googleapis.com/insertId",
            "logging.googleapis.com/operation",
            // A module path, not a function name.
            "logging.googleapis.com/sourceLocation > function",
        ],
        &["target", "thread", "seq", "kv.severity"],
    );
    assert_eq!(ours["severity"], "ERROR");
    assert_eq!(ours["time"], "2020-10-12T07:20:50.520000Z");
    assert_eq!(
        ours["logging.googleapis.com/sourceLocation"]["line"],
        sample["logging.googleapis.com/sourceLocation"]["line"]
    );
    assert_eq!(ours["kv.severity"], "a key-value cannot set the severity");
    assert_eq!(
        ours["logging.googleapis.com/trace"],
        sample["logging.googleapis.com/trace"]
    );
}

#[test]
fn opentelemetry_matches_the_log_data_model_example() {
    // Source: the OpenTelemetry specification, Logs Data Model, "Example
    // Log Records", example 1 (with its comments and trailing commas
    // removed), as in the 1.x releases before the examples moved to the
    // OTLP file exporter page:
    // https://github.com/open-telemetry/opentelemetry-specification/blob/v1.20.0/specification/logs/data-model.md#example-log-records
    // (OTEP 0097, where it started, still wrote the timestamp as a number.)
    let sample: J = serde_json::from_str(
        r#"{
            "Timestamp": "1586960586000000000",
            "Attributes": {
              "http.status_code": 500,
              "http.url": "http://example.com",
              "my.custom.application.tag": "hello"
            },
            "Resource": {
              "service.name": "donut_shop",
              "service.version": "2.0.0",
              "k8s.pod.uid": "1138528c-c36e-11e9-a1a7-42010a800198"
            },
            "TraceId": "f4dbb3edd765f620",
            "SpanId": "43222c2d51a7abe3",
            "SeverityText": "INFO",
            "SeverityNumber": 9,
            "Body": "20200415T072306-0700 INFO I like donuts"
        }"#,
    )
    .unwrap();
    let record = Record::builder(Topic::new(Level::Info, "donut_shop::orders"))
        .seq(1)
        .time(UNIX_EPOCH + Duration::from_secs(1_586_960_586))
        .message("20200415T072306-0700 INFO I like donuts")
        .file(Some("src/orders.rs".into()))
        .line(Some(12))
        .thread(thread())
        .kv("http.status_code", 500u64)
        .kv("http.url", "http://example.com")
        .kv("my.custom.application.tag", "hello")
        .build();
    let schema = JsonSchema::opentelemetry()
        .constant(["Resource", "service.name"], "donut_shop")
        .constant(["Resource", "service.version"], "2.0.0")
        .constant(
            ["Resource", "k8s.pod.uid"],
            "1138528c-c36e-11e9-a1a7-42010a800198",
        );
    let ours = write(schema, &record);
    same_shape(
        &ours,
        &sample,
        // No trace context in a `log` record.
        &["TraceId", "SpanId"],
        &[
            "Attributes > code.file.path",
            "Attributes > code.line.number",
            "Attributes > thread.name",
            "Attributes > thread.id",
            "InstrumentationScope",
        ],
    );
    assert_eq!(ours["Timestamp"], sample["Timestamp"]);
    assert_eq!(ours["SeverityText"], sample["SeverityText"]);
    assert_eq!(ours["SeverityNumber"], sample["SeverityNumber"]);
    assert_eq!(ours["Body"], sample["Body"]);
    assert_eq!(ours["Resource"], sample["Resource"]);
    for key in ["http.status_code", "http.url", "my.custom.application.tag"] {
        assert_eq!(ours["Attributes"][key], sample["Attributes"][key]);
    }
    assert_eq!(ours["InstrumentationScope"]["Name"], "donut_shop::orders");
}

/// The keys of the object in `text`, in order, repeats included (a
/// `serde_json::Value` keeps one of each).
fn keys(text: &str) -> Vec<String> {
    struct Keys(Vec<String>);
    struct Visit;
    impl<'de> serde::de::Visitor<'de> for Visit {
        type Value = Keys;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
            let mut keys = Vec::new();
            while let Some((key, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                keys.push(key);
            }
            Ok(Keys(keys))
        }
    }
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Keys, D::Error> {
            d.deserialize_map(Visit)
        }
    }
    serde_json::from_str::<Keys>(text).unwrap().0
}

#[test]
fn ecs_spread_keys_are_distinct_and_clear_of_the_dotted_fields() {
    let record = Record::builder(Topic::new(Level::Info, "app"))
        .message("m")
        .thread(thread())
        .kv("message", "a")
        .kv("kv.message", "b")
        .kv("log.logger", "c")
        .kv("ecs", "d")
        .kv("process.thread", "e")
        .kv("message", "f")
        .kv("log.custom", "g")
        .build();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.ndjson");
    let mut json = JsonAppender::file(FileAppender::builder(&path))
        .unwrap()
        .schema(JsonSchema::ecs().build().unwrap());
    json.append(&record).unwrap();
    json.flush().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let keys = keys(&text);
    assert_eq!(
        keys[keys.len() - 7..],
        [
            "kv.message",
            "kv.kv.message",
            "kv.log.logger",
            "kv.ecs",
            "kv.process.thread",
            "kv.kv.kv.message",
            "log.custom",
        ],
        "{text}"
    );
    let mut unique = keys.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), keys.len(), "{text}");
    let ours: J = serde_json::from_str(&text).unwrap();
    assert_eq!(ours["message"], "m");
    assert_eq!(ours["log"]["logger"], "app");
    assert_eq!(ours["kv.message"], "a");
    assert_eq!(ours["kv.kv.message"], "b");
    assert_eq!(ours["kv.log.logger"], "c");
    assert_eq!(ours["kv.kv.kv.message"], "f");
}

#[test]
fn presets_leave_out_the_name_of_a_thread_that_has_none() {
    let record = Record::builder(Topic::new(Level::Info, "app"))
        .message("m")
        .thread(ThreadInfo { id: 9, name: None })
        .build();
    let ecs = write(JsonSchema::ecs(), &record);
    assert_eq!(ecs["process"]["thread"], serde_json::json!({"id": 9}));
    let otel = write(JsonSchema::opentelemetry(), &record);
    assert_eq!(otel["Attributes"], serde_json::json!({"thread.id": 9}));
    let google = write(JsonSchema::google_cloud(), &record);
    assert!(google.get("thread").is_none(), "{google}");
    // Named, the name is there.
    let record = Record::builder(Topic::new(Level::Info, "app"))
        .thread(thread())
        .build();
    let ecs = write(JsonSchema::ecs(), &record);
    assert_eq!(ecs["process"]["thread"]["name"], "my-thread-name-001");
}
