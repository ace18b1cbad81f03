//! `logbus::testing` seen from outside: runs `cargo test` on the fixture package
//! `tests/fixtures/test-capture` (four tests logging at once, one failing on purpose) in a
//! child process, and checks what the harness shows: the failing test's records in its
//! captured output, in order, a spawned thread's included; no record of the passing tests
//! anywhere; `RUST_LOG` honoured; the summary saying 1 failed.
//!
//! The fixture is copied under the target directory with the workspace's `Cargo.lock`
//! (so the offline build uses the versions the workspace already fetched) and built in its
//! own target directory there (the outer cargo holds the lock on its own).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The fixture, copied to `dir` with its path dependency on logbus made absolute and the
/// workspace's lock file beside it.
fn copy_fixture(dir: &Path) -> PathBuf {
    let fixture = root().join("tests/fixtures/test-capture");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = std::fs::read_to_string(fixture.join("Cargo.toml")).unwrap();
    let root_path = root().display().to_string().replace('\\', "/");
    // A TOML literal string: no escapes to get wrong (a path with `'` is refused).
    assert!(
        !root_path.contains('\''),
        "the checkout's path holds a quote: {root_path}"
    );
    let manifest = manifest.replace(r#"path = "../../..""#, &format!("path = '{root_path}'"));
    assert!(
        manifest.contains(&root_path),
        "the fixture's path dependency moved"
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(fixture.join("src/lib.rs"), dir.join("src/lib.rs")).unwrap();
    std::fs::copy(root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    dir.join("Cargo.toml")
}

/// The cargo that runs this test (cargo sets `CARGO` for the processes it starts), else
/// the one it was built with.
fn cargo() -> PathBuf {
    std::env::var_os("CARGO")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO")))
}

#[test]
fn a_failing_test_shows_its_own_records_and_passing_tests_show_none() {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let manifest = copy_fixture(&tmp.join("test-capture"));
    let cargo = cargo();
    let output = Command::new(&cargo)
        .args(["test", "--offline", "--lib", "--manifest-path"])
        .arg(&manifest)
        .args(["--", "--test-threads=4"])
        .env("CARGO_TARGET_DIR", tmp.join("test-capture-target"))
        .env("RUST_LOG", "info")
        .env_remove("RUST_TEST_THREADS")
        .env_remove("RUST_TEST_NOCAPTURE")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "could not run cargo ({}): {e}; set CARGO to its path",
                cargo.display()
            )
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let context = format!("stdout:\n{stdout}\nstderr:\n{stderr}");

    assert!(
        stdout.contains("test result: FAILED. 3 passed; 1 failed;"),
        "the summary: {context}"
    );
    assert_eq!(output.status.code(), Some(101), "{context}");

    // The failing test's captured output: its records, in order, with the default layout.
    let (_, section) = stdout
        .split_once("---- tests::fails_on_purpose stdout ----\n")
        .unwrap_or_else(|| panic!("no captured output for the failing test: {context}"));
    let (section, _) = section
        .split_once("\nfailures:\n")
        .unwrap_or_else(|| panic!("the failures list: {context}"));
    let shown: Vec<&str> = section
        .lines()
        .filter_map(|line| line.split_once("  INFO fixture: ").map(|(_, msg)| msg))
        .collect();
    let mut expected: Vec<String> = (0..25).map(|i| format!("failing {i}")).collect();
    expected.push("failing from a spawned thread".into());
    expected.extend((25..50).map(|i| format!("failing {i}")));
    assert_eq!(shown, expected, "{context}");
    assert!(section.contains("failing on purpose"), "{context}");
    let records = section.lines().filter(|l| l.contains(" fixture: ")).count();
    assert_eq!(records, expected.len(), "a line of another kind: {context}");

    // The passing tests' records are nowhere, and RUST_LOG=info left the debug one out.
    for absent in ["passing-", "debug, captured but not shown"] {
        assert!(
            !stdout.contains(absent) && !stderr.contains(absent),
            "{absent:?} shown: {context}"
        );
    }
}
