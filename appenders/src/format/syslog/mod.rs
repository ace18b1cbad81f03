//! Syslog formats: a record as one syslog message, RFC 5424 by default,
//! RFC 3164 for old receivers, without framing (the destination frames it).
//!
//! The settings users give are the public [`Facility`], [`MsgId`],
//! [`Rfc5424`] and [`Rfc3164`]; the header fields every message shares
//! (hostname, app name, procid) are checked once when the appender is built
//! ([`Header`]), so rendering never fails. What a record brings (its target
//! as MSGID, its key-values as SD-PARAMs) is sanitised per record instead.
//!
//! - [`rfc5424`]: `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID SD MSG`;
//! - [`rfc3164`]: `<PRI>Mmm dd hh:mm:ss HOSTNAME TAG[PID]: MSG`;
//! - [`fields`]: the character and length rules both follow.

pub(crate) mod fields;
mod rfc3164;
mod rfc5424;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::appender::AppendError;
use crate::layout::{Timestamp, Zone, DEFAULT_UTC_FORMAT};
use crate::record::{Level, Record};

use super::{Format, Style};

/// A syslog facility: the kind of program a message comes from (RFC 5424
/// §6.2.1). Its code is the upper part of the message's PRI.
///
/// The default is [`Facility::USER`], as for `syslog(3)`.
///
/// # Examples
///
/// ```
/// use logbus_appenders::Facility;
///
/// assert_eq!(Facility::LOCAL0.code(), 16);
/// assert_eq!(Facility::from_code(16), Some(Facility::LOCAL0));
/// assert_eq!(Facility::from_code(24), None);
/// assert_eq!(Facility::default(), Facility::USER);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Facility(u8);

impl Facility {
    /// Kernel messages (0).
    pub const KERN: Facility = Facility(0);
    /// User-level messages (1), the default.
    pub const USER: Facility = Facility(1);
    /// Mail system (2).
    pub const MAIL: Facility = Facility(2);
    /// System daemons (3).
    pub const DAEMON: Facility = Facility(3);
    /// Security/authorization messages (4).
    pub const AUTH: Facility = Facility(4);
    /// Messages generated internally by syslogd (5).
    pub const SYSLOG: Facility = Facility(5);
    /// Line printer subsystem (6).
    pub const LPR: Facility = Facility(6);
    /// Network news subsystem (7).
    pub const NEWS: Facility = Facility(7);
    /// UUCP subsystem (8).
    pub const UUCP: Facility = Facility(8);
    /// Clock daemon (9).
    pub const CRON: Facility = Facility(9);
    /// Security/authorization messages, private (10).
    pub const AUTHPRIV: Facility = Facility(10);
    /// FTP daemon (11).
    pub const FTP: Facility = Facility(11);
    /// NTP subsystem (12).
    pub const NTP: Facility = Facility(12);
    /// Log audit (13).
    pub const AUDIT: Facility = Facility(13);
    /// Log alert (14).
    pub const ALERT: Facility = Facility(14);
    /// Clock daemon (15).
    pub const CLOCK: Facility = Facility(15);
    /// Local use 0 (16).
    pub const LOCAL0: Facility = Facility(16);
    /// Local use 1 (17).
    pub const LOCAL1: Facility = Facility(17);
    /// Local use 2 (18).
    pub const LOCAL2: Facility = Facility(18);
    /// Local use 3 (19).
    pub const LOCAL3: Facility = Facility(19);
    /// Local use 4 (20).
    pub const LOCAL4: Facility = Facility(20);
    /// Local use 5 (21).
    pub const LOCAL5: Facility = Facility(21);
    /// Local use 6 (22).
    pub const LOCAL6: Facility = Facility(22);
    /// Local use 7 (23).
    pub const LOCAL7: Facility = Facility(23);

    /// The facility with numeric code `code` (0 to 23), if there is one.
    #[must_use]
    pub const fn from_code(code: u8) -> Option<Facility> {
        if code <= 23 {
            Some(Facility(code))
        } else {
            None
        }
    }

    /// The numeric code (0 to 23).
    #[must_use]
    pub const fn code(self) -> u8 {
        self.0
    }
}

impl Default for Facility {
    fn default() -> Facility {
        Facility::USER
    }
}

/// The severity a level is sent with (RFC 5424 §6.2.1): error 3, warn 4,
/// info 6, debug and trace 7. `log` has no level for 0-2 (emergency, alert,
/// critical) nor 5 (notice).
///
/// # Examples
///
/// ```
/// use logbus_appenders::{syslog_severity, Level};
///
/// assert_eq!(syslog_severity(Level::Error), 3);
/// assert_eq!(syslog_severity(Level::Trace), 7);
/// ```
#[must_use]
pub const fn syslog_severity(level: Level) -> u8 {
    match level {
        Level::Error => 3,
        Level::Warn => 4,
        Level::Info => 6,
        Level::Debug | Level::Trace => 7,
    }
}

/// What an RFC 5424 message's MSGID field holds.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{MsgId, Rfc5424};
///
/// let by_target = Rfc5424::new(); // MsgId::TARGET: `app::db` is sent as MSGID `app::db`
/// let fixed = Rfc5424::new().msgid(MsgId::fixed("audit"));
/// let none = Rfc5424::new().msgid(MsgId::NIL);
/// # let _ = (by_target, fixed, none);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MsgId(pub(crate) MsgIdKind);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MsgIdKind {
    Target,
    Nil,
    Fixed(String),
}

impl MsgId {
    /// The record's target (default): characters outside printable ASCII
    /// become `_`, cut to 32 bytes; an empty target is sent as `-`.
    pub const TARGET: MsgId = MsgId(MsgIdKind::Target);
    /// The NILVALUE `-`.
    pub const NIL: MsgId = MsgId(MsgIdKind::Nil);

    /// The same MSGID on every message: 1 to 32 printable ASCII characters,
    /// checked when the appender is built (a
    /// [`SyslogErrorKind::Field`](crate::SyslogErrorKind::Field) error).
    #[must_use]
    pub fn fixed(msgid: impl Into<String>) -> MsgId {
        MsgId(MsgIdKind::Fixed(msgid.into()))
    }
}

/// The SD-ID the key-values are sent under by default. `32473` is the
/// example private enterprise number of RFC 5612: fine on a private
/// network, but an organisation that sends its logs to others should use
/// its own number from IANA (`name@<your PEN>`), through
/// [`Rfc5424::sd_id`].
///
/// ```
/// use logbus_appenders::{Rfc5424, DEFAULT_SD_ID};
///
/// assert_eq!(Rfc5424::new(), Rfc5424::new().sd_id(DEFAULT_SD_ID));
/// ```
pub const DEFAULT_SD_ID: &str = "logbus@32473";

/// The RFC 5424 format (the default), with its own settings.
///
/// `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID [SD-ID k="v" ...] MSG`:
///
/// - TIMESTAMP: RFC 3339, UTC, microseconds (`2026-11-29T20:25:23.941824Z`);
/// - MSGID: see [`MsgId`], the target by default;
/// - the key-values as one SD-ELEMENT under the SD-ID (default
///   [`DEFAULT_SD_ID`]), or `-` when the record has none. A PARAM-NAME is
///   the key with characters an SD-NAME may not hold (`=`, space, `]`, `"`,
///   controls, non-ASCII) turned into `_`, cut to 32 bytes; a PARAM-VALUE is
///   the value (numbers and booleans as text) with `"`, `\` and `]`
///   escaped by a backslash;
/// - MSG: the message as UTF-8, after one space, omitted when empty. RFC 5424
///   wants a byte order mark before UTF-8 text; most receivers store it as
///   part of the message (rsyslog does), so it is off by default and
///   [`utf8_bom`](Rfc5424::utf8_bom) turns it on.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{MsgId, Rfc5424, Syslog};
///
/// let syslog = Syslog::udp("127.0.0.1:514")
///     .format(Rfc5424::new().sd_id("billing@32473").msgid(MsgId::fixed("pay")).utf8_bom())
///     .build()?;
/// # drop(syslog);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Rfc5424 {
    pub(crate) msgid: MsgId,
    pub(crate) sd_id: String,
    pub(crate) bom: bool,
}

impl Default for Rfc5424 {
    fn default() -> Rfc5424 {
        Rfc5424::new()
    }
}

impl Rfc5424 {
    /// The defaults: MSGID from the target, SD-ID [`DEFAULT_SD_ID`], no BOM.
    pub fn new() -> Rfc5424 {
        Rfc5424 {
            msgid: MsgId::TARGET,
            sd_id: DEFAULT_SD_ID.to_owned(),
            bom: false,
        }
    }

    /// Sets what MSGID holds.
    pub fn msgid(mut self, msgid: MsgId) -> Rfc5424 {
        self.msgid = msgid;
        self
    }

    /// Sets the SD-ID of the key-values' SD-ELEMENT: an SD-NAME (1 to 32
    /// printable ASCII characters but `=`, `]`, `"`), in the form
    /// `name@<private enterprise number>` unless it is an IANA-registered
    /// SD-ID. Checked when the appender is built.
    pub fn sd_id(mut self, sd_id: impl Into<String>) -> Rfc5424 {
        self.sd_id = sd_id.into();
        self
    }

    /// Starts MSG with the UTF-8 byte order mark, as RFC 5424 §6.4 asks for
    /// UTF-8 text.
    pub fn utf8_bom(mut self) -> Rfc5424 {
        self.bom = true;
        self
    }
}

/// The RFC 3164 ("BSD syslog") format, for receivers that know no better.
///
/// `<PRI>Mmm dd hh:mm:ss HOSTNAME TAG[PROCID]: MSG k=v ...`: the timestamp
/// in local time with no year, zone or fraction (as the RFC has it), the
/// app name as TAG (cut to 32 bytes, `[`, `]` and `:` turned into `_`),
/// the key-values after the message as ` k=v`. It has no MSGID, no
/// structured data and no BOM, so [`Rfc5424`]'s settings do not exist
/// here. RFC 3164 messages are at most 1,024 bytes: over UDP that is the
/// default datagram limit with this format.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Rfc3164, Syslog};
///
/// let syslog = Syslog::udp("127.0.0.1:514").format(Rfc3164::new()).build()?;
/// # drop(syslog);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct Rfc3164 {
    _private: (),
}

impl Rfc3164 {
    /// The RFC 3164 format (it has no settings).
    pub const fn new() -> Rfc3164 {
        Rfc3164 { _private: () }
    }
}

/// The format of a [`Syslog`](crate::Syslog) appender: RFC 5424 or 3164.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Rfc3164, Rfc5424, SyslogFormat};
///
/// assert_eq!(SyslogFormat::default(), SyslogFormat::from(Rfc5424::new()));
/// let old: SyslogFormat = Rfc3164::new().into();
/// # drop(old);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SyslogFormat {
    /// RFC 5424 (the default).
    Rfc5424(Rfc5424),
    /// RFC 3164.
    Rfc3164(Rfc3164),
}

impl Default for SyslogFormat {
    fn default() -> SyslogFormat {
        SyslogFormat::Rfc5424(Rfc5424::new())
    }
}

impl From<Rfc5424> for SyslogFormat {
    fn from(format: Rfc5424) -> SyslogFormat {
        SyslogFormat::Rfc5424(format)
    }
}

impl From<Rfc3164> for SyslogFormat {
    fn from(format: Rfc3164) -> SyslogFormat {
        SyslogFormat::Rfc3164(format)
    }
}

/// The header fields every message of one appender shares, checked or
/// sanitised already.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    pub(crate) facility: Facility,
    pub(crate) hostname: String,
    pub(crate) app_name: String,
    pub(crate) procid: String,
}

/// Whether text must be kept on one line: with newline framing a line feed
/// in a message would end the frame, so control characters are escaped;
/// with octet counting or datagrams they are sent as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineSafety {
    AsIs,
    EscapeControls,
}

/// Renders records as syslog messages: the [`Format`] of the `Syslog`
/// appender.
#[derive(Debug)]
pub(crate) struct SyslogFormatter {
    header: Header,
    format: SyslogFormat,
    ts: Timestamp,
    /// Bytes a message may take (a datagram's limit), if any.
    limit: Option<usize>,
    safety: LineSafety,
    /// Messages cut to `limit`. Relaxed: a statistic, publishes no other
    /// memory.
    truncated: Arc<AtomicU64>,
}

impl SyslogFormatter {
    pub(crate) fn new(
        header: Header,
        format: SyslogFormat,
        limit: Option<usize>,
        safety: LineSafety,
        truncated: Arc<AtomicU64>,
    ) -> SyslogFormatter {
        let (zone, pattern) = match format {
            SyslogFormat::Rfc5424(_) => (Zone::Utc, DEFAULT_UTC_FORMAT),
            SyslogFormat::Rfc3164(_) => (Zone::Local, rfc3164::TIMESTAMP_FORMAT),
        };
        let ts = match Timestamp::new(zone, pattern) {
            Ok(ts) => ts,
            // Constant formats, checked by the unit tests below.
            Err(()) => unreachable!("the syslog timestamp formats parse"),
        };
        SyslogFormatter {
            header,
            format,
            ts,
            limit,
            safety,
            truncated,
        }
    }
}

impl Format for SyslogFormatter {
    /// Colour has no meaning in syslog: `style` is ignored.
    fn render(
        &mut self,
        record: &Record,
        _style: Style,
        out: &mut Vec<u8>,
    ) -> Result<(), AppendError> {
        let start = out.len();
        let msg_start = match &self.format {
            SyslogFormat::Rfc5424(format) => {
                rfc5424::render(format, &self.header, &mut self.ts, self.safety, record, out)
            }
            SyslogFormat::Rfc3164(_) => {
                rfc3164::render(&self.header, &mut self.ts, self.safety, record, out)
            }
        };
        if let Some(limit) = self.limit {
            if out.len() - start > limit {
                cut(out, start, msg_start, limit);
                // Relaxed: a statistic.
                self.truncated.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

/// Cuts the message `out[start..]` to at most `limit` bytes at a UTF-8
/// boundary. The header and structured data end at `msg_start.0`; when they
/// alone leave no room, the structured data `msg_start.1` (its range) is
/// replaced by `-` first, so what is kept is still well-formed.
fn cut(out: &mut Vec<u8>, start: usize, msg_start: MsgStart, limit: usize) {
    if msg_start.at - start >= limit {
        if let Some(sd) = msg_start.sd {
            out.splice(sd, *b"-");
        }
    }
    let keep = fields::floor_char_boundary(&out[start..], limit);
    out.truncate(start + keep);
}

/// Where the parts of a rendered message are, for [`cut`].
#[derive(Debug, Clone)]
pub(crate) struct MsgStart {
    /// Offset of the space before MSG (or the end when there is none).
    pub(crate) at: usize,
    /// The range of the structured data, when it is not `-`.
    pub(crate) sd: Option<std::ops::Range<usize>>,
}

/// Writes the decimal `n` (PRI and such) without allocating (`itoa`).
pub(crate) fn push_decimal(out: &mut Vec<u8>, n: u32) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Writes `<PRI>` for `record`.
pub(crate) fn push_pri(out: &mut Vec<u8>, facility: Facility, level: Level) {
    out.push(b'<');
    push_decimal(
        out,
        u32::from(facility.code()) * 8 + u32::from(syslog_severity(level)),
    );
    out.push(b'>');
}

/// Appends user text (a message, a value), escaping control characters when
/// `safety` asks for it.
pub(crate) fn push_text(out: &mut Vec<u8>, text: &str, safety: LineSafety) {
    match safety {
        LineSafety::AsIs => out.extend_from_slice(text.as_bytes()),
        LineSafety::EscapeControls => {
            crate::escape::escape_into(text, out, crate::escape::MultilineMode::Escape);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::record::Topic;
    use std::time::{Duration, SystemTime};

    pub(crate) fn header() -> Header {
        Header {
            facility: Facility::LOCAL0,
            hostname: "web-1".into(),
            app_name: "billing".into(),
            procid: "4242".into(),
        }
    }

    pub(crate) fn render(
        format: impl Into<SyslogFormat>,
        limit: Option<usize>,
        safety: LineSafety,
        record: &Record,
    ) -> (String, u64) {
        let truncated = Arc::new(AtomicU64::new(0));
        let mut f = SyslogFormatter::new(
            header(),
            format.into(),
            limit,
            safety,
            Arc::clone(&truncated),
        );
        let mut out = b"before|".to_vec();
        f.render(record, Style::default(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        (
            text.strip_prefix("before|").unwrap().to_owned(),
            truncated.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn at(level: Level, target: &str, message: &str) -> Record {
        Record::builder(Topic::new(level, target))
            .time(SystemTime::UNIX_EPOCH + Duration::new(1_795_983_923, 941_824_999))
            .message(message.to_owned())
            .build()
    }

    #[test]
    fn pri_is_facility_times_eight_plus_severity() {
        let mut out = Vec::new();
        for (facility, level, pri) in [
            (Facility::KERN, Level::Error, "<3>"),
            (Facility::USER, Level::Warn, "<12>"),
            (Facility::USER, Level::Info, "<14>"),
            (Facility::LOCAL0, Level::Debug, "<135>"),
            (Facility::LOCAL7, Level::Trace, "<191>"),
        ] {
            out.clear();
            push_pri(&mut out, facility, level);
            assert_eq!(out, pri.as_bytes());
        }
    }

    #[test]
    fn decimals() {
        let mut out = Vec::new();
        for n in [0, 7, 10, 191, u32::MAX] {
            out.clear();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }
}
