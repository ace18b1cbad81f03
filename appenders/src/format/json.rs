//! `JsonFormat`: a record as one JSON object, built with serde_json, so it
//! is always valid JSON whatever the record holds, and never spans lines.

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::appender::{AppendError, Operation};
use crate::layout::{Timestamp, Zone, DEFAULT_UTC_FORMAT};
use crate::record::{Record, Value};

use super::{Format, Style};

/// The JSON object of a record; the fields are documented on
/// [`JsonAppender`](crate::JsonAppender).
#[derive(Debug)]
pub(crate) struct JsonFormat {
    ts: Timestamp,
    /// The timestamp of the record at hand, reused across records.
    ts_text: Vec<u8>,
}

impl JsonFormat {
    pub(crate) fn new() -> JsonFormat {
        let ts = match Timestamp::new(Zone::Utc, DEFAULT_UTC_FORMAT) {
            Ok(ts) => ts,
            // A constant format, checked by the layout tests.
            Err(()) => unreachable!("the default timestamp format parses"),
        };
        JsonFormat {
            ts,
            ts_text: Vec::with_capacity(32),
        }
    }
}

impl Format for JsonFormat {
    /// Colour has no meaning in JSON: `style` is ignored.
    fn render(
        &mut self,
        record: &Record,
        _style: Style,
        out: &mut Vec<u8>,
    ) -> Result<(), AppendError> {
        self.ts_text.clear();
        self.ts.render(record.time(), &mut self.ts_text);
        // The timestamp renders ASCII digits and punctuation.
        let ts = std::str::from_utf8(&self.ts_text).unwrap_or("");
        render(record, ts, out).map_err(|e| AppendError::from_source(Operation::Format, e))
    }
}

/// Appends `record` as one JSON object (no line terminator) to `out`;
/// on error `out` is as it was.
fn render(record: &Record, ts: &str, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    let thread = record.thread();
    let line = Line {
        ts,
        level: record.level().as_str(),
        target: record.target(),
        topic: record.topic().as_str(),
        seq: record.seq(),
        msg: record.message(),
        thread: match thread.name {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Owned(thread.id.to_string()),
        },
        thread_id: thread.id,
        module: record.module_path(),
        file: record.file(),
        line: record.line(),
        kv: Kv(record.key_values()),
    };
    let start = out.len();
    let result = serde_json::to_writer(&mut *out, &line);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// The object's fields, in the order written (serialised by hand: the
/// default build needs no derive macros).
struct Line<'a> {
    ts: &'a str,
    level: &'a str,
    target: &'a str,
    topic: &'a str,
    seq: u64,
    msg: &'a str,
    thread: Cow<'a, str>,
    thread_id: u64,
    module: Option<&'a str>,
    file: Option<&'a str>,
    line: Option<u32>,
    kv: Kv<'a>,
}

impl Serialize for Line<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(12))?;
        map.serialize_entry("ts", self.ts)?;
        map.serialize_entry("level", self.level)?;
        map.serialize_entry("target", self.target)?;
        map.serialize_entry("topic", self.topic)?;
        map.serialize_entry("seq", &self.seq)?;
        map.serialize_entry("msg", self.msg)?;
        map.serialize_entry("thread", &self.thread)?;
        map.serialize_entry("thread_id", &self.thread_id)?;
        map.serialize_entry("module", &self.module)?;
        map.serialize_entry("file", &self.file)?;
        map.serialize_entry("line", &self.line)?;
        map.serialize_entry("kv", &self.kv)?;
        map.end()
    }
}

struct Kv<'a>(&'a [(Cow<'static, str>, Value)]);

impl Serialize for Kv<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(key, &JsonValue(value))?;
        }
        map.end()
    }
}

struct JsonValue<'a>(&'a Value);

impl Serialize for JsonValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Str(s) => serializer.serialize_str(s),
            Value::I64(v) => serializer.serialize_i64(*v),
            Value::U64(v) => serializer.serialize_u64(*v),
            // serde_json writes a non-finite float as `null`.
            Value::F64(v) => serializer.serialize_f64(*v),
            Value::Bool(v) => serializer.serialize_bool(*v),
            Value::Null => serializer.serialize_unit(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Level, ThreadInfo, Topic};
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_full_record() {
        let record = Record::builder(Topic::new(Level::Info, "app::http"))
            .seq(7)
            .time(SystemTime::UNIX_EPOCH + Duration::new(1_795_983_923, 941_824_999))
            .message("say \"hi\"\n")
            .module_path(Some("app::http".into()))
            .file(Some("src/http.rs".into()))
            .line(Some(42))
            .thread(ThreadInfo {
                id: 3,
                name: Some("main"),
            })
            .kv("status", 200u64)
            .kv("delta", -1i64)
            .kv("ratio", 0.5f64)
            .kv("nan", f64::NAN)
            .kv("ok", true)
            .kv("none", Value::Null)
            .kv("peer", "10.0.0.1")
            .build();
        let mut out = Vec::new();
        JsonFormat::new()
            .render(&record, Style::default(), &mut out)
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            concat!(
                r#"{"ts":"2026-11-29T20:25:23.941824Z","level":"INFO","target":"app::http","#,
                r#""topic":"info.app.http","seq":7,"msg":"say \"hi\"\n","thread":"main","#,
                r#""thread_id":3,"module":"app::http","file":"src/http.rs","line":42,"#,
                r#""kv":{"status":200,"delta":-1,"ratio":0.5,"nan":null,"ok":true,"#,
                r#""none":null,"peer":"10.0.0.1"}}"#,
            )
        );
    }

    #[test]
    fn an_unnamed_thread_and_no_location() {
        let record = Record::builder(Topic::new(Level::Error, "x"))
            .thread(ThreadInfo { id: 9, name: None })
            .build();
        let mut out = Vec::new();
        render(&record, "T", &mut out).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["thread"], "9");
        assert_eq!(value["thread_id"], 9);
        assert!(value["module"].is_null() && value["file"].is_null() && value["line"].is_null());
        assert_eq!(value["kv"], serde_json::json!({}));
    }
}
