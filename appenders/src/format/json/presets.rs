//! The conventions of three log stacks as schemas: Elastic Common Schema,
//! Google Cloud Logging's structured logging, OpenTelemetry's log data
//! model. Each is tested against a sample from the convention's own docs
//! (`appenders/tests/json_presets.rs`), which says what logbus cannot fill.

use super::schema::{JsonField, JsonSchema, JsonSchemaBuilder, LevelFormat, TimestampFormat};

/// The `ecs.version` that [`JsonSchema::ecs`] writes.
pub const ECS_VERSION: &str = "8.11.0";

/// Google Cloud's key for the source location object.
const GCP_SOURCE_LOCATION: &str = "logging.googleapis.com/sourceLocation";

impl JsonSchema {
    /// [Elastic Common Schema](https://www.elastic.co/guide/en/ecs/current/index.html)
    /// as the [ecs-logging spec](https://github.com/elastic/ecs-logging/tree/main/spec)
    /// lays it out: the top-level dotted keys first, then nested objects.
    ///
    /// ```text
    /// {"@timestamp":"2026-11-29T20:25:23.941824Z","log.level":"WARN","message":"slow",
    ///  "ecs.version":"8.11.0","log":{"logger":"app::db","origin":{"file":{"name":"src/db.rs","line":42}}},
    ///  "process":{"thread":{"name":"main","id":1}},"event":{"sequence":7},"ms":1200}
    /// ```
    ///
    /// - `log.logger` is the target; `event.sequence` the `seq`; the
    ///   key-values are spread into the top level (a key that is taken, such
    ///   as `message`, `log` or `log.logger`, is written as `kv.message`; see
    ///   [`JsonSchema`], "Key-values spread into an object").
    /// - Unknown file and line are left out, and so is the thread's name
    ///   when it has none (its id stays). The topic and the module are
    ///   not written (ECS has no field for them; `log.origin.function` is a
    ///   function name, which a `log` record does not carry).
    /// - Not filled: `service.*`, `event.dataset`, `labels`, `tags` (add
    ///   them with [`constant`](JsonSchemaBuilder::constant)), `trace.id`,
    ///   `transaction.id`, `error.*` (log them as key-values named so).
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus_appenders::{JsonAppender, JsonSchema};
    ///
    /// let schema = JsonSchema::ecs().constant("service.name", "shop").build()?;
    /// let json = JsonAppender::stdout().schema(schema);
    /// # drop(json);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ecs() -> JsonSchemaBuilder {
        JsonSchema::builder()
            .clear()
            .field("@timestamp", JsonField::TS)
            .field("log.level", JsonField::LEVEL)
            .field("message", JsonField::MSG)
            .constant("ecs.version", ECS_VERSION)
            .field(["log", "logger"], JsonField::TARGET)
            .field(["log", "origin", "file", "name"], JsonField::FILE)
            .field(["log", "origin", "file", "line"], JsonField::LINE)
            .field(["process", "thread", "name"], JsonField::THREAD)
            .field(["process", "thread", "id"], JsonField::THREAD_ID)
            .field(["event", "sequence"], JsonField::SEQ)
            .flatten_kv()
            .level(LevelFormat::UPPER)
            .timestamp(TimestampFormat::RFC3339_UTC)
            .omit_unknown()
    }

    /// Google Cloud Logging's
    /// [structured logging](https://cloud.google.com/logging/docs/structured-logging):
    /// a line on stdout or stderr that the logging agent (Cloud Run, GKE,
    /// the Ops Agent) turns into a `LogEntry`, taking its special fields out
    /// of `jsonPayload`.
    ///
    /// ```text
    /// {"severity":"WARNING","message":"slow","time":"2026-11-29T20:25:23.941824Z",
    ///  "logging.googleapis.com/sourceLocation":{"file":"src/db.rs","line":"42"},
    ///  "target":"app::db","thread":"main","seq":7,"ms":1200}
    /// ```
    ///
    /// - `severity` per [`LevelFormat::GOOGLE_CLOUD`] (trace is `DEBUG`);
    ///   `line` a string, as Google's own sample writes it.
    /// - `target`, `thread` (the thread's name; left out when it has none)
    ///   and `seq`, and the key-values spread, stay in `jsonPayload`. A
    ///   key-value named like a special field that this schema writes
    ///   (`severity`, `message`, `time`) is written `kv.severity`, so it
    ///   cannot override it; one named like another special field
    ///   (`logging.googleapis.com/trace`, `logging.googleapis.com/spanId`,
    ///   `httpRequest`, ...) is taken by Cloud Logging as that field, which
    ///   is how to set them.
    /// - Not filled: the source location's `function` (a `log` record has
    ///   the module path, not the function: add
    ///   `.field(["logging.googleapis.com/sourceLocation", "function"], JsonField::MODULE)`
    ///   if that is close enough), labels, trace and span ids, the insert id,
    ///   the operation, the HTTP request.
    pub fn google_cloud() -> JsonSchemaBuilder {
        JsonSchema::builder()
            .clear()
            .field("severity", JsonField::LEVEL)
            .field("message", JsonField::MSG)
            .field("time", JsonField::TS)
            .field([GCP_SOURCE_LOCATION, "file"], JsonField::FILE)
            .field([GCP_SOURCE_LOCATION, "line"], JsonField::LINE.as_string())
            .field("target", JsonField::TARGET)
            .field("thread", JsonField::THREAD)
            .field("seq", JsonField::SEQ)
            .flatten_kv()
            .level(LevelFormat::GOOGLE_CLOUD)
            .timestamp(TimestampFormat::RFC3339_UTC)
            .omit_unknown()
    }

    /// OpenTelemetry's
    /// [log data model](https://opentelemetry.io/docs/specs/otel/logs/data-model/),
    /// with its field names, as the model's own example records write it.
    ///
    /// ```text
    /// {"Timestamp":"1795983923941824999","SeverityText":"WARN","SeverityNumber":13,"Body":"slow",
    ///  "Attributes":{"code.file.path":"src/db.rs","code.line.number":42,"thread.name":"main",
    ///                "thread.id":1,"ms":1200},
    ///  "InstrumentationScope":{"Name":"app::db"}}
    /// ```
    ///
    /// - `Timestamp` in nanoseconds as a string; `SeverityText` the `log`
    ///   level's name, `SeverityNumber` per [`LevelFormat::OTEL_NUMBER`].
    /// - `Attributes` holds the source location and thread under the
    ///   semantic conventions' names (`thread.name` left out when the thread
    ///   has none) and the key-values spread (a taken key is written
    ///   `kv.<key>`); the target is the instrumentation scope's
    ///   name, as a logger's name is in OpenTelemetry's log bridges.
    /// - Not filled: `Resource` (add it with constants, e.g.
    ///   `.constant(["Resource", "service.name"], "shop")`), `TraceId`,
    ///   `SpanId`, `TraceFlags`, `ObservedTimestamp`.
    ///
    /// This is the data model's JSON, not OTLP/JSON (`resourceLogs` >
    /// `scopeLogs` > `logRecords`, attributes as a list of typed values),
    /// which a collector reads from files only with a parser configured for
    /// these names.
    pub fn opentelemetry() -> JsonSchemaBuilder {
        JsonSchema::builder()
            .clear()
            .field("Timestamp", JsonField::TS)
            .field("SeverityText", JsonField::LEVEL)
            .field("SeverityNumber", JsonField::level(LevelFormat::OTEL_NUMBER))
            .field("Body", JsonField::MSG)
            .field(["Attributes", "code.file.path"], JsonField::FILE)
            .field(["Attributes", "code.line.number"], JsonField::LINE)
            .field(["Attributes", "thread.name"], JsonField::THREAD)
            .field(["Attributes", "thread.id"], JsonField::THREAD_ID)
            .flatten_kv_into("Attributes")
            .field(["InstrumentationScope", "Name"], JsonField::TARGET)
            .level(LevelFormat::UPPER)
            .timestamp(TimestampFormat::UNIX_NANOS_STRING)
            .omit_unknown()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_presets_build() {
        for builder in [
            JsonSchema::ecs(),
            JsonSchema::google_cloud(),
            JsonSchema::opentelemetry(),
        ] {
            builder.build().unwrap();
        }
    }
}
