//! `JsonAppender::stderr`: whole NDJSON lines on the process's stderr (fd
//! 2), nothing on stdout. The test runs itself as a child process, so the
//! child's real stderr can be read.

use std::process::Command;
use std::sync::Arc;

use logbus_appenders::{Appender, JsonAppender, JsonSchema, Level, Record, Topic};

/// Set in the child: write the records and return.
const CHILD: &str = "LOGBUS_JSON_STDERR_CHILD";

fn records() -> Vec<Arc<Record>> {
    (0..3u64)
        .map(|seq| {
            Arc::new(
                Record::builder(Topic::new(Level::Warn, "app::db"))
                    .seq(seq)
                    .message(format!("line {seq}\nforged {{\"seq\":99}}"))
                    .build(),
            )
        })
        .collect()
}

#[test]
fn whole_lines_go_to_stderr_and_nothing_to_stdout() {
    if std::env::var_os(CHILD).is_some() {
        let mut json = JsonAppender::stderr();
        json.append_batch(&records()).unwrap();
        json.append(&records()[0]).unwrap();
        json.flush().unwrap();
        let mut gcp = JsonAppender::stderr().schema(JsonSchema::google_cloud().build().unwrap());
        gcp.append(&records()[1]).unwrap();
        gcp.flush().unwrap();
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "whole_lines_go_to_stderr_and_nothing_to_stdout",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 5, "{stderr}");
    let seqs: Vec<u64> = lines[..4]
        .iter()
        .map(|l| l["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [0, 1, 2, 0]);
    assert_eq!(lines[1]["msg"], "line 1\nforged {\"seq\":99}");
    assert_eq!(lines[1]["level"], "WARN");
    assert_eq!(lines[4]["severity"], "WARNING");
    assert_eq!(lines[4]["message"], "line 1\nforged {\"seq\":99}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        !stdout.lines().any(|line| line.starts_with('{')),
        "{stdout}"
    );
}
