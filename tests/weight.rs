//! The default dependency tree stays smaller than env_logger's 17 crates (issue 15): what a
//! user's `cargo add logbus` compiles. Runs `cargo tree`, which needs no build lock.

use std::collections::BTreeSet;
use std::process::Command;

/// env_logger 0.11's default tree, itself included.
const ENV_LOGGER_CRATES: usize = 17;

#[test]
fn the_default_tree_is_smaller_than_env_loggers() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args([
            "tree",
            "--offline",
            "-p",
            "logbus",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("running {cargo:?} tree: {e} (install Rust with rustup)"));
    assert!(output.status.success(), "{output:?}");
    let crates: BTreeSet<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect();
    assert!(
        crates.len() < ENV_LOGGER_CRATES,
        "{} crates in the default tree: {crates:?}",
        crates.len()
    );
    for heavy in ["serde_derive", "syn", "proc-macro2", "criterion", "regex"] {
        assert!(
            !crates.contains(heavy),
            "{heavy} in the default tree: {crates:?}"
        );
    }
}
