//! `logbus tail`, run as the built binary on files written by the real
//! appenders of a local broker: each record goes to a JSON file and to a
//! text file (the default layout), so the text file says what the JSON
//! records must look like as text. Filters, `-n`, passthrough, bad
//! arguments, a closed stdout, and `--follow` across rotations.
//!
//! Rotation is the file appender's own, by time, with a clock the test
//! moves. A follower is made to miss rotations on purpose by stopping it
//! (SIGSTOP, confirmed with `waitpid`), so "two rotations between two
//! reads" happens every run; its output is read line by line through a
//! channel whose timeout is only a safety net against a hang.

#![cfg(unix)]

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, SystemTime};

use log::Level;
use logbus::appenders::{Clock, FileAppender, JsonAppender, Naming, Rotation};
use logbus::{Broker, OverflowPolicy, Subscription, TopicPattern};

/// Only a safety net against a hang: a healthy run never gets near it.
const SAFETY_NET: Duration = Duration::from_secs(30);

const HOUR: u64 = 3_600;
/// 2026-11-29T00:00:01Z.
const START: u64 = 1_795_910_401;

/// A clock the test moves: the appenders rotate exactly when it says.
#[derive(Debug, Clone)]
struct ManualClock(Arc<AtomicU64>);

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        // Relaxed: the value publishes no other memory, and the worker
        // reads it for a record published after the store, so the queue's
        // push and take order the two.
        SystemTime::UNIX_EPOCH + Duration::from_secs(self.0.load(Ordering::Relaxed))
    }
}

/// A broker writing every record to `app.json` (the JSON appender) and to
/// `app.log` (the file appender, default layout), both rotated hourly by
/// the same manual clock and keeping 5 rotated files (numbered, or with
/// [`Logs::dated`] named by their hour).
struct Logs {
    dir: tempfile::TempDir,
    broker: Broker,
    clock: ManualClock,
}

impl Logs {
    fn new() -> Logs {
        Logs::named(Naming::NUMBERED, None)
    }

    fn dated() -> Logs {
        Logs::named(Naming::DATED, None)
    }

    /// Dated, and rotated by size too: with `max_bytes(1)` each record
    /// gets a file of its own.
    fn dated_sized(max_bytes: u64) -> Logs {
        Logs::named(Naming::DATED, Some(max_bytes))
    }

    fn named(naming: Naming, max_bytes: Option<u64>) -> Logs {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock(Arc::new(AtomicU64::new(START)));
        let file = |name: &str| {
            let builder = FileAppender::builder(dir.path().join(name))
                .rotate_every(Rotation::HOURLY)
                .naming(naming)
                .keep(5)
                .clock(clock.clone());
            match max_bytes {
                Some(max) => builder.max_bytes(max),
                None => builder,
            }
        };
        let broker = common::broker();
        broker
            .subscribe(
                Subscription::builder("json", JsonAppender::file(file("app.json")).unwrap())
                    .overflow(OverflowPolicy::Block),
            )
            .unwrap();
        broker
            .subscribe(
                Subscription::builder("text", file("app.log").build().unwrap())
                    .overflow(OverflowPolicy::Block),
            )
            .unwrap();
        Logs { dir, broker, clock }
    }

    fn json(&self) -> PathBuf {
        self.dir.path().join("app.json")
    }

    fn text(&self) -> PathBuf {
        self.dir.path().join("app.log")
    }

    fn log(&self, level: Level, target: &str, msg: &str) {
        log::log!(logger: &self.broker, target: target, level, "{msg}");
    }

    /// Logs `msg` at info on `app`, and waits until it is in the files.
    fn info(&self, msg: &str) {
        self.log(Level::Info, "app", msg);
        self.flush();
    }

    fn flush(&self) {
        self.broker.flush().unwrap();
    }

    /// Moves the clock an hour on: the next record starts a new file.
    fn next_hour(&self) {
        // Relaxed: see `ManualClock::now`.
        self.clock.0.fetch_add(HOUR, Ordering::Relaxed);
    }

    /// Moves the clock an hour back.
    fn previous_hour(&self) {
        // Relaxed: see `ManualClock::now`.
        self.clock.0.fetch_sub(HOUR, Ordering::Relaxed);
    }

    /// The text appender's line for the record whose message is `msg`,
    /// from the live or a rotated text file.
    fn text_line(&self, msg: &str) -> String {
        // The live file and the rotated ones, whatever their names.
        let files = fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with("app.log")
            });
        files
            .filter_map(|f| fs::read_to_string(f).ok())
            .flat_map(|text| text.lines().map(str::to_owned).collect::<Vec<_>>())
            .find(|line| line.ends_with(&format!(": {msg}")))
            .unwrap_or_else(|| panic!("no text line for {msg:?}"))
    }

    /// The text lines of the records whose messages are `msgs`.
    fn text_lines(&self, msgs: &[&str]) -> Vec<String> {
        msgs.iter().map(|m| self.text_line(m)).collect()
    }
}

/// Records on several levels and targets, some with key-values.
fn sample() -> Logs {
    let logs = Logs::new();
    let b = &logs.broker;
    log::info!(logger: b, target: "app::db", "db connected");
    log::warn!(logger: b, target: "app::db::pool", free = 1; "pool low");
    log::error!(logger: b, target: "app::http", status = 500, path = "/x y"; "http 500");
    log::debug!(logger: b, target: "app::db", "db query\nwith a line feed");
    log::trace!(logger: b, target: "other", "other trace");
    log::info!(logger: b, target: "app", ratio = 0.5, ok = true; "app started");
    log::error!(logger: b, target: "other::deep", "other failed");
    logs.flush();
    logs
}

/// Runs `logbus tail ARGS` to its end, without colour from the environment.
fn tail(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_logbus"))
        .arg("tail")
        .args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Runs `logbus tail ARGS FILE`, checks it succeeded, returns its stdout.
#[track_caller]
fn tail_ok(args: &[&str], file: &Path) -> String {
    let mut all = args.to_vec();
    all.push(file.to_str().unwrap());
    let out = tail(&all);
    assert!(
        out.status.success(),
        "{all:?}: {:?}, stderr {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_owned).collect()
}

#[test]
fn json_records_print_as_the_text_appender_writes_them() {
    let logs = sample();
    let text = fs::read_to_string(logs.text()).unwrap();
    assert_eq!(text.lines().count(), 7);
    assert_eq!(tail_ok(&["--color", "never"], &logs.json()), text);
    // Not a terminal: `auto` means no colour.
    assert_eq!(tail_ok(&[], &logs.json()), text);
}

#[test]
fn color_always_colours_the_level() {
    let logs = sample();
    let out = tail_ok(&["--color=always", "--level", "warn"], &logs.json());
    let expected: Vec<String> = [
        ("pool low free=1", "33m WARN"),
        ("http 500 status=500 path=/x y", "31mERROR"),
        ("other failed", "31mERROR"),
    ]
    .iter()
    .map(|(msg, sgr)| {
        let plain = logs.text_line(msg);
        let level = &sgr[3..];
        plain.replacen(level, &format!("\x1b[{sgr}\x1b[0m"), 1)
    })
    .collect();
    assert_eq!(lines(&out), expected);
}

#[test]
fn topic_filter_is_repeatable() {
    let logs = sample();
    let one = tail_ok(&["--topic", "*.app.db.#"], &logs.json());
    assert_eq!(
        lines(&one),
        logs.text_lines(&[
            "db connected",
            "pool low free=1",
            r"db query\nwith a line feed"
        ])
    );
    let two = tail_ok(
        &["--topic", "*.app.db.#", "--topic", "error.#"],
        &logs.json(),
    );
    assert_eq!(
        lines(&two),
        logs.text_lines(&[
            "db connected",
            "pool low free=1",
            "http 500 status=500 path=/x y",
            r"db query\nwith a line feed",
            "other failed",
        ])
    );
    // The subscription syntax: `*` is one segment, so `info.app` only.
    let star = tail_ok(&["--topic", "info.*"], &logs.json());
    assert_eq!(
        lines(&star),
        logs.text_lines(&["app started ratio=0.5 ok=true"])
    );
}

#[test]
fn level_filter_keeps_that_level_and_more_severe() {
    let logs = sample();
    let warn = tail_ok(&["--level", "warn"], &logs.json());
    assert_eq!(
        lines(&warn),
        logs.text_lines(&[
            "pool low free=1",
            "http 500 status=500 path=/x y",
            "other failed"
        ])
    );
    let error = tail_ok(&["--level", "ERROR"], &logs.json());
    assert_eq!(
        lines(&error),
        logs.text_lines(&["http 500 status=500 path=/x y", "other failed"])
    );
    let both = tail_ok(&["--level", "Info", "--topic", "*.app.#"], &logs.json());
    assert_eq!(
        lines(&both),
        logs.text_lines(&[
            "db connected",
            "pool low free=1",
            "http 500 status=500 path=/x y",
            "app started ratio=0.5 ok=true",
        ])
    );
    let trace = tail_ok(&["--level", "trace"], &logs.json());
    assert_eq!(trace, fs::read_to_string(logs.text()).unwrap());
}

#[test]
fn n_starts_from_the_last_n_matching_records() {
    let logs = sample();
    let last = tail_ok(&["-n", "2"], &logs.json());
    assert_eq!(
        lines(&last),
        logs.text_lines(&["app started ratio=0.5 ok=true", "other failed"])
    );
    let last_errors = tail_ok(&["-n2", "--level", "error"], &logs.json());
    assert_eq!(
        lines(&last_errors),
        logs.text_lines(&["http 500 status=500 path=/x y", "other failed"])
    );
    let one_db = tail_ok(&["--lines", "1", "--topic", "*.app.db"], &logs.json());
    assert_eq!(
        lines(&one_db),
        logs.text_lines(&[r"db query\nwith a line feed"])
    );
    assert_eq!(tail_ok(&["-n", "0"], &logs.json()), "");
    assert_eq!(
        tail_ok(&["-n", "100"], &logs.json()),
        fs::read_to_string(logs.text()).unwrap()
    );
}

#[test]
fn json_passes_through_byte_identical() {
    let logs = sample();
    let file = fs::read_to_string(logs.json()).unwrap();
    assert_eq!(tail_ok(&["--json"], &logs.json()), file);
    assert_eq!(
        tail_ok(&["--json", "--color", "always"], &logs.json()),
        file
    );
    let errors: String = file
        .split_inclusive('\n')
        .filter(|line| line.contains(r#""level":"ERROR""#))
        .collect();
    assert_eq!(errors.lines().count(), 2);
    assert_eq!(
        tail_ok(&["--json", "--level", "error"], &logs.json()),
        errors
    );
    let last: String = file.split_inclusive('\n').skip(5).collect();
    assert_eq!(tail_ok(&["--json", "-n", "2"], &logs.json()), last);
}

#[test]
fn text_lines_pass_through_unchanged_without_a_filter() {
    let logs = sample();
    let file = fs::read_to_string(logs.text()).unwrap();
    assert_eq!(tail_ok(&[], &logs.text()), file);
    assert_eq!(tail_ok(&["--color", "always"], &logs.text()), file);
    assert_eq!(tail_ok(&["--json"], &logs.text()), file);
    let last: String = file.split_inclusive('\n').skip(4).collect();
    assert_eq!(tail_ok(&["-n", "3"], &logs.text()), last);
    // A text line has no topic: a filter drops every text line.
    assert_eq!(tail_ok(&["--level", "trace"], &logs.text()), "");
    assert_eq!(tail_ok(&["--topic", "#"], &logs.text()), "");
}

#[test]
fn a_mixed_file_and_a_last_line_without_its_line_feed() {
    let logs = sample();
    let json = fs::read_to_string(logs.json()).unwrap();
    let first_json = json.lines().next().unwrap();
    let path = logs.dir.path().join("mixed");
    fs::write(
        &path,
        format!("plain text\n{{\"not\":\"a record\"}}\n{first_json}\nno line feed"),
    )
    .unwrap();
    assert_eq!(
        lines(&tail_ok(&[], &path)),
        [
            "plain text".to_owned(),
            r#"{"not":"a record"}"#.to_owned(),
            logs.text_line("db connected"),
            "no line feed".to_owned(),
        ]
    );
    assert_eq!(
        lines(&tail_ok(&["--topic", "#"], &path)),
        [logs.text_line("db connected")]
    );
}

#[test]
fn bad_arguments_exit_2_with_the_usage_on_stderr() {
    let logs = sample();
    let file = logs.json();
    let file = file.to_str().unwrap();
    let pattern_error = TopicPattern::parse("a..b").unwrap_err().to_string();
    // (arguments after `logbus`, what stderr must say besides the usage)
    let cases: &[(&[&str], &str)] = &[
        (&[], "no command given"),
        (&["head", file], "unknown command \"head\""),
        (&["tail"], "missing FILE"),
        (&["tail", "--bogus", file], "invalid option '--bogus'"),
        (&["tail", "-x", file], "invalid option '-x'"),
        (&["tail", file, file], "unexpected argument"),
        (&["tail", file, "-n"], "missing argument for option '-n'"),
        (
            &["tail", "-n", "ten", file],
            "-n: \"ten\" is not a number of records",
        ),
        (
            &["tail", "-n", "-1", file],
            "-n: \"-1\" is not a number of records",
        ),
        (
            &["tail", "--level", "loud", file],
            "--level: \"loud\" is not one of",
        ),
        (
            &["tail", "--level", "off", file],
            "--level: \"off\" is not one of",
        ),
        (
            &["tail", "--color", "sometimes", file],
            "--color: \"sometimes\"",
        ),
        (&["tail", "--topic", "a..b", file], &pattern_error),
        (&["tail", "--topic", "", file], "invalid topic pattern \"\""),
    ];
    for &(args, message) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_logbus"))
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(
            stderr.contains("usage: logbus tail [OPTIONS] FILE"),
            "{args:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn a_missing_file_exits_1_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.log");
    for follow in [&[][..], &["--follow"]] {
        let mut args = follow.to_vec();
        args.push(missing.to_str().unwrap());
        let out = tail(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(missing.to_str().unwrap()), "{stderr}");
    }
}

#[test]
fn help_goes_to_stdout_and_exits_0() {
    for args in [
        &["--help"][..],
        &["-h"],
        &["tail", "-h"],
        &["tail", "--help", "x"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_logbus"))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            stdout.starts_with("usage: logbus tail [OPTIONS] FILE\n"),
            "{stdout}"
        );
        for option in ["--topic", "--level", "-n", "--follow", "--json", "--color"] {
            assert!(stdout.contains(option), "{option}");
        }
        assert!(out.stderr.is_empty());
    }
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let logs = Logs::new();
    // Far more than a pipe holds (64 KiB), so the reader leaves first.
    for i in 0..5_000 {
        logs.log(Level::Info, "app", &format!("record {i}"));
    }
    logs.flush();
    let mut child = Command::new(env!("CARGO_BIN_EXE_logbus"))
        .args(["tail", logs.json().to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.ends_with("app: record 0\n"), "{first}");
    drop(stdout); // `| head -1`
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A `logbus tail --follow` child, its stdout read line by line on a
/// thread. Killed when dropped.
struct Follower {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Follower {
    fn spawn(args: &[&str], file: &Path) -> Follower {
        let mut child = Command::new(env!("CARGO_BIN_EXE_logbus"))
            .args(["tail", "--follow", "--color", "never"])
            .args(args)
            .arg(file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Follower { child, lines }
    }

    /// The next lines are exactly `expected`, in order.
    #[track_caller]
    fn expect(&self, expected: &[String]) {
        for want in expected {
            match self.lines.recv_timeout(SAFETY_NET) {
                Ok(line) => assert_eq!(&line, want),
                Err(e) => panic!("waiting for {want:?}: {e}"),
            }
        }
    }

    /// Stops the child, and returns once it is stopped: whatever is written
    /// until [`resume`](Follower::resume) is unseen by it, whatever point
    /// of its loop it stopped at.
    fn pause(&self) {
        let pid = libc::pid_t::try_from(self.child.id()).unwrap();
        // SAFETY: plain system calls on our own child's pid, which stays
        // ours (unreaped) until `Drop` waits for it.
        unsafe {
            assert_eq!(libc::kill(pid, libc::SIGSTOP), 0);
            let mut status = 0;
            assert_eq!(libc::waitpid(pid, &mut status, libc::WUNTRACED), pid);
            assert!(libc::WIFSTOPPED(status), "status {status:#x}");
        }
    }

    fn resume(&self) {
        let pid = libc::pid_t::try_from(self.child.id()).unwrap();
        // SAFETY: as in `pause`.
        unsafe {
            assert_eq!(libc::kill(pid, libc::SIGCONT), 0);
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        // SIGKILL ends a stopped child too.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Logs `msgs` at info, each waited for, and returns their text lines.
fn infos(logs: &Logs, msgs: &[&str]) -> Vec<String> {
    for msg in msgs {
        logs.info(msg);
    }
    logs.text_lines(msgs)
}

#[test]
fn follow_starts_from_the_last_10_records_and_reads_what_comes() {
    let logs = Logs::new();
    let names: Vec<String> = (0..12).map(|i| format!("r{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let old = infos(&logs, &names);
    let follower = Follower::spawn(&[], &logs.json());
    follower.expect(&old[2..]);
    follower.expect(&infos(&logs, &["new 1"]));
    follower.expect(&infos(&logs, &["new 2", "new 3"]));
}

#[test]
fn follow_finishes_the_old_file_after_a_rotation() {
    let logs = Logs::new();
    infos(&logs, &["a", "b"]);
    let follower = Follower::spawn(&["-n", "1"], &logs.json());
    follower.expect(&logs.text_lines(&["b"]));
    // Written to the old file after the follower's last read of it.
    follower.pause();
    logs.info("c");
    logs.next_hour();
    logs.info("d");
    assert!(logs.dir.path().join("app.json.1").exists());
    follower.resume();
    follower.expect(&logs.text_lines(&["c", "d"]));
    // Lockstep now: one rotation, each record seen before the next.
    logs.next_hour();
    follower.expect(&infos(&logs, &["e"]));
    follower.expect(&infos(&logs, &["f"]));
}

#[test]
fn follow_reads_two_rotations_between_two_reads_oldest_first_once() {
    let logs = Logs::new();
    infos(&logs, &["a", "b", "c"]);
    let follower = Follower::spawn(&["-n", "1", "--level", "info"], &logs.json());
    follower.expect(&logs.text_lines(&["c"]));

    follower.pause();
    logs.info("d"); // the end of the file the follower has open
    logs.next_hour();
    logs.info("e"); // app.json.1 at the end: a whole file it never sees
    logs.log(Level::Debug, "app", "filtered out");
    logs.info("f");
    logs.next_hour();
    logs.info("g"); // the live file
    let json = fs::read_to_string(logs.dir.path().join("app.json.2")).unwrap();
    assert!(json.contains(r#""msg":"d""#) && !json.contains(r#""msg":"e""#));
    let json = fs::read_to_string(logs.dir.path().join("app.json.1")).unwrap();
    assert!(json.contains(r#""msg":"e""#) && json.contains(r#""msg":"f""#));
    follower.resume();

    follower.expect(&logs.text_lines(&["d", "e", "f", "g"]));
    // Nothing twice: the next line is the next record.
    follower.expect(&infos(&logs, &["h"]));
    // And once more, with the follower stopped between two rotations.
    follower.pause();
    logs.next_hour();
    logs.info("i");
    logs.next_hour();
    logs.info("j");
    logs.next_hour();
    logs.info("k");
    follower.resume();
    follower.expect(&logs.text_lines(&["i", "j", "k"]));
    follower.expect(&infos(&logs, &["l"]));
}

#[test]
fn follow_reads_dated_rotations_between_two_reads_oldest_first_once() {
    let logs = Logs::dated();
    infos(&logs, &["a", "b"]);
    let follower = Follower::spawn(&["-n", "1"], &logs.json());
    follower.expect(&logs.text_lines(&["b"]));

    follower.pause();
    logs.info("c"); // the end of the file the follower has open
    logs.next_hour();
    logs.info("d"); // a whole rotated file it never sees
    logs.next_hour();
    logs.info("e"); // the live file
    let hour = |h: &str| logs.dir.path().join(format!("app.json.2026-11-29T{h}"));
    let json = fs::read_to_string(hour("00")).unwrap();
    assert!(json.contains(r#""msg":"c""#) && !json.contains(r#""msg":"d""#));
    assert!(fs::read_to_string(hour("01"))
        .unwrap()
        .contains(r#""msg":"d""#));
    follower.resume();

    follower.expect(&logs.text_lines(&["c", "d", "e"]));
    follower.expect(&infos(&logs, &["f"]));
    // Three rotations while stopped.
    follower.pause();
    for msg in ["g", "h", "i"] {
        logs.next_hour();
        logs.info(msg);
    }
    follower.resume();
    follower.expect(&logs.text_lines(&["g", "h", "i"]));
    follower.expect(&infos(&logs, &["j"]));
}

#[test]
fn follow_reads_each_file_once_after_the_clock_goes_back() {
    let logs = Logs::dated_sized(1);
    infos(&logs, &["a"]);
    let follower = Follower::spawn(&["-n", "1"], &logs.json());
    follower.expect(&logs.text_lines(&["a"]));
    logs.next_hour();
    follower.expect(&infos(&logs, &["b"])); // "a" rotated as T00
    logs.previous_hour();
    follower.expect(&infos(&logs, &["c"])); // "b" rotated as T01
                                            // The file holding "c" started at T00 by the clock, but is named
                                            // after T01, so the follower, which holds it, finds nothing newer
                                            // than it and reads "b" only once.
    follower.expect(&infos(&logs, &["d"]));
    let json = logs.dir.path().join("app.json.2026-11-29T01.1");
    assert!(fs::read_to_string(json).unwrap().contains(r#""msg":"c""#));
    follower.expect(&infos(&logs, &["e"]));
}

#[test]
fn follow_holds_a_partial_line_and_rereads_a_truncated_file() {
    // The appenders write whole lines, so these bytes are written by hand.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hand.log");
    fs::write(&path, "old 1\nold 2\n").unwrap();
    let follower = Follower::spawn(&["-n", "1"], &path);
    follower.expect(&["old 2".to_owned()]);
    let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(b"one\npar").unwrap();
    follower.expect(&["one".to_owned()]);
    file.write_all(b"tial\n").unwrap();
    follower.expect(&["partial".to_owned()]);

    follower.pause();
    file.set_len(0).unwrap();
    file.write_all(b"two\n").unwrap();
    follower.resume();
    follower.expect(&["two".to_owned()]);
    file.write_all(b"three\n").unwrap();
    follower.expect(&["three".to_owned()]);
}
