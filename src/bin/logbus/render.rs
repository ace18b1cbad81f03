//! One line of a logbus file, recognised, filtered and made printable.
//!
//! A line that parses as a JSON object with the JSON appender's fields
//! (`ts`, `level`, `target`, `topic`, `msg`, and `kv` when present; the
//! others are not needed) is a *record*: it is filtered by its `topic` and
//! `level` and printed as the text appender's default layout would have
//! written it, `TS LEVEL target: msg k=v ...`, escaped the same way (the
//! message is rendered by logbus' own [`Layout`]), the level coloured when
//! colour is on; `--json` prints it as it is. Any other line (the console
//! or file appender's text, a foreign line) is *text*, printed as it is
//! when no filter is given.

use std::borrow::Cow;
use std::fmt;

use logbus::appenders::{level_color, Layout};
use logbus::{Level, Record, Topic, Value};
use serde::de::{Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::args::Output;
use crate::filter::Filter;

/// What follows `TS LEVEL ` in the text appender's default layout,
/// `{ts} {level:>5} {target}: {msg}{kv}`; the timestamp is the JSON's own
/// text and the level is padded and coloured here.
const BODY: &str = "{target}: {msg}{kv}";

/// Turns lines into what `logbus tail` prints.
#[derive(Debug)]
pub(crate) struct Renderer {
    filter: Filter,
    output: Output,
    color: bool,
    body: Layout,
    /// The text of the line at hand, reused across lines.
    buf: Vec<u8>,
}

impl Renderer {
    /// Keeps what `filter` keeps, prints records as `output` says, colours
    /// levels when `color`.
    pub(crate) fn new(filter: Filter, output: Output, color: bool) -> Renderer {
        let body = match Layout::parse(BODY) {
            Ok(layout) => layout,
            // A constant, checked by `the_body_layout_parses`.
            Err(_) => unreachable!("the body layout parses"),
        };
        Renderer {
            filter,
            output,
            color,
            body,
            buf: Vec::with_capacity(256),
        }
    }

    /// What to print for `line` (without its line terminator, nor one in
    /// the result), or `None` when the filter drops it.
    pub(crate) fn render<'a>(&'a mut self, line: &'a [u8]) -> Option<&'a [u8]> {
        let Some(record) = JsonRecord::parse(line) else {
            return self.filter.keeps_text().then_some(line);
        };
        if !self
            .filter
            .keeps_record(&record.topic, record.record.level())
        {
            return None;
        }
        match self.output {
            Output::Json => Some(line),
            Output::Text => {
                self.buf.clear();
                self.text(&record);
                Some(&self.buf)
            }
        }
    }

    /// `TS LEVEL target: msg k=v ...` into `self.buf`.
    fn text(&mut self, record: &JsonRecord) {
        escape_controls(&record.ts, &mut self.buf);
        self.buf.push(b' ');
        let level = record.record.level();
        if self.color {
            self.buf.extend_from_slice(level_color(level).as_bytes());
        }
        // `{level:>5}`: the longest level name has five letters.
        let name = level.as_str();
        self.buf
            .extend(std::iter::repeat(b' ').take(5usize.saturating_sub(name.len())));
        self.buf.extend_from_slice(name.as_bytes());
        if self.color {
            self.buf.extend_from_slice(b"\x1b[0m");
        }
        self.buf.push(b' ');
        self.body.render(&record.record, &mut self.buf);
    }
}

/// Appends `text`, with each control character written as `\u{..}`, so a
/// hostile timestamp can neither break the line nor drive the terminal
/// (the layout escapes every other field).
fn escape_controls(text: &str, out: &mut Vec<u8>) {
    for c in text.chars() {
        if c.is_control() {
            out.extend_from_slice(format!("\\u{{{:x}}}", u32::from(c)).as_bytes());
        } else {
            let mut utf8 = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
        }
    }
}

/// A record read back from a JSON appender line.
#[derive(Debug)]
struct JsonRecord {
    /// The `ts` field as written.
    ts: String,
    /// The `topic` field as written (what `--topic` matches).
    topic: String,
    /// Level, target, message and key-values, for the layout.
    record: Record,
}

impl JsonRecord {
    /// The record on `line`, or `None` when it is not a JSON appender line.
    fn parse(line: &[u8]) -> Option<JsonRecord> {
        // Most text lines fail here, before serde_json is asked.
        if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return None;
        }
        let json: JsonLine = serde_json::from_slice(line).ok()?;
        let level = json.level.parse::<Level>().ok()?;
        let kv = json
            .kv
            .0
            .into_iter()
            .map(|(key, value)| (Cow::Owned(key), to_value(value)))
            .collect();
        let record = Record::builder(Topic::new(level, &json.target))
            .message(json.msg)
            .key_values(kv)
            .build();
        Some(JsonRecord {
            ts: json.ts,
            topic: json.topic,
            record,
        })
    }
}

/// The value the JSON appender wrote, with the type it had (logbus writes
/// no arrays or objects; a foreign one is shown as its JSON text).
fn to_value(value: serde_json::Value) -> Value {
    use serde_json::Value as Json;
    match value {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(b),
        Json::String(s) => Value::from(s),
        Json::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => Value::U64(u),
            (None, Some(i), _) => Value::I64(i),
            (None, None, Some(f)) => Value::F64(f),
            (None, None, None) => Value::from(n.to_string()),
        },
        other => Value::from(other.to_string()),
    }
}

/// The fields of a JSON appender line that `tail` reads; the others
/// (`seq`, `thread`, `module`, ...) are ignored. Deserialised by hand, so
/// that the default build needs no derive macros.
struct JsonLine {
    ts: String,
    level: String,
    target: String,
    topic: String,
    msg: String,
    kv: Kv,
}

impl<'de> Deserialize<'de> for JsonLine {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<JsonLine, D::Error> {
        struct Fields;

        impl<'de> Visitor<'de> for Fields {
            type Value = JsonLine;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON appender record")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonLine, A::Error> {
                let [mut ts, mut level, mut target, mut topic, mut msg] =
                    [None, None, None, None, None];
                let mut kv = Kv::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    let slot = match &*key {
                        "ts" => &mut ts,
                        "level" => &mut level,
                        "target" => &mut target,
                        "topic" => &mut topic,
                        "msg" => &mut msg,
                        "kv" => {
                            kv = map.next_value()?;
                            continue;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = Some(map.next_value::<String>()?);
                }
                let missing = |name| A::Error::missing_field(name);
                Ok(JsonLine {
                    ts: ts.ok_or_else(|| missing("ts"))?,
                    level: level.ok_or_else(|| missing("level"))?,
                    target: target.ok_or_else(|| missing("target"))?,
                    topic: topic.ok_or_else(|| missing("topic"))?,
                    msg: msg.ok_or_else(|| missing("msg"))?,
                    kv,
                })
            }
        }

        deserializer.deserialize_map(Fields)
    }
}

/// The `kv` object in order, duplicates kept, as the appender wrote it
/// (a map type would sort or merge the keys).
#[derive(Default)]
struct Kv(Vec<(String, serde_json::Value)>);

impl<'de> Deserialize<'de> for Kv {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Kv, D::Error> {
        struct Pairs;

        impl<'de> Visitor<'de> for Pairs {
            type Value = Kv;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of key-values")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kv, A::Error> {
                let mut pairs = Vec::new();
                while let Some(pair) = map.next_entry::<String, serde_json::Value>()? {
                    pairs.push(pair);
                }
                Ok(Kv(pairs))
            }
        }

        deserializer.deserialize_map(Pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = concat!(
        r#"{"ts":"2026-11-29T20:25:23.941824Z","level":"WARN","target":"app::db","#,
        r#""topic":"warn.app.db","seq":7,"msg":"say \"hi\"\n","thread":"main","#,
        r#""thread_id":3,"module":"app::db","file":"src/db.rs","line":42,"#,
        r#""kv":{"z":1,"a":-2,"r":0.5,"ok":true,"none":null,"peer":"10.0.0.1","z":"again"}}"#,
    );

    #[track_caller]
    fn check(filter: Filter, output: Output, color: bool, line: &str, expected: Option<&str>) {
        let mut renderer = Renderer::new(filter, output, color);
        let got = renderer
            .render(line.as_bytes())
            .map(|b| String::from_utf8(b.to_vec()).unwrap());
        assert_eq!(got.as_deref(), expected);
    }

    use proptest::prelude::*;

    proptest! {
        /// Any line, JSON-shaped or not, renders without a panic and
        /// without a line feed (a review noted the CLI's readers were not
        /// fuzzed).
        #[test]
        fn any_line_renders_on_one_line(
            line in proptest::prop_oneof![
                // A line as the follower gives it: no line feed in it.
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)
                    .prop_map(|mut line| {
                        line.retain(|&b| b != b'\n');
                        line
                    }),
                "\\{(\"(ts|level|target|topic|seq|msg|kv|line)\":([0-9.e-]{1,8}|\"[^\"\\n]{0,12}\"|\\{\\}|null|true),?){0,8}\\}"
                    .prop_map(String::into_bytes),
            ],
            json in proptest::prelude::any::<bool>(),
            color in proptest::prelude::any::<bool>(),
        ) {
            let output = if json { Output::Json } else { Output::Text };
            let mut renderer = Renderer::new(Filter::new(Vec::new(), None), output, color);
            if let Some(out) = renderer.render(&line) {
                proptest::prop_assert!(json || !out.contains(&b'\n'));
            }
        }
    }

    #[test]
    fn the_body_layout_parses() {
        assert!(Layout::parse(BODY).is_ok());
    }

    #[test]
    fn a_record_as_text() {
        let text = concat!(
            r#"2026-11-29T20:25:23.941824Z  WARN app::db: say "hi"\n"#,
            " z=1 a=-2 r=0.5 ok=true none=null peer=10.0.0.1 z=again",
        );
        check(Filter::default(), Output::Text, false, LINE, Some(text));
        let coloured = text.replacen(" WARN", "\x1b[33m WARN\x1b[0m", 1);
        check(Filter::default(), Output::Text, true, LINE, Some(&coloured));
    }

    #[test]
    fn a_record_as_json_is_unchanged() {
        check(Filter::default(), Output::Json, true, LINE, Some(LINE));
    }

    #[test]
    fn filters_read_the_topic_and_level_fields() {
        let by = |topic: &str, level| Filter::new(vec![topic.parse().unwrap()], level);
        check(by("*.app.#", None), Output::Json, false, LINE, Some(LINE));
        check(by("error.#", None), Output::Json, false, LINE, None);
        check(
            by("#", Some(Level::Warn)),
            Output::Json,
            false,
            LINE,
            Some(LINE),
        );
        check(by("#", Some(Level::Error)), Output::Json, false, LINE, None);
    }

    #[test]
    fn other_lines_are_text() {
        for line in [
            "2026-11-29T20:25:23.941824Z  INFO app: started",
            r#"{"a":1}"#,
            r#"{"ts":"t","level":"LOUD","target":"x","topic":"x","msg":"m"}"#,
            r#"{"ts":"t","level":"INFO","target":"x","topic":"x","msg":"m""#,
            "[1, 2]",
            "",
        ] {
            check(Filter::default(), Output::Text, true, line, Some(line));
            check(
                Filter::new(Vec::new(), Some(Level::Trace)),
                Output::Text,
                true,
                line,
                None,
            );
        }
    }

    #[test]
    fn hostile_fields_stay_on_one_line() {
        let line = r#"{"ts":"t\u001b[2J\n","level":"info","target":"a\nb","topic":"info.a","msg":"m\r","kv":{"k\n":"v\u0007"}}"#;
        check(
            Filter::default(),
            Output::Text,
            false,
            line,
            Some(r"t\u{1b}[2J\u{a}  INFO a\nb: m\r k\n=v\x07"),
        );
    }

    #[test]
    fn a_minimal_record_and_foreign_values() {
        let line = r#"{"ts":"T","level":"error","target":"x","topic":"error.x","msg":"m","kv":{"list":[1,2],"big":-9223372036854775808,"f":2.5}}"#;
        check(
            Filter::default(),
            Output::Text,
            false,
            line,
            Some("T ERROR x: m list=[1,2] big=-9223372036854775808 f=2.5"),
        );
    }
}
