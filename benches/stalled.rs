//! Caller cost while an appender is stalled and its queue overflows: it must
//! not rise above the healthy case. The stalled appender blocks in `append`
//! until the bench ends; its queue holds 1,024 records.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use std::sync::mpsc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use logbus::{AppendError, Appender, Broker, LevelFilter, OverflowPolicy, Record, Subscription};

use common::{NullAppender, TARGET};

/// Blocks in `append` until its sender is dropped.
#[derive(Debug)]
struct StalledAppender(mpsc::Receiver<()>);

impl Appender for StalledAppender {
    fn append(&mut self, _record: &Record) -> Result<(), AppendError> {
        let _ = self.0.recv();
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

fn stalled(c: &mut Criterion) {
    log::set_max_level(LevelFilter::Trace);
    let mut group = c.benchmark_group("stalled");
    let cases = [
        ("healthy_drop_oldest", false, OverflowPolicy::DropOldest),
        ("stalled_drop_oldest", true, OverflowPolicy::DropOldest),
        ("stalled_drop_newest", true, OverflowPolicy::DropNewest),
    ];
    for (name, stall, policy) in cases {
        let broker = Broker::new();
        let (release, wait) = mpsc::channel::<()>();
        let builder = if stall {
            Subscription::builder("sub", StalledAppender(wait))
        } else {
            drop(wait);
            Subscription::builder("sub", NullAppender)
        };
        broker
            .subscribe(builder.capacity(1024).overflow(policy))
            .expect("subscribe");
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            let mut i = 0u64;
            b.iter(|| {
                i += 1;
                log::info!(logger: &broker, target: TARGET, "request {} served in {} us", i, i % 1000);
            });
        });
        common::report(name, &broker);
        drop(release); // unblocks the stalled appender so shutdown can drain
        drop(broker);
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = stalled
}
criterion_main!(benches);
