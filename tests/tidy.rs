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

/// The library's `.rs` files: `src/` without `src/bin/`. A binary there is
/// a crate of its own: its `crate::` names its own modules, it reaches the
/// library through `logbus::` (the public API) only, printing to stdout is
/// its job, and nothing swaps its sleeps for a model checker's.
fn library_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files.retain(|f| !f.starts_with(root().join("src/bin")));
    files
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
    let mut files = library_files();
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

/// The lines of `text` that are code: neither blank nor comments, and
/// before the first `#[cfg(test)]` (unit tests do not count).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, line)| line.trim() != "#[cfg(test)]")
        .filter(|(_, line)| {
            let code = line.trim_start();
            !code.is_empty() && !code.starts_with("//")
        })
}

/// The library's source files, as (path relative to `src/`, text).
fn library_sources() -> Vec<(String, String)> {
    library_files()
        .iter()
        .map(|f| {
            let relative = f.strip_prefix(root().join("src")).unwrap();
            (
                relative.to_string_lossy().replace('\\', "/"),
                std::fs::read_to_string(f).unwrap(),
            )
        })
        .collect()
}

/// The places in the library's code (comments aside) that contain `needle`,
/// outside the files `allowed`.
fn offenders(needle: &str, allowed: &[&str]) -> Vec<String> {
    library_sources()
        .iter()
        .filter(|(path, _)| !allowed.contains(&path.as_str()))
        .flat_map(|(path, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, line)| {
                    let code = line.trim_start();
                    !code.starts_with("//") && code.contains(needle)
                })
                .map(|(n, _)| format!("src/{path}:{}", n + 1))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn internal_code_imports_the_appenders_crate_directly() {
    // Only the table of contents re-exports it as `logbus::appenders`.
    let found = offenders("crate::appenders", &["lib.rs"]);
    assert!(
        found.is_empty(),
        "`crate::appenders` outside lib.rs: {found:?}"
    );
}

#[test]
fn only_the_facade_names_the_log_backend() {
    // The thread role lives on the ground floor (`thread_role.rs`): nothing
    // below the façade reaches up into the `log` backend for it.
    let facade = [
        "lib.rs",
        "__private.rs",
        "builder.rs",
        "init.rs",
        "log_backend.rs",
        "testing.rs",
    ];
    let found = offenders("log_backend", &facade);
    assert!(
        found.is_empty(),
        "`log_backend` below the façade: {found:?}"
    );
}

#[test]
fn binaries_use_the_documented_api_only() {
    // Reachable from a binary, but hidden and exempt from semver.
    let mut files = Vec::new();
    rust_files(&root().join("src/bin"), &mut files);
    let found: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .contains("__private")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(found.is_empty(), "hidden API used by: {found:?}");
}

#[test]
fn synchronisation_goes_through_sync_rs() {
    // So that a model checker or another lock can be swapped in there.
    for needle in ["std::sync::", "std::thread"] {
        let found = offenders(needle, &["sync.rs"]);
        assert!(found.is_empty(), "`{needle}` outside sync.rs: {found:?}");
    }
}

#[test]
fn lib_rs_is_a_table_of_contents() {
    let text = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let defined: Vec<_> = code_lines(&text)
        .filter(|(_, line)| {
            let line = line.trim_start();
            [
                "fn ",
                "pub fn ",
                "pub(crate) fn ",
                "struct ",
                "pub struct ",
                "impl",
            ]
            .iter()
            .any(|start| line.starts_with(start))
        })
        .map(|(n, line)| format!("{}: {line}", n + 1))
        .collect();
    assert!(defined.is_empty(), "definitions in lib.rs: {defined:?}");
    let pub_uses = code_lines(&text)
        .filter(|(_, line)| line.starts_with("pub use crate::{"))
        .count();
    assert_eq!(pub_uses, 1, "lib.rs has one `pub use crate::{{…}}` block");
}

/// The top-level module a source file belongs to (`broker/publish.rs` ->
/// `broker`).
fn top_module(path: &str) -> &str {
    path.split('/').next().unwrap().trim_end_matches(".rs")
}

#[test]
fn modules_import_each_other_without_circles() {
    let sources = library_sources();
    let modules: std::collections::BTreeSet<&str> = sources
        .iter()
        .map(|(path, _)| top_module(path))
        .filter(|m| *m != "lib")
        .collect();
    // An arrow from a module to each module its code names as `crate::m`.
    let mut arrows: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
        Default::default();
    for (path, text) in &sources {
        let from = top_module(path);
        if from == "lib" {
            continue;
        }
        for (_, line) in code_lines(text) {
            for (at, _) in line.match_indices("crate::") {
                let rest = &line[at + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if let Some(&to) = modules.get(name.as_str()) {
                    if to != from {
                        arrows.entry(from).or_default().insert(to);
                    }
                }
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit<'a>(
        module: &'a str,
        arrows: &std::collections::BTreeMap<&'a str, std::collections::BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut std::collections::BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(start) = path.iter().position(|m| *m == module) {
            let mut circle = path[start..].to_vec();
            circle.push(module);
            return Some(circle);
        }
        if !done.insert(module) {
            return None;
        }
        path.push(module);
        for &next in arrows.get(module).into_iter().flatten() {
            if let Some(circle) = visit(next, arrows, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        None
    }
    let mut done = Default::default();
    for &module in &modules {
        let circle = visit(module, &arrows, &mut Vec::new(), &mut done);
        assert!(circle.is_none(), "modules in a circle: {circle:?}");
    }
}

#[test]
fn no_room_is_over_500_lines_of_code() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("appenders/src"), &mut files);
    let large: Vec<_> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            (f.display().to_string(), code_lines(&text).count())
        })
        .filter(|(_, lines)| *lines > 500)
        .collect();
    assert!(large.is_empty(), "rooms over 500 lines of code: {large:?}");
}

/// The text of `file` (from the crate's root) from the first line that
/// holds `start` up to the next line that holds `end`.
fn span(file: &str, start: &str, end: &str) -> String {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("`{start}` not in {file}"));
    let rest = &text[from..];
    let to = rest[start.len()..]
        .find(end)
        .map_or(rest.len(), |at| at + start.len());
    rest[..to].to_string()
}

#[test]
fn the_heavy_fence_stays_where_the_protocols_read_the_busy_flags() {
    // loom checks the gate and the wake-up with both sides of the fence as
    // `SeqCst` fences, so it cannot notice a heavy side turned back into a
    // plain fence, which the publisher's compiler fence would not pair with
    // (`src/sync/barrier.rs`). The two heavy sides stay where they are.
    let remover = span("src/queue/gate.rs", "pub(crate) fn wait_closed", "\n}\n");
    assert!(
        remover.contains("fence_heavy();"),
        "wait_closed lost its heavy fence"
    );
    let sleeper = span("src/queue/waker.rs", "pub(crate) fn sleep(", "\n    }\n");
    assert!(
        sleeper.contains("fence_heavy"),
        "Waker::sleep lost its heavy fence"
    );
    let publisher = span("src/queue/gate.rs", "pub(crate) fn fence()", "\n}\n");
    assert!(
        publisher.contains("fence_light();"),
        "the gate's fence is not the light side"
    );
}
