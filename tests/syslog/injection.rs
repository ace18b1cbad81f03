//! A message with line breaks and a forged syslog header is stored as one
//! record: octet counting needs no escaping, the length says where the
//! message ends. With newline framing the line breaks are escaped instead.

use logbus::appenders::{StreamFraming, Syslog};

use super::rsyslogd::{Inputs, Rsyslogd};
use super::{broker_with, settled, with_test_header};

const HOSTILE: &str = "ok\n<13>1 2026-01-01T00:00:00Z INJECTED evil - - - forged";

fn send(daemon: &Rsyslogd, syslog: Syslog) -> Vec<super::rsyslogd::Stored> {
    let broker = broker_with(syslog);
    log::warn!(logger: &broker, target: "app", "{HOSTILE}\r\nend");
    // A second, plain record: once it is stored, so is everything before it.
    log::info!(logger: &broker, target: "app", "after");
    assert_eq!(settled(&broker).written, 2);
    daemon.wait_for("the record after the hostile one", |s| {
        s.iter().any(|m| m.msg == "after")
    })
}

#[test]
fn a_forged_header_over_tcp_is_one_record() {
    let daemon = Rsyslogd::start(Inputs {
        tcp: true,
        ..Inputs::default()
    });
    let stored = send(
        &daemon,
        with_test_header(Syslog::tcp(daemon.tcp_addr()))
            .build()
            .unwrap(),
    );
    assert_eq!(stored.len(), 2, "{stored:#?}");
    assert_eq!(stored[0].msg, format!("{HOSTILE}\r\nend"));
    assert_eq!(stored[0].severity, 4);
    assert!(
        stored.iter().all(|m| m.hostname != "INJECTED"),
        "{stored:#?}"
    );
}

#[test]
fn with_newline_framing_the_line_breaks_are_escaped() {
    let daemon = Rsyslogd::start(Inputs {
        tcp: true,
        ..Inputs::default()
    });
    let syslog = with_test_header(Syslog::tcp(daemon.tcp_addr()))
        .framing(StreamFraming::Newline)
        .build()
        .unwrap();
    let stored = send(&daemon, syslog);
    assert_eq!(stored.len(), 2, "{stored:#?}");
    assert_eq!(
        stored[0].msg,
        format!("{}\\r\\nend", HOSTILE.replace('\n', "\\n"))
    );
    assert!(
        stored.iter().all(|m| m.hostname != "INJECTED"),
        "{stored:#?}"
    );
}
