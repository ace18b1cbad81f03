//! `Builder::env_directives`: `RUST_LOG` read by the builder, composing with each appender's
//! own level. Each case runs this test binary again as a child process with its own
//! environment (setting variables in a multi-threaded test process races with readers).

use std::ffi::OsStr;
use std::process::Command;

use logbus::{InstallError, LevelFilter, Memory, Subscription};

const CHILD: &str = "LOGBUS_ENV_DIRECTIVES_CHILD";

/// The child: a broker reading `RUST_LOG` over a default of `info`, with a file-like appender
/// taking everything and a console-like one at `warn`; prints what each received.
#[test]
fn env_child() {
    if std::env::var_os(CHILD).is_none() {
        return; // only as the parent's child
    }
    let (file, to_file) = Memory::new();
    let (console, to_console) = Memory::new();
    let built = logbus::builder()
        .directives("info".parse().unwrap())
        .env_directives(logbus::ENV_VAR)
        .appender(Subscription::builder("file", file))
        .appender(Subscription::builder("console", console).level(LevelFilter::Warn))
        .build();
    let broker = match built {
        Ok(broker) => broker,
        Err(InstallError::EnvDirectives { var, error }) => {
            println!("error: {var}: {error}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    log::set_max_level(LevelFilter::Trace);
    log::debug!(logger: &broker, target: "app::db", "db debug");
    log::info!(logger: &broker, target: "app::db", "db info");
    log::info!(logger: &broker, target: "app::http", "http info");
    log::warn!(logger: &broker, target: "app::http", "http warn");
    log::error!(logger: &broker, target: "hyper", "hyper error");
    broker.flush().unwrap();
    println!("file: {}", to_file.messages().join("|"));
    println!("console: {}", to_console.messages().join("|"));
}

/// Runs the child with `RUST_LOG` set to `value` (or unset) and returns its report.
fn run(value: Option<&str>) -> String {
    run_os(value.map(OsStr::new))
}

/// [`run`], with any value an environment variable can hold.
fn run_os(value: Option<&OsStr>) -> String {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "env_child", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1");
    match value {
        Some(value) => command.env(logbus::ENV_VAR, value),
        None => command.env_remove(logbus::ENV_VAR),
    };
    let output = command.output().unwrap();
    assert!(output.status.success(), "child failed: {output:?}");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        // libtest's "test env_child ... " may share the first line.
        .filter_map(|l| {
            ["file: ", "console: ", "error: "]
                .iter()
                .find_map(|tag| l.find(tag).map(|at| &l[at..]))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn unset_or_blank_keeps_the_default_in_code() {
    let expected = "file: db info|http info|http warn|hyper error\nconsole: http warn|hyper error";
    assert_eq!(run(None), expected);
    assert_eq!(run(Some("  ")), expected);
}

#[test]
fn rust_log_replaces_the_default_and_narrows_every_appender() {
    assert_eq!(
        run(Some("error")),
        "file: hyper error\nconsole: hyper error"
    );
    assert_eq!(
        run(Some("warn,app::db=debug")),
        "file: db debug|db info|http warn|hyper error\nconsole: http warn|hyper error"
    );
}

#[test]
fn rust_log_never_widens_an_appender_past_its_own_level() {
    assert_eq!(
        run(Some("trace")),
        "file: db debug|db info|http info|http warn|hyper error\nconsole: http warn|hyper error"
    );
}

#[test]
fn env_logger_style_empty_path_is_accepted() {
    assert_eq!(
        run(Some("error,=debug")),
        "file: db debug|db info|http info|http warn|hyper error\nconsole: http warn|hyper error"
    );
}

#[test]
fn a_malformed_value_is_a_typed_error_naming_the_variable_and_directive() {
    assert_eq!(
        run(Some("info,app=loud")),
        "error: RUST_LOG: invalid directive \"app=loud\" at byte 5: unknown level"
    );
    assert_eq!(
        run(Some("info/GET")),
        "error: RUST_LOG: invalid directive \"/GET\" at byte 4: message filters are not \
         supported; keep the directives before '/' and filter messages with \
         `SubscriptionBuilder::filter`"
    );
}

/// A value that is not UTF-8 is a typed error at its first byte that is
/// not (it was read lossily, as a directive for a garbled target).
#[cfg(unix)]
#[test]
fn a_value_that_is_not_utf8_is_a_typed_error_at_its_first_bad_byte() {
    use std::os::unix::ffi::OsStrExt;
    assert_eq!(
        run_os(Some(OsStr::from_bytes(b"info,app\xff=debug"))),
        "error: RUST_LOG: invalid directive \"info,app\u{fffd}=debug\" at byte 8: not UTF-8"
    );
}
