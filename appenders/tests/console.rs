//! Console appender: one record is one line, control characters escaped,
//! colours only when asked, split routing by level.

mod common;

use common::Capture;
use logbus_appenders::{
    Appender, ColorMode, Console, ConsoleTarget, Layout, Level, MultilineMode, Record, Topic,
};

fn console(pattern: &str, target: ConsoleTarget, color: ColorMode) -> (Console, Capture, Capture) {
    let (out, err) = (Capture::default(), Capture::default());
    let console = Console::builder()
        .layout(Layout::parse(pattern).unwrap())
        .target(target)
        .color(color)
        .build_with_writers(out.clone(), err.clone());
    (console, out, err)
}

fn record(level: Level, message: &str) -> Record {
    Record::builder(Topic::new(level, "app"))
        .message(message.to_owned())
        .build()
}

#[test]
fn every_control_character_is_escaped_visibly() {
    let (mut console, out, _) = console("{msg}{kv}", ConsoleTarget::Stdout, ColorMode::Never);
    let controls: Vec<char> = (0u32..=0x1f)
        .chain([0x7f])
        .chain(0x80..=0x9f)
        .map(|c| char::from_u32(c).unwrap())
        .collect();
    for &c in &controls {
        let message = format!("a{c}b");
        let rec = Record::builder(Topic::new(Level::Info, "app"))
            .message(message)
            .kv("k", format!("{c}"))
            .build();
        console.append(&rec).unwrap();
    }
    console.flush().unwrap();
    let text = out.text();
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    assert_eq!(lines.len(), controls.len(), "one line per record");
    for (line, &c) in lines.iter().zip(&controls) {
        assert!(
            !line.chars().any(char::is_control),
            "raw control {c:?} in {line:?}"
        );
        let escaped = match c {
            '\n' => "\\n".to_owned(),
            '\r' => "\\r".to_owned(),
            '\t' => "\\t".to_owned(),
            c if (c as u32) < 0x80 => format!("\\x{:02x}", c as u32),
            c => format!("\\u{{{:x}}}", c as u32),
        };
        assert_eq!(*line, format!("a{escaped}b k={escaped}"));
    }
}

#[test]
fn a_message_with_newlines_is_one_line() {
    let (mut console, out, _) = console("{level} {msg}", ConsoleTarget::Stdout, ColorMode::Never);
    console
        .append(&record(Level::Info, "first\nERROR forged line\r\n"))
        .unwrap();
    console.flush().unwrap();
    assert_eq!(out.text(), "INFO first\\nERROR forged line\\r\\n\n");
}

#[test]
fn indent_mode_indents_continuation_lines() {
    let (out, err) = (Capture::default(), Capture::default());
    let mut console = Console::builder()
        .layout(Layout::parse("{level} {msg}").unwrap())
        .multiline(MultilineMode::Indent)
        .color(ColorMode::Never)
        .target(ConsoleTarget::Stdout)
        .build_with_writers(out.clone(), err);
    console
        .append(&record(Level::Info, "stack:\n  at main\x1b[2J"))
        .unwrap();
    console.flush().unwrap();
    assert_eq!(out.text(), "INFO stack:\n      at main\\x1b[2J\n");
}

#[test]
fn colours_wrap_only_the_level() {
    let (mut console, out, _) =
        console("{level:>5} {msg}", ConsoleTarget::Stdout, ColorMode::Always);
    console.append(&record(Level::Warn, "w")).unwrap();
    console.append(&record(Level::Error, "e")).unwrap();
    console.flush().unwrap();
    assert_eq!(
        out.text(),
        "\x1b[33m WARN\x1b[0m w\n\x1b[31mERROR\x1b[0m e\n"
    );
}

#[test]
fn never_and_auto_on_a_pipe_write_no_escape_sequences() {
    for mode in [ColorMode::Never, ColorMode::Auto] {
        let (mut console, out, _) = console("{level} {msg}", ConsoleTarget::Stdout, mode);
        console.append(&record(Level::Error, "e")).unwrap();
        console.flush().unwrap();
        // Auto on a non-terminal colours only under CLICOLOR_FORCE.
        if mode == ColorMode::Never || std::env::var_os("CLICOLOR_FORCE").is_none() {
            assert_eq!(out.text(), "ERROR e\n", "{mode:?}");
        }
    }
}

#[test]
fn split_sends_warnings_and_errors_to_stderr_in_order() {
    let (mut console, out, err) = console("{level} {msg}", ConsoleTarget::Split, ColorMode::Never);
    for (level, msg) in [
        (Level::Info, "1"),
        (Level::Warn, "2"),
        (Level::Debug, "3"),
        (Level::Error, "4"),
        (Level::Trace, "5"),
    ] {
        console.append(&record(level, msg)).unwrap();
    }
    console.flush().unwrap();
    assert_eq!(out.text(), "INFO 1\nDEBUG 3\nTRACE 5\n");
    assert_eq!(err.text(), "WARN 2\nERROR 4\n");
}

#[test]
fn stderr_target_gets_everything() {
    let (mut console, out, err) = console("{msg}", ConsoleTarget::Stderr, ColorMode::Never);
    console.append(&record(Level::Info, "i")).unwrap();
    console.flush().unwrap();
    assert_eq!(out.text(), "");
    assert_eq!(err.text(), "i\n");
}

#[test]
fn each_append_reaches_the_writer_before_returning() {
    // A record counts as written when `append` returns Ok, so its line must
    // have left the appender by then: nothing waits for `flush`.
    let (mut console, out, _) = console("{msg}", ConsoleTarget::Stdout, ColorMode::Never);
    console
        .append(&record(Level::Info, "not buffered"))
        .unwrap();
    assert_eq!(out.text(), "not buffered\n");
    console.flush().unwrap();
    assert_eq!(out.text(), "not buffered\n");
}

/// The child of the two tests below: a console with the builder's defaults on the real
/// stdout and stderr, one record. Only as a child (the variable names what to check).
#[test]
fn default_console_child() {
    if std::env::var_os("LOGBUS_CONSOLE_CHILD").is_none() {
        return;
    }
    let mut console = Console::builder()
        .layout(Layout::parse("{level} {msg}").unwrap())
        .build();
    console.append(&record(Level::Info, "to stderr")).unwrap();
    console.flush().unwrap();
}

/// Runs [`default_console_child`] with `vars` set (and the colour variables cleared
/// otherwise); returns its (stdout, stderr).
fn run_default_console(vars: &[(&str, &str)]) -> (String, String) {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "default_console_child", "--test-threads=1", "-q"])
        .env("LOGBUS_CONSOLE_CHILD", "1");
    for name in ["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM"] {
        command.env_remove(name);
    }
    command.envs(vars.iter().copied());
    let output = command.output().unwrap();
    assert!(output.status.success(), "{output:?}");
    (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn the_default_console_writes_to_stderr() {
    let (stdout, stderr) = run_default_console(&[]);
    assert_eq!(stderr, "INFO to stderr\n");
    assert!(!stdout.contains("to stderr"), "{stdout:?}");
}

#[test]
fn the_environment_forces_or_refuses_colour_on_the_real_streams() {
    // A pipe is not a terminal: CLICOLOR_FORCE colours it, NO_COLOR wins over that.
    let (_, forced) = run_default_console(&[("CLICOLOR_FORCE", "1"), ("TERM", "dumb")]);
    assert!(forced.contains("\x1b["), "{forced:?}");
    let (_, refused) = run_default_console(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert_eq!(refused, "INFO to stderr\n");
}
