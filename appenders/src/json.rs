//! `JsonAppender`: one JSON object per line (NDJSON), to a file or a stream.

use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::appender::{AppendError, Appender, BatchError, Operation};
use crate::file::rolling::RollingFile;
use crate::file::{FileAppenderBuilder, FileError};
use crate::layout::{Timestamp, Zone, DEFAULT_UTC_FORMAT};
use crate::record::{Record, Value};
use crate::write::LineSink;

/// Writes each record as one JSON object on its own line (NDJSON).
///
/// The object, built with serde_json (so always valid JSON, whatever the
/// message holds, and never more than one line):
///
/// ```text
/// {"ts":"2026-11-29T20:25:23.941824Z","level":"INFO","target":"app::http",
///  "topic":"info.app.http","seq":7,"msg":"request served","thread":"main",
///  "thread_id":1,"module":"app::http","file":"src/http.rs","line":42,
///  "kv":{"status":200,"cached":false,"peer":"10.0.0.1"}}
/// ```
///
/// - `ts`: RFC 3339, UTC, microseconds.
/// - `thread`: the thread's name, or its numeric id (as a string) when it has
///   none; `thread_id` is always the number.
/// - `module`, `file`, `line`: `null` when unknown.
/// - `kv`: the key-values with their types: integers and floats as numbers
///   (a non-finite float as `null`), booleans as booleans, strings as
///   strings, `Value::Null` as `null`. A key given twice appears twice, in
///   order (valid JSON; most readers keep the last).
///
/// The lines of a call are written to the destination (one `write(2)` for
/// an ordinary batch) before [`append`](Appender::append) or
/// [`append_batch`](Appender::append_batch) returns, so a record counted as
/// written was handed to the OS, and an error such as a full disk is
/// reported for the exact records it hit; a failed write mid-line leaves at
/// most one partial line, terminated before the next record.
///
/// The file variant shares the [`FileAppender`](crate::FileAppender)'s
/// rolling file (rotation, retention, permissions, symlink refusal,
/// reopening); its layout setting is ignored.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Appender, FileAppender, JsonAppender, Level, Record, Topic};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("app.ndjson");
/// let mut json = JsonAppender::file(FileAppender::builder(&path).max_bytes(1 << 20).keep(3))?;
/// json.append(&Record::builder(Topic::new(Level::Warn, "app::db")).message("slow").kv("ms", 1200u64).build())?;
/// json.flush()?;
///
/// let line: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&path)?.trim_end())?;
/// assert_eq!(line["level"], "WARN");
/// assert_eq!(line["topic"], "warn.app.db");
/// assert_eq!(line["kv"]["ms"], 1200);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct JsonAppender {
    output: Output,
    ts: Timestamp,
    ts_text: Vec<u8>,
}

#[derive(Debug)]
enum Output {
    File(RollingFile),
    Stream(LineSink),
}

impl JsonAppender {
    /// Writes to the process's stdout (whole lines, one write per call).
    #[must_use]
    pub fn stdout() -> JsonAppender {
        JsonAppender::with_output(Output::Stream(LineSink::new(
            "stdout",
            Box::new(io::stdout()),
        )))
    }

    /// Writes to any writer (a pipe, a socket, a test buffer).
    ///
    /// Each call's lines are handed to `writer` before it returns; a writer
    /// that buffers itself (a `BufWriter`) defers them to
    /// [`flush`](Appender::flush), and its errors with them.
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus_appenders::{Appender, JsonAppender, Level, Record, Topic};
    ///
    /// let mut json = JsonAppender::writer(std::io::sink());
    /// json.append(&Record::builder(Topic::new(Level::Info, "app")).message("hi").build())?;
    /// json.flush()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn writer(writer: impl Write + Send + 'static) -> JsonAppender {
        JsonAppender::with_output(Output::Stream(LineSink::new("writer", Box::new(writer))))
    }

    /// Writes to the file configured by `builder`, with its rotation.
    ///
    /// # Errors
    ///
    /// As [`FileAppenderBuilder::build`]: the directory or the file cannot
    /// be created, the path is a symlink, or the configuration is invalid.
    pub fn file(builder: FileAppenderBuilder) -> Result<JsonAppender, FileError> {
        let (file, _layout) = builder.open()?;
        Ok(JsonAppender::with_output(Output::File(file)))
    }

    fn with_output(output: Output) -> JsonAppender {
        let ts = match Timestamp::new(Zone::Utc, DEFAULT_UTC_FORMAT) {
            Ok(ts) => ts,
            // A constant format, checked by the layout tests.
            Err(()) => unreachable!("the default timestamp format parses"),
        };
        JsonAppender {
            output,
            ts,
            ts_text: Vec::with_capacity(32),
        }
    }
}

/// Appends `record` as one JSON line (with its `\n`) to `out`.
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
    } else {
        out.push(b'\n');
    }
    result
}

#[derive(serde::Serialize)]
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

impl JsonAppender {
    fn write<'r>(
        &mut self,
        records: impl IntoIterator<Item = &'r Record>,
    ) -> Result<(), BatchError> {
        let (ts, ts_text) = (&mut self.ts, &mut self.ts_text);
        let render_line = |record: &Record, out: &mut Vec<u8>| {
            ts_text.clear();
            ts.render(record.time(), ts_text);
            let ts = std::str::from_utf8(ts_text).unwrap_or("");
            render(record, ts, out).map_err(|e| AppendError::from_source(Operation::Format, e))
        };
        match &mut self.output {
            Output::File(file) => file.append(records, render_line),
            Output::Stream(sink) => sink.append(records, render_line),
        }
    }
}

impl Appender for JsonAppender {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        self.write([record]).map_err(|e| e.error)
    }

    fn append_batch(&mut self, records: &[Arc<Record>]) -> Result<(), BatchError> {
        self.write(records.iter().map(|r| &**r))
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        match &mut self.output {
            Output::File(file) => file.flush(),
            Output::Stream(sink) => sink.flush(),
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
        let mut json = JsonAppender::writer(io::sink());
        let mut out = Vec::new();
        json.ts.render(record.time(), &mut json.ts_text);
        render(
            &record,
            std::str::from_utf8(&json.ts_text).unwrap(),
            &mut out,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            concat!(
                r#"{"ts":"2026-11-29T20:25:23.941824Z","level":"INFO","target":"app::http","#,
                r#""topic":"info.app.http","seq":7,"msg":"say \"hi\"\n","thread":"main","#,
                r#""thread_id":3,"module":"app::http","file":"src/http.rs","line":42,"#,
                r#""kv":{"status":200,"delta":-1,"ratio":0.5,"nan":null,"ok":true,"#,
                r#""none":null,"peer":"10.0.0.1"}}"#,
                "\n"
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
