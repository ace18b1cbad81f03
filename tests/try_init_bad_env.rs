//! `logbus::try_init()` rejects a malformed `RUST_LOG` and installs nothing; `init()` then
//! keeps the valid part. Its own process: it installs the global backend.

use log::LevelFilter;
use logbus::{DirectiveErrorKind, InitError};

#[test]
fn try_init_rejects_a_bad_directive_and_installs_nothing() {
    std::env::set_var(logbus::ENV_VAR, "app=loud,info");

    let err = match logbus::try_init() {
        Err(err) => err,
        Ok(_) => panic!("try_init accepted RUST_LOG=app=loud,info"),
    };
    let InitError::Directive(directive) = &err else {
        panic!("expected InitError::Directive, got {err:?}");
    };
    assert_eq!(directive.kind(), DirectiveErrorKind::UnknownLevel);
    assert_eq!(
        (directive.directive(), directive.position()),
        ("app=loud", 0)
    );
    let source = std::error::Error::source(&err).expect("the directive error is the source");
    assert!(source.to_string().contains("app=loud"), "{source}");

    // Nothing installed: the max level is still the `log` crate's default, and `init` can
    // install (it panics if a backend is already set).
    assert_eq!(log::max_level(), LevelFilter::Off);
    let guard = logbus::init();
    assert_eq!(log::max_level(), LevelFilter::Info);
    assert!(guard.stats().subscriptions.contains_key("console"));
}
