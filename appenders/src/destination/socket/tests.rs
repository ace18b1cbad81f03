//! Socket destination tests: reconnection, whole frames after a cut, the
//! backoff, against a scripted transport and a real TCP listener.

use std::collections::VecDeque;
use std::io::Read as _;
use std::net::TcpListener;
use std::sync::Mutex;

use super::*;
use crate::format::Format;
use crate::record::{Level, Topic};
use crate::render::Pipeline;

/// Renders the message.
#[derive(Debug)]
struct Msg;

impl Format for Msg {
    fn render(&mut self, record: &Record, _: Style, out: &mut Vec<u8>) -> Result<(), AppendError> {
        out.extend_from_slice(record.message().as_bytes());
        Ok(())
    }
}

fn records(messages: &[&str]) -> Vec<Record> {
    messages
        .iter()
        .map(|m| {
            Record::builder(Topic::new(Level::Info, "t"))
                .message((*m).to_owned())
                .build()
        })
        .collect()
}

/// A transport whose connections are scripted: each connect takes the next
/// entry of `plan` (`Err`: the connect fails; `Ok(budget)`: a connection
/// that takes `budget` bytes, then fails); what each connection received is
/// kept in `received`.
#[derive(Debug, Default)]
struct Scripted {
    plan: VecDeque<Result<usize, ()>>,
    connects: usize,
    received: Received,
}

/// What each connection received, in connection order.
type Received = Arc<Mutex<Vec<Vec<u8>>>>;

#[derive(Debug)]
struct ScriptedConn {
    budget: usize,
    index: usize,
    received: Received,
}

impl Write for ScriptedConn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.budget == 0 {
            return Err(io::Error::from(io::ErrorKind::BrokenPipe));
        }
        let n = buf.len().min(self.budget);
        self.budget -= n;
        self.received.lock().unwrap()[self.index].extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Connection for ScriptedConn {}

impl Transport for Scripted {
    type Conn = ScriptedConn;

    fn framing(&self) -> Framing {
        Framing::OctetCount
    }

    fn connect(&mut self) -> io::Result<ScriptedConn> {
        self.connects += 1;
        match self.plan.pop_front() {
            Some(Ok(budget)) => {
                let mut received = self.received.lock().unwrap();
                received.push(Vec::new());
                Ok(ScriptedConn {
                    budget,
                    index: received.len() - 1,
                    received: Arc::clone(&self.received),
                })
            }
            _ => Err(io::Error::from(io::ErrorKind::ConnectionRefused)),
        }
    }

    fn name(&self) -> &str {
        "scripted"
    }
}

fn scripted(
    plan: &[Result<usize, ()>],
    backoff: Backoff,
) -> (Pipeline<Msg, Socket<Scripted>>, Received) {
    let transport = Scripted {
        plan: plan.iter().copied().collect(),
        ..Scripted::default()
    };
    let received = Arc::clone(&transport.received);
    let socket = Socket::new(transport, backoff, Arc::default());
    (Pipeline::new(Msg, socket), received)
}

fn texts(received: &Mutex<Vec<Vec<u8>>>) -> Vec<String> {
    received
        .lock()
        .unwrap()
        .iter()
        .map(|b| String::from_utf8(b.clone()).unwrap())
        .collect()
}

const NO_WAIT: Backoff = Backoff {
    initial: Duration::ZERO,
    max: Duration::ZERO,
};

#[test]
fn a_cut_frame_is_not_continued_the_record_goes_whole_on_a_new_connection() {
    // "3 abc" (5 bytes) + "3 d" of "3 def": the second frame is cut.
    let (mut p, received) = scripted(&[Ok(8), Ok(usize::MAX)], NO_WAIT);
    let err = p.append(&records(&["abc", "def", "ghi"])).unwrap_err();
    assert_eq!(err.written, 1);
    assert_eq!(err.error.operation(), Operation::Write);
    // The broker retries the failing record, then hands over the rest.
    p.append(&records(&["def", "ghi"])).unwrap();
    assert_eq!(texts(&received), ["3 abc3 d", "3 def3 ghi"]);
    assert_eq!(p.destination.transport.connects, 2);
    // Connected once per connection, dropped once.
    let c = &p.destination.counters;
    assert_eq!(c.connects.load(Ordering::Relaxed), 2);
    assert_eq!(c.disconnects.load(Ordering::Relaxed), 1);
}

#[test]
fn while_connecting_fails_calls_fail_fast_until_the_backoff_has_passed() {
    let backoff = Backoff {
        initial: Duration::from_secs(3600),
        max: Duration::from_secs(3600),
    };
    let (mut p, received) = scripted(&[Err(()), Ok(usize::MAX)], backoff);
    let first = p.append(&records(&["a"])).unwrap_err();
    assert_eq!(first.written, 0);
    assert_eq!(first.error.operation(), Operation::Connect);
    assert_eq!(
        first.error.io_kind(),
        Some(io::ErrorKind::ConnectionRefused)
    );
    // Within the wait: no connect attempted.
    let second = p.append(&records(&["a"])).unwrap_err();
    assert_eq!(second.error.operation(), Operation::Connect);
    assert!(
        second.error.to_string().contains("next attempt in"),
        "{}",
        second.error
    );
    assert_eq!(p.destination.transport.connects, 1);
    // Once it has passed, the next call connects.
    p.destination.reconnect.not_before = Some(Instant::now());
    p.append(&records(&["a"])).unwrap();
    assert_eq!(texts(&received), ["1 a"]);
    assert_eq!(
        p.destination
            .counters
            .connect_failures
            .load(Ordering::Relaxed),
        1
    );
}

#[test]
fn the_wait_doubles_up_to_its_cap_and_a_good_write_resets_it() {
    let backoff = Backoff {
        initial: Duration::from_millis(100),
        max: Duration::from_millis(300),
    };
    let (mut p, _) = scripted(&[Err(()), Err(()), Err(()), Ok(usize::MAX)], backoff);
    let mut waits = Vec::new();
    for _ in 0..3 {
        p.destination.reconnect.not_before = None;
        p.append(&records(&["a"])).unwrap_err();
        waits.push(p.destination.reconnect.delay);
    }
    assert_eq!(waits, [200, 300, 300].map(Duration::from_millis));
    p.destination.reconnect.not_before = None;
    p.append(&records(&["a"])).unwrap();
    assert_eq!(p.destination.reconnect.delay, backoff.initial);
}

fn tcp_pipeline(listener: &TcpListener) -> Pipeline<Msg, Socket<Tcp>> {
    let addr = listener.local_addr().unwrap().to_string();
    let tcp = Tcp::new(addr, Framing::OctetCount, StreamOptions::DEFAULT);
    Pipeline::new(Msg, Socket::new(tcp, NO_WAIT, Arc::default()))
}

#[test]
fn nothing_connects_before_the_first_record() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let mut p = tcp_pipeline(&listener);
    p.flush().unwrap();
    assert_eq!(
        listener.accept().unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    p.append(&records(&["hello"])).unwrap();
    listener.set_nonblocking(false).unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    let mut got = [0u8; 7];
    conn.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"5 hello");
}

#[test]
fn a_collector_that_closed_is_noticed_before_writing_and_the_socket_reconnects() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut p = tcp_pipeline(&listener);
    p.append(&records(&["one"])).unwrap();
    let (mut first, _) = listener.accept().unwrap();
    let mut got = [0u8; 5];
    first.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"3 one");
    // The collector goes away cleanly (a FIN): our next call sees it.
    first.shutdown(std::net::Shutdown::Both).unwrap();
    drop(first);
    // The FIN arrives asynchronously: a look that misses it writes into
    // the half-closed connection, which the kernel accepts; so wait for
    // the look to see it, as the test's only synchronisation.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !p.destination.conn.as_mut().unwrap().writer.peer_closed() {
        assert!(Instant::now() < deadline, "the FIN never arrived");
        std::thread::yield_now();
    }
    p.append(&records(&["two"])).unwrap();
    let (mut second, _) = listener.accept().unwrap();
    second.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"3 two");
    assert_eq!(
        p.destination.counters.disconnects.load(Ordering::Relaxed),
        1
    );
}

#[test]
fn the_send_buffer_is_bounded() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let stream = tcp::connect_tcp(&addr, &StreamOptions::DEFAULT).unwrap();
    let size = socket2::SockRef::from(&stream).send_buffer_size().unwrap();
    // Linux doubles what was asked for; other systems may round.
    assert!(
        (64 * 1024..=2 * 64 * 1024).contains(&size),
        "SO_SNDBUF is {size}"
    );
}
