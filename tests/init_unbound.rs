//! `let _ = logbus::init();` and a bare `logbus::init();` (the guard dropped at once) log:
//! each test re-runs this binary as a child that calls one of them, logs to the console on
//! stderr and returns from `main` without a flush; the parent finds every record on the
//! child's stderr (the exit hook wrote what was still queued).

#![cfg(unix)]

#[path = "common/child.rs"]
mod child;

/// Below the console's queue capacity (8,192), so that none is dropped for overflow.
const RECORDS: u64 = 5_000;

fn log_records() {
    for i in 0..RECORDS {
        log::info!(target: "app", "record {i}");
    }
}

/// The child's stderr lines that are records of ours, as their numbers.
fn record_numbers(test: &str) -> Vec<String> {
    let output = child::run(test, "", &[("RUST_LOG", "info"), ("NO_COLOR", "1")]);
    child::assert_success(&output, test);
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter_map(|line| line.split_once(" INFO app: record "))
        .map(|(_, n)| n.to_owned())
        .collect()
}

#[test]
fn child_let_underscore_init() {
    if child::role("child_let_underscore_init").is_none() {
        return;
    }
    let _ = logbus::init();
    log_records();
}

#[test]
fn let_underscore_init_logs_everything() {
    assert_eq!(
        record_numbers("child_let_underscore_init"),
        child::numbers(RECORDS)
    );
}

#[test]
fn child_bare_init() {
    if child::role("child_bare_init").is_none() {
        return;
    }
    // What the `unused_must_use` warning is about: the guard is dropped at once.
    #[allow(unused_must_use)]
    {
        logbus::init();
    }
    log_records();
}

#[test]
fn bare_init_statement_logs_everything() {
    assert_eq!(record_numbers("child_bare_init"), child::numbers(RECORDS));
}
