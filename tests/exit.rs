//! Guard drop writes everything queued, also when `main` then calls `std::process::exit`:
//! the test re-runs its own binary as a child that logs, drops the guard and exits. The
//! exit hook is off here (`exit_timeout(Duration::ZERO)`), so the guard's flush alone is
//! tested; `tests/exit_hook.rs` tests the hook.

mod common;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use logbus::{AppendError, Appender, Operation, OverflowPolicy, Record, Subscription};

/// Set (to the output file's path) only in the child process.
const CHILD_ENV: &str = "LOGBUS_EXIT_CHILD";
/// The child test's name, for `--exact`.
const CHILD_TEST: &str = "child_logs_drops_the_guard_then_exits";

fn records() -> u64 {
    common::scaled(10_000, 20)
}

/// Appends each record's message as a line, flushing every line (slow-ish on
/// purpose: one system call per record).
struct LineFile(BufWriter<File>);

impl Appender for LineFile {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        let write = |w: &mut BufWriter<File>| {
            w.write_all(record.message().as_bytes())?;
            w.write_all(b"\n")?;
            w.flush()
        };
        write(&mut self.0).map_err(|e| AppendError::io(Operation::Write, e))
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        self.0
            .flush()
            .map_err(|e| AppendError::io(Operation::Flush, e))
    }
}

/// Runs only in the child process; does nothing in a normal test run.
#[test]
fn child_logs_drops_the_guard_then_exits() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    {
        let file = File::create(Path::new(&path)).unwrap();
        let _guard = logbus::builder()
            .exit_timeout(Duration::ZERO)
            .appender(
                Subscription::builder("lines", LineFile(BufWriter::new(file)))
                    .overflow(OverflowPolicy::Block),
            )
            .install()
            .unwrap();
        for i in 0..records() {
            log::info!(target: "app", "{i}");
        }
    }
    std::process::exit(0);
}

#[test]
fn guard_drop_writes_everything_queued_before_process_exit() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lines.txt");
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "child failed: {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let expected: Vec<String> = (0..records()).map(|i| i.to_string()).collect();
    assert_eq!(lines.len(), expected.len(), "line count");
    assert_eq!(lines, expected);
    assert!(text.ends_with('\n'), "last line complete");
}
