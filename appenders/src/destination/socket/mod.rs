//! Socket destinations: where a syslog appender's messages go (UDP, TCP,
//! TLS, Unix datagram and stream sockets), made and re-made on the worker.
//!
//! One [`Socket`] holds a [`Transport`] (how to connect, how records are
//! framed) and at most one live connection. The connection is made lazily,
//! in [`Destination::start_call`]: on the worker's thread, inside the
//! appender's `append`, never when the appender is built nor on a thread
//! that logs. The rules:
//!
//! - **A failed write drops the connection.** The records before the
//!   failure whose frames the OS took are written (see
//!   [`Lines::write_to`]); the rest are the broker's to retry. A frame the
//!   failure cut is never continued: the next call connects anew, and the
//!   retried record goes out whole on the new connection. (An octet-counted
//!   stream cannot be repaired in band: the receiver would count the new
//!   frame's bytes into the old one.)
//! - **A peer that closed is noticed before writing.** Stream transports
//!   look, without blocking, whether the collector closed its end
//!   ([`Connection::peer_closed`], one `recv` with `MSG_PEEK|MSG_DONTWAIT`
//!   per call): a collector that was stopped cleanly sent a FIN, and writing
//!   into such a half-closed connection would succeed once, into the void.
//! - **Reconnecting backs off.** After a failed connect, the next attempt
//!   waits `initial`, then twice as long each time up to `max`; a call in
//!   between fails at once with [`Operation::Connect`], so records take the
//!   broker's failure path (retries, the breaker, dead letters) without a
//!   `connect` per record. A successful write resets the wait. After a
//!   dropped connection the next call reconnects at once.
//!
//! What no transport can promise: bytes the OS accepted are counted as
//! written, but a collector that goes away loses what sat in our send
//! buffer and its receive buffer; see the `Syslog` docs for the bound.

mod tcp;
#[cfg(feature = "syslog-tls")]
mod tls;
mod udp;
#[cfg(unix)]
mod unix;

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::appender::{AppendError, BatchError, Operation};
use crate::format::Style;
use crate::record::Record;
use crate::render::{Lines, Output};

use super::{Destination, Framing};

pub(crate) use self::tcp::{StreamOptions, Tcp};
#[cfg(feature = "syslog-tls")]
pub(crate) use self::tls::{Tls, TlsSettings};
pub(crate) use self::udp::Udp;
#[cfg(unix)]
pub(crate) use self::unix::{UnixDatagram, UnixStream};

/// How a socket destination connects, and frames what it sends.
pub(crate) trait Transport: Send + fmt::Debug + 'static {
    /// A live connection.
    type Conn: Connection;

    /// How records are framed on this transport.
    fn framing(&self) -> Framing;

    /// Connects (resolving names, handshaking); on the worker's thread, and
    /// bounded by the transport's connect timeout.
    fn connect(&mut self) -> io::Result<Self::Conn>;

    /// What errors name: `tcp 127.0.0.1:514`.
    fn name(&self) -> &str;
}

/// A live connection: a writer that takes whole frames or fails.
pub(crate) trait Connection: Write + Send + 'static {
    /// Whether the peer closed its end or the connection broke, looked at
    /// without blocking. Datagram sockets have no peer to close: `false`.
    fn peer_closed(&mut self) -> bool {
        false
    }
}

/// The counters a socket destination keeps, read through
/// `SyslogCounters`. Relaxed everywhere: statistics, publishing no other
/// memory.
#[derive(Debug, Default)]
pub(crate) struct SocketCounters {
    /// Connections made.
    pub(crate) connects: AtomicU64,
    /// Connect attempts that failed.
    pub(crate) connect_failures: AtomicU64,
    /// Connections dropped after a failed write, or found closed by the
    /// peer.
    pub(crate) disconnects: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    // Relaxed: a statistic, publishes no other memory.
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The wait between connect attempts; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    pub(crate) initial: Duration,
    pub(crate) max: Duration,
}

impl Backoff {
    /// 100 ms, doubling up to 5 s: a collector restart (a second or two)
    /// is found within ~0.2-1.6 s of its return, and a dead one costs one
    /// `connect` every 5 s.
    pub(crate) const DEFAULT: Backoff = Backoff {
        initial: Duration::from_millis(100),
        max: Duration::from_secs(5),
    };
}

/// The connection state and its backoff.
#[derive(Debug)]
struct Reconnect {
    backoff: Backoff,
    /// The wait after the next failed attempt.
    delay: Duration,
    /// No attempt before this instant; `None`: attempt at the next call.
    not_before: Option<Instant>,
    /// The last connect error, for the errors of calls that wait.
    last_error: Option<String>,
}

/// A socket destination: a transport and at most one connection.
pub(crate) struct Socket<T: Transport> {
    transport: T,
    conn: Option<Output<T::Conn>>,
    reconnect: Reconnect,
    counters: Arc<SocketCounters>,
}

impl<T: Transport> Socket<T> {
    pub(crate) fn new(transport: T, backoff: Backoff, counters: Arc<SocketCounters>) -> Socket<T> {
        Socket {
            transport,
            conn: None,
            reconnect: Reconnect {
                backoff,
                delay: backoff.initial,
                not_before: None,
                last_error: None,
            },
            counters,
        }
    }

    fn connect(&mut self) -> Result<(), AppendError> {
        let now = Instant::now();
        if let Some(at) = self.reconnect.not_before.filter(|at| now < *at) {
            return Err(AppendError::new(
                Operation::Connect,
                format!(
                    "{}: not connected, next attempt in {} ms (last error: {})",
                    self.transport.name(),
                    at.duration_since(now).as_millis(),
                    self.reconnect.last_error.as_deref().unwrap_or("none"),
                ),
            ));
        }
        match self.transport.connect() {
            Ok(conn) => {
                bump(&self.counters.connects);
                self.conn = Some(Output::new(conn));
                self.reconnect.not_before = None;
                Ok(())
            }
            Err(error) => {
                bump(&self.counters.connect_failures);
                let r = &mut self.reconnect;
                r.not_before = Some(now + r.delay);
                r.delay = (r.delay * 2).min(r.backoff.max);
                r.last_error = Some(error.to_string());
                Err(AppendError::io(Operation::Connect, error).with_detail(self.transport.name()))
            }
        }
    }

    fn disconnect(&mut self) {
        if self.conn.take().is_some() {
            bump(&self.counters.disconnects);
        }
    }
}

impl<T: Transport> Destination for Socket<T> {
    fn framing(&self) -> Framing {
        self.transport.framing()
    }

    fn start_call(&mut self) -> Result<(), AppendError> {
        if self.conn.as_mut().is_some_and(|c| c.writer.peer_closed()) {
            self.disconnect();
        }
        if self.conn.is_none() {
            self.connect()?;
        }
        Ok(())
    }

    fn before_record(&mut self, _record: &Record, _lines: &mut Lines) -> Result<Style, BatchError> {
        Ok(Style::default())
    }

    fn write_out(&mut self, lines: &mut Lines) -> Result<(), BatchError> {
        let Some(out) = self.conn.as_mut() else {
            // `start_call` connected, and only a failed write disconnects,
            // after which the render loop returns: unreachable, but an error
            // is the right answer anyway.
            return Err(BatchError {
                written: lines.written(),
                error: AppendError::new(
                    Operation::Write,
                    format!("{}: not connected", self.transport.name()),
                ),
            });
        };
        match lines.write_to(out) {
            Ok(_) => {
                self.reconnect.delay = self.reconnect.backoff.initial;
                Ok(())
            }
            Err(failure) => {
                self.disconnect();
                Err(BatchError {
                    written: failure.written,
                    error: AppendError::io(Operation::Write, failure.error)
                        .with_detail(self.transport.name()),
                })
            }
        }
    }

    /// Nothing is buffered in user space: every call's frames were handed
    /// to the OS (for TLS, encrypted and handed over) before it returned.
    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

impl<T: Transport> fmt::Debug for Socket<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Socket")
            .field("transport", &self.transport)
            .field("connected", &self.conn.is_some())
            .field("reconnect", &self.reconnect)
            .finish_non_exhaustive()
    }
}

/// Whether a stream socket's peer closed or the connection broke, without
/// blocking and without consuming anything: `recv(MSG_PEEK | MSG_DONTWAIT)`
/// returns 0 at end of stream, an error (other than "would block") when the
/// connection was reset. Data waiting (`Ok(n > 0)`) is not a close: a TLS
/// server may send session tickets (the TLS transport reads them).
#[cfg(unix)]
pub(crate) fn peek_closed(socket: socket2::SockRef<'_>) -> PeekState {
    let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
    match socket.recv_with_flags(&mut byte, libc::MSG_PEEK | libc::MSG_DONTWAIT) {
        Ok(0) => PeekState::Closed,
        Ok(_) => PeekState::Data,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => PeekState::Open,
        Err(e) if e.kind() == io::ErrorKind::Interrupted => PeekState::Open,
        Err(_) => PeekState::Closed,
    }
}

/// Without `MSG_DONTWAIT`, no look: a closed peer is found by the write.
#[cfg(not(unix))]
pub(crate) fn peek_closed(_socket: socket2::SockRef<'_>) -> PeekState {
    PeekState::Open
}

/// What [`peek_closed`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PeekState {
    Open,
    Data,
    Closed,
}

#[cfg(test)]
mod tests;
