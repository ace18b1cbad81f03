//! UDP (RFC 5426): one message per datagram, from a connected socket.

use std::io::{self, Write};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};

use super::{Connection, Transport};
use crate::destination::Framing;

/// Syslog over UDP. "Connecting" binds an ephemeral port and fixes the
/// peer, so an ICMP port-unreachable from a collector that is down comes
/// back as `ECONNREFUSED` on a later send, which drops and re-makes the
/// socket like any failure. Nothing else about delivery can be known: UDP
/// loses datagrams silently (a full receive buffer at the collector).
#[derive(Debug)]
pub(crate) struct Udp {
    name: String,
    addr: String,
}

impl Udp {
    pub(crate) fn new(addr: String) -> Udp {
        Udp {
            name: format!("udp {addr}"),
            addr,
        }
    }
}

impl Transport for Udp {
    type Conn = UdpConn;

    fn framing(&self) -> Framing {
        Framing::Datagram
    }

    fn connect(&mut self) -> io::Result<UdpConn> {
        let mut last = None;
        for target in self.addr.to_socket_addrs()? {
            let local: SocketAddr = if target.is_ipv4() {
                ([0, 0, 0, 0], 0).into()
            } else {
                ([0u16; 8], 0).into()
            };
            match UdpSocket::bind(local).and_then(|s| s.connect(target).map(|()| s)) {
                Ok(socket) => return Ok(UdpConn(socket)),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, "the address resolved to nothing")
        }))
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// A connected UDP socket: each `write` is one datagram.
#[derive(Debug)]
pub(crate) struct UdpConn(UdpSocket);

impl Write for UdpConn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.send(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Connection for UdpConn {}
