//! `JsonFormat`: a record as one JSON object, laid out by a [`JsonSchema`]
//! (`json/schema.rs`; the presets in `json/presets.rs`) and written by
//! `json/write.rs` with serde_json's escaping, so it is always valid JSON
//! whatever the record holds, and never spans lines.

mod error;
mod presets;
mod schema;
mod write;

use crate::appender::{AppendError, Operation};
use crate::layout::{Timestamp, Zone, DEFAULT_LOCAL_FORMAT, DEFAULT_UTC_FORMAT};
use crate::record::Record;

use super::{Format, Style};

pub use self::error::{JsonSchemaError, JsonSchemaErrorKind};
pub use self::presets::ECS_VERSION;
pub use self::schema::{
    JsonField, JsonKey, JsonSchema, JsonSchemaBuilder, LevelFormat, TimestampFormat,
};

/// The JSON object of a record; the default one is documented on
/// [`JsonAppender`](crate::JsonAppender).
#[derive(Debug)]
pub(crate) struct JsonFormat {
    schema: JsonSchema,
    scratch: write::Scratch,
}

impl JsonFormat {
    pub(crate) fn new(schema: JsonSchema) -> JsonFormat {
        let timestamp = |zone, format| match Timestamp::new(zone, format) {
            Ok(ts) => ts,
            // Constant formats, checked by the layout tests.
            Err(()) => unreachable!("the RFC 3339 timestamp formats parse"),
        };
        JsonFormat {
            schema,
            scratch: write::Scratch {
                utc: timestamp(Zone::Utc, DEFAULT_UTC_FORMAT),
                local: timestamp(Zone::Local, DEFAULT_LOCAL_FORMAT),
                text: Vec::with_capacity(40),
                key: String::new(),
                written: write::Written::default(),
            },
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
        let start = out.len();
        write::object(&self.schema, record, &mut self.scratch, out).map_err(|e| {
            // On error `out` is as it was.
            out.truncate(start);
            AppendError::from_source(Operation::Format, e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Level, ThreadInfo, Topic, Value};
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
        JsonFormat::new(JsonSchema::default())
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
        JsonFormat::new(JsonSchema::default())
            .render(&record, Style::default(), &mut out)
            .unwrap();
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["thread"], "9");
        assert_eq!(value["thread_id"], 9);
        assert!(value["module"].is_null() && value["file"].is_null() && value["line"].is_null());
        assert_eq!(value["kv"], serde_json::json!({}));
    }
}
