//! Syslog over TLS (RFC 5425) to rsyslogd's gtls driver, with certificates
//! made for the test: records arrive exactly once, and a server whose
//! certificate does not match the name, or is signed by a CA we do not
//! trust, is refused.

use std::path::Path;

use logbus::appenders::{Appender, Level, Operation, Record, Syslog, Topic};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

use super::rsyslogd::{Inputs, Rsyslogd};
use super::{broker_with, check_exactly_once, publish, settled, with_test_header};

const N: u64 = 1_000;

/// A CA, and a server certificate it signed for `localhost` and 127.0.0.1,
/// written as PEM files in `dir`; returns the CA's PEM.
fn certificates(dir: &Path) -> (String, Inputs) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "logbus test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let mut server_params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    server_params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    let server = server_params.signed_by(&server_key, &ca, &ca_key).unwrap();
    let (ca_path, cert_path, key_path) = (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    );
    std::fs::write(&ca_path, ca.pem()).unwrap();
    std::fs::write(&cert_path, server.pem()).unwrap();
    std::fs::write(&key_path, server_key.serialize_pem()).unwrap();
    let inputs = Inputs {
        tls: Some((ca_path, cert_path, key_path)),
        ..Inputs::default()
    };
    (ca.pem(), inputs)
}

fn tls_daemon() -> (Rsyslogd, String, tempfile::TempDir) {
    let certs = tempfile::tempdir().unwrap();
    let (ca, inputs) = certificates(certs.path());
    (Rsyslogd::start(inputs), ca, certs)
}

#[test]
fn tls_records_arrive_exactly_once() {
    let (daemon, ca, _certs) = tls_daemon();
    // The name verified is the address' host, 127.0.0.1 (an IP SAN).
    let syslog = with_test_header(Syslog::tls(daemon.tcp_addr()))
        .root_certificates_pem(ca.clone())
        .build()
        .unwrap();
    let counters = syslog.counters();
    let broker = broker_with(syslog);
    publish(&broker, N);
    let stats = settled(&broker);
    assert_eq!(
        (stats.written, stats.dead_lettered, stats.lost),
        (N, 0, 0),
        "{stats:?}"
    );
    daemon.wait_for("every record", |s| s.len() as u64 >= N);
    assert_eq!((counters.connects(), counters.disconnects()), (1, 0));

    // By DNS name too.
    let port = daemon.port;
    let mut by_name = Syslog::tls(format!("localhost:{port}"))
        .root_certificates_pem(ca)
        .build()
        .unwrap();
    by_name.append(&record()).unwrap();
    daemon.wait_for("the record sent by name", |s| {
        s.iter().any(|m| m.msg == "secret")
    });
    let mut daemon = daemon;
    daemon.stop();
    let stored: Vec<_> = daemon
        .stored()
        .into_iter()
        .filter(|m| m.msg != "secret")
        .collect();
    check_exactly_once(&stored, N, "imtcp");
}

fn record() -> Record {
    Record::builder(Topic::new(Level::Info, "app"))
        .message("secret")
        .build()
}

#[test]
fn a_certificate_for_another_name_is_refused() {
    let (daemon, ca, _certs) = tls_daemon();
    let mut syslog = Syslog::tls(daemon.tcp_addr())
        .root_certificates_pem(ca)
        .server_name("collector.example")
        .build()
        .unwrap();
    let err = syslog.append(&record()).unwrap_err();
    assert_eq!(err.operation(), Operation::Connect);
    assert!(
        err.chain_text().contains("certificate"),
        "{}",
        err.chain_text()
    );
}

#[test]
fn a_certificate_from_an_untrusted_ca_is_refused() {
    let (daemon, _ca, _certs) = tls_daemon();
    let other = tempfile::tempdir().unwrap();
    let (other_ca, _) = certificates(other.path());
    let mut syslog = Syslog::tls(daemon.tcp_addr())
        .root_certificates_pem(other_ca)
        .build()
        .unwrap();
    let err = syslog.append(&record()).unwrap_err();
    assert_eq!(err.operation(), Operation::Connect);
    assert!(
        err.chain_text().contains("certificate"),
        "{}",
        err.chain_text()
    );
    assert!(daemon.stored().iter().all(|m| m.msg != "secret"));
}
