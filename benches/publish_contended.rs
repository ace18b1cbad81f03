//! Caller cost of `info!` from N producer threads into one subscription
//! (a `NullAppender`): the contention on one queue.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use logbus::{Broker, LevelFilter, Subscription};

use common::{NullAppender, TARGET};

fn publish_contended(c: &mut Criterion) {
    log::set_max_level(LevelFilter::Trace);
    let mut group = c.benchmark_group("publish_contended");
    for producers in [1usize, 2, 4] {
        let broker = Broker::new();
        broker
            .subscribe(Subscription::builder("null", NullAppender))
            .expect("subscribe");
        group.bench_with_input(BenchmarkId::new("producers", producers), &producers, |b, &n| {
            // Each of `n` threads makes `iters` calls; we report the mean
            // wall time per call per thread (the caller's view).
            b.iter_custom(|iters| {
                let barrier = Barrier::new(n);
                let total: Duration = std::thread::scope(|s| {
                    let handles: Vec<_> = (0..n)
                        .map(|_| {
                            s.spawn(|| {
                                barrier.wait();
                                let start = Instant::now();
                                for i in 0..iters {
                                    log::info!(logger: &broker, target: TARGET, "request {} served in {} us", i, i % 1000);
                                }
                                start.elapsed()
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().expect("producer")).sum()
                });
                total / n as u32
            });
        });
        common::report(&format!("producers={producers}"), &broker);
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = publish_contended
}
criterion_main!(benches);
