//! Unix sockets: datagrams (`/dev/log`, what `syslog(3)` writes to) and
//! streams (octet-counted frames, or newline framing).

use std::io::{self, Write};
use std::os::unix::net;
use std::path::PathBuf;

use super::{peek_closed, Connection, PeekState, StreamOptions, Transport};
use crate::destination::Framing;

/// Syslog over a Unix datagram socket. A full receive queue at the
/// collector blocks the send (never silently drops, unlike UDP), for at
/// most the write timeout; a collector that restarted recreated its socket
/// file, so the old connection fails with `ECONNREFUSED` and is re-made.
#[derive(Debug)]
pub(crate) struct UnixDatagram {
    name: String,
    path: PathBuf,
    options: StreamOptions,
}

impl UnixDatagram {
    pub(crate) fn new(path: PathBuf, options: StreamOptions) -> UnixDatagram {
        UnixDatagram {
            name: format!("unix {}", path.display()),
            path,
            options,
        }
    }
}

impl Transport for UnixDatagram {
    type Conn = UnixDatagramConn;

    fn framing(&self) -> Framing {
        Framing::Datagram
    }

    fn connect(&mut self) -> io::Result<UnixDatagramConn> {
        let socket = net::UnixDatagram::unbound()?;
        socket.connect(&self.path)?;
        socket.set_write_timeout(Some(self.options.write_timeout))?;
        Ok(UnixDatagramConn(socket))
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// A connected Unix datagram socket: each `write` is one datagram.
#[derive(Debug)]
pub(crate) struct UnixDatagramConn(net::UnixDatagram);

impl Write for UnixDatagramConn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.send(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Connection for UnixDatagramConn {}

/// Syslog over a Unix stream socket (rsyslog's `imptcp` with `path`,
/// syslog-ng's `unix-stream()`).
#[derive(Debug)]
pub(crate) struct UnixStream {
    name: String,
    path: PathBuf,
    framing: Framing,
    options: StreamOptions,
}

impl UnixStream {
    pub(crate) fn new(path: PathBuf, framing: Framing, options: StreamOptions) -> UnixStream {
        UnixStream {
            name: format!("unix-stream {}", path.display()),
            path,
            framing,
            options,
        }
    }
}

impl Transport for UnixStream {
    type Conn = UnixStreamConn;

    fn framing(&self) -> Framing {
        self.framing
    }

    fn connect(&mut self) -> io::Result<UnixStreamConn> {
        // A local connect does not wait for a peer: no timeout needed.
        let stream = net::UnixStream::connect(&self.path)?;
        self.options.apply(socket2::SockRef::from(&stream))?;
        Ok(UnixStreamConn(stream))
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// A Unix stream connection; writes go straight to the socket.
#[derive(Debug)]
pub(crate) struct UnixStreamConn(net::UnixStream);

impl Write for UnixStreamConn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Connection for UnixStreamConn {
    fn peer_closed(&mut self) -> bool {
        peek_closed(socket2::SockRef::from(&self.0)) != PeekState::Open
    }
}
