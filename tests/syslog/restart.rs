//! The collector restarted in the middle of 100,000 TCP records: every
//! record ends stored or counted, and the numbers are printed.
//!
//! What can be asserted exactly, and what only within a bound:
//!
//! - **Exact:** `written + dropped + dead_lettered + lost == 100,000`
//!   (the broker's books, after a flush); the dead-letter route holds
//!   exactly the `dead_lettered` records; no record is stored twice (a
//!   record is retried only when the OS did not take all its bytes, so
//!   rsyslogd never had it whole); no dead-lettered record is stored whole
//!   (each of its attempts failed the same way); the last record, sent
//!   after the restart, is stored.
//! - **Within a bound:** records counted as written but not stored, lost
//!   in flight when rsyslogd stopped (our send buffer, its receive buffer,
//!   both TCP's and out of our sight): at most, per broken connection,
//!   (SO_SNDBUF granted + the receive buffer's maximum,
//!   `net.ipv4.tcp_rmem`) / the smallest frame. Such a record may also be
//!   stored cut short (rsyslogd stores a partial last frame): a *fragment*,
//!   at most one per broken connection.
//!
//! The subscription: a drop-oldest queue of 16,384 records, the default
//! retry policy (3 attempts, 10 and 20 ms apart), so a record that meets
//! the outage is dead-lettered after 30 ms, no circuit breaker (it would
//! dead-letter the whole backlog at once, leaving nothing to show the
//! reconnection with), and a `Memory` dead-letter route. The phases: 40,000
//! records; rsyslogd stopped (SIGTERM) with the queue deep; 30,000 more
//! while it is down; rsyslogd started again; once the appender reconnected,
//! the last 30,000.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use logbus::appenders::Syslog;
use logbus::{CircuitBreaker, LevelFilter, Memory, RetryPolicy, Subscription, Value};

use super::rsyslogd::{Inputs, Rsyslogd, DEADLINE};

const TOTAL: u64 = 100_000;
const APP: &str = "logbus-restart";

/// The smallest frame this test sends: record 0, with the octet count.
fn min_frame() -> usize {
    let message = format!(
        "<14>1 2026-01-01T00:00:00.000000Z localhost {APP} 1 restart [logbus@32473 i=\"0\"] record 0"
    );
    message.len() + format!("{} ", message.len()).len()
}

/// `net.ipv4.tcp_rmem`'s maximum: how far Linux lets a receive buffer
/// grow (rsyslogd does not set `SO_RCVBUF`).
fn receive_buffer_max() -> usize {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_rmem")
        .ok()
        .and_then(|t| t.split_whitespace().nth(2)?.parse().ok())
        .unwrap_or(6 * 1024 * 1024)
}

#[test]
fn a_collector_restarted_mid_stream_loses_nothing_uncounted() {
    let mut daemon = Rsyslogd::start(Inputs {
        tcp: true,
        ..Inputs::default()
    });
    let syslog = Syslog::tcp(daemon.tcp_addr())
        .app_name(APP)
        .hostname("localhost")
        .procid("1")
        .reconnect_backoff(Duration::from_millis(10), Duration::from_millis(200))
        .build()
        .unwrap();
    let counters = syslog.counters();
    let (dead, dead_letters) = Memory::new();
    log::set_max_level(LevelFilter::Trace);
    let broker = logbus::builder()
        .appender(
            Subscription::builder("syslog", syslog)
                .capacity(16_384)
                .retry(RetryPolicy::new())
                .circuit_breaker(CircuitBreaker::disabled()),
        )
        .dead_letter(Subscription::builder("dead_letters", dead).capacity(TOTAL as usize))
        .build()
        .unwrap();
    let publish = |range: std::ops::Range<u64>| {
        for i in range {
            log::info!(logger: &broker, target: "restart", i = i; "record {i}");
        }
    };
    let written = || broker.stats().subscriptions["syslog"].written;

    // A: the stream flows; B: rsyslogd is stopped with a deep queue, and
    // records keep coming; then it starts again.
    publish(0..40_000);
    daemon.stop();
    publish(40_000..70_000);
    daemon.start_again();
    // C: once the appender reconnected (its connect failures were against
    // the stopped daemon, so a second connection is to the new one), the
    // rest.
    let deadline = Instant::now() + DEADLINE;
    while counters.connects() < 2 {
        assert!(
            Instant::now() < deadline,
            "no reconnection after the restart"
        );
        std::thread::yield_now();
    }
    publish(70_000..TOTAL);
    broker.flush().unwrap();
    let s = broker.stats().subscriptions["syslog"];
    assert_eq!((s.matched, s.in_queue), (TOTAL, 0), "{s:?}");
    assert_eq!(
        s.written + s.dropped + s.dead_lettered + s.lost,
        TOTAL,
        "{s:?}"
    );
    assert_eq!(s.lost, 0, "there is a dead-letter route: {s:?}");

    // A last record on the same connection: once rsyslogd stored it, it
    // stored everything before it that reached it.
    log::info!(logger: &broker, target: "restart", "sentinel");
    broker.flush().unwrap();
    assert_eq!(written(), s.written + 1);
    daemon.wait_for("the sentinel", |m| m.iter().any(|m| m.msg == "sentinel"));
    daemon.stop();

    let mut stored = BTreeSet::new();
    let mut twice = Vec::new();
    let mut fragments = Vec::new();
    for m in daemon.stored().into_iter().filter(|m| m.app == APP) {
        let valid = m
            .msg
            .strip_prefix("record ")
            .and_then(|i| i.parse::<u64>().ok())
            .filter(|i| m.sd == format!("[logbus@32473 i=\"{i}\"]"));
        match valid {
            Some(i) if !stored.insert(i) => twice.push(i),
            Some(_) => {}
            None if m.msg == "sentinel" => {}
            None => fragments.push(m),
        }
    }
    let letters: BTreeSet<u64> = dead_letters
        .records()
        .iter()
        .filter_map(|r| match r.get("i") {
            Some(Value::U64(i)) => Some(*i),
            _ => None,
        })
        .collect();
    assert!(stored.len() as u64 <= s.written, "more stored than written");
    let in_flight = s.written - stored.len() as u64;
    let sndbuf = 2 * 64 * 1024; // asked 64 KiB, Linux grants twice that
    let per_connection = (sndbuf + receive_buffer_max()) / min_frame();
    let disconnects = counters.disconnects();
    let bound = disconnects * per_connection as u64;
    println!(
        "syslog restart: published {TOTAL}; written {} (stored {}, lost in flight {in_flight}, \
         bound {bound}); dropped {}; dead-lettered {}; lost {}; retried {}; fragments {}; \
         connects {}, disconnects {disconnects}, connect failures {}",
        s.written,
        stored.len(),
        s.dropped,
        s.dead_lettered,
        s.lost,
        s.retried,
        fragments.len(),
        counters.connects(),
        counters.connect_failures(),
    );
    assert!(twice.is_empty(), "stored twice: {twice:?}");
    assert_eq!(letters.len() as u64, s.dead_lettered);
    let both: Vec<_> = letters.intersection(&stored).collect();
    assert!(both.is_empty(), "dead-lettered and stored: {both:?}");
    assert!(
        stored.contains(&(TOTAL - 1)),
        "the last record was not stored"
    );
    assert!(disconnects >= 1, "the restart was not felt");
    assert!(
        in_flight <= bound,
        "{in_flight} records lost in flight, over {bound}"
    );
    assert!(fragments.len() as u64 <= disconnects, "{fragments:#?}");
}
