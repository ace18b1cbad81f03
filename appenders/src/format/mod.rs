//! Formats: what the bytes of one record are, apart from where they go.
//!
//! A [`Format`] renders one record into a buffer the render loop reuses,
//! without framing (no line terminator, no length prefix): the destination
//! chooses the framing (see [`crate::destination::Framing`]). There are
//! three: [`TextFormat`] (a [`Layout`](crate::Layout), escaping, optional
//! level colour), [`JsonFormat`] (one JSON object, laid out by a [`JsonSchema`]) and, with the `syslog`
//! feature, `syslog::SyslogFormatter` (RFC 5424 or RFC 3164).

mod json;
#[cfg(feature = "syslog")]
pub(crate) mod syslog;
pub(crate) mod text;

use crate::appender::AppendError;
use crate::record::Record;

pub(crate) use self::json::JsonFormat;
pub use self::json::{
    JsonField, JsonKey, JsonSchema, JsonSchemaBuilder, JsonSchemaError, JsonSchemaErrorKind,
    LevelFormat, TimestampFormat, ECS_VERSION,
};
pub(crate) use self::text::TextFormat;

/// What the destination lets a format use for the record at hand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Style {
    /// The record goes to a stream that shows ANSI colour (a terminal, or
    /// colour forced); a format that has colour may use it.
    pub(crate) color: bool,
}

/// Renders one record's bytes.
///
/// # For implementors
///
/// Append the record to `out` without framing. On error the loop drops
/// whatever was appended and the broker's retry renders the record again.
/// Return an error rather than panicking: a panic is caught and reported
/// as that record's failure, but costs an unwind. Called once per record on
/// the hot path: keep state (caches, scratch buffers) on `self` rather than
/// allocating.
pub(crate) trait Format: Send + std::fmt::Debug {
    /// Appends `record` to `out`.
    fn render(
        &mut self,
        record: &Record,
        style: Style,
        out: &mut Vec<u8>,
    ) -> Result<(), AppendError>;
}
