//! The syslog appender against a real rsyslogd: each test starts its own
//! (tests/syslog/rsyslogd.rs), sends through a local `Broker`, and reads
//! what rsyslogd stored.
//!
//! - `delivery`: N records over UDP, TCP, TLS, Unix datagram and stream
//!   sockets arrive exactly once, with their severity, app name,
//!   structured data and message; a long UDP message is cut and counted;
//!   RFC 3164 over a Unix datagram socket is parsed as BSD syslog;
//! - `injection`: a message carrying line breaks and a forged header is
//!   stored as one record;
//! - `restart`: the collector restarted in the middle of 100,000 TCP
//!   records; every record is stored or counted.
//!
//! rsyslogd must be installed (`apt-get install rsyslog rsyslog-gnutls`);
//! without it these tests fail, saying so.

mod delivery;
mod injection;
mod restart;
mod rsyslogd;
#[cfg(feature = "syslog-tls")]
mod tls;

use std::collections::BTreeMap;

use logbus::appenders::{Facility, Syslog, SyslogBuilder};
use logbus::{Broker, LevelFilter, Subscription, SubscriptionStats};
use rsyslogd::Stored;

/// The levels records cycle through, with the severity each must arrive
/// with.
const LEVELS: [(log::Level, u8); 5] = [
    (log::Level::Error, 3),
    (log::Level::Warn, 4),
    (log::Level::Info, 6),
    (log::Level::Debug, 7),
    (log::Level::Trace, 7),
];

/// The header fields every test sends with.
const APP: &str = "logbus-test";
const HOST: &str = "test-host";
const TARGET: &str = "app::syslog";

/// The header every test sends with.
fn with_test_header<T>(builder: SyslogBuilder<T>) -> SyslogBuilder<T> {
    builder
        .facility(Facility::LOCAL0)
        .app_name(APP)
        .hostname(HOST)
        .procid("77")
}

/// A broker with one subscription, `syslog`, at every level.
fn broker_with(syslog: Syslog) -> Broker {
    log::set_max_level(LevelFilter::Trace);
    let broker = Broker::new();
    broker
        .subscribe(Subscription::builder("syslog", syslog).level(LevelFilter::Trace))
        .expect("subscribe");
    broker
}

/// Publishes records `0..n`: message `record <i>`, key-values `i=<i>` and
/// one that needs every escape, levels cycling through [`LEVELS`].
fn publish(broker: &Broker, n: u64) {
    for i in 0..n {
        let (level, _) = LEVELS[(i % 5) as usize];
        log::log!(logger: broker, target: TARGET, level, i = i, note = r#"say "hi" [x] \o/"#; "record {i}");
    }
}

/// Flushes, and returns the subscription's counters.
fn settled(broker: &Broker) -> SubscriptionStats {
    broker.flush().expect("flush");
    broker.stats().subscriptions["syslog"]
}

/// Checks that `stored` holds records `0..n` exactly once each, as sent.
#[track_caller]
fn check_exactly_once(stored: &[Stored], n: u64, input: &str) {
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    for m in stored {
        let i: u64 = m
            .msg
            .strip_prefix("record ")
            .and_then(|i| i.parse().ok())
            .unwrap_or_else(|| panic!("unexpected message {m:?}"));
        *seen.entry(i).or_default() += 1;
        let (_, severity) = LEVELS[(i % 5) as usize];
        let expected = Stored {
            severity,
            facility: 16, // local0
            hostname: HOST.into(),
            app: APP.into(),
            procid: "77".into(),
            msgid: TARGET.into(),
            sd: format!(r#"[logbus@32473 i="{i}" note="say \"hi\" [x\] \\o/"]"#),
            msg: format!("record {i}"),
            input: input.into(),
        };
        assert_eq!(m, &expected);
    }
    let twice: Vec<_> = seen.iter().filter(|(_, &c)| c > 1).collect();
    assert!(twice.is_empty(), "stored more than once: {twice:?}");
    assert_eq!(seen.len() as u64, n, "records stored: {}", seen.len());
    assert_eq!(seen.keys().next_back(), Some(&(n - 1)));
}
