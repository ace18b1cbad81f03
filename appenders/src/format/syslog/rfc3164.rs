//! RFC 3164: `<PRI>Mmm dd hh:mm:ss HOSTNAME TAG[PID]: MSG`, for receivers
//! that predate RFC 5424.

use std::io::Write as _;

use crate::layout::Timestamp;
use crate::record::{Record, Value};

use super::fields::{is_sd_name_byte, sanitise_into, SD_NAME_MAX, TAG_MAX};
use super::{push_pri, push_text, Header, LineSafety, MsgStart};

/// `Mmm dd hh:mm:ss`, the day padded with a space (`Jan  1`), local time.
pub(super) const TIMESTAMP_FORMAT: &str = "%b %e %H:%M:%S";

/// A byte a TAG keeps: printable ASCII but `[`, `]` and `:`, which end it.
fn is_tag_byte(b: u8) -> bool {
    super::fields::is_print_us_ascii(b) && !matches!(b, b'[' | b']' | b':')
}

/// Appends `record` as an RFC 3164 message; returns where MSG starts.
pub(super) fn render(
    header: &Header,
    ts: &mut Timestamp,
    safety: LineSafety,
    record: &Record,
    out: &mut Vec<u8>,
) -> MsgStart {
    push_pri(out, header.facility, record.level());
    ts.render_record(record, out);
    out.push(b' ');
    out.extend_from_slice(header.hostname.as_bytes());
    out.push(b' ');
    sanitise_into(&header.app_name, TAG_MAX, is_tag_byte, b"-", out);
    out.push(b'[');
    out.extend_from_slice(header.procid.as_bytes());
    out.extend_from_slice(b"]:");
    let at = out.len();
    out.push(b' ');
    push_text(out, record.message(), safety);
    for (key, value) in record.key_values() {
        out.push(b' ');
        sanitise_into(key, SD_NAME_MAX, is_sd_name_byte, b"_", out);
        out.push(b'=');
        match value {
            Value::Str(s) => push_text(out, s, safety),
            Value::Json(json) => push_text(out, json.as_str(), safety),
            // Writing into a `Vec<u8>` cannot fail.
            other => {
                let _ = write!(out, "{other}");
            }
        }
    }
    MsgStart { at, sd: None }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{at, render};
    use super::super::{LineSafety, Rfc3164};
    use crate::record::Level;

    #[test]
    fn a_bsd_message() {
        let record = crate::Record::builder(crate::Topic::new(Level::Warn, "db"))
            .time(at(Level::Info, "", "").time())
            .message("slow\nquery")
            .kv("ms", 1200u64)
            .build();
        let (text, _) = render(Rfc3164::new(), None, LineSafety::EscapeControls, &record);
        // The timestamp is local time: check its shape, then the rest.
        let (pri, rest) = text.split_at(5);
        assert_eq!(pri, "<132>");
        let (stamp, rest) = rest.split_at(15);
        assert!(
            chrono::NaiveTime::parse_from_str(&stamp[7..], "%H:%M:%S").is_ok(),
            "{stamp}"
        );
        assert_eq!(&stamp[..3], "Nov");
        assert_eq!(rest, r" web-1 billing[4242]: slow\nquery ms=1200");
    }
}
