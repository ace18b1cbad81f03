//! TCP: octet-counted frames (RFC 6587 §3.4.1) by default, or newline
//! framing for receivers that know no other; the options every stream
//! transport shares (send buffer, timeouts).

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::{peek_closed, Connection, PeekState, Transport};
use crate::destination::Framing;

/// What every stream transport (TCP, TLS, Unix stream) is configured with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StreamOptions {
    /// `SO_SNDBUF` asked for (Linux doubles it for its bookkeeping and
    /// reports the doubled value); `None`: the OS default, autotuned.
    pub(crate) send_buffer: Option<usize>,
    pub(crate) connect_timeout: Duration,
    pub(crate) write_timeout: Duration,
}

impl StreamOptions {
    /// 64 KiB asked (128 KiB granted on Linux): the most a collector that
    /// dies can take from our side unseen, while a batch of 64 KiB
    /// ([`BUFFER_LIMIT`](crate::render::BUFFER_LIMIT)) still goes in one
    /// write. 5 s to connect and 5 s for a write that makes no progress.
    pub(crate) const DEFAULT: StreamOptions = StreamOptions {
        send_buffer: Some(64 * 1024),
        connect_timeout: Duration::from_secs(5),
        write_timeout: Duration::from_secs(5),
    };

    /// Applies the buffer size, no Nagle delay (a call's frames go in one
    /// write already) and the write timeout.
    pub(crate) fn apply(&self, socket: socket2::SockRef<'_>) -> io::Result<()> {
        if let Some(bytes) = self.send_buffer {
            socket.set_send_buffer_size(bytes)?;
        }
        socket.set_write_timeout(Some(self.write_timeout))
    }
}

/// Connects to the first address `addr` resolves to that answers.
pub(crate) fn connect_tcp(addr: &str, options: &StreamOptions) -> io::Result<TcpStream> {
    let mut last = None;
    for target in addr.to_socket_addrs()? {
        match connect_one(target, options) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::NotFound, "the address resolved to nothing")
    }))
}

fn connect_one(target: SocketAddr, options: &StreamOptions) -> io::Result<TcpStream> {
    let stream = TcpStream::connect_timeout(&target, options.connect_timeout)?;
    stream.set_nodelay(true)?;
    options.apply(socket2::SockRef::from(&stream))?;
    Ok(stream)
}

/// Syslog over TCP.
#[derive(Debug)]
pub(crate) struct Tcp {
    name: String,
    addr: String,
    framing: Framing,
    options: StreamOptions,
}

impl Tcp {
    pub(crate) fn new(addr: String, framing: Framing, options: StreamOptions) -> Tcp {
        Tcp {
            name: format!("tcp {addr}"),
            addr,
            framing,
            options,
        }
    }
}

impl Transport for Tcp {
    type Conn = TcpConn;

    fn framing(&self) -> Framing {
        self.framing
    }

    fn connect(&mut self) -> io::Result<TcpConn> {
        connect_tcp(&self.addr, &self.options).map(TcpConn)
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// A TCP connection; writes go straight to the socket.
#[derive(Debug)]
pub(crate) struct TcpConn(TcpStream);

impl Write for TcpConn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Connection for TcpConn {
    fn peer_closed(&mut self) -> bool {
        // A syslog collector sends nothing: data is as good as a close
        // (and would fill our receive buffer for ever).
        peek_closed(socket2::SockRef::from(&self.0)) != PeekState::Open
    }
}
