//! `logbus::testing` when another `log` backend was installed first (its own process):
//! `init` changes nothing and does not panic, `try_init` says so, `capture` panics with a
//! message saying why instead of capturing nothing.

use logbus::{InstallError, Memory, Subscription};

#[test]
fn test_mode_refuses_cleanly_after_another_backend() {
    let (memory, captured) = Memory::new();
    let guard = logbus::builder()
        .appender(Subscription::builder("memory", memory))
        .install()
        .unwrap();

    logbus::testing::init();
    assert!(matches!(
        logbus::testing::try_init(),
        Err(InstallError::AlreadyInstalled)
    ));
    let panic = std::panic::catch_unwind(logbus::testing::capture).unwrap_err();
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .unwrap_or_default();
    assert!(
        message.contains("another `log` backend was installed first"),
        "{message:?}"
    );

    // The installed broker is untouched.
    log::info!(target: "app", "still routed");
    guard.shutdown();
    assert_eq!(captured.messages(), ["still routed"]);
}
