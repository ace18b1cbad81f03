//! Shutdown must not stop the dead-letter subscription while a source
//! subscription is still unfinished (its deadline passed): the source may
//! still dead-letter a record, which would then sit in a queue whose worker
//! already did its final drain. The route is left running and reported
//! unfinished; a later shutdown drains it.

mod common;

use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use logbus::{AppendError, Appender, Memory, Operation, Record, RetryPolicy, Subscription};

/// Blocks in its first append until released, then fails it.
struct StallThenFail {
    entered: Sender<()>,
    release: Receiver<()>,
}

impl Appender for StallThenFail {
    fn append(&mut self, _: &Record) -> Result<(), AppendError> {
        let _ = self.entered.send(());
        let _ = self.release.recv();
        Err(AppendError::new(Operation::Write, "failed"))
    }
    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

/// Memory that signals when its worker drops it (the worker has exited).
struct DroppedSignal(Memory, Sender<()>);

impl Appender for DroppedSignal {
    fn append(&mut self, r: &Record) -> Result<(), AppendError> {
        self.0.append(r)
    }
    fn flush(&mut self) -> Result<(), AppendError> {
        self.0.flush()
    }
}

impl Drop for DroppedSignal {
    fn drop(&mut self) {
        let _ = self.1.send(());
    }
}

#[test]
fn dead_letters_produced_after_the_deadline_are_not_stranded() {
    let broker = common::broker();
    let (entered_tx, entered_rx) = crossbeam_channel::unbounded();
    let (release_tx, release_rx) = crossbeam_channel::bounded(1);
    let (dl_gone_tx, dl_gone_rx) = crossbeam_channel::bounded(1);
    let (dl_mem, dl_captured) = Memory::new();
    let dl = broker
        .set_dead_letter(Subscription::builder(
            "dead",
            DroppedSignal(dl_mem, dl_gone_tx),
        ))
        .unwrap();
    let src = broker
        .subscribe(
            Subscription::builder(
                "src",
                StallThenFail {
                    entered: entered_tx,
                    release: release_rx,
                },
            )
            .retry(RetryPolicy::none()),
        )
        .unwrap();
    log::info!(logger: &broker, target: "app", "m");
    common::recv(&entered_rx, "worker inside append");

    let report = broker.shutdown_timeout(Duration::from_millis(20));
    assert_eq!(report.unfinished, ["src", "dead"]);
    // Now the source fails its record and dead-letters it.
    release_tx.send(()).unwrap();
    let report = broker.shutdown_timeout(common::SAFETY_NET);
    assert!(report.unfinished.is_empty(), "{report:?}");
    // The dead-letter worker did its final drain and exited.
    common::recv(&dl_gone_rx, "dead-letter worker exit");

    let (s, d) = (src.stats(), dl.stats());
    assert_eq!(s.dead_lettered, 1);
    assert_eq!(
        (dl_captured.messages(), d.in_queue),
        (vec!["m".to_owned()], 0),
        "dead-letter stats: {d:?}"
    );
}
