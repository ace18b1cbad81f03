//! `Syslog`: a syslog format (RFC 5424 or 3164) × a socket destination
//! (UDP, TCP, TLS, Unix datagram or stream), with a builder per transport.

mod builder;
pub(crate) mod error;
#[cfg(feature = "syslog-tls")]
mod tls;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::destination::socket::SocketCounters;
use crate::destination::Destination;
use crate::format::syslog::{Header, LineSafety, SyslogFormat, SyslogFormatter};
use crate::render::Pipeline;

pub use self::builder::{
    StreamFraming, SyslogBuilder, SyslogTcp, SyslogUdp, SyslogUnix, SyslogUnixStream, MIN_DATAGRAM,
};
#[cfg(feature = "syslog-tls")]
pub use self::tls::SyslogTls;

/// Sends each record as a syslog message to a collector (rsyslog,
/// syslog-ng, Fluent Bit, Vector, ...), over UDP, TCP, TLS or a Unix socket.
///
/// The message is RFC 5424 ([`Rfc5424`](crate::Rfc5424), the default) or
/// RFC 3164 ([`Rfc3164`](crate::Rfc3164)):
///
/// ```text
/// <134>1 2026-11-29T20:25:23.941824Z web-1 billing 4242 app::http [logbus@32473 status="200"] served
/// ```
///
/// PRI is the [`Facility`](crate::Facility) × 8 plus the severity of the
/// level ([`syslog_severity`](crate::syslog_severity): error 3, warn 4,
/// info 6, debug and trace 7).
///
/// | transport | built with | framing |
/// |---|---|---|
/// | UDP (RFC 5426) | [`Syslog::udp`] | one datagram per message, cut to [`max_datagram`](SyslogBuilder::<SyslogUdp>::max_datagram) |
/// | TCP (RFC 6587) | [`Syslog::tcp`] | octet counting, or [`StreamFraming::Newline`] |
/// | TLS (RFC 5425, feature `syslog-tls`) | `Syslog::tls` | octet counting |
/// | Unix datagram | [`Syslog::unix`] (`/dev/log`) | one datagram per message |
/// | Unix stream | [`Syslog::unix_stream`] | octet counting, or newline |
///
/// | Builder method | Default |
/// |---|---|
/// | [`facility`](SyslogBuilder::facility) | [`Facility::USER`](crate::Facility::USER) |
/// | [`hostname`](SyslogBuilder::hostname) | the host name (`/proc/sys/kernel/hostname`, `/etc/hostname`), else `-` |
/// | [`app_name`](SyslogBuilder::app_name) | the program's file name (`argv[0]`) |
/// | [`procid`](SyslogBuilder::procid) | the process id |
/// | [`format`](SyslogBuilder::format) | [`Rfc5424::new()`](crate::Rfc5424::new): MSGID from the target, SD-ID `logbus@32473`, no BOM |
/// | [`reconnect_backoff`](SyslogBuilder::reconnect_backoff) | 100 ms, doubling up to 5 s |
/// | `max_datagram` (UDP, Unix datagram) | 2,048 bytes (UDP), 8,096 (Unix); 1,024 with RFC 3164 |
/// | `framing` (TCP, Unix stream) | [`StreamFraming::OctetCounting`] |
/// | `send_buffer` (TCP, TLS, Unix stream) | 64 KiB asked (`SO_SNDBUF`; Linux grants 128 KiB) |
/// | `write_timeout` | 5 s |
/// | `connect_timeout` (TCP, TLS) | 5 s |
///
/// A setting that means nothing for a transport does not exist on its
/// builder, so it is a compile error, not a surprise at run time:
///
/// ```compile_fail
/// // UDP has no framing; TCP has no datagram limit.
/// let syslog = logbus_appenders::Syslog::udp("127.0.0.1:514")
///     .framing(logbus_appenders::StreamFraming::Newline);
/// ```
///
/// ```compile_fail
/// // RFC 3164 has no structured data.
/// let format = logbus_appenders::Rfc3164::new().sd_id("x@32473");
/// ```
///
/// # Connections
///
/// [`build`](SyslogBuilder::<SyslogTcp>::build) checks the settings and
/// connects to nothing. The connection is made in the first `append` on the
/// broker's worker thread, and re-made there: never on a thread that logs.
/// A failed write drops the connection; the broker retries the record
/// (after its retry policy's backoff) and the next call reconnects, the
/// record going out whole on the new connection (a frame cut by the failure
/// is never continued). While connecting fails, calls fail at once until
/// the reconnect backoff has passed, so records take the broker's failure
/// path (retries, the circuit breaker, the dead-letter route) and the
/// caller, whose queue has its own overflow policy, never waits for the
/// network. A collector that closed the connection (a clean restart) is
/// noticed before the next write, without blocking.
///
/// # What TCP cannot promise
///
/// A record is counted as written once the OS took all its bytes: for TCP,
/// once they are in our socket's send buffer. If the collector dies (or is
/// restarted) then, what sat in that buffer and in the collector's receive
/// buffer, not yet read by it, is lost, and still counted as written:
/// TCP acknowledges bytes to the kernel, not to the program. At most that
/// is, per connection:
///
/// - our send buffer: with the default [`send_buffer`](SyslogBuilder::<SyslogTcp>::send_buffer)
///   of 64 KiB, Linux grants 128 KiB, about 1,300 messages of 100 bytes;
/// - plus the collector's receive buffer, which is its setting (on Linux
///   autotuned up to `net.ipv4.tcp_rmem`'s maximum, 6 MiB by default);
/// - plus what the collector read but had not stored (rsyslog drains its
///   queues on a clean stop).
///
/// A message can also be stored cut short: the collector may store the
/// partial frame it read last when the connection ends. No message is
/// stored twice by a reconnect: a record is retried only when the OS did
/// not take all its bytes, so the collector never had it whole. UDP
/// promises nothing at all: a datagram the collector has no room for is
/// dropped by its kernel, unseen.
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Appender, Facility, Level, Record, Syslog, Topic};
///
/// let collector = std::net::UdpSocket::bind("127.0.0.1:0")?;
/// let mut syslog = Syslog::udp(collector.local_addr()?)
///     .facility(Facility::LOCAL0)
///     .app_name("billing")
///     .hostname("web-1")
///     .build()?;
/// syslog.append(&Record::builder(Topic::new(Level::Warn, "app::db")).message("slow").kv("ms", 1200u64).build())?;
///
/// let mut datagram = [0; 2048];
/// let n = collector.recv(&mut datagram)?;
/// let message = std::str::from_utf8(&datagram[..n])?;
/// assert!(message.starts_with("<132>1 "));
/// assert!(message.contains(" web-1 billing "));
/// assert!(message.contains(r#" app::db [logbus@32473 ms="1200"] slow"#));
/// assert_eq!(syslog.counters().truncated(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Syslog {
    pipeline: Pipeline<SyslogFormatter, Box<dyn Destination>>,
    counters: SyslogCounters,
}

impl Syslog {
    /// Starts configuring a syslog appender over UDP to `addr`
    /// (`HOST:PORT`, an IPv6 host in brackets; resolved at each connect).
    pub fn udp(addr: impl std::fmt::Display) -> SyslogBuilder<SyslogUdp> {
        SyslogBuilder::udp(addr.to_string())
    }

    /// Starts configuring a syslog appender over TCP to `addr`.
    pub fn tcp(addr: impl std::fmt::Display) -> SyslogBuilder<SyslogTcp> {
        SyslogBuilder::tcp(addr.to_string())
    }

    /// Starts configuring a syslog appender over TLS to `addr` (feature
    /// `syslog-tls`): give it the collector's CA with
    /// [`root_certificates_pem`](SyslogBuilder::<SyslogTls>::root_certificates_pem).
    #[cfg(feature = "syslog-tls")]
    pub fn tls(addr: impl std::fmt::Display) -> SyslogBuilder<SyslogTls> {
        SyslogBuilder::tls(addr.to_string())
    }

    /// Starts configuring a syslog appender over a Unix datagram socket,
    /// `/dev/log` unless [`path`](SyslogBuilder::<SyslogUnix>::path) says
    /// otherwise.
    pub fn unix() -> SyslogBuilder<SyslogUnix> {
        SyslogBuilder::unix()
    }

    /// Starts configuring a syslog appender over the Unix stream socket at
    /// `path`.
    pub fn unix_stream(path: impl Into<PathBuf>) -> SyslogBuilder<SyslogUnixStream> {
        SyslogBuilder::unix_stream(path.into())
    }

    /// The appender's counters: a cheap handle that stays valid once the
    /// appender was handed to the broker.
    #[must_use]
    pub fn counters(&self) -> SyslogCounters {
        self.counters.clone()
    }

    fn assemble(
        header: Header,
        format: SyslogFormat,
        destination: Box<dyn Destination>,
        counters: SyslogCounters,
        limit: Option<usize>,
        safety: LineSafety,
    ) -> Syslog {
        let formatter = SyslogFormatter::new(
            header,
            format,
            limit,
            safety,
            Arc::clone(&counters.truncated),
        );
        Syslog {
            pipeline: Pipeline::new(formatter, destination),
            counters,
        }
    }
}

crate::render::appender_through_pipeline!(Syslog);

/// Counters of a [`Syslog`] appender, readable from any thread: a cheap,
/// cloneable handle (see [`Syslog::counters`]).
///
/// What was written, retried or dead-lettered is the broker's to count;
/// these say what only the appender knows.
///
/// # Examples
///
/// ```
/// use logbus_appenders::Syslog;
///
/// let syslog = Syslog::tcp("127.0.0.1:514").build()?;
/// let counters = syslog.counters();
/// assert_eq!((counters.connects(), counters.disconnects(), counters.truncated()), (0, 0, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct SyslogCounters {
    socket: Arc<SocketCounters>,
    truncated: Arc<AtomicU64>,
}

impl SyslogCounters {
    // Relaxed loads below: statistics, publishing no other memory.

    /// Messages cut to the datagram limit.
    #[must_use]
    pub fn truncated(&self) -> u64 {
        self.truncated.load(Ordering::Relaxed)
    }

    /// Connections made (for UDP and Unix datagrams: sockets connected).
    #[must_use]
    pub fn connects(&self) -> u64 {
        self.socket.connects.load(Ordering::Relaxed)
    }

    /// Connect attempts that failed.
    #[must_use]
    pub fn connect_failures(&self) -> u64 {
        self.socket.connect_failures.load(Ordering::Relaxed)
    }

    /// Connections dropped: a write failed, or the collector closed its end.
    #[must_use]
    pub fn disconnects(&self) -> u64 {
        self.socket.disconnects.load(Ordering::Relaxed)
    }
}
