//! TLS (RFC 5425): octet-counted frames over rustls, the server's
//! certificate and name verified against the roots the user trusts.

use std::io::{self, Read as _, Write};
use std::net::TcpStream;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};

use super::tcp::connect_tcp;
use super::{peek_closed, Connection, PeekState, StreamOptions, Transport};
use crate::destination::Framing;

/// Plaintext per TLS record: a write hands rustls at most one record's
/// worth, so a failed write never leaves a complete record (a complete
/// frame) unaccounted: a record either reached the OS whole, and `write`
/// says so, or the collector cannot decrypt any of it.
const RECORD_PLAINTEXT: usize = 16 * 1024;

/// What the builder checked and made: the client configuration (roots,
/// client certificate, the ring provider) and the name to verify.
#[derive(Debug, Clone)]
pub(crate) struct TlsSettings {
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) server_name: ServerName<'static>,
}

/// Syslog over TLS.
#[derive(Debug)]
pub(crate) struct Tls {
    name: String,
    addr: String,
    settings: TlsSettings,
    options: StreamOptions,
}

impl Tls {
    pub(crate) fn new(addr: String, settings: TlsSettings, options: StreamOptions) -> Tls {
        Tls {
            name: format!("tls {addr}"),
            addr,
            settings,
            options,
        }
    }
}

impl Transport for Tls {
    type Conn = TlsConn;

    fn framing(&self) -> Framing {
        // RFC 5425 §4.3: octet counting, nothing else.
        Framing::OctetCount
    }

    fn connect(&mut self) -> io::Result<TlsConn> {
        let mut sock = connect_tcp(&self.addr, &self.options)?;
        let mut tls = ClientConnection::new(
            Arc::clone(&self.settings.config),
            self.settings.server_name.clone(),
        )
        .map_err(io::Error::other)?;
        // The handshake reads: bound it like the connect.
        sock.set_read_timeout(Some(self.options.connect_timeout))?;
        while tls.is_handshaking() {
            let (read, wrote) = tls.complete_io(&mut sock)?;
            if read == 0 && wrote == 0 && tls.is_handshaking() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection during the TLS handshake",
                ));
            }
        }
        sock.set_read_timeout(None)?;
        Ok(TlsConn { tls, sock })
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// A TLS connection whose `write` returns only once the encrypted bytes
/// are all in the OS's hands.
pub(crate) struct TlsConn {
    tls: ClientConnection,
    sock: TcpStream,
}

impl Write for TlsConn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self
            .tls
            .writer()
            .write(&buf[..buf.len().min(RECORD_PLAINTEXT)])?;
        while self.tls.wants_write() {
            if self.tls.write_tls(&mut self.sock)? == 0 {
                return Err(io::Error::from(io::ErrorKind::WriteZero));
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Connection for TlsConn {
    fn peer_closed(&mut self) -> bool {
        match peek_closed(socket2::SockRef::from(&self.sock)) {
            PeekState::Open => false,
            PeekState::Closed => true,
            // Session tickets, or an alert: let rustls read what is there
            // (it is there: the read does not block).
            PeekState::Data => {
                if self.tls.read_tls(&mut self.sock).is_err() {
                    return true;
                }
                match self.tls.process_new_packets() {
                    Err(_) => true,
                    Ok(state) => {
                        let pending = state.plaintext_bytes_to_read();
                        if pending > 0 {
                            // A collector has nothing to say; discard it.
                            let mut sink = vec![0; pending];
                            let _ = self.tls.reader().read(&mut sink);
                        }
                        state.peer_has_closed()
                    }
                }
            }
        }
    }
}

impl Drop for TlsConn {
    /// Says goodbye properly (a `close_notify`), best effort, bounded by
    /// the write timeout: the collector then knows no frame was cut.
    fn drop(&mut self) {
        self.tls.send_close_notify();
        let _ = self.tls.write_tls(&mut self.sock);
    }
}

impl std::fmt::Debug for TlsConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConn")
            .field("peer", &self.sock.peer_addr().ok())
            .finish_non_exhaustive()
    }
}
