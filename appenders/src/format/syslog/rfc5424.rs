//! RFC 5424: `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID SD [MSG]`.

use std::io::Write as _;

use crate::layout::Timestamp;
use crate::record::{Record, Value};

use super::fields::{
    is_print_us_ascii, is_sd_name_byte, param_value_into, sanitise_into, MSGID_MAX, SD_NAME_MAX,
};
use super::{push_pri, push_text, Header, LineSafety, MsgIdKind, MsgStart, Rfc5424};

/// The UTF-8 byte order mark, U+FEFF.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Appends `record` as an RFC 5424 message; returns where MSG starts.
pub(super) fn render(
    format: &Rfc5424,
    header: &Header,
    ts: &mut Timestamp,
    safety: LineSafety,
    record: &Record,
    out: &mut Vec<u8>,
) -> MsgStart {
    push_pri(out, header.facility, record.level());
    out.extend_from_slice(b"1 ");
    ts.render_record(record, out);
    out.push(b' ');
    out.extend_from_slice(header.hostname.as_bytes());
    out.push(b' ');
    out.extend_from_slice(header.app_name.as_bytes());
    out.push(b' ');
    out.extend_from_slice(header.procid.as_bytes());
    out.push(b' ');
    match &format.msgid.0 {
        MsgIdKind::Target => {
            sanitise_into(record.target(), MSGID_MAX, is_print_us_ascii, b"-", out);
        }
        MsgIdKind::Nil => out.push(b'-'),
        MsgIdKind::Fixed(msgid) => out.extend_from_slice(msgid.as_bytes()),
    }
    out.push(b' ');
    let sd = structured_data(&format.sd_id, record, safety, out);
    let at = out.len();
    let message = record.message();
    if !message.is_empty() || format.bom {
        out.push(b' ');
        if format.bom {
            out.extend_from_slice(BOM);
        }
        push_text(out, message, safety);
    }
    MsgStart { at, sd }
}

/// Appends the key-values as one SD-ELEMENT, or `-`; returns its range when
/// there is one.
fn structured_data(
    sd_id: &str,
    record: &Record,
    safety: LineSafety,
    out: &mut Vec<u8>,
) -> Option<std::ops::Range<usize>> {
    let kv = record.key_values();
    if kv.is_empty() {
        out.push(b'-');
        return None;
    }
    let start = out.len();
    out.push(b'[');
    out.extend_from_slice(sd_id.as_bytes());
    for (key, value) in kv {
        out.push(b' ');
        sanitise_into(key, SD_NAME_MAX, is_sd_name_byte, b"_", out);
        out.extend_from_slice(b"=\"");
        match value {
            Value::Str(s) => push_param_value(out, s, safety),
            // JSON text has `"` and may have `\` or `]`: escaped as text.
            Value::Json(json) => push_param_value(out, json.as_str(), safety),
            // Numbers, booleans and null print no `"`, `\` or `]`.
            // Writing into a `Vec<u8>` cannot fail.
            other => {
                let _ = write!(out, "{other}");
            }
        }
        out.push(b'"');
    }
    out.push(b']');
    Some(start..out.len())
}

fn push_param_value(out: &mut Vec<u8>, value: &str, safety: LineSafety) {
    match safety {
        LineSafety::AsIs => param_value_into(value, out),
        LineSafety::EscapeControls => {
            // The three characters first, then controls in the pieces
            // between them.
            let mut rest = value;
            while let Some(at) = rest.find(['"', '\\', ']']) {
                push_text(out, &rest[..at], safety);
                out.push(b'\\');
                out.push(rest.as_bytes()[at]);
                rest = &rest[at + 1..];
            }
            push_text(out, rest, safety);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{at, render};
    use super::super::{LineSafety, MsgId, Rfc5424};
    use crate::record::{Level, Value};

    const TS: &str = "2026-11-29T20:25:23.941824Z";

    #[track_caller]
    fn check(format: Rfc5424, record: &crate::Record, expected: &str) {
        let (text, truncated) = render(format, None, LineSafety::AsIs, record);
        assert_eq!(text, expected.replace("TS", TS));
        assert_eq!(truncated, 0);
    }

    #[test]
    fn a_plain_message() {
        check(
            Rfc5424::new(),
            &at(Level::Info, "app::http", "served"),
            "<134>1 TS web-1 billing 4242 app::http - served",
        );
    }

    #[test]
    fn severities_follow_the_level() {
        for (level, pri) in [
            (Level::Error, 131),
            (Level::Warn, 132),
            (Level::Info, 134),
            (Level::Debug, 135),
            (Level::Trace, 135),
        ] {
            check(
                Rfc5424::new().msgid(MsgId::NIL),
                &at(level, "t", "m"),
                &format!("<{pri}>1 TS web-1 billing 4242 - - m"),
            );
        }
    }

    #[test]
    fn key_values_are_one_sd_element_escaped_as_the_rfc_says() {
        let record = crate::Record::builder(crate::Topic::new(Level::Warn, "db"))
            .time(at(Level::Info, "", "").time())
            .message("slow")
            .kv("ms", 1200u64)
            .kv("sql", r#"select "a\b" [x]"#)
            .kv("bad key=", true)
            .kv("none", Value::Null)
            .kv("ratio", -0.5f64)
            .build();
        check(
            Rfc5424::new().sd_id("app@32473"),
            &record,
            concat!(
                r#"<132>1 TS web-1 billing 4242 db [app@32473 ms="1200" "#,
                r#"sql="select \"a\\b\" [x\]" bad_key_="true" none="null" ratio="-0.5"] slow"#
            ),
        );
    }

    #[test]
    fn msgid_from_the_target_is_sanitised_and_cut() {
        let long = "a::".repeat(20);
        check(
            Rfc5424::new(),
            &at(Level::Info, &long, ""),
            &format!("<134>1 TS web-1 billing 4242 {} -", &long[..32]),
        );
        check(
            Rfc5424::new(),
            &at(Level::Info, "my app é", "m"),
            "<134>1 TS web-1 billing 4242 my_app__ - m",
        );
        check(
            Rfc5424::new(),
            &at(Level::Info, "", "m"),
            "<134>1 TS web-1 billing 4242 - - m",
        );
        check(
            Rfc5424::new().msgid(MsgId::fixed("audit")),
            &at(Level::Info, "x", "m"),
            "<134>1 TS web-1 billing 4242 audit - m",
        );
    }

    #[test]
    fn message_is_utf8_with_an_optional_bom_and_controls_as_they_are() {
        check(
            Rfc5424::new().utf8_bom(),
            &at(Level::Info, "t", "héllo\nworld"),
            "<134>1 TS web-1 billing 4242 t - \u{feff}héllo\nworld",
        );
        // An empty message and no BOM: no trailing space.
        check(
            Rfc5424::new(),
            &at(Level::Info, "t", ""),
            "<134>1 TS web-1 billing 4242 t -",
        );
    }

    #[test]
    fn newline_framing_escapes_controls_in_the_message_and_values() {
        let record = crate::Record::builder(crate::Topic::new(Level::Info, "t"))
            .time(at(Level::Info, "", "").time())
            .message("ok\n<13>1 forged")
            .kv("v", "a\"\nb")
            .build();
        let (text, _) = render(Rfc5424::new(), None, LineSafety::EscapeControls, &record);
        assert_eq!(
            text,
            format!(
                r#"<134>1 {TS} web-1 billing 4242 t [logbus@32473 v="a\"\nb"] ok\n<13>1 forged"#
            )
        );
        assert!(!text.contains('\n'));
    }

    #[test]
    fn a_message_over_the_limit_is_cut_at_a_char_boundary_and_counted() {
        let header = format!("<134>1 {TS} web-1 billing 4242 t - ");
        let record = at(Level::Info, "t", &"é".repeat(100));
        let limit = header.len() + 11;
        let (text, truncated) = render(Rfc5424::new(), Some(limit), LineSafety::AsIs, &record);
        assert_eq!(truncated, 1);
        assert_eq!(text, format!("{header}{}", "é".repeat(5)));
        assert_eq!(text.len(), limit - 1);
        // Exactly at the limit: untouched.
        let record = at(Level::Info, "t", "abc");
        let (text, truncated) = render(
            Rfc5424::new(),
            Some(header.len() + 3),
            LineSafety::AsIs,
            &record,
        );
        assert_eq!((text, truncated), (format!("{header}abc"), 0));
    }

    #[test]
    fn structured_data_that_leaves_no_room_is_dropped_first() {
        let record = crate::Record::builder(crate::Topic::new(Level::Info, "t"))
            .time(at(Level::Info, "", "").time())
            .message("the message")
            .kv("big", "x".repeat(600))
            .build();
        let header = format!("<134>1 {TS} web-1 billing 4242 t ");
        let (text, truncated) = render(
            Rfc5424::new(),
            Some(header.len() + 8),
            LineSafety::AsIs,
            &record,
        );
        assert_eq!(truncated, 1);
        assert_eq!(text, format!("{header}- the me"));
    }
}
