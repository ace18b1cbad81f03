//! [`Json`]: valid, compact JSON text, the payload of [`Value::Json`], and
//! the error of reading it.

use std::fmt;

#[cfg(doc)]
use super::Value;

/// Valid, compact JSON text (no whitespace between tokens, so never more
/// than one line), the payload of [`Value::Json`].
///
/// It can only be made valid: [`Json::parse`] and [`Json::from_serialize`]
/// both read the text strictly (as `serde_json::from_str::<serde_json::Value>`
/// would: every string decoded, so a lone surrogate escape such as
/// `"\ud800"` is refused, every number in `f64`'s range) and keep it
/// without the whitespace between tokens; so an appender can write it into
/// a JSON document as it is, and a strict reader reads it back.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Json, Value};
///
/// let json = Json::parse("[1, 2, {\"a\": \"b c\"}]")?;
/// assert_eq!(json.as_str(), r#"[1,2,{"a":"b c"}]"#);
/// assert_eq!(Value::from(json).to_string(), r#"[1,2,{"a":"b c"}]"#);
///
/// let err = Json::parse("[1, 2").unwrap_err();
/// assert_eq!((err.line(), err.column()), (1, 5));
/// assert_eq!(err.to_string(), "invalid JSON at line 1, column 5");
/// assert!(Json::parse(r#"{"a":"\ud800"}"#).is_err());
///
/// let from_vec = Json::from_serialize(&vec![1, 2, 3])?;
/// assert_eq!(from_vec.as_str(), "[1,2,3]");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Json(Box<str>);

impl Json {
    /// Checks that `text` is one JSON value, read strictly (see [`Json`]),
    /// and keeps it without the whitespace between tokens.
    ///
    /// # Errors
    ///
    /// [`JsonValueError`] with the line and column where `text` stops being
    /// JSON (nothing, trailing text, a syntax error, a lone surrogate
    /// escape, a number out of range).
    pub fn parse(text: &str) -> Result<Json, JsonValueError> {
        Json::checked(text.to_owned())
    }

    /// Serialises `value` with serde_json, then checks and compacts the
    /// text as [`Json::parse`] does: serde_json writes a `RawValue` (its
    /// `raw_value` feature) as it is, whitespace and all, or not JSON at all.
    ///
    /// # Errors
    ///
    /// [`JsonValueError`] when `value` cannot be written as JSON: its
    /// `Serialize` implementation failed, or a map has keys that are not
    /// strings (`line` and `column` are then 0); or what serde_json wrote is
    /// not JSON (a `RawValue` holding anything but one JSON value; `line`
    /// and `column` are then where that text stops being JSON).
    pub fn from_serialize<T: serde::Serialize + ?Sized>(value: &T) -> Result<Json, JsonValueError> {
        let text = serde_json::to_string(value).map_err(|error| JsonValueError { error })?;
        Json::checked(text)
    }

    /// `text` if it is one JSON value read strictly, compacted in place
    /// (also the producer's capture, for what serde_json wrote).
    pub(crate) fn checked(mut text: String) -> Result<Json, JsonValueError> {
        serde_json::from_str::<Strict>(&text).map_err(|error| JsonValueError { error })?;
        compact(&mut text);
        Ok(Json(text.into_boxed_str()))
    }

    /// The JSON text.
    #[must_use]
    #[inline]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Json {
    /// This value with each object member whose key `secret` names, at any
    /// depth, given the value `replacement` (JSON text); `None` when no key
    /// is secret. Object keys keep their order, and the text stays compact.
    pub(crate) fn redacted(
        &self,
        secret: &dyn Fn(&str) -> bool,
        replacement: &str,
    ) -> Option<Json> {
        let mut redactor = Redactor {
            text: &self.0,
            out: String::new(),
            copied: 0,
            secret,
            replacement,
        };
        redactor.value(0);
        if redactor.copied == 0 {
            return None;
        }
        let mut out = redactor.out;
        out.push_str(&self.0[redactor.copied..]);
        Some(Json(out.into_boxed_str()))
    }
}

/// A walk over a [`Json`]'s compact text that replaces secret members'
/// values. The text is valid JSON at most 128 levels deep (serde_json's
/// limit, which [`Json::checked`] applies), so the recursion is bounded;
/// reads past the end see 0, so no input can make it panic.
struct Redactor<'a> {
    text: &'a str,
    /// The text with the replacements, up to `copied` in `text`.
    out: String,
    copied: usize,
    secret: &'a dyn Fn(&str) -> bool,
    replacement: &'a str,
}

impl Redactor<'_> {
    fn at(&self, i: usize) -> u8 {
        self.text.as_bytes().get(i).copied().unwrap_or(0)
    }

    /// Walks the value at `i`; returns where it ends.
    fn value(&mut self, i: usize) -> usize {
        match self.at(i) {
            b'{' => self.members(i + 1, b'}', true),
            b'[' => self.members(i + 1, b']', false),
            _ => self.skip(i),
        }
    }

    /// Walks an object's members (`keyed`) or an array's elements from `i`
    /// up to `close`; returns where the container ends.
    fn members(&mut self, mut i: usize, close: u8, keyed: bool) -> usize {
        if self.at(i) == close {
            return i + 1;
        }
        loop {
            let mut secret = false;
            if keyed {
                let key_end = self.string_end(i);
                let key = self.text.get(i..key_end).unwrap_or_default();
                let key: String = serde_json::from_str(key).unwrap_or_default();
                secret = (self.secret)(&key);
                i = key_end + 1; // past ':'
            }
            i = if secret {
                let end = self.skip(i);
                self.out
                    .push_str(self.text.get(self.copied..i).unwrap_or_default());
                self.out.push_str(self.replacement);
                self.copied = end;
                end
            } else {
                self.value(i)
            };
            match self.at(i) {
                b',' => i += 1,
                0 => return i,
                _ => return i + 1,
            }
        }
    }

    /// Where the value at `i` ends, walked over without a look inside.
    fn skip(&self, mut i: usize) -> usize {
        match self.at(i) {
            b'"' => self.string_end(i),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.at(i) {
                        0 => return i,
                        b'"' => {
                            i = self.string_end(i);
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return i + 1;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            _ => {
                while !matches!(self.at(i), 0 | b',' | b'}' | b']') {
                    i += 1;
                }
                i
            }
        }
    }

    /// Where the string opening at `i` ends (past its closing quote).
    fn string_end(&self, i: usize) -> usize {
        let mut j = i + 1;
        loop {
            match self.at(j) {
                0 => return j,
                b'"' => return j + 1,
                b'\\' => j += 2,
                _ => j += 1,
            }
        }
    }
}

/// Any JSON value, read strictly and thrown away: unlike
/// `serde::de::IgnoredAny`, which skips a string's escapes without decoding
/// them, it has serde_json decode every string and key (so a lone surrogate
/// escape is an error) and read every number.
struct Strict;

impl<'de> serde::Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Strict, D::Error> {
        deserializer.deserialize_any(Strict)
    }
}

impl<'de> serde::de::Visitor<'de> for Strict {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Strict, E> {
        Ok(Strict)
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Strict, E> {
        Ok(Strict)
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Strict, E> {
        Ok(Strict)
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Strict, E> {
        Ok(Strict)
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Strict, E> {
        Ok(Strict)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Strict, E> {
        Ok(Strict)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        while seq.next_element::<Strict>()?.is_some() {}
        Ok(Strict)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        while map.next_entry::<Strict, Strict>()?.is_some() {}
        Ok(Strict)
    }
}

/// `text`, valid JSON, without the whitespace outside strings.
fn compact(text: &mut String) {
    let mut in_string = false;
    let mut escaped = false;
    text.retain(|c| {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            true
        } else if matches!(c, ' ' | '\t' | '\n' | '\r') {
            false
        } else {
            in_string = c == '"';
            true
        }
    });
}

/// Why [`Json::parse`] or [`Json::from_serialize`] refused its input.
#[derive(Debug)]
pub struct JsonValueError {
    error: serde_json::Error,
}

impl JsonValueError {
    /// The line (from 1) where the text (given to [`Json::parse`], or
    /// written by serde_json for [`Json::from_serialize`]) stops being
    /// JSON; 0 for a value that could not be serialised.
    #[must_use]
    pub fn line(&self) -> usize {
        self.error.line()
    }

    /// The column (from 1) where the text stops being JSON; 0 for a value
    /// that could not be serialised.
    #[must_use]
    pub fn column(&self) -> usize {
        self.error.column()
    }
}

impl fmt::Display for JsonValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.error.line() == 0 {
            f.write_str("value cannot be written as JSON")
        } else {
            write!(
                f,
                "invalid JSON at line {}, column {}",
                self.error.line(),
                self.error.column()
            )
        }
    }
}

impl std::error::Error for JsonValueError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value as J;

    use super::Json;

    /// Keys that are secret, in some of their spellings.
    fn secret(key: &str) -> bool {
        key.eq_ignore_ascii_case("password") || key == "to\"ken"
    }

    /// The redaction done on the parsed value: what `Json::redacted` must
    /// give, order aside.
    fn reference(value: &mut J) -> bool {
        let mut hit = false;
        match value {
            J::Object(map) => {
                for (key, member) in map.iter_mut() {
                    if secret(key) {
                        *member = J::String("[redacted]".into());
                        hit = true;
                    } else {
                        hit |= reference(member);
                    }
                }
            }
            J::Array(items) => {
                for item in items {
                    hit |= reference(item);
                }
            }
            _ => {}
        }
        hit
    }

    fn json() -> impl Strategy<Value = J> {
        let key = prop_oneof![
            Just("password".to_owned()),
            Just("PassWord".to_owned()),
            Just("to\"ken".to_owned()),
            "[a-z{}\\[\\]\",:\\\\ ]{0,6}",
        ];
        let leaf = prop_oneof![
            Just(J::Null),
            any::<bool>().prop_map(J::Bool),
            any::<i64>().prop_map(J::from),
            "[a-z{}\\[\\]\",:\\\\ é]{0,8}".prop_map(J::String),
        ];
        leaf.prop_recursive(6, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(J::Array),
                prop::collection::vec((key.clone(), inner), 0..5)
                    .prop_map(|members| J::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever the value, the redacted text is one valid JSON value,
        /// equal to the reference redaction, and `None` means no secret
        /// key was found.
        #[test]
        fn redaction_agrees_with_a_parsed_walk(value in json()) {
            let text = serde_json::to_string(&value).unwrap();
            let json = Json::parse(&text).unwrap();
            let mut expected = value.clone();
            let hit = reference(&mut expected);
            match json.redacted(&secret, "\"[redacted]\"") {
                None => prop_assert!(!hit, "{text}"),
                Some(redacted) => {
                    prop_assert!(hit, "{text}");
                    let back: J = serde_json::from_str(redacted.as_str()).unwrap();
                    prop_assert_eq!(back, expected);
                }
            }
        }
    }
}
