//! `shutdown_timeout(d)` leaves an unfinished worker to finish on its own;
//! dropping the `Broker` afterwards (as `LoggerGuard::shutdown_timeout` does,
//! since it consumes the guard) must not wait for that worker again.

mod common;

use std::time::Duration;

use logbus::Subscription;

#[test]
fn drop_after_shutdown_timeout_does_not_wait_again() {
    common::enable_all_levels();
    // A default shutdown timeout far beyond the test's safety net: if drop
    // waited for the stuck worker, the test would fail instead of passing
    // late.
    let broker = logbus::builder()
        .shutdown_timeout(Duration::from_secs(3600))
        .build()
        .unwrap();
    let (appender, gate) = common::GatedAppender::new();
    broker
        .subscribe(Subscription::builder("slow", appender))
        .unwrap();
    log::info!(logger: &broker, target: "app", "m");
    common::recv(&gate.entered, "worker inside append");
    let report = broker.shutdown_timeout(Duration::from_millis(10));
    assert_eq!(report.unfinished, ["slow"]);

    let (dropped_tx, dropped_rx) = crossbeam_channel::bounded(1);
    let dropper = std::thread::spawn(move || {
        drop(broker);
        let _ = dropped_tx.send(());
    });
    // The appender is still stuck here: the drop must complete regardless.
    common::recv(&dropped_rx, "drop returned while the appender is stuck");
    gate.open();
    dropper.join().unwrap();
}
