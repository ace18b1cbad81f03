//! The README's first command, `cargo run --example quickstart`: it runs, and leaves the
//! files it wrote where it says. Runs the example binary `cargo test` built beside this
//! one, with `TMPDIR` pointing at a fresh directory.

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/examples/quickstart`: test binaries live in `target/<profile>/deps/`.
fn quickstart_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let binary = profile_dir
        .join("examples")
        .join(format!("quickstart{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} not found: `cargo test` builds the examples; run the tests with cargo",
        binary.display()
    );
    binary
}

#[test]
fn the_quickstart_leaves_its_files_and_says_where() {
    let tmp = tempfile::tempdir().unwrap();
    let output = Command::new(quickstart_binary())
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let dir = tmp.path().join("logbus-quickstart");
    assert!(
        stdout.contains(&format!("the files are left in {}", dir.display())),
        "{stdout}"
    );

    let text = std::fs::read_to_string(dir.join("app.log")).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains("ERROR [main] app::db #3 - connection lost user=ann attempt=3"));
    let json = std::fs::read_to_string(dir.join("errors.json")).unwrap();
    let levels: Vec<String> = json
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["level"].to_string())
        .collect();
    assert_eq!(levels, [r#""WARN""#, r#""ERROR""#]);
    // The console (stderr by default) took the info and above.
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 4, "{stderr}");
    assert!(stdout.contains("console: matched 4, written 4, dropped 0, lost 0"));

    // A second run starts afresh rather than appending.
    let again = Command::new(quickstart_binary())
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(again.status.success(), "{again:?}");
    let text = std::fs::read_to_string(dir.join("app.log")).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
}
