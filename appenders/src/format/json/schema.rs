//! `JsonSchema`: which members the JSON object of a record has, under
//! which keys, nested how, and in which formats; built once, checked at
//! build, walked per record by `write.rs`.

use std::fmt;
use std::mem::discriminant;

use crate::record::Value;

use super::error::{JsonSchemaError, JsonSchemaErrorKind};

/// The key of a member of the JSON object: one key, or a path of keys into
/// nested objects.
///
/// A `&str` or `String` is **one** key, dots and slashes included
/// (`"log.level"` is the key `log.level`, as ECS's own loggers write it;
/// `"logging.googleapis.com/sourceLocation"` is one key too). An array or
/// slice of keys is a path: `["log", "origin", "file"]` writes
/// `"log":{"origin":{"file":...}}`, and members whose paths share a start
/// share those objects. [`JsonKey::dotted`] splits a dotted name into a
/// path.
///
/// # Examples
///
/// ```
/// use logbus_appenders::JsonKey;
///
/// assert!(JsonKey::from("log.level").segments().eq(["log.level"]));
/// assert!(JsonKey::from(["log", "level"]).segments().eq(["log", "level"]));
/// assert_eq!(JsonKey::dotted("log.origin.file"), JsonKey::from(["log", "origin", "file"]));
/// assert_eq!(JsonKey::from(["a", "b.c"]).to_string(), r#""a" > "b.c""#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JsonKey(Vec<Box<str>>);

impl JsonKey {
    /// The path of `name`'s dot-separated parts: `"a.b"` is `["a", "b"]`.
    #[must_use]
    pub fn dotted(name: &str) -> JsonKey {
        JsonKey(name.split('.').map(Into::into).collect())
    }

    /// The keys from the outermost object in.
    pub fn segments(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.0.iter().map(|s| &**s)
    }

    pub(super) fn parts(&self) -> &[Box<str>] {
        &self.0
    }
}

impl fmt::Display for JsonKey {
    /// Each key in quotes (as JSON writes it), joined by ` > `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" > ")?;
            }
            write!(f, "{segment:?}")?;
        }
        Ok(())
    }
}

impl From<&str> for JsonKey {
    fn from(key: &str) -> JsonKey {
        JsonKey(vec![key.into()])
    }
}

impl From<String> for JsonKey {
    fn from(key: String) -> JsonKey {
        JsonKey(vec![key.into_boxed_str()])
    }
}

impl<const N: usize> From<[&str; N]> for JsonKey {
    fn from(path: [&str; N]) -> JsonKey {
        JsonKey(path.iter().map(|&s| s.into()).collect())
    }
}

impl From<&[&str]> for JsonKey {
    fn from(path: &[&str]) -> JsonKey {
        JsonKey(path.iter().map(|&s| s.into()).collect())
    }
}

impl From<Vec<String>> for JsonKey {
    fn from(path: Vec<String>) -> JsonKey {
        JsonKey(path.into_iter().map(String::into_boxed_str).collect())
    }
}

/// How a timestamp is written.
///
/// | format | example |
/// |---|---|
/// | [`RFC3339_UTC`](Self::RFC3339_UTC) (default) | `"2026-11-29T20:25:23.941824Z"` |
/// | [`RFC3339_LOCAL`](Self::RFC3339_LOCAL) | `"2026-11-29T21:25:23.941824+01:00"` (the machine's offset at that instant) |
/// | [`UNIX_NANOS`](Self::UNIX_NANOS) | `1795983923941824999` (a number past 2^53: JavaScript readers round it) |
/// | [`UNIX_NANOS_STRING`](Self::UNIX_NANOS_STRING) | `"1795983923941824999"` (OTLP/JSON writes 64-bit integers so) |
/// | [`UNIX_MILLIS`](Self::UNIX_MILLIS) | `1795983923941` |
///
/// The RFC 3339 forms have microseconds; a time before 1970 is a negative
/// number in the unix forms. A member with its own format ignores the
/// schema's.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{JsonField, JsonSchema, TimestampFormat};
///
/// let schema = JsonSchema::builder()
///     .timestamp(TimestampFormat::RFC3339_LOCAL) // "ts", the default member
///     .field("timeUnixNano", JsonField::timestamp(TimestampFormat::UNIX_NANOS_STRING))
///     .build()?;
/// # drop(schema);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimestampFormat(pub(super) TimestampKind);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum TimestampKind {
    Rfc3339Utc,
    Rfc3339Local,
    UnixNanos,
    UnixNanosString,
    UnixMillis,
}

impl TimestampFormat {
    /// RFC 3339 in UTC with microseconds: `2026-11-29T20:25:23.941824Z`.
    pub const RFC3339_UTC: TimestampFormat = TimestampFormat(TimestampKind::Rfc3339Utc);
    /// RFC 3339 with the local offset, microseconds:
    /// `2026-11-29T21:25:23.941824+01:00`.
    pub const RFC3339_LOCAL: TimestampFormat = TimestampFormat(TimestampKind::Rfc3339Local);
    /// Nanoseconds since the unix epoch, a JSON number.
    pub const UNIX_NANOS: TimestampFormat = TimestampFormat(TimestampKind::UnixNanos);
    /// Nanoseconds since the unix epoch, a JSON string of digits
    /// (OpenTelemetry's `timeUnixNano` in OTLP/JSON).
    pub const UNIX_NANOS_STRING: TimestampFormat = TimestampFormat(TimestampKind::UnixNanosString);
    /// Milliseconds since the unix epoch, a JSON number.
    pub const UNIX_MILLIS: TimestampFormat = TimestampFormat(TimestampKind::UnixMillis);
}

/// How a level is written.
///
/// | format | error | warn | info | debug | trace |
/// |---|---|---|---|---|---|
/// | [`UPPER`](Self::UPPER) (default) | `"ERROR"` | `"WARN"` | `"INFO"` | `"DEBUG"` | `"TRACE"` |
/// | [`LOWER`](Self::LOWER) | `"error"` | `"warn"` | `"info"` | `"debug"` | `"trace"` |
/// | [`GOOGLE_CLOUD`](Self::GOOGLE_CLOUD) | `"ERROR"` | `"WARNING"` | `"INFO"` | `"DEBUG"` | `"DEBUG"` |
/// | [`OTEL_NUMBER`](Self::OTEL_NUMBER) | `17` | `13` | `9` | `5` | `1` |
///
/// Google Cloud's `LogSeverity` has no trace: trace is `DEBUG`.
/// OpenTelemetry's `SeverityNumber` is the first of each range (TRACE 1-4,
/// DEBUG 5-8, INFO 9-12, WARN 13-16, ERROR 17-20).
///
/// # Examples
///
/// ```
/// use logbus_appenders::{JsonField, JsonSchema, LevelFormat};
///
/// // OpenTelemetry's pair: the name and the number.
/// let schema = JsonSchema::builder()
///     .clear()
///     .field("SeverityText", JsonField::LEVEL)
///     .field("SeverityNumber", JsonField::level(LevelFormat::OTEL_NUMBER))
///     .level(LevelFormat::UPPER)
///     .build()?;
/// # drop(schema);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LevelFormat(pub(super) LevelKind);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum LevelKind {
    Upper,
    Lower,
    GoogleCloud,
    OtelNumber,
}

impl LevelFormat {
    /// The level's name in upper case, as `log` spells it: `"WARN"`.
    pub const UPPER: LevelFormat = LevelFormat(LevelKind::Upper);
    /// The level's name in lower case: `"warn"`.
    pub const LOWER: LevelFormat = LevelFormat(LevelKind::Lower);
    /// Google Cloud Logging's `LogSeverity`: `"WARNING"`.
    pub const GOOGLE_CLOUD: LevelFormat = LevelFormat(LevelKind::GoogleCloud);
    /// OpenTelemetry's `SeverityNumber`, a JSON number: `13`.
    pub const OTEL_NUMBER: LevelFormat = LevelFormat(LevelKind::OtelNumber);
}

/// One part of a record, as a member of its JSON object.
///
/// The constants are the record's fields, named after their keys in the
/// default object (see [`JsonAppender`](crate::JsonAppender)).
/// [`JsonField::TS`] and [`JsonField::LEVEL`] follow the schema's
/// [`timestamp`](JsonSchemaBuilder::timestamp) and
/// [`level`](JsonSchemaBuilder::level) formats; [`JsonField::timestamp`]
/// and [`JsonField::level`] fix their own, so one object can show the level
/// twice (OpenTelemetry's `SeverityText` and `SeverityNumber`).
///
/// # Examples
///
/// ```
/// use logbus_appenders::{JsonField, LevelFormat};
///
/// let number = JsonField::level(LevelFormat::OTEL_NUMBER);
/// assert_ne!(number, JsonField::LEVEL);
/// assert_eq!(JsonField::LINE.as_string().name(), "line");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JsonField {
    pub(super) kind: FieldKind,
    /// Numbers written as strings of digits.
    pub(super) quoted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum FieldKind {
    Ts(Option<TimestampFormat>),
    Level(Option<LevelFormat>),
    Target,
    Topic,
    Seq,
    Msg,
    Thread,
    ThreadId,
    Module,
    File,
    Line,
    Kv,
}

impl JsonField {
    const fn of(kind: FieldKind) -> JsonField {
        JsonField {
            kind,
            quoted: false,
        }
    }

    /// When the log call was made, in the schema's timestamp format.
    pub const TS: JsonField = JsonField::of(FieldKind::Ts(None));
    /// The level, in the schema's level format.
    pub const LEVEL: JsonField = JsonField::of(FieldKind::Level(None));
    /// The target (`app::db`).
    pub const TARGET: JsonField = JsonField::of(FieldKind::Target);
    /// The topic (`warn.app.db`).
    pub const TOPIC: JsonField = JsonField::of(FieldKind::Topic);
    /// The broker-wide sequence number, a number.
    pub const SEQ: JsonField = JsonField::of(FieldKind::Seq);
    /// The message.
    pub const MSG: JsonField = JsonField::of(FieldKind::Msg);
    /// The thread's name; when it has none, its id as a string, or nothing
    /// with [`omit_unknown`](JsonSchemaBuilder::omit_unknown).
    pub const THREAD: JsonField = JsonField::of(FieldKind::Thread);
    /// The thread's numeric id.
    pub const THREAD_ID: JsonField = JsonField::of(FieldKind::ThreadId);
    /// The module path, or unknown.
    pub const MODULE: JsonField = JsonField::of(FieldKind::Module);
    /// The source file, or unknown.
    pub const FILE: JsonField = JsonField::of(FieldKind::File);
    /// The source line, a number, or unknown.
    pub const LINE: JsonField = JsonField::of(FieldKind::Line);
    /// The key-values, as an object (see
    /// [`flatten_kv`](JsonSchemaBuilder::flatten_kv) to spread them instead).
    pub const KV: JsonField = JsonField::of(FieldKind::Kv);

    /// The timestamp in `format`, whatever the schema's.
    #[must_use]
    pub const fn timestamp(format: TimestampFormat) -> JsonField {
        JsonField::of(FieldKind::Ts(Some(format)))
    }

    /// The level in `format`, whatever the schema's.
    #[must_use]
    pub const fn level(format: LevelFormat) -> JsonField {
        JsonField::of(FieldKind::Level(Some(format)))
    }

    /// The same field with its number written as a string of digits
    /// (`"line":"42"`, as Google Cloud's own sample writes a line, and as
    /// protobuf's JSON mapping writes 64-bit integers). No effect on a field
    /// that is a string already.
    #[must_use]
    pub const fn as_string(self) -> JsonField {
        JsonField {
            kind: self.kind,
            quoted: true,
        }
    }

    /// The field's key in the default object (`"ts"`, `"thread_id"`, ...),
    /// which errors use to name it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self.kind {
            FieldKind::Ts(_) => "ts",
            FieldKind::Level(_) => "level",
            FieldKind::Target => "target",
            FieldKind::Topic => "topic",
            FieldKind::Seq => "seq",
            FieldKind::Msg => "msg",
            FieldKind::Thread => "thread",
            FieldKind::ThreadId => "thread_id",
            FieldKind::Module => "module",
            FieldKind::File => "file",
            FieldKind::Line => "line",
            FieldKind::Kv => "kv",
        }
    }

    /// Whether `self` and `other` are the same field, formats aside.
    fn is(self, other: JsonField) -> bool {
        discriminant(&self.kind) == discriminant(&other.kind)
    }
}

/// The members of the default object, in order.
const DEFAULT_FIELDS: [JsonField; 12] = [
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

/// What a member shows.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Source {
    /// A field, its formats resolved at build.
    Field(JsonField),
    Constant(Value),
}

/// One member of an object in the built schema.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    Leaf(Box<str>, Source),
    Object(Box<str>, Object),
    /// The key-values, spread into the object that holds this node.
    FlatKv,
}

/// An object of the built schema.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct Object {
    pub(super) members: Vec<Node>,
    /// What a spread key-value's key must not be, sorted (filled only for
    /// an object with [`Node::FlatKv`]): the dotted path of every member,
    /// nested ones included, and every start of it that ends before a dot
    /// (see [`JsonSchema`], "Key-values spread into an object").
    pub(super) taken: Vec<Box<str>>,
}

impl Object {
    fn find(&mut self, key: &str) -> Option<&mut Node> {
        self.members.iter_mut().find(|node| match node {
            Node::Leaf(k, _) | Node::Object(k, _) => &**k == key,
            Node::FlatKv => false,
        })
    }

    fn finish(&mut self) {
        for node in &mut self.members {
            if let Node::Object(_, object) = node {
                object.finish();
            }
        }
        if self.members.contains(&Node::FlatKv) {
            let mut taken = Vec::new();
            dotted_paths(self, "", &mut taken);
            taken.sort();
            taken.dedup();
            self.taken = taken;
        }
    }
}

/// Into `out`: for every member of `object` and of the objects nested in
/// it, its path from `object` with its keys joined by dots, after `at`
/// (`log.origin.file.line`), and every start of that path ending before a
/// dot (`log`, `log.origin`, `log.origin.file`): the keys a reader that
/// expands dotted keys (Elasticsearch) would merge with the member.
fn dotted_paths(object: &Object, at: &str, out: &mut Vec<Box<str>>) {
    for node in &object.members {
        let (key, inner) = match node {
            Node::Leaf(key, _) => (key, None),
            Node::Object(key, inner) => (key, Some(inner)),
            Node::FlatKv => continue,
        };
        let path = if at.is_empty() {
            key.to_string()
        } else {
            format!("{at}.{key}")
        };
        out.extend(
            path.match_indices('.')
                .map(|(end, _)| &path[..end])
                .filter(|start| !start.is_empty())
                .map(Into::into),
        );
        if let Some(inner) = inner {
            dotted_paths(inner, &path, out);
        }
        out.push(path.into_boxed_str());
    }
}

/// What a record's JSON object looks like: which fields, under which keys
/// (renamed, nested, or omitted), the key-values under a key or spread,
/// constants, and the level and timestamp formats. Give it to
/// [`JsonAppender::schema`](crate::JsonAppender::schema).
///
/// [`JsonSchema::default`] is the object logbus always wrote (see
/// [`JsonAppender`](crate::JsonAppender)); [`JsonSchema::builder`] starts
/// from it; [`JsonSchema::ecs`], [`JsonSchema::google_cloud`] and
/// [`JsonSchema::opentelemetry`] start from the conventions of Elastic,
/// Google Cloud Logging and OpenTelemetry.
///
/// # Key-values spread into an object
///
/// With [`flatten_kv`](JsonSchemaBuilder::flatten_kv), each key-value
/// becomes a member of the object it is spread into, in order. Its key is
/// *taken* when it is
///
/// - the path of a member of that object (a field, a constant, a nested
///   object), or of a member nested in it, with the keys joined by dots
///   (`log`, `log.logger` and `log.origin.file.line` for
///   `"log":{"logger":..,"origin":{"file":{"line":..}}}`); or a start of
///   such a path that ends before a dot (`log`, `ecs` for `ecs.version`):
///   readers that expand dotted keys, as Elasticsearch does, would merge
///   those with the member;
/// - or the key an earlier key-value of the same record was written under.
///
/// A taken key gets the collision prefix (`kv.` by default) put before it,
/// again until it is free: `message=x` beside the `message` field is
/// written `"kv.message":"x"`, then `kv.message=y` is written
/// `"kv.kv.message":"y"`, and a second `message=z` `"kv.kv.kv.message":"z"`.
/// So a field is never shadowed, no key-value is dropped, and the object
/// never holds a key twice. (The `kv` object of the default schema keeps
/// every key as it is, repeated keys included.)
///
/// # Examples
///
/// ```
/// use logbus_appenders::{
///     Appender, FileAppender, JsonAppender, JsonField, JsonSchema, Level, LevelFormat, Record,
///     TimestampFormat, Topic,
/// };
///
/// let schema = JsonSchema::builder()
///     .rename(JsonField::MSG, "message")
///     .rename(JsonField::FILE, ["source", "file"])
///     .rename(JsonField::LINE, ["source", "line"])
///     .omit(JsonField::TOPIC)
///     .omit(JsonField::THREAD_ID)
///     .level(LevelFormat::LOWER)
///     .timestamp(TimestampFormat::UNIX_MILLIS)
///     .flatten_kv()
///     .constant("service", "shop")
///     .build()?;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("app.ndjson");
/// let mut json = JsonAppender::file(FileAppender::builder(&path))?.schema(schema);
/// json.append(&Record::builder(Topic::new(Level::Warn, "app::db"))
///     .message("slow")
///     .line(Some(42))
///     .kv("ms", 1200u64)
///     .kv("message", "mine")
///     .build())?;
/// let line: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
/// assert_eq!(line["message"], "slow");
/// assert_eq!(line["kv.message"], "mine");
/// assert_eq!(line["level"], "warn");
/// assert_eq!(line["source"]["line"], 42);
/// assert_eq!(line["ms"], 1200);
/// assert_eq!(line["service"], "shop");
/// assert!(line["ts"].is_u64());
/// assert!(line.get("topic").is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct JsonSchema {
    pub(super) root: Object,
    pub(super) prefix: Box<str>,
    pub(super) unknown: Unknown,
}

/// What a field with no value (module, file, line) becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unknown {
    Null,
    Omit,
}

impl Default for JsonSchema {
    /// The object of [`JsonAppender`](crate::JsonAppender)'s docs.
    fn default() -> JsonSchema {
        match JsonSchema::builder().build() {
            Ok(schema) => schema,
            // The default members are constants with distinct keys,
            // checked by the unit tests.
            Err(_) => unreachable!("the default JSON schema builds"),
        }
    }
}

impl JsonSchema {
    /// A builder that starts from the default object: every field under
    /// its default key, key-values under `kv`, levels [`LevelFormat::UPPER`],
    /// timestamps [`TimestampFormat::RFC3339_UTC`], unknown values `null`.
    ///
    /// | setting | default |
    /// |---|---|
    /// | members | `ts level target topic seq msg thread thread_id module file line kv` |
    /// | [`level`](JsonSchemaBuilder::level) | [`LevelFormat::UPPER`] |
    /// | [`timestamp`](JsonSchemaBuilder::timestamp) | [`TimestampFormat::RFC3339_UTC`] |
    /// | [`kv_collision_prefix`](JsonSchemaBuilder::kv_collision_prefix) | `kv.` |
    /// | unknown module, file, line; a thread with no name | `null`; [`JsonField::THREAD`] is the thread's id as a string ([`omit_unknown`](JsonSchemaBuilder::omit_unknown) leaves them out) |
    pub fn builder() -> JsonSchemaBuilder {
        JsonSchemaBuilder {
            members: DEFAULT_FIELDS
                .iter()
                .map(|&field| Member {
                    key: JsonKey::from(field.name()),
                    what: What::Field(field),
                })
                .collect(),
            level: LevelFormat::UPPER,
            timestamp: TimestampFormat::RFC3339_UTC,
            prefix: "kv.".into(),
            unknown: Unknown::Null,
            error: None,
        }
    }
}

/// Builds a [`JsonSchema`]; see [`JsonSchema::builder`] for the defaults.
/// Mistakes (an empty key, a key used twice, renaming a field the schema
/// does not show) are reported by [`build`](JsonSchemaBuilder::build).
#[derive(Debug, Clone)]
#[must_use]
pub struct JsonSchemaBuilder {
    members: Vec<Member>,
    level: LevelFormat,
    timestamp: TimestampFormat,
    prefix: Box<str>,
    unknown: Unknown,
    /// The first mistake of a method that cannot return one.
    error: Option<JsonSchemaError>,
}

#[derive(Debug, Clone)]
struct Member {
    /// Empty for [`What::FlatKv`].
    key: JsonKey,
    what: What,
}

#[derive(Debug, Clone)]
enum What {
    Field(JsonField),
    Constant(Value),
    /// Key-values spread into the object at `key` (the top level if empty).
    FlatKv,
}

impl JsonSchemaBuilder {
    /// Removes every member, to build the object from nothing (the formats
    /// and other settings stay).
    pub fn clear(mut self) -> Self {
        self.members.clear();
        self
    }

    /// Moves the members that show `field` (whatever their formats) to
    /// `key`. Renaming [`JsonField::KV`] after
    /// [`flatten_kv`](Self::flatten_kv) puts the key-values back under a
    /// key.
    ///
    /// # Errors
    ///
    /// [`build`](Self::build) fails with [`JsonSchemaErrorKind::NotInSchema`]
    /// if no member shows `field` (it was omitted, or never added).
    ///
    /// ```
    /// use logbus_appenders::{JsonField, JsonSchema, JsonSchemaErrorKind};
    ///
    /// let err = JsonSchema::builder()
    ///     .omit(JsonField::MSG)
    ///     .rename(JsonField::MSG, "message")
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), JsonSchemaErrorKind::NotInSchema);
    /// assert_eq!(err.to_string(), r#"invalid JSON schema: cannot rename field `msg` to "message": the schema does not show it"#);
    /// ```
    pub fn rename(mut self, field: JsonField, key: impl Into<JsonKey>) -> Self {
        let key = key.into();
        let mut found = false;
        for member in &mut self.members {
            let shows = match member.what {
                What::Field(f) => f.is(field),
                What::FlatKv => field.is(JsonField::KV),
                What::Constant(_) => false,
            };
            if shows {
                found = true;
                member.key = key.clone();
                if let What::FlatKv = member.what {
                    member.what = What::Field(JsonField::KV);
                }
            }
        }
        if !found && self.error.is_none() {
            self.error = Some(JsonSchemaError::new(
                JsonSchemaErrorKind::NotInSchema,
                key,
                Some(field.name()),
            ));
        }
        self
    }

    /// Leaves out every member that shows `field`; nothing if none does.
    pub fn omit(mut self, field: JsonField) -> Self {
        self.members.retain(|member| match member.what {
            What::Field(f) => !f.is(field),
            What::FlatKv => !field.is(JsonField::KV),
            What::Constant(_) => true,
        });
        self
    }

    /// Adds a member showing `field` under `key`, after the others.
    pub fn field(mut self, key: impl Into<JsonKey>, field: JsonField) -> Self {
        self.members.push(Member {
            key: key.into(),
            what: What::Field(field),
        });
        self
    }

    /// Adds a member with the same value in every record (`"ecs.version":
    /// "8.11.0"`, a service name), after the others. A [`Value::Json`]
    /// constant is written as JSON (an object of labels, say).
    pub fn constant(mut self, key: impl Into<JsonKey>, value: impl Into<Value>) -> Self {
        self.members.push(Member {
            key: key.into(),
            what: What::Constant(value.into()),
        });
        self
    }

    /// Spreads the key-values into the top-level object instead of one
    /// object under a key, where the (first) key-value member was, or last.
    /// See [`JsonSchema`], "Key-values spread into an object", for a key
    /// that is already taken.
    pub fn flatten_kv(self) -> Self {
        self.flatten_kv_into(JsonKey(Vec::new()))
    }

    /// Spreads the key-values into the object at `key` (created, or shared
    /// with the members nested there), as [`flatten_kv`](Self::flatten_kv)
    /// does into the top level: OpenTelemetry's `Attributes` holds both
    /// fields and key-values.
    pub fn flatten_kv_into(mut self, key: impl Into<JsonKey>) -> Self {
        let key = key.into();
        let at = self.members.iter().position(|member| match member.what {
            What::Field(f) => f.is(JsonField::KV),
            What::FlatKv => true,
            What::Constant(_) => false,
        });
        self = self.omit(JsonField::KV);
        let member = Member {
            key,
            what: What::FlatKv,
        };
        match at {
            Some(at) => self.members.insert(at.min(self.members.len()), member),
            None => self.members.push(member),
        }
        self
    }

    /// What goes before the key of a spread key-value whose key is taken
    /// (`kv.` by default).
    ///
    /// # Errors
    ///
    /// [`build`](Self::build) fails with [`JsonSchemaErrorKind::EmptyPrefix`]
    /// for an empty prefix, which could never free a key.
    pub fn kv_collision_prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The format of [`JsonField::LEVEL`] members.
    pub fn level(mut self, format: LevelFormat) -> Self {
        self.level = format;
        self
    }

    /// The format of [`JsonField::TS`] members.
    pub fn timestamp(mut self, format: TimestampFormat) -> Self {
        self.timestamp = format;
        self
    }

    /// Leaves out the module, file and line when the record does not know
    /// them (instead of writing `null`), [`JsonField::THREAD`] when the
    /// thread has no name (instead of its id as a string), and an object
    /// all of whose members were left out.
    pub fn omit_unknown(mut self) -> Self {
        self.unknown = Unknown::Omit;
        self
    }

    /// Checks the members and builds the schema.
    ///
    /// # Errors
    ///
    /// A [`JsonSchemaError`] naming the key and the member:
    /// [`EmptyKey`](JsonSchemaErrorKind::EmptyKey) (a key, or a key of a
    /// path, is empty), [`DuplicateKey`](JsonSchemaErrorKind::DuplicateKey)
    /// (two members would write the same key, or one needs as an object a
    /// key another writes a value under),
    /// [`NotInSchema`](JsonSchemaErrorKind::NotInSchema) (see
    /// [`rename`](Self::rename)),
    /// [`EmptyPrefix`](JsonSchemaErrorKind::EmptyPrefix) (see
    /// [`kv_collision_prefix`](Self::kv_collision_prefix)).
    ///
    /// ```
    /// use logbus_appenders::{JsonField, JsonKey, JsonSchema, JsonSchemaErrorKind};
    ///
    /// let err = JsonSchema::builder().rename(JsonField::TOPIC, "msg").build().unwrap_err();
    /// assert_eq!(err.kind(), JsonSchemaErrorKind::DuplicateKey);
    /// assert_eq!(err.key(), &JsonKey::from("msg"));
    /// assert_eq!(err.to_string(), r#"invalid JSON schema: field `msg` writes the key "msg" another member writes"#);
    ///
    /// let err = JsonSchema::builder().constant(["line", "n"], 1u64).build().unwrap_err();
    /// assert_eq!(err.to_string(), r#"invalid JSON schema: a constant needs "line" as an object, where another member writes a value"#);
    ///
    /// let err = JsonSchema::builder().rename(JsonField::MSG, ["log", ""]).build().unwrap_err();
    /// assert_eq!(err.kind(), JsonSchemaErrorKind::EmptyKey);
    /// assert_eq!(err.to_string(), r#"invalid JSON schema: field `msg` has an empty key in "log" > """#);
    ///
    /// let err = JsonSchema::builder().flatten_kv().kv_collision_prefix("").build().unwrap_err();
    /// assert_eq!(err.kind(), JsonSchemaErrorKind::EmptyPrefix);
    /// assert_eq!(err.to_string(), "invalid JSON schema: the key-value collision prefix is empty");
    /// ```
    pub fn build(self) -> Result<JsonSchema, JsonSchemaError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if self.prefix.is_empty() {
            return Err(JsonSchemaError::new(
                JsonSchemaErrorKind::EmptyPrefix,
                JsonKey(Vec::new()),
                None,
            ));
        }
        let mut root = Object::default();
        let (level, timestamp) = (self.level, self.timestamp);
        for member in self.members {
            let (what, node) = match member.what {
                What::Field(field) => (Some(field.name()), Some(resolve(field, level, timestamp))),
                What::Constant(value) => (None, Some(Source::Constant(value))),
                What::FlatKv => (Some(JsonField::KV.name()), None),
            };
            insert(&mut root, member.key, what, node)?;
        }
        root.finish();
        Ok(JsonSchema {
            root,
            prefix: self.prefix,
            unknown: self.unknown,
        })
    }
}

/// `field` with the schema's formats where it has none of its own.
fn resolve(field: JsonField, level: LevelFormat, timestamp: TimestampFormat) -> Source {
    let kind = match field.kind {
        FieldKind::Ts(None) => FieldKind::Ts(Some(timestamp)),
        FieldKind::Level(None) => FieldKind::Level(Some(level)),
        other => other,
    };
    Source::Field(JsonField { kind, ..field })
}

/// Puts a member into the tree: a leaf showing `source` at `key`, or, with
/// no source, the spread key-values into the object at `key`.
fn insert(
    root: &mut Object,
    key: JsonKey,
    what: Option<&'static str>,
    source: Option<Source>,
) -> Result<(), JsonSchemaError> {
    let error = |kind, at: &[Box<str>]| JsonSchemaError::new(kind, JsonKey(at.to_vec()), what);
    let segments = key.parts();
    if segments.iter().any(|s| s.is_empty()) || (source.is_some() && segments.is_empty()) {
        return Err(error(JsonSchemaErrorKind::EmptyKey, segments));
    }
    let (parents, last) = match source {
        Some(_) => segments.split_at(segments.len() - 1),
        None => (segments, &[][..]),
    };
    let mut object = root;
    for (depth, segment) in parents.iter().enumerate() {
        if object.find(segment).is_none() {
            object
                .members
                .push(Node::Object(segment.clone(), Object::default()));
        }
        object = match object.find(segment) {
            Some(Node::Object(_, inner)) => inner,
            _ => {
                return Err(JsonSchemaError::not_an_object(
                    JsonKey(segments[..=depth].to_vec()),
                    what,
                ))
            }
        };
    }
    match (last.first(), source) {
        (Some(name), Some(source)) => {
            if object.find(name).is_some() {
                return Err(error(JsonSchemaErrorKind::DuplicateKey, segments));
            }
            object.members.push(Node::Leaf(name.clone(), source));
        }
        _ => object.members.push(Node::FlatKv),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_schema_builds_in_order() {
        let schema = JsonSchema::default();
        let keys: Vec<&str> = schema
            .root
            .members
            .iter()
            .map(|node| match node {
                Node::Leaf(k, _) => &**k,
                _ => "?",
            })
            .collect();
        assert_eq!(
            keys,
            DEFAULT_FIELDS.iter().map(|f| f.name()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn nested_paths_share_their_objects() {
        let schema = JsonSchema::builder()
            .clear()
            .field(["a", "b"], JsonField::FILE)
            .field("x", JsonField::MSG)
            .field(["a", "c"], JsonField::LINE)
            .build()
            .unwrap();
        assert_eq!(schema.root.members.len(), 2);
        match &schema.root.members[0] {
            Node::Object(k, inner) => {
                assert_eq!(&**k, "a");
                assert_eq!(inner.members.len(), 2);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_value_under_an_object_key_is_refused_both_ways() {
        for builder in [
            JsonSchema::builder()
                .clear()
                .field(["a", "b"], JsonField::FILE)
                .field("a", JsonField::MSG),
            JsonSchema::builder()
                .clear()
                .field("a", JsonField::MSG)
                .field(["a", "b"], JsonField::FILE),
        ] {
            let err = builder.build().unwrap_err();
            assert_eq!(err.kind(), JsonSchemaErrorKind::DuplicateKey);
            assert_eq!(err.key(), &JsonKey::from("a"));
        }
    }

    #[test]
    fn flattening_keeps_the_position_and_records_the_taken_keys() {
        let schema = JsonSchema::builder().flatten_kv().build().unwrap();
        assert_eq!(schema.root.members.last(), Some(&Node::FlatKv));
        assert!(schema.root.taken.binary_search(&"msg".into()).is_ok());
        // Renaming the key-values puts them back under a key.
        let schema = JsonSchema::builder()
            .flatten_kv()
            .rename(JsonField::KV, "fields")
            .build()
            .unwrap();
        assert!(matches!(schema.root.members.last(), Some(Node::Leaf(k, _)) if &**k == "fields"));
    }

    #[test]
    fn the_taken_keys_are_the_dotted_paths_and_their_starts() {
        let schema = JsonSchema::builder()
            .clear()
            .field("ecs.version", JsonField::MSG)
            .field(["log", "origin", "file.name"], JsonField::FILE)
            .field(["log", "logger"], JsonField::TARGET)
            .flatten_kv()
            .build()
            .unwrap();
        let taken: Vec<&str> = schema.root.taken.iter().map(|k| &**k).collect();
        assert_eq!(
            taken,
            [
                "ecs",
                "ecs.version",
                "log",
                "log.logger",
                "log.origin",
                "log.origin.file",
                "log.origin.file.name"
            ]
        );
        // Spread into a nested object: paths from that object.
        let schema = JsonSchema::builder()
            .clear()
            .field(["attrs", "thread", "name"], JsonField::THREAD)
            .field("msg", JsonField::MSG)
            .flatten_kv_into("attrs")
            .build()
            .unwrap();
        assert!(schema.root.taken.is_empty());
        let Some(Node::Object(_, attrs)) = schema.root.members.first() else {
            panic!("{:?}", schema.root);
        };
        let taken: Vec<&str> = attrs.taken.iter().map(|k| &**k).collect();
        assert_eq!(taken, ["thread", "thread.name"]);
    }

    #[test]
    fn formats_resolve_at_build() {
        let schema = JsonSchema::builder()
            .clear()
            .field("a", JsonField::LEVEL)
            .field("b", JsonField::level(LevelFormat::OTEL_NUMBER))
            .level(LevelFormat::LOWER)
            .build()
            .unwrap();
        let formats: Vec<_> = schema
            .root
            .members
            .iter()
            .map(|node| match node {
                Node::Leaf(_, Source::Field(f)) => f.kind,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            formats,
            [
                FieldKind::Level(Some(LevelFormat::LOWER)),
                FieldKind::Level(Some(LevelFormat::OTEL_NUMBER))
            ]
        );
    }
}
