//! Re-running the test binary as a child process, for what happens when a process ends
//! (the technique of `tests/crash.rs`): the parent runs one test of its own binary with
//! [`ROLE`] naming it, and that test, seeing its name there, plays the child.
//!
//! Included with `#[path = "common/child.rs"] mod child;`.

#![allow(dead_code, unreachable_pub)]

use std::process::{Command, Output};

/// The child test to play, set in the child only.
pub const ROLE: &str = "LOGBUS_CHILD_ROLE";
/// What the parent passes the child (a path, usually).
pub const ARG: &str = "LOGBUS_CHILD_ARG";

/// How long a child may run before its alarm ends it: only a safety net, so that a child
/// that hangs fails its test instead of hanging it.
pub const ALARM_SECS: u32 = 60;

/// `Some(arg)` when this process is the child playing `test` (its alarm is then armed);
/// `None` in an ordinary test run, where the child test does nothing.
pub fn role(test: &str) -> Option<String> {
    if std::env::var(ROLE).ok()? != test {
        return None;
    }
    // SAFETY: `alarm` only schedules a SIGALRM, whose default action ends the process.
    unsafe { libc::alarm(ALARM_SECS) };
    Some(std::env::var(ARG).unwrap_or_default())
}

/// Runs this binary as the child playing `test`, with `arg`, and waits for it.
pub fn run(test: &str, arg: &str, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(ROLE, test)
        .env(ARG, arg);
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

/// Fails with the child's output unless it exited with status 0.
#[track_caller]
pub fn assert_success(output: &Output, what: &str) {
    use std::os::unix::process::ExitStatusExt;
    let hung = output.status.signal() == Some(libc::SIGALRM);
    assert!(
        output.status.success(),
        "{what}: the child {}: {:?}\nstdout:\n{}\nstderr:\n{}",
        if hung {
            "hung (ended by its alarm)"
        } else {
            "failed"
        },
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The lines of the file at `path`, which must end with a line feed.
#[track_caller]
pub fn lines(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "last line incomplete"
    );
    text.lines().map(str::to_owned).collect()
}

/// `"0"`, `"1"`, ... up to `n - 1`.
pub fn numbers(n: u64) -> Vec<String> {
    (0..n).map(|i| i.to_string()).collect()
}
