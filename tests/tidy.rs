//! Tidy checks over the source tree: every Rust file starts with a `//!`
//! line saying what it is, and library code does not print to stdout.

use std::path::{Path, PathBuf};

/// Every `.rs` file below `dir`, skipping build output.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_rust_file_starts_with_a_module_doc_line() {
    let mut files = Vec::new();
    for dir in ["src", "appenders", "tests", "examples", "benches"] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} files", files.len());
    let missing: Vec<_> = files
        .iter()
        .filter(|f| {
            !std::fs::read_to_string(f)
                .unwrap_or_default()
                .starts_with("//!")
        })
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` first line: {missing:?}"
    );
}

#[test]
fn library_code_does_not_print_to_stdout() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("appenders/src"), &mut files);
    let offenders: Vec<String> = files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            text.lines()
                .enumerate()
                .filter(|(_, line)| {
                    let code = line.trim_start();
                    // `println!(` or `print!(`, but not `eprintln!(`/`eprint!(`.
                    let prints = |mac: &str| {
                        code.match_indices(mac)
                            .any(|(i, _)| !code[..i].ends_with('e'))
                    };
                    !code.starts_with("//") && (prints("println!(") || prints("print!("))
                })
                .map(|(n, _)| format!("{}:{}", f.display(), n + 1))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "stdout prints in library code: {offenders:?}"
    );
}
