//! Crash consistency: a process killed with SIGKILL in the middle of a
//! flood leaves a file whose every line but possibly the last is a
//! complete record, and the next process appends on a fresh line.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use logbus::appenders::{FileAppender, Layout};
use logbus::{OverflowPolicy, Subscription};

const CHILD: &str = "LOGBUS_CRASH_CHILD";
const PAD: usize = 3000;

fn line_ok(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("record ") else {
        return false;
    };
    let Some((n, pad)) = rest.split_once(' ') else {
        return false;
    };
    n.parse::<u64>().is_ok() && pad.len() == PAD && pad.bytes().all(|b| b == b'x')
}

fn broker_on(path: &str) -> logbus::Broker {
    common::enable_all_levels();
    let file = FileAppender::builder(path)
        .layout(Layout::parse("{msg}").unwrap())
        .build()
        .unwrap();
    logbus::builder()
        .appender(Subscription::builder("file", file).overflow(OverflowPolicy::Block))
        .build()
        .unwrap()
}

/// The child: floods until killed, saying "ready" once records reached
/// the file.
#[test]
fn flood_child() {
    let Some(path) = std::env::var_os(CHILD) else {
        return; // only as the parent's child
    };
    let broker = broker_on(path.to_str().unwrap());
    let pad = "x".repeat(PAD);
    for i in 0..1000u64 {
        log::info!(logger: &broker, "record {i} {pad}");
    }
    broker.flush().unwrap();
    println!("ready");
    for i in 1000u64.. {
        log::info!(logger: &broker, "record {i} {pad}");
    }
}

#[test]
fn a_killed_flood_leaves_complete_lines_and_a_restart_starts_a_fresh_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "flood_child", "--nocapture", "--test-threads=1"])
        .env(CHILD, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("ready") {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the child ended before it was ready"
        );
    }
    child.kill().unwrap(); // SIGKILL, in the middle of the flood
    child.wait().unwrap();

    let before = std::fs::read(&path).unwrap();
    let text = String::from_utf8_lossy(&before);
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    let complete = if text.ends_with('\n') {
        lines.len()
    } else {
        lines.len() - 1
    };
    assert!(complete >= 1000, "{complete} complete lines");
    for (i, l) in lines[..complete].iter().enumerate() {
        assert!(
            line_ok(l),
            "line {i} is not a complete record: {:?}",
            &l[..l.len().min(60)]
        );
    }

    // The next process appends on a fresh line.
    let broker = broker_on(path.to_str().unwrap());
    log::info!(logger: &broker, "after the restart");
    broker.shutdown();
    let after = std::fs::read(&path).unwrap();
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "the old content is untouched"
    );
    let added = String::from_utf8(after[before.len()..].to_vec()).unwrap();
    let expected = if text.ends_with('\n') {
        "after the restart\n"
    } else {
        "\nafter the restart\n"
    };
    assert_eq!(added, expected);
}
