//! `Framing`: how a destination delimits records in its byte stream.
//!
//! A format renders a record's bytes without any delimiter; the framing,
//! chosen by the destination, adds it. Newline framing is what files and
//! terminals want, and what a text format's escaping makes safe (one record
//! is one line). Octet counting (RFC 6587 §3.4.1) is what syslog over TCP
//! wants, because it needs no escaping at all: the length says where the
//! record ends, so a message cannot forge a second one.

use std::io::Write as _;

/// How records are delimited on a destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Each record is followed by `\n` (files, terminals, NDJSON).
    Newline,
    /// Each record is preceded by its length in bytes, in decimal without
    /// leading zeros, and a space: `12 <34>1 - - ...` (RFC 6587 §3.4.1,
    /// syslog over TCP and TLS).
    #[cfg_attr(not(feature = "syslog"), allow(dead_code))]
    OctetCount,
    /// Each record is sent by itself, with one `write` (one datagram), and
    /// no delimiter (syslog over UDP and Unix datagram sockets).
    #[cfg_attr(not(feature = "syslog"), allow(dead_code))]
    Datagram,
}

impl Framing {
    /// Frames the record whose bytes are `buf[start..]`. Inlined: the
    /// render loop frames every record, most with one byte.
    #[inline]
    pub(crate) fn frame(self, buf: &mut Vec<u8>, start: usize) {
        match self {
            Framing::Newline => buf.push(b'\n'),
            Framing::OctetCount => {
                // u64::MAX has 20 digits; with the space, 21 bytes.
                let mut prefix = [0u8; 21];
                let len = buf.len() - start;
                let mut cursor = &mut prefix[..];
                // Writing into a large enough array cannot fail.
                let _ = write!(cursor, "{len} ");
                let used = 21 - cursor.len();
                // One move of the record's bytes, a few hundred for syslog;
                // the length is known only once it is rendered.
                buf.splice(start..start, prefix[..used].iter().copied());
            }
            Framing::Datagram => {}
        }
    }

    /// What terminates a frame a failed write left partial on the
    /// destination, before the next record is written there.
    ///
    /// Only a newline can repair a stream in band. A partial octet-counted
    /// frame leaves the receiver counting bytes that never come: the socket
    /// destination must reconnect instead (a new connection owes nothing).
    /// A datagram is never partial.
    pub(crate) fn terminator(self) -> &'static [u8] {
        match self {
            Framing::Newline => b"\n",
            Framing::OctetCount | Framing::Datagram => b"",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(framing: Framing, record: &str, expected: &str) {
        let mut buf = b"before|".to_vec();
        let start = buf.len();
        buf.extend_from_slice(record.as_bytes());
        framing.frame(&mut buf, start);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            format!("before|{expected}")
        );
    }

    #[test]
    fn newline_framing() {
        check(Framing::Newline, "a record", "a record\n");
        check(Framing::Newline, "", "\n");
    }

    #[test]
    fn octet_counting_per_rfc_6587() {
        check(
            Framing::OctetCount,
            "<34>1 - - - - - - hi",
            "20 <34>1 - - - - - - hi",
        );
        check(Framing::OctetCount, "x", "1 x");
        // The count is of bytes, not characters, and has no leading zeros.
        check(Framing::OctetCount, "é\nforged", "9 é\nforged");
        let long = "y".repeat(12_345);
        check(Framing::OctetCount, &long, &format!("12345 {long}"));
    }

    #[test]
    fn datagrams_and_terminators() {
        check(Framing::Datagram, "one", "one");
        assert_eq!(Framing::Newline.terminator(), b"\n");
        assert!(Framing::OctetCount.terminator().is_empty());
    }
}
