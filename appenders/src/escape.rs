//! Visible escaping of control characters, so one record is one line of text.
//!
//! A record's content is data, never instructions (DESIGN.md, "Hostile
//! input"): a message must not be able to forge a second log line with a
//! newline, nor drive the terminal with an escape sequence. Every text
//! output of this crate (layouts, and so the console and file appenders)
//! passes user-supplied strings through [`escape_into`].
//!
//! What is escaped, and how:
//!
//! | Character                          | Written as          |
//! |------------------------------------|---------------------|
//! | LF, CR, TAB                        | `\n`, `\r`, `\t`    |
//! | other C0 (U+0000–U+001F), DEL      | `\x00` … `\x1f`, `\x7f` |
//! | C1 (U+0080–U+009F)                 | `\u{80}` … `\u{9f}` |
//! | LINE / PARAGRAPH SEPARATOR         | `\u{2028}`, `\u{2029}` |
//!
//! TAB is escaped too: it cannot forge a line, but it makes columns lie and
//! the rule "every C0 character" is easier to audit than a list of
//! exceptions. The backslash itself is *not* doubled, so Windows paths stay
//! readable; the price is that a message containing the two characters
//! `\` `n` looks like an escaped newline, which forges nothing.

/// How a text layout treats line feeds in messages and key-values.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Layout, Level, MultilineMode, Record, Topic};
///
/// let record = Record::builder(Topic::new(Level::Info, "app")).message("a\nb").build();
/// let mut buf = Vec::new();
///
/// let mut layout = Layout::parse("{msg}")?;
/// layout.render(&record, &mut buf);
/// assert_eq!(buf, b"a\\nb");
///
/// buf.clear();
/// let mut layout = Layout::parse("{msg}")?.multiline(MultilineMode::Indent);
/// layout.render(&record, &mut buf);
/// assert_eq!(buf, b"a\n    b");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum MultilineMode {
    /// Line feeds are escaped as `\n`: one record is always one line (default).
    #[default]
    Escape,
    /// A line feed is kept and followed by four spaces, so continuation lines
    /// are indented and cannot pass for a new record. Every other control
    /// character is still escaped.
    Indent,
}

/// The indentation written after a kept line feed in [`MultilineMode::Indent`].
pub(crate) const INDENT: &[u8] = b"    ";

/// Whether the byte may start a sequence that needs escaping: a C0 byte,
/// DEL, `0xC2` (first byte of U+0080–U+00BF, which holds C1) or `0xE2`
/// (first byte of U+2000–U+2FFF, which holds U+2028 and U+2029).
#[inline]
fn is_suspect(b: u8) -> bool {
    b < 0x20 || b == 0x7f || b == 0xc2 || b == 0xe2
}

/// Whether `bytes` holds any byte that is not printable ASCII (below 0x20,
/// or 0x7f and above): the test that sends text to the slow path.
///
/// Eight bytes at a time: for a word `x`, a byte below 0x20 underflows
/// `x - 0x20 * ONES` into its top bit while its own top bit is clear, and a
/// byte of 0x7f or more has its top bit set in `x` or in `x + ONES`. A borrow
/// or carry across bytes comes only from a byte that already answered yes,
/// so the word test never misses one; it may say yes for a neighbour, which
/// only costs the exact slow path.
///
/// The bytes after the last whole word are looked at as one more word: the
/// last eight bytes again (overlapping) when there are eight, or the tail
/// padded with spaces.
#[inline]
pub(crate) fn has_unusual(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const TOPS: u64 = 0x8080_8080_8080_8080;
    let test = |x: u64| (x.wrapping_sub(0x20 * ONES) & !x) | x | x.wrapping_add(ONES);
    // Eight bytes as a word, with a constant length (a variable-length
    // copy is a call to `memcpy`).
    let eight = |eight: &[u8]| u64::from_le_bytes(eight.try_into().unwrap_or([b' '; 8]));
    let mut words = bytes.chunks_exact(8);
    let mut acc = 0u64;
    for chunk in &mut words {
        acc |= test(eight(chunk));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let tail = match bytes.len().checked_sub(8) {
            Some(start) => eight(&bytes[start..]),
            // Fewer than eight bytes: padded with spaces, byte by byte.
            None => rest
                .iter()
                .rev()
                .fold(u64::from_le_bytes([b' '; 8]), |word, &byte| {
                    word << 8 | u64::from(byte)
                }),
        };
        acc |= test(tail);
    }
    acc & TOPS != 0
}

/// Appends `text` to `out`, escaping control characters as the module docs
/// describe.
///
/// Text without anything to escape is copied in one `extend_from_slice`.
#[inline]
pub(crate) fn escape_into(text: &str, out: &mut Vec<u8>, mode: MultilineMode) {
    let bytes = text.as_bytes();
    // Fast path: printable ASCII needs no escaping; most messages take it.
    if !has_unusual(bytes) {
        out.extend_from_slice(bytes);
        return;
    }
    escape_slowly(bytes, out, mode);
}

/// [`escape_into`] for text with a byte that is not printable ASCII: out
/// of line, so that the fast path saves no registers for it.
#[inline(never)]
fn escape_slowly(bytes: &[u8], out: &mut Vec<u8>, mode: MultilineMode) {
    let mut run_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !is_suspect(b) {
            i += 1;
            continue;
        }
        // Length of the character starting at `i` and whether to escape it.
        let (len, escape): (usize, Option<Escaped>) = match b {
            0xc2 => match bytes.get(i + 1) {
                Some(&next @ 0x80..=0x9f) => (2, Some(Escaped::Unicode(u32::from(next)))),
                _ => (1, None),
            },
            0xe2 => match (bytes.get(i + 1), bytes.get(i + 2)) {
                (Some(0x80), Some(&last @ (0xa8 | 0xa9))) => {
                    (3, Some(Escaped::Unicode(0x2000 | u32::from(last - 0x80))))
                }
                _ => (1, None),
            },
            b'\n' if mode == MultilineMode::Indent => (1, Some(Escaped::IndentedNewline)),
            _ => (1, Some(Escaped::Ascii(b))),
        };
        if let Some(escape) = escape {
            out.extend_from_slice(&bytes[run_start..i]);
            escape.write(out);
            run_start = i + len;
        }
        i += len;
    }
    out.extend_from_slice(&bytes[run_start..]);
}

enum Escaped {
    Ascii(u8),
    Unicode(u32),
    IndentedNewline,
}

impl Escaped {
    fn write(&self, out: &mut Vec<u8>) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        match *self {
            Escaped::Ascii(b'\n') => out.extend_from_slice(b"\\n"),
            Escaped::Ascii(b'\r') => out.extend_from_slice(b"\\r"),
            Escaped::Ascii(b'\t') => out.extend_from_slice(b"\\t"),
            Escaped::Ascii(b) => out.extend_from_slice(&[
                b'\\',
                b'x',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
            Escaped::Unicode(c) => {
                out.extend_from_slice(b"\\u{");
                let digits = if c > 0xff { 4 } else { 2 };
                for shift in (0..digits).rev() {
                    out.push(HEX[((c >> (shift * 4)) & 0xf) as usize]);
                }
                out.push(b'}');
            }
            Escaped::IndentedNewline => {
                out.push(b'\n');
                out.extend_from_slice(INDENT);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(input: &str, mode: MultilineMode, expected: &str) {
        let mut out = Vec::new();
        escape_into(input, &mut out, mode);
        assert_eq!(String::from_utf8(out).unwrap(), expected, "input {input:?}");
    }

    #[test]
    fn table() {
        use MultilineMode::{Escape, Indent};
        check("", Escape, "");
        check("plain text", Escape, "plain text");
        check("a\nb", Escape, "a\\nb");
        check("a\r\nb", Escape, "a\\r\\nb");
        check("tab\there", Escape, "tab\\there");
        check("\x1b[31mred", Escape, "\\x1b[31mred");
        check("\0", Escape, "\\x00");
        check("\x7f", Escape, "\\x7f");
        check("\u{85}next", Escape, "\\u{85}next");
        check("\u{9f}", Escape, "\\u{9f}");
        check(
            "\u{a0}é\u{2028}x\u{2029}",
            Escape,
            "\u{a0}é\\u{2028}x\\u{2029}",
        );
        check("€ ‘quotes’ \u{2027}", Escape, "€ ‘quotes’ \u{2027}");
        check("C:\\path", Escape, "C:\\path");
        check("a\nb\n", Indent, "a\n    b\n    ");
        check("a\r\n\x1bb", Indent, "a\\r\n    \\x1bb");
    }

    #[test]
    fn the_word_scan_finds_every_unusual_byte_at_every_position() {
        for len in 0..=24 {
            for at in 0..len {
                for b in (0u8..0x20).chain(0x7f..=0xff) {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    assert!(has_unusual(&bytes), "byte {b:#x} at {at} of {len}");
                }
            }
            for b in 0x20u8..0x7f {
                assert!(!has_unusual(&vec![b; len]), "byte {b:#x} x {len}");
            }
        }
    }

    #[test]
    fn every_control_character_is_escaped_and_nothing_else_is() {
        for c in (0u32..=0x2100).filter_map(char::from_u32) {
            let mut out = Vec::new();
            escape_into(&c.to_string(), &mut out, MultilineMode::Escape);
            let text = String::from_utf8(out).unwrap();
            let control = c.is_control() || c == '\u{2028}' || c == '\u{2029}';
            if control {
                assert!(text.starts_with('\\'), "{c:?} -> {text:?}");
                assert!(text.chars().all(|c| c.is_ascii_graphic()), "{text:?}");
            } else {
                assert_eq!(text, c.to_string());
            }
        }
    }
}
