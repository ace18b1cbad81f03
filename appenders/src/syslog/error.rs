//! `SyslogError`: why a syslog appender could not be built.

use std::error::Error as StdError;
use std::fmt;

use crate::format::syslog::fields::FieldProblem;

/// Why a [`Syslog`](crate::Syslog) appender could not be built.
///
/// Building checks every setting and connects to nothing (the worker
/// connects at the first record), so these are all configuration
/// mistakes, each named with the value at fault.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Syslog, SyslogErrorKind};
///
/// let err = Syslog::tcp("localhost").build().unwrap_err();
/// assert_eq!(err.kind(), SyslogErrorKind::Address);
/// assert_eq!(err.to_string(), "invalid syslog address \"localhost\": expected HOST:PORT");
///
/// let err = Syslog::udp("127.0.0.1:514").app_name("my app").build().unwrap_err();
/// assert_eq!(err.kind(), SyslogErrorKind::Field);
/// assert_eq!(
///     err.to_string(),
///     "invalid syslog APP-NAME \"my app\": byte 2 is not printable ASCII (or not allowed here)"
/// );
///
/// let err = Syslog::udp("127.0.0.1:514").max_datagram(100).build().unwrap_err();
/// assert_eq!(err.kind(), SyslogErrorKind::Limit);
/// ```
#[derive(Debug)]
pub struct SyslogError {
    kind: SyslogErrorKind,
    text: String,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

/// What was wrong with a syslog appender's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SyslogErrorKind {
    /// The address is not `HOST:PORT` (an IPv6 host in brackets), or the
    /// socket path is empty.
    Address,
    /// A header field (HOSTNAME, APP-NAME, PROCID, MSGID) or the SD-ID is
    /// empty, too long, or has a character the RFC does not allow there.
    Field,
    /// A datagram limit below the 480 bytes every receiver must accept
    /// (RFC 5426 §3.2) or over what a UDP datagram can carry, or a zero
    /// send buffer.
    Limit,
    /// A TLS setting: no root certificate, a PEM that holds no certificate
    /// or key, a server name that is neither a DNS name nor an IP address.
    Tls,
}

impl SyslogError {
    pub(crate) fn new(kind: SyslogErrorKind, text: String) -> SyslogError {
        SyslogError {
            kind,
            text,
            source: None,
        }
    }

    #[cfg_attr(not(feature = "syslog-tls"), allow(dead_code))]
    pub(crate) fn with_source(
        mut self,
        source: impl StdError + Send + Sync + 'static,
    ) -> SyslogError {
        self.source = Some(Box::new(source));
        self
    }

    pub(crate) fn address(addr: &str, why: &str) -> SyslogError {
        SyslogError::new(
            SyslogErrorKind::Address,
            format!("invalid syslog address {addr:?}: {why}"),
        )
    }

    pub(crate) fn field(field: &str, value: &str, problem: FieldProblem) -> SyslogError {
        let why = match problem {
            FieldProblem::Empty => "it is empty".to_owned(),
            FieldProblem::TooLong(max) => format!("it is longer than {max} bytes"),
            FieldProblem::BadByte(at) => {
                format!("byte {at} is not printable ASCII (or not allowed here)")
            }
        };
        SyslogError::new(
            SyslogErrorKind::Field,
            format!("invalid syslog {field} {value:?}: {why}"),
        )
    }

    /// What was wrong.
    #[must_use]
    pub fn kind(&self) -> SyslogErrorKind {
        self.kind
    }
}

impl fmt::Display for SyslogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl StdError for SyslogError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_ref()
            .map(|s| &**s as &(dyn StdError + 'static))
    }
}
