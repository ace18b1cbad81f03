//! Differential test: `logbus::Directives` against `env_logger` 0.11 (`env_filter`) itself.
//!
//! For every spec our strict parse accepts, each (level, target) on a fixed grid must be
//! enabled exactly when `env_logger` enables it, and `max_level` must equal
//! `env_logger::Logger::filter`.

mod common;

use common::LEVELS;
use log::{LevelFilter, Log, Metadata};
use logbus::{DirectiveErrorKind, Directives};
use proptest::prelude::*;

const TARGETS: [&str; 9] = [
    "app",
    "app::db",
    "app::db::pool",
    "apple",
    "hyper",
    "hyper::client",
    "other",
    "",
    "app ",
];

/// Specs our strict parse accepts; each is compared on the whole grid.
const GOOD_SPECS: &[&str] = &[
    "",
    " ",
    ",,",
    "off",
    "error",
    "warn",
    "info",
    "debug",
    "trace",
    "INFO",
    "Debug",
    "app",
    "app=",
    "app::",
    "app::db",
    "app=debug",
    "app=off",
    "app::db=trace",
    "info,app::db=debug",
    "app::db=debug,info",
    "info,app::db=debug,hyper=off",
    "warn,app=info,app::db=trace,app::db::pool=off",
    "app::db::pool=off,app::db=trace,app=info,warn",
    "apple=warn,app=debug",
    "app=debug,apple=warn",
    "app=info,app=error",
    "info,debug",
    "info,app=warn,off",
    "off,app",
    "trace,hyper=error,hyper::client=off",
    "  info , app::db =  debug ",
    " info , app::db= debug ",
    "app = debug",
    "loud",
    "hyper,app=off",
    "info,,app=error,",
    "app,app::db=off,app::db::pool",
    "appl=info,apple=off",
    "other=debug,error",
    "ERROR,Hyper=trace",
    "hyper::=debug,hyper=warn",
    // The empty path, which env_logger users write: it and the global level compete by the
    // position of their first directive.
    "=debug",
    "=",
    "info,=debug",
    "=debug,info",
    "info,=debug,warn",
    "=debug,info,=trace",
    "=warn,app=debug",
    "app=debug,=off",
];

fn env_logger_for(spec: &str) -> env_logger::Logger {
    env_logger::Builder::new().parse_filters(spec).build()
}

/// Panics, naming the first disagreement, unless `ours` behaves as `env_logger` does for `spec`.
#[track_caller]
fn check_same(spec: &str, ours: &Directives) {
    let theirs = env_logger_for(spec);
    // env_logger's max level is the loosest of all its directives, even one the empty path
    // (`=debug`) and the global level shadow in each other; ours leaves the shadowed one out.
    if spec
        .split('/')
        .next()
        .unwrap_or_default()
        .split(',')
        .any(|d| d.trim().starts_with('='))
    {
        assert!(
            ours.max_level() <= theirs.filter(),
            "max level for spec {spec:?}"
        );
    } else {
        assert_eq!(
            ours.max_level(),
            theirs.filter(),
            "max level for spec {spec:?}"
        );
    }
    for target in TARGETS {
        for level in LEVELS {
            let metadata = Metadata::builder().level(level).target(target).build();
            assert_eq!(
                ours.enabled(level, target),
                theirs.enabled(&metadata),
                "spec {spec:?}, level {level}, target {target:?}"
            );
        }
    }
}

#[test]
fn good_specs_match_env_logger() {
    assert!(GOOD_SPECS.len() >= 30);
    for spec in GOOD_SPECS {
        let ours = Directives::parse(spec).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        check_same(spec, &ours);
        // The canonical rendering means the same thing to env_logger too.
        check_same(&ours.to_string(), &ours);
    }
}

#[test]
fn max_level_on_an_empty_spec_is_error_like_env_logger() {
    assert_eq!(
        Directives::parse("").unwrap().max_level(),
        LevelFilter::Error
    );
    assert_eq!(env_logger_for("").filter(), LevelFilter::Error);
}

/// Pieces of directives, including malformed ones, so generated specs hit every branch.
fn fragment() -> impl Strategy<Value = String> {
    let path = prop::sample::select(vec![
        "app",
        "app::",
        "app::db",
        "apple",
        "appl",
        "hyper",
        "hyper::client",
        "other",
        "loud",
        "app ",
        "",
        "INFO",
        "x",
    ]);
    let level = prop::sample::select(vec![
        "off", "error", "warn", "info", "debug", "trace", "TRACE", "Warn", "", " info ", "loud",
        "1",
    ]);
    let sep = prop::sample::select(vec!["=", "", "==", "= "]);
    (path, sep, level).prop_map(|(path, sep, level)| {
        if sep.is_empty() {
            format!("{path}{}", level.trim())
        } else {
            format!("{path}{sep}{level}")
        }
    })
}

fn spec() -> impl Strategy<Value = String> {
    let joiner = prop::sample::select(vec![",", ", ", " ,", ",,"]);
    (
        prop::collection::vec((fragment(), joiner), 0..6),
        prop::option::weighted(0.1, "[a-z]{0,3}"),
    )
        .prop_map(|(parts, regex)| {
            let mut spec: String = parts.into_iter().map(|(f, j)| f + j).collect();
            if let Some(regex) = regex {
                spec.push('/');
                spec.push_str(&regex);
            }
            spec
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_specs_match_env_logger(spec in spec()) {
        let (lossy, errors) = Directives::parse_lossy(&spec);
        match Directives::parse(&spec) {
            Ok(strict) => {
                prop_assert!(errors.is_empty());
                prop_assert_eq!(&strict, &lossy);
                check_same(&spec, &strict);
                let reparsed = strict.to_string().parse::<Directives>();
                prop_assert_eq!(reparsed, Ok(strict));
            }
            Err(first) => {
                prop_assert_eq!(errors.first(), Some(&first));
                // Every error points at its directive in the spec.
                for e in &errors {
                    prop_assert_eq!(&spec[e.position()..e.position() + e.directive().len()], e.directive());
                }
                // What env_filter itself skips (with a warning on stderr, captured by the test
                // harness), lossy parsing skips the same way.
                if errors.iter().all(|e| {
                    matches!(e.kind(), DirectiveErrorKind::UnknownLevel | DirectiveErrorKind::TooManyEquals)
                }) {
                    check_same(&spec, &lossy);
                }
            }
        }
    }
}
