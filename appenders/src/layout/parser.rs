//! The layout pattern parser: pattern text to a list of pieces, once.

use super::timestamp::{Timestamp, Zone, DEFAULT_LOCAL_FORMAT, DEFAULT_UTC_FORMAT};
use super::{LayoutError, LayoutErrorKind};

/// Widest padding a placeholder may ask for; a larger number is a typo.
const MAX_WIDTH: usize = 1024;

/// One piece of a parsed layout.
#[derive(Debug, Clone)]
pub(super) enum Piece {
    /// Text copied as is (with `{{` and `}}` already unescaped).
    Literal(Box<str>),
    /// A record field, optionally padded.
    Field(Field, Option<Width>),
    /// A timestamp with its own cache, boxed: the pieces stay a few words
    /// each, and telling them apart is cheaper (inline, the timestamp made
    /// the default layout's render loop 29 instructions a record dearer,
    /// `SIDE=worker benches/peers/callgrind.sh`).
    Timestamp(Box<Timestamp>),
}

/// The record fields a placeholder can name (everything but the timestamp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Level,
    Target,
    Topic,
    Seq,
    Msg,
    Kv,
    Thread,
    File,
    Line,
    Module,
}

/// Where padding goes when the value is shorter than the width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Align {
    Left,
    Right,
    Center,
}

/// `{field:>5}`: minimum width in characters and alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Width {
    pub(super) align: Align,
    pub(super) width: usize,
}

fn field(name: &str) -> Option<Field> {
    Some(match name {
        "level" => Field::Level,
        "target" => Field::Target,
        "topic" => Field::Topic,
        "seq" => Field::Seq,
        "msg" => Field::Msg,
        "kv" => Field::Kv,
        "thread" => Field::Thread,
        "file" => Field::File,
        "line" => Field::Line,
        "module" => Field::Module,
        _ => return None,
    })
}

fn width(spec: &str) -> Option<Width> {
    let (align, digits) = match spec.as_bytes().first() {
        Some(b'<') => (Align::Left, &spec[1..]),
        Some(b'>') => (Align::Right, &spec[1..]),
        Some(b'^') => (Align::Center, &spec[1..]),
        _ => (Align::Left, spec),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let width = digits.parse().ok().filter(|w| *w <= MAX_WIDTH)?;
    Some(Width { align, width })
}

/// Parses `pattern`; see [`Layout`](super::Layout) for the language.
pub(super) fn parse(pattern: &str) -> Result<Vec<Piece>, LayoutError> {
    let err = |position, kind| Err(LayoutError::new(pattern, position, kind));
    let bytes = pattern.as_bytes();
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => {
                literal.push('{');
                i += 2;
            }
            b'}' if bytes.get(i + 1) == Some(&b'}') => {
                literal.push('}');
                i += 2;
            }
            b'}' => return err(i, LayoutErrorKind::StrayClosingBrace),
            b'{' => {
                let open = i;
                let close = match bytes[open + 1..]
                    .iter()
                    .position(|&b| b == b'}' || b == b'{')
                {
                    Some(offset) if bytes[open + 1 + offset] == b'}' => open + 1 + offset,
                    _ => return err(open, LayoutErrorKind::UnclosedBrace),
                };
                let inner = &pattern[open + 1..close];
                let (name, spec) = match inner.split_once(':') {
                    Some((name, spec)) => (name, Some(spec)),
                    None => (inner, None),
                };
                let spec_at = open + 1 + name.len() + 1;
                let piece = match name {
                    "ts" | "ts_local" => {
                        let zone = if name == "ts" { Zone::Utc } else { Zone::Local };
                        let format = match (spec, zone) {
                            (Some(format), _) => format,
                            (None, Zone::Utc) => DEFAULT_UTC_FORMAT,
                            (None, Zone::Local) => DEFAULT_LOCAL_FORMAT,
                        };
                        match Timestamp::new(zone, format) {
                            Ok(ts) => Piece::Timestamp(Box::new(ts)),
                            Err(()) => {
                                let kind = LayoutErrorKind::BadTimeFormat(format.to_owned());
                                return err(spec_at, kind);
                            }
                        }
                    }
                    _ => {
                        let Some(field) = field(name) else {
                            let kind = LayoutErrorKind::UnknownPlaceholder(name.to_owned());
                            return err(open + 1, kind);
                        };
                        let width = match spec {
                            None => None,
                            Some(spec) => match width(spec) {
                                Some(width) => Some(width),
                                None => {
                                    let kind = LayoutErrorKind::BadWidth(spec.to_owned());
                                    return err(spec_at, kind);
                                }
                            },
                        };
                        Piece::Field(field, width)
                    }
                };
                if !literal.is_empty() {
                    pieces.push(Piece::Literal(std::mem::take(&mut literal).into()));
                }
                pieces.push(piece);
                i = close + 1;
            }
            _ => {
                // Copy the run up to the next brace; braces are ASCII, so the
                // slice ends on a character boundary.
                let end = bytes[i..]
                    .iter()
                    .position(|&b| b == b'{' || b == b'}')
                    .map_or(bytes.len(), |offset| i + offset);
                literal.push_str(&pattern[i..end]);
                i = end;
            }
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal.into()));
    }
    Ok(pieces)
}
