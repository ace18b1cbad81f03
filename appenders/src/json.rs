//! `JsonAppender`: the JSON format × a stream or the rolling file (NDJSON).

use std::io::{self, Write};

use crate::destination::file::error::FileError;
#[cfg(doc)]
use crate::destination::file::error::FileErrorKind;
use crate::destination::stream::Stream;
use crate::destination::Destination;
use crate::file::FileAppenderBuilder;
use crate::format::{JsonFormat, JsonSchema};
use crate::render::Pipeline;

/// The detail of the error [`JsonAppender::file`] returns for a builder
/// with a layout.
const LAYOUT_CONTRADICTION: &str = "a layout has no effect on a JSON appender";

/// Writes each record as one JSON object on its own line (NDJSON).
///
/// The default object, written with serde_json's escaping (so always valid
/// JSON, whatever the message holds, and never more than one line):
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
///   strings, `Value::Null` as `null`, a [`Value::Json`](crate::Value::Json)
///   (a `:serde` value with the `serde` feature) as the array or object it
///   holds. A key given twice appears twice, in order (valid JSON; most
///   readers keep the last).
///
/// [`schema`](JsonAppender::schema) lays the object out otherwise: fields
/// renamed, nested, omitted or added, key-values spread, constants, other
/// level and timestamp formats, and the presets
/// [`JsonSchema::ecs`], [`JsonSchema::google_cloud`] and
/// [`JsonSchema::opentelemetry`] (see [`JsonSchema`]). It goes to
/// [`stdout`](JsonAppender::stdout), [`stderr`](JsonAppender::stderr), any
/// [`writer`](JsonAppender::writer) or a rolling [`file`](JsonAppender::file).
///
/// The lines of a call are written to the destination (one `write(2)` for
/// an ordinary batch) before [`append`](crate::Appender::append) or
/// [`append_batch`](crate::Appender::append_batch) returns, so a record counted as
/// written was handed to the OS, and an error such as a full disk is
/// reported for the exact records it hit; a failed write mid-line leaves at
/// most one partial line, terminated before the next record.
///
/// The file variant shares the [`FileAppender`](crate::FileAppender)'s
/// rolling file (rotation, retention, permissions, symlink refusal,
/// reopening, compression); a builder with a layout is refused (see
/// [`JsonAppender::file`]).
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
    /// A stream or a rolling file: one `dyn` call per hook, next to a
    /// serde_json serialisation per record.
    pipeline: Pipeline<JsonFormat, Box<dyn Destination>>,
}

impl JsonAppender {
    /// Writes to the process's stdout (whole lines, one write per call).
    #[must_use]
    pub fn stdout() -> JsonAppender {
        JsonAppender::on(Stream::new("stdout", Box::new(io::stdout()), false))
    }

    /// Writes to the process's stderr (whole lines, one write per call),
    /// where a container's log collector reads as it reads stdout, and
    /// where a program whose stdout is its output logs.
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus_appenders::{JsonAppender, JsonSchema};
    ///
    /// let json = JsonAppender::stderr().schema(JsonSchema::google_cloud().build()?);
    /// # drop(json);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn stderr() -> JsonAppender {
        JsonAppender::on(Stream::new("stderr", Box::new(io::stderr()), false))
    }

    /// Lays each record's object out as `schema` says (field names,
    /// nesting, key-values spread or under a key, constants, level and
    /// timestamp formats) instead of the default object above.
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus_appenders::{Appender, JsonAppender, JsonSchema, Level, Record, Topic};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("app.ndjson");
    /// let file = logbus_appenders::FileAppender::builder(&path);
    /// let mut json = JsonAppender::file(file)?.schema(JsonSchema::ecs().build()?);
    /// json.append(&Record::builder(Topic::new(Level::Warn, "app::db")).message("slow").build())?;
    /// json.flush()?;
    ///
    /// let line: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&path)?.trim_end())?;
    /// assert_eq!(line["log.level"], "WARN");
    /// assert_eq!(line["message"], "slow");
    /// assert_eq!(line["log"]["logger"], "app::db");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn schema(mut self, schema: JsonSchema) -> JsonAppender {
        self.pipeline.format = JsonFormat::new(schema);
        self
    }

    /// Writes to any writer (a pipe, a socket, a test buffer).
    ///
    /// Each call's lines are handed to `writer` before it returns; a writer
    /// that buffers itself (a `BufWriter`) defers them to
    /// [`flush`](crate::Appender::flush), and its errors with them.
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
        JsonAppender::on(Stream::new("writer", Box::new(writer), false))
    }

    /// Writes to the file configured by `builder`, with its rotation,
    /// retention, mode, compression and clock.
    ///
    /// # Errors
    ///
    /// As [`FileAppenderBuilder::build`]: the directory or the file cannot
    /// be created, the path is a symlink, or the configuration is invalid.
    /// A builder with a [`layout`](FileAppenderBuilder::layout) is a
    /// [`FileErrorKind::Config`] error, before anything is created: a JSON
    /// line has no layout, and ignoring the setting would hide the mistake.
    ///
    /// ```
    /// use logbus_appenders::{FileAppender, FileErrorKind, JsonAppender, Layout};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("app.ndjson");
    /// let builder = FileAppender::builder(&path).layout(Layout::parse("{msg}")?);
    /// let err = JsonAppender::file(builder).unwrap_err();
    /// assert_eq!(err.kind(), FileErrorKind::Config);
    /// assert!(err.to_string().ends_with("a layout has no effect on a JSON appender"));
    /// assert!(!path.exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn file(builder: FileAppenderBuilder) -> Result<JsonAppender, FileError> {
        let file = builder.open_without_layout(LAYOUT_CONTRADICTION)?;
        Ok(JsonAppender::on(file))
    }

    fn on(destination: impl Destination + 'static) -> JsonAppender {
        JsonAppender {
            pipeline: Pipeline::new(
                JsonFormat::new(JsonSchema::default()),
                Box::new(destination),
            ),
        }
    }
}

crate::render::appender_through_pipeline!(JsonAppender);
