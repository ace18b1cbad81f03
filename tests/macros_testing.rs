//! logbus's own macros in test mode (`logbus::testing`, its own process):
//! logbus is not the installed broker, so every call takes the `log`
//! crate's path, and a capture sees what `log::info!` would give it.

#[test]
fn test_mode_captures_what_the_macros_log() {
    logbus::testing::init();
    let logs = logbus::testing::capture();
    let (id, ms) = (7u64, 2.5f64);
    logbus::info!(target: "app::http", "request {} served in {:.1} ms", id, ms);
    log::info!(target: "app::http", "request {} served in {:.1} ms", id, ms);
    logbus::trace!("{:?} {}", 'x', String::from("owned"));
    logbus::log!(logbus::Level::Warn, "{:>4}", -1);
    assert_eq!(
        logs.messages(),
        [
            "request 7 served in 2.5 ms",
            "request 7 served in 2.5 ms",
            "'x' owned",
            "  -1"
        ]
    );
}
