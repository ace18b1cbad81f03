//! A replaced predicate (and whatever it captured) is dropped after the
//! config mutex is released: a captured value whose `Drop` logs must not
//! deadlock the thread that reconfigures.

mod common;

use std::time::Duration;

use logbus::{BrokerHandle, Memory, Subscription};

struct LogsOnDrop(BrokerHandle);

impl Drop for LogsOnDrop {
    fn drop(&mut self) {
        log::info!(logger: &self.0, target: "app", "resource closed");
    }
}

#[test]
fn replacing_a_predicate_whose_capture_logs_on_drop_does_not_deadlock() {
    let broker = common::broker();
    let (mem, _captured) = Memory::new();
    let guard = LogsOnDrop(broker.handle());
    broker
        .subscribe(Subscription::builder("a", mem).filter(move |_| {
            let _ = &guard;
            true
        }))
        .unwrap();
    let handle = broker.handle();
    let (tx, rx) = crossbeam_channel::bounded(1);
    // A thread that has never logged (no thread-local view) reconfigures.
    std::thread::spawn(move || {
        let _ = handle.set_filter("a", |_| true);
        let _ = tx.send(());
    });
    // Safety net only: a healthy run returns in microseconds.
    let finished = rx.recv_timeout(Duration::from_secs(10)).is_ok();
    if !finished {
        // The config mutex is held forever: dropping the broker would hang.
        std::mem::forget(broker);
    }
    assert!(finished, "set_filter deadlocked on the config mutex");
}
