//! `SyslogBuilder`: one builder type per transport, so a setting that has
//! no meaning for a transport (a datagram limit on TCP, newline framing on
//! TLS, a root certificate on UDP) does not exist for it, and a misspelt
//! one does not compile.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::destination::socket::{self, Backoff, StreamOptions};
use crate::destination::{Destination, Framing};
use crate::format::syslog::fields::{
    check, is_print_us_ascii, is_sd_name_byte, sanitised, APP_NAME_MAX, HOSTNAME_MAX, MSGID_MAX,
    PROCID_MAX, SD_NAME_MAX,
};
use crate::format::syslog::{Facility, Header, LineSafety, MsgIdKind, SyslogFormat};

use super::error::{SyslogError, SyslogErrorKind};
use super::Syslog;

/// The smallest datagram every receiver must accept (RFC 5426 §3.2), and
/// so the smallest [`max_datagram`](SyslogBuilder::<SyslogUdp>::max_datagram).
///
/// ```
/// use logbus_appenders::{Syslog, MIN_DATAGRAM};
///
/// assert!(Syslog::udp("127.0.0.1:514").max_datagram(MIN_DATAGRAM).build().is_ok());
/// assert!(Syslog::udp("127.0.0.1:514").max_datagram(MIN_DATAGRAM - 1).build().is_err());
/// ```
pub const MIN_DATAGRAM: usize = 480;

/// How messages are delimited on a TCP or Unix stream connection.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{StreamFraming, Syslog};
///
/// // For a receiver that splits on line feeds (line feeds in messages are escaped).
/// let syslog = Syslog::tcp("127.0.0.1:514").framing(StreamFraming::Newline).build()?;
/// # drop(syslog);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum StreamFraming {
    /// Each message preceded by its length and a space (RFC 6587 §3.4.1),
    /// the default: a message may hold any byte, line feeds included,
    /// and still cannot forge a second one.
    #[default]
    OctetCounting,
    /// Each message followed by a line feed (RFC 6587 §3.4.2, "non-transparent
    /// framing"), for receivers that know no octet counting. Control
    /// characters in the message and the key-values are then escaped
    /// (`\n`), so that one message stays one frame.
    Newline,
}

impl StreamFraming {
    fn parts(self) -> (Framing, LineSafety) {
        match self {
            StreamFraming::OctetCounting => (Framing::OctetCount, LineSafety::AsIs),
            StreamFraming::Newline => (Framing::Newline, LineSafety::EscapeControls),
        }
    }
}

/// The UDP transport of a [`SyslogBuilder`]; see [`Syslog::udp`].
///
/// ```
/// use logbus_appenders::{SyslogUdp, Syslog, SyslogBuilder};
///
/// let builder: SyslogBuilder<SyslogUdp> = Syslog::udp("127.0.0.1:514").max_datagram(1200);
/// # drop(builder);
/// ```
#[derive(Debug, Clone)]
pub struct SyslogUdp {
    addr: String,
    max_datagram: Option<usize>,
}

/// The TCP transport of a [`SyslogBuilder`]; see [`Syslog::tcp`].
///
/// ```
/// use logbus_appenders::{SyslogTcp, Syslog, SyslogBuilder};
///
/// let builder: SyslogBuilder<SyslogTcp> = Syslog::tcp("127.0.0.1:514").send_buffer(256 * 1024);
/// # drop(builder);
/// ```
#[derive(Debug, Clone)]
pub struct SyslogTcp {
    addr: String,
    framing: StreamFraming,
    stream: StreamOptions,
}

/// The Unix datagram transport of a [`SyslogBuilder`]; see [`Syslog::unix`].
///
/// ```
/// use logbus_appenders::{SyslogUnix, Syslog, SyslogBuilder};
///
/// let builder: SyslogBuilder<SyslogUnix> = Syslog::unix().path("/run/systemd/journal/syslog");
/// # drop(builder);
/// ```
#[derive(Debug, Clone)]
pub struct SyslogUnix {
    path: PathBuf,
    max_datagram: Option<usize>,
    stream: StreamOptions,
}

/// The Unix stream transport of a [`SyslogBuilder`]; see
/// [`Syslog::unix_stream`].
///
/// ```
/// use logbus_appenders::{SyslogUnixStream, Syslog, SyslogBuilder};
///
/// let builder: SyslogBuilder<SyslogUnixStream> = Syslog::unix_stream("/run/collector.sock");
/// # drop(builder);
/// ```
#[derive(Debug, Clone)]
pub struct SyslogUnixStream {
    path: PathBuf,
    framing: StreamFraming,
    stream: StreamOptions,
}

/// Configures a [`Syslog`] appender over the transport `T`
/// ([`SyslogUdp`], [`SyslogTcp`], `SyslogTls`, [`SyslogUnix`],
/// [`SyslogUnixStream`]); reached through [`Syslog::udp`] and its siblings.
/// Defaults are in the [`Syslog`] docs.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use logbus_appenders::{Facility, MsgId, Rfc5424, Syslog};
///
/// let syslog = Syslog::tcp("logs.internal:514")
///     .facility(Facility::LOCAL3)
///     .hostname("web-1")
///     .app_name("billing")
///     .procid("worker-7")
///     .format(Rfc5424::new().msgid(MsgId::fixed("payments")))
///     .reconnect_backoff(Duration::from_millis(50), Duration::from_secs(2))
///     .write_timeout(Duration::from_secs(2))
///     .build()?; // resolves and connects nothing: the worker does, later
/// # drop(syslog);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct SyslogBuilder<T> {
    pub(super) transport: T,
    facility: Facility,
    hostname: Option<String>,
    app_name: Option<String>,
    procid: Option<String>,
    format: SyslogFormat,
    backoff: Backoff,
}

impl<T> SyslogBuilder<T> {
    pub(super) fn new(transport: T) -> SyslogBuilder<T> {
        SyslogBuilder {
            transport,
            facility: Facility::USER,
            hostname: None,
            app_name: None,
            procid: None,
            format: SyslogFormat::default(),
            backoff: Backoff::DEFAULT,
        }
    }

    /// Sets the facility.
    pub fn facility(mut self, facility: Facility) -> Self {
        self.facility = facility;
        self
    }

    /// Sets HOSTNAME: 1 to 255 printable ASCII characters (checked by
    /// `build`). Default: the machine's host name, or `-` when unknown.
    pub fn hostname(mut self, hostname: impl Into<String>) -> Self {
        self.hostname = Some(hostname.into());
        self
    }

    /// Sets APP-NAME (RFC 3164: the TAG): 1 to 48 printable ASCII
    /// characters. Default: the program's file name.
    pub fn app_name(mut self, app_name: impl Into<String>) -> Self {
        self.app_name = Some(app_name.into());
        self
    }

    /// Sets PROCID: 1 to 128 printable ASCII characters. Default: the
    /// process id when the appender is built.
    pub fn procid(mut self, procid: impl Into<String>) -> Self {
        self.procid = Some(procid.into());
        self
    }

    /// Sets the format: [`Rfc5424`](crate::Rfc5424) (the default) or
    /// [`Rfc3164`](crate::Rfc3164), each with its own settings.
    pub fn format(mut self, format: impl Into<SyslogFormat>) -> Self {
        self.format = format.into();
        self
    }

    /// Sets the wait between connect attempts: `initial` after the first
    /// failure, doubling up to `max`. Default: 100 ms up to 5 s.
    pub fn reconnect_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff = Backoff {
            initial,
            max: max.max(initial),
        };
        self
    }

    /// Checks the shared settings and joins the format to `destination`.
    pub(super) fn finish(
        self,
        destination: Box<dyn Destination>,
        counters: super::SyslogCounters,
        limit: Option<usize>,
        safety: LineSafety,
    ) -> Result<Syslog, SyslogError> {
        let header = Header {
            facility: self.facility,
            hostname: checked("HOSTNAME", self.hostname, HOSTNAME_MAX, default_hostname)?,
            app_name: checked("APP-NAME", self.app_name, APP_NAME_MAX, default_app_name)?,
            procid: checked("PROCID", self.procid, PROCID_MAX, || {
                std::process::id().to_string()
            })?,
        };
        if let SyslogFormat::Rfc5424(format) = &self.format {
            check(&format.sd_id, SD_NAME_MAX, is_sd_name_byte)
                .map_err(|p| SyslogError::field("SD-ID", &format.sd_id, p))?;
            if let MsgIdKind::Fixed(msgid) = &format.msgid.0 {
                check(msgid, MSGID_MAX, is_print_us_ascii)
                    .map_err(|p| SyslogError::field("MSGID", msgid, p))?;
            }
        }
        Ok(Syslog::assemble(
            header,
            self.format,
            destination,
            counters,
            limit,
            safety,
        ))
    }

    pub(super) fn backoff(&self) -> Backoff {
        self.backoff
    }

    pub(super) fn default_datagram(&self, rfc5424: usize) -> usize {
        match self.format {
            // RFC 3164 §4.1: "MUST be 1024 bytes or less".
            SyslogFormat::Rfc3164(_) => 1024,
            _ => rfc5424,
        }
    }
}

/// A configured field checked, or the default sanitised.
fn checked(
    field: &str,
    value: Option<String>,
    max: usize,
    default: impl FnOnce() -> String,
) -> Result<String, SyslogError> {
    match value {
        Some(value) => {
            check(&value, max, is_print_us_ascii)
                .map_err(|p| SyslogError::field(field, &value, p))?;
            Ok(value)
        }
        None => Ok(sanitised(&default(), max, "-")),
    }
}

/// The host name, read where Linux and most Unix systems keep it (the
/// crate has no `unsafe` for `gethostname(3)`); `-` (NILVALUE) otherwise.
fn default_hostname() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .map(|name| name.trim().to_owned())
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| "-".to_owned())
}

/// The program's file name, from `argv[0]` as `syslog(3)` does, else from
/// the executable's path.
fn default_app_name() -> String {
    let from = |path: PathBuf| {
        path.file_name()
            .map(|name| name.to_string_lossy().into_owned())
    };
    std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(from)
        .or_else(|| std::env::current_exe().ok().and_then(from))
        .unwrap_or_else(|| "-".to_owned())
}

/// Checks `HOST:PORT` (an IPv6 host in brackets); returns the host.
pub(super) fn check_addr(addr: &str) -> Result<&str, SyslogError> {
    let Some((host, port)) = addr.rsplit_once(':') else {
        return Err(SyslogError::address(addr, "expected HOST:PORT"));
    };
    if port.parse::<u16>().is_err() {
        return Err(SyslogError::address(
            addr,
            "the port is not a number from 0 to 65535",
        ));
    }
    let host = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6,
        None if host.contains(':') => {
            return Err(SyslogError::address(
                addr,
                "an IPv6 host must be in brackets",
            ));
        }
        None => host,
    };
    if host.is_empty() {
        return Err(SyslogError::address(addr, "the host is empty"));
    }
    Ok(host)
}

/// The largest UDP payload over IPv4 (65,535 less the IP and UDP headers).
const MAX_UDP_PAYLOAD: usize = 65_507;

fn check_limit(limit: usize, max: usize) -> Result<usize, SyslogError> {
    if limit < MIN_DATAGRAM {
        return Err(SyslogError::new(
            SyslogErrorKind::Limit,
            format!("a datagram limit of {limit} bytes is below the {MIN_DATAGRAM} every receiver accepts"),
        ));
    }
    if limit > max {
        return Err(SyslogError::new(
            SyslogErrorKind::Limit,
            format!("a datagram limit of {limit} bytes is over the {max} a datagram can carry"),
        ));
    }
    Ok(limit)
}

fn check_stream(stream: &StreamOptions) -> Result<(), SyslogError> {
    if stream.send_buffer == Some(0) {
        return Err(SyslogError::new(
            SyslogErrorKind::Limit,
            "a send buffer of 0 bytes".to_owned(),
        ));
    }
    Ok(())
}

fn check_path(path: &std::path::Path) -> Result<(), SyslogError> {
    if path.as_os_str().is_empty() {
        return Err(SyslogError::address("", "the socket path is empty"));
    }
    Ok(())
}

/// The settings every stream transport has, written once for each.
macro_rules! stream_options {
    ($transport:ty) => {
        impl SyslogBuilder<$transport> {
            /// Asks for this `SO_SNDBUF` (Linux grants twice as much, for
            /// its bookkeeping). It bounds what a collector that dies can
            /// take from our side unseen: see "What TCP cannot promise" in
            /// the [`Syslog`] docs. Default: 64 KiB.
            pub fn send_buffer(mut self, bytes: usize) -> Self {
                self.transport.stream.send_buffer = Some(bytes);
                self
            }

            /// Leaves `SO_SNDBUF` to the OS (autotuned on Linux, up to
            /// `net.ipv4.tcp_wmem`'s maximum).
            pub fn os_send_buffer(mut self) -> Self {
                self.transport.stream.send_buffer = None;
                self
            }

            /// Sets how long a write may make no progress before the
            /// connection is given up (and re-made). Default: 5 s.
            pub fn write_timeout(mut self, timeout: Duration) -> Self {
                self.transport.stream.write_timeout = timeout;
                self
            }
        }
    };
}

stream_options!(SyslogTcp);
stream_options!(SyslogUnixStream);
#[cfg(feature = "syslog-tls")]
stream_options!(super::tls::SyslogTls);

impl SyslogBuilder<SyslogTcp> {
    pub(super) fn tcp(addr: String) -> SyslogBuilder<SyslogTcp> {
        SyslogBuilder::new(SyslogTcp {
            addr,
            framing: StreamFraming::OctetCounting,
            stream: StreamOptions::DEFAULT,
        })
    }

    /// Sets the framing. Default: [`StreamFraming::OctetCounting`].
    pub fn framing(mut self, framing: StreamFraming) -> Self {
        self.transport.framing = framing;
        self
    }

    /// Sets how long a connect may take. Default: 5 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.transport.stream.connect_timeout = timeout;
        self
    }

    /// Checks the settings and builds the appender; connects to nothing.
    ///
    /// # Errors
    ///
    /// A [`SyslogError`] naming the setting: the address is not
    /// `HOST:PORT`, a header field is invalid, the send buffer is 0.
    pub fn build(self) -> Result<Syslog, SyslogError> {
        check_addr(&self.transport.addr)?;
        check_stream(&self.transport.stream)?;
        let (framing, safety) = self.transport.framing.parts();
        let counters = super::SyslogCounters::default();
        let tcp = socket::Tcp::new(self.transport.addr.clone(), framing, self.transport.stream);
        let socket = socket::Socket::new(tcp, self.backoff(), Arc::clone(&counters.socket));
        self.finish(Box::new(socket), counters, None, safety)
    }
}

impl SyslogBuilder<SyslogUdp> {
    pub(super) fn udp(addr: String) -> SyslogBuilder<SyslogUdp> {
        SyslogBuilder::new(SyslogUdp {
            addr,
            max_datagram: None,
        })
    }

    /// Sets the largest datagram sent (480 to 65,507 bytes); a longer
    /// message is cut at a UTF-8 boundary and counted in
    /// [`SyslogCounters::truncated`](super::SyslogCounters::truncated).
    /// Default: 2,048 bytes (RFC 5426 §3.2), 1,024 with RFC 3164.
    pub fn max_datagram(mut self, bytes: usize) -> Self {
        self.transport.max_datagram = Some(bytes);
        self
    }

    /// Checks the settings and builds the appender; sends nothing.
    ///
    /// # Errors
    ///
    /// A [`SyslogError`] naming the setting: the address is not
    /// `HOST:PORT`, a header field is invalid, the limit is below 480 or
    /// over 65,507.
    pub fn build(self) -> Result<Syslog, SyslogError> {
        check_addr(&self.transport.addr)?;
        let limit = match self.transport.max_datagram {
            Some(limit) => check_limit(limit, MAX_UDP_PAYLOAD)?,
            None => self.default_datagram(2048),
        };
        let counters = super::SyslogCounters::default();
        let udp = socket::Udp::new(self.transport.addr.clone());
        let socket = socket::Socket::new(udp, self.backoff(), Arc::clone(&counters.socket));
        self.finish(Box::new(socket), counters, Some(limit), LineSafety::AsIs)
    }
}

impl SyslogBuilder<SyslogUnix> {
    pub(super) fn unix() -> SyslogBuilder<SyslogUnix> {
        SyslogBuilder::new(SyslogUnix {
            path: PathBuf::from("/dev/log"),
            max_datagram: None,
            stream: StreamOptions::DEFAULT,
        })
    }

    /// Sets the socket's path. Default: `/dev/log`.
    pub fn path(mut self, path: impl Into<PathBuf>) -> Self {
        self.transport.path = path.into();
        self
    }

    /// Sets the largest datagram sent (at least 480 bytes); a longer
    /// message is cut at a UTF-8 boundary and counted. Default: 8,096
    /// bytes, rsyslog's default `maxMessageSize` (1,024 with RFC 3164).
    pub fn max_datagram(mut self, bytes: usize) -> Self {
        self.transport.max_datagram = Some(bytes);
        self
    }

    /// Sets how long a send may wait for room in the collector's queue
    /// before the socket is given up (and re-made). Default: 5 s.
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.transport.stream.write_timeout = timeout;
        self
    }

    /// Checks the settings and builds the appender; connects to nothing.
    ///
    /// # Errors
    ///
    /// A [`SyslogError`] naming the setting: the path is empty, a header
    /// field is invalid, the limit is below 480.
    #[cfg(unix)]
    pub fn build(self) -> Result<Syslog, SyslogError> {
        check_path(&self.transport.path)?;
        let limit = match self.transport.max_datagram {
            // Linux bounds a Unix datagram by the socket's send buffer.
            Some(limit) => check_limit(limit, usize::MAX)?,
            None => self.default_datagram(8096),
        };
        let counters = super::SyslogCounters::default();
        let unix = socket::UnixDatagram::new(self.transport.path.clone(), self.transport.stream);
        let socket = socket::Socket::new(unix, self.backoff(), Arc::clone(&counters.socket));
        self.finish(Box::new(socket), counters, Some(limit), LineSafety::AsIs)
    }
}

impl SyslogBuilder<SyslogUnixStream> {
    pub(super) fn unix_stream(path: PathBuf) -> SyslogBuilder<SyslogUnixStream> {
        SyslogBuilder::new(SyslogUnixStream {
            path,
            framing: StreamFraming::OctetCounting,
            stream: StreamOptions::DEFAULT,
        })
    }

    /// Sets the framing. Default: [`StreamFraming::OctetCounting`].
    pub fn framing(mut self, framing: StreamFraming) -> Self {
        self.transport.framing = framing;
        self
    }

    /// Checks the settings and builds the appender; connects to nothing.
    ///
    /// # Errors
    ///
    /// A [`SyslogError`] naming the setting: the path is empty, a header
    /// field is invalid, the send buffer is 0.
    #[cfg(unix)]
    pub fn build(self) -> Result<Syslog, SyslogError> {
        check_path(&self.transport.path)?;
        check_stream(&self.transport.stream)?;
        let (framing, safety) = self.transport.framing.parts();
        let counters = super::SyslogCounters::default();
        let unix =
            socket::UnixStream::new(self.transport.path.clone(), framing, self.transport.stream);
        let socket = socket::Socket::new(unix, self.backoff(), Arc::clone(&counters.socket));
        self.finish(Box::new(socket), counters, None, safety)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(check_addr("127.0.0.1:514").unwrap(), "127.0.0.1");
        assert_eq!(check_addr("[::1]:6514").unwrap(), "::1");
        assert_eq!(
            check_addr("logs.example.com:0").unwrap(),
            "logs.example.com"
        );
        for bad in [
            "localhost",
            "::1:514",
            ":514",
            "host:port",
            "host:65536",
            "[]:1",
        ] {
            let err = check_addr(bad).unwrap_err();
            assert_eq!(err.kind(), SyslogErrorKind::Address, "{bad}");
        }
    }

    #[test]
    fn defaults_are_valid_header_fields() {
        for value in [default_hostname(), default_app_name()] {
            let value = sanitised(&value, 48, "-");
            assert_eq!(check(&value, 48, is_print_us_ascii), Ok(()), "{value:?}");
        }
    }
}
