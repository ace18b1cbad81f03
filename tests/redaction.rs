//! Redaction: a secret in a configured key or in the message appears in no
//! output: console, file, JSON, syslog (feature `syslog`), and the
//! dead-letter appender after retries. Local brokers only.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use logbus::appenders::{ColorMode, Console, FileAppender, JsonAppender};
use logbus::{Memory, Redaction, RetryPolicy, Subscription, Value};

const SECRET: &str = "hunter2";

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

fn redaction() -> Redaction {
    Redaction::common().keys(["x-session"]).message(|msg| {
        msg.contains(SECRET)
            .then(|| msg.replace(SECRET, "[redacted]"))
    })
}

#[test]
fn a_secret_reaches_no_appender_the_dead_letter_one_included() {
    common::enable_all_levels();
    let dir = tempfile::tempdir().unwrap();
    let text_path = dir.path().join("app.log");
    let json_path = dir.path().join("app.json");
    let console_out = Shared::default();
    let (dead, dead_letters) = Memory::new();
    let broker = logbus::builder()
        .redact(redaction())
        .appender(Subscription::builder(
            "console",
            Console::builder()
                .color(ColorMode::Never)
                .build_with_writers(console_out.clone(), console_out.clone()),
        ))
        .appender(Subscription::builder(
            "file",
            FileAppender::builder(&text_path).build().unwrap(),
        ))
        .appender(Subscription::builder(
            "json",
            JsonAppender::file(FileAppender::builder(&json_path)).unwrap(),
        ))
        // Every write fails: after its retries, each record is a dead letter.
        .appender(
            Subscription::builder(
                "full-disk",
                FileAppender::builder("/dev/full").build().unwrap(),
            )
            .retry(
                RetryPolicy::new()
                    .max_attempts(2)
                    .initial_backoff(Duration::ZERO),
            ),
        )
        .dead_letter(Subscription::builder("dead", dead))
        .build()
        .unwrap();

    // Syslog over UDP to a socket of the test's own: one datagram a record.
    #[cfg(feature = "syslog")]
    let collector = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    #[cfg(feature = "syslog")]
    broker
        .subscribe(Subscription::builder(
            "syslog",
            logbus::appenders::Syslog::udp(collector.local_addr().unwrap())
                .build()
                .unwrap(),
        ))
        .unwrap();

    log::info!(logger: &broker, target: "app", user = "ann", password = SECRET; "login");
    log::warn!(logger: &broker, target: "app", Authorization = SECRET, API_KEY = SECRET; "call");
    log::error!(logger: &broker, target: "app", "x-session" = SECRET; "the password is {}", SECRET);
    let report = broker.shutdown();
    assert_eq!(report.subscriptions["full-disk"].dead_lettered, 3);

    #[allow(unused_mut)]
    let mut outputs = vec![
        ("console", console_out.text()),
        ("file", std::fs::read_to_string(&text_path).unwrap()),
        ("json", std::fs::read_to_string(&json_path).unwrap()),
    ];
    #[cfg(feature = "syslog")]
    {
        let mut datagrams = String::new();
        let mut buffer = [0u8; 4096];
        for _ in 0..3 {
            let n = collector.recv(&mut buffer).unwrap();
            datagrams.push_str(&String::from_utf8_lossy(&buffer[..n]));
            datagrams.push('\n');
        }
        outputs.push(("syslog", datagrams));
    }
    for (name, text) in &outputs {
        assert_eq!(text.lines().count(), 3, "{name}: {text}");
        assert!(!text.contains(SECRET), "{name} holds the secret: {text}");
        assert!(text.contains("[redacted]"), "{name}: {text}");
        assert!(
            text.contains("ann"),
            "{name} lost what is not secret: {text}"
        );
    }
    let dead = dead_letters.records();
    assert_eq!(dead.len(), 3);
    for record in &dead {
        assert!(!record.message().contains(SECRET), "{}", record.message());
        for (key, value) in record.key_values() {
            assert!(
                !value.to_string().contains(SECRET),
                "dead letter {key}={value}"
            );
        }
    }
    assert_eq!(dead[0].get("password"), Some(&Value::from("[redacted]")));
    assert_eq!(dead[2].message(), "the password is [redacted]");
}

#[test]
fn without_redaction_nothing_is_touched() {
    let broker = common::broker();
    let (memory, captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("m", memory))
        .unwrap();
    log::info!(logger: &broker, password = SECRET; "plain {}", 1);
    broker.flush().unwrap();
    let records = captured.records();
    assert_eq!(records[0].get("password"), Some(&Value::from(SECRET)));
}

/// A rewritten message is held to the size bound as any message is, and
/// counted as cut, through `log`'s macros and logbus's (a review found the
/// rewrite stored whole).
#[test]
fn a_rewritten_message_is_held_to_the_size_bound() {
    common::enable_all_levels();
    let (memory, captured) = Memory::new();
    let broker = logbus::builder()
        .max_record_bytes(1024)
        .redact(Redaction::new().message(|msg| Some(msg.repeat(1000))))
        .appender(Subscription::builder("memory", memory))
        .build()
        .unwrap();
    log::info!(logger: &broker, target: "app", "long {}", 1);
    logbus::info!(logger: &broker, target: "app", "long {}", 2);
    broker.flush().unwrap();
    let messages = captured.messages();
    assert_eq!(messages.len(), 2);
    for (message, n) in messages.iter().zip(["1", "2"]) {
        let kept = &message[..message.find('…').expect("the marker")];
        assert_eq!(kept.len(), 1024, "{message:.60}");
        assert!(kept.starts_with(&format!("long {n}long {n}")));
        assert!(
            message.ends_with("…[truncated 4976 bytes]"),
            "{message:.60}"
        );
    }
    assert_eq!(broker.stats().truncated, 2);
}
