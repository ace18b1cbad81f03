//! N records over each transport arrive exactly once, as sent.

use logbus::appenders::{Rfc3164, Syslog};

use super::rsyslogd::{Inputs, Rsyslogd};
use super::{
    broker_with, check_exactly_once, publish, settled, with_test_header as header, APP, HOST,
};

const N: u64 = 1_000;

/// Sends N records through `syslog`, checks the broker wrote them all and
/// rsyslogd stored each once.
fn deliver(mut daemon: Rsyslogd, syslog: Syslog, input: &str) {
    let counters = syslog.counters();
    let broker = broker_with(syslog);
    publish(&broker, N);
    let stats = settled(&broker);
    assert_eq!(
        (
            stats.written,
            stats.dropped,
            stats.dead_lettered,
            stats.lost
        ),
        (N, 0, 0, 0),
        "{stats:?}"
    );
    daemon.wait_for("every record", |s| s.len() as u64 >= N);
    // Stopped (its queues drained, its file closed), so that a duplicate
    // arriving late would be seen too.
    daemon.stop();
    let stored = daemon.stored();
    check_exactly_once(&stored, N, input);
    assert_eq!(counters.truncated(), 0);
    assert_eq!(counters.disconnects(), 0);
    eprintln!(
        "{input}: {N} records sent, {} stored, {} connection(s)",
        stored.len(),
        counters.connects()
    );
}

#[test]
fn udp_records_arrive_exactly_once() {
    let daemon = Rsyslogd::start(Inputs {
        udp: true,
        ..Inputs::default()
    });
    let syslog = header(Syslog::udp(daemon.tcp_addr())).build().unwrap();
    deliver(daemon, syslog, "imudp");
}

#[test]
fn tcp_records_arrive_exactly_once() {
    let daemon = Rsyslogd::start(Inputs {
        tcp: true,
        ..Inputs::default()
    });
    let syslog = header(Syslog::tcp(daemon.tcp_addr())).build().unwrap();
    deliver(daemon, syslog, "imtcp");
}

#[test]
fn unix_datagram_records_arrive_exactly_once() {
    let daemon = Rsyslogd::start(Inputs {
        unix: true,
        ..Inputs::default()
    });
    let syslog = header(Syslog::unix().path(&daemon.unix)).build().unwrap();
    deliver(daemon, syslog, "imuxsock");
}

#[test]
fn unix_stream_records_arrive_exactly_once() {
    let daemon = Rsyslogd::start(Inputs {
        unix_stream: true,
        ..Inputs::default()
    });
    let syslog = header(Syslog::unix_stream(&daemon.unix_stream))
        .build()
        .unwrap();
    deliver(daemon, syslog, "imptcp");
}

#[test]
fn a_long_udp_message_is_cut_to_the_datagram_limit_and_counted() {
    let daemon = Rsyslogd::start(Inputs {
        udp: true,
        ..Inputs::default()
    });
    let syslog = header(Syslog::udp(daemon.tcp_addr()))
        .max_datagram(600)
        .build()
        .unwrap();
    let counters = syslog.counters();
    let broker = broker_with(syslog);
    let long = "é".repeat(1000);
    log::info!(logger: &broker, target: "app", "{long}");
    assert_eq!(settled(&broker).written, 1);
    let stored = daemon.wait_for("the long record", |s| !s.is_empty());
    assert_eq!(counters.truncated(), 1);
    let msg = &stored[0].msg;
    // Cut at a character boundary: only whole `é`s, fewer than sent.
    assert!(msg.chars().all(|c| c == 'é') && msg.len() < 600, "{msg:?}");
}

#[test]
fn rfc3164_over_a_unix_datagram_socket_is_parsed_as_bsd_syslog() {
    let mut daemon = Rsyslogd::start(Inputs {
        unix: true,
        ..Inputs::default()
    });
    let syslog = header(Syslog::unix().path(&daemon.unix))
        .format(Rfc3164::new())
        .build()
        .unwrap();
    let broker = broker_with(syslog);
    log::warn!(logger: &broker, target: "app", n = 3; "disk almost full");
    assert_eq!(settled(&broker).written, 1);
    daemon.wait_for("the record", |s| !s.is_empty());
    daemon.stop();
    let stored = daemon.stored();
    assert_eq!(stored.len(), 1, "{stored:#?}");
    let m = &stored[0];
    assert_eq!((m.severity, m.facility), (4, 16));
    assert_eq!(
        (m.hostname.as_str(), m.app.as_str(), m.procid.as_str()),
        (HOST, APP, "77")
    );
    assert_eq!((m.msgid.as_str(), m.sd.as_str()), ("-", "-"));
    assert_eq!(m.msg.trim_start(), "disk almost full n=3");
}
