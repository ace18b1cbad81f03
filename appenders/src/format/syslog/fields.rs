//! The character and length rules of syslog fields, in one place: header
//! fields (PRINTUSASCII, bounded lengths), SD-NAMEs, PARAM-VALUE escaping,
//! and cutting text at a UTF-8 boundary.
//!
//! Configured values are *checked* ([`check`]): a bad hostname is a
//! mistake the user should hear about when the appender is built. Values
//! taken from the environment or from records are *sanitised*
//! ([`sanitise_into`]): a target with a space must still produce a valid
//! MSGID, never an error on the worker.

/// The RFC 5424 maximum lengths in bytes (§6, the ABNF).
pub(crate) const HOSTNAME_MAX: usize = 255;
pub(crate) const APP_NAME_MAX: usize = 48;
pub(crate) const PROCID_MAX: usize = 128;
pub(crate) const MSGID_MAX: usize = 32;
/// SD-NAME, for both SD-IDs and PARAM-NAMEs.
pub(crate) const SD_NAME_MAX: usize = 32;
/// RFC 3164 §4.1.3: the TAG "MUST NOT exceed 32 characters".
pub(crate) const TAG_MAX: usize = 32;

/// `PRINTUSASCII = %d33-126`.
#[inline]
pub(crate) fn is_print_us_ascii(b: u8) -> bool {
    (33..=126).contains(&b)
}

/// `SD-NAME = 1*32PRINTUSASCII except '=', SP, ']', %d34 (")`.
#[inline]
pub(crate) fn is_sd_name_byte(b: u8) -> bool {
    is_print_us_ascii(b) && !matches!(b, b'=' | b']' | b'"')
}

/// What is wrong with a configured field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldProblem {
    /// It is empty.
    Empty,
    /// It is longer than the RFC allows (the maximum).
    TooLong(usize),
    /// The byte at this offset is not allowed.
    BadByte(usize),
}

/// Checks a configured field: 1 to `max` bytes, each allowed by `ok`.
pub(crate) fn check(value: &str, max: usize, ok: fn(u8) -> bool) -> Result<(), FieldProblem> {
    if value.is_empty() {
        return Err(FieldProblem::Empty);
    }
    if let Some(at) = value.bytes().position(|b| !ok(b)) {
        return Err(FieldProblem::BadByte(at));
    }
    if value.len() > max {
        return Err(FieldProblem::TooLong(max));
    }
    Ok(())
}

/// Appends `value` to `out` with every character `ok` refuses replaced by
/// `_` (one per character, not per byte), cut to `max` bytes; an empty
/// result becomes `empty`.
pub(crate) fn sanitise_into(
    value: &str,
    max: usize,
    ok: fn(u8) -> bool,
    empty: &[u8],
    out: &mut Vec<u8>,
) {
    let start = out.len();
    if value.len() <= max && value.bytes().all(ok) {
        // The common case: a target or a key that is already valid.
        out.extend_from_slice(value.as_bytes());
    } else {
        for c in value.chars() {
            if out.len() - start == max {
                break;
            }
            // Every allowed byte is ASCII, so a char is allowed whole or not.
            out.push(if c.is_ascii() && ok(c as u8) {
                c as u8
            } else {
                b'_'
            });
        }
    }
    if out.len() == start {
        out.extend_from_slice(empty);
    }
}

/// A field sanitised into an owned string (for defaults taken from the
/// environment, once).
pub(crate) fn sanitised(value: &str, max: usize, empty: &str) -> String {
    let mut out = Vec::with_capacity(value.len().min(max));
    sanitise_into(value, max, is_print_us_ascii, empty.as_bytes(), &mut out);
    // Only ASCII was pushed.
    String::from_utf8(out).unwrap_or_else(|_| empty.to_owned())
}

/// Appends a PARAM-VALUE: `"`, `\` and `]` are escaped with a backslash
/// (RFC 5424 §6.3.3); nothing else is touched, UTF-8 is allowed.
pub(crate) fn param_value_into(value: &str, out: &mut Vec<u8>) {
    let bytes = value.as_bytes();
    if !bytes.iter().any(|&b| matches!(b, b'"' | b'\\' | b']')) {
        out.extend_from_slice(bytes);
        return;
    }
    for &b in bytes {
        if matches!(b, b'"' | b'\\' | b']') {
            out.push(b'\\');
        }
        out.push(b);
    }
}

/// The largest `n <= max` that is a char boundary of `text`.
pub(crate) fn floor_char_boundary(text: &[u8], max: usize) -> usize {
    if max >= text.len() {
        return text.len();
    }
    let mut n = max;
    // A UTF-8 continuation byte is 0b10xx_xxxx; at most 3 in a row.
    while n > 0 && (text[n] & 0xC0) == 0x80 {
        n -= 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn sanitise(value: &str, max: usize) -> String {
        let mut out = Vec::new();
        sanitise_into(value, max, is_sd_name_byte, b"_", &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn sd_names_are_sanitised() {
        for (input, expected) in [
            ("user", "user"),
            ("dead_letter.error", "dead_letter.error"),
            ("a b", "a_b"),
            ("k=v", "k_v"),
            ("q\"]", "q__"),
            ("é", "_"),
            ("", "_"),
            ("\n", "_"),
        ] {
            assert_eq!(sanitise(input, SD_NAME_MAX), expected, "{input:?}");
        }
        assert_eq!(sanitise(&"x".repeat(40), SD_NAME_MAX).len(), 32);
        assert_eq!(sanitise(&"é".repeat(40), SD_NAME_MAX), "_".repeat(32));
    }

    #[test]
    fn param_values_escape_exactly_three_characters() {
        let mut out = Vec::new();
        param_value_into(r#"a"b\c]d[e=f é"#, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), r#"a\"b\\c\]d[e=f é"#);
    }

    #[test]
    fn configured_fields_are_checked() {
        assert_eq!(check("web-1", 255, is_print_us_ascii), Ok(()));
        assert_eq!(check("", 255, is_print_us_ascii), Err(FieldProblem::Empty));
        assert_eq!(
            check("web 1", 255, is_print_us_ascii),
            Err(FieldProblem::BadByte(3))
        );
        assert_eq!(
            check("héllo", 255, is_print_us_ascii),
            Err(FieldProblem::BadByte(1))
        );
        assert_eq!(
            check(&"a".repeat(49), APP_NAME_MAX, is_print_us_ascii),
            Err(FieldProblem::TooLong(48))
        );
        assert_eq!(
            check("a=b", SD_NAME_MAX, is_sd_name_byte),
            Err(FieldProblem::BadByte(1))
        );
    }

    #[test]
    fn cuts_fall_on_char_boundaries() {
        let text = "aé€😀".as_bytes(); // 1 + 2 + 3 + 4 bytes
        let cuts: Vec<usize> = (0..=11).map(|m| floor_char_boundary(text, m)).collect();
        assert_eq!(cuts, [0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 10]);
    }
}
