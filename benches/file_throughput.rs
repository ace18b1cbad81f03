//! End-to-end records per second to a file, until flushed, from 1 and 4
//! threads: one iteration logs `BATCH` records (split among the threads) and
//! then waits on `broker.flush()`, so every record counted is on disk (in
//! the page cache) or counted as dropped. `Block` is lossless; the default
//! `DropOldest` may drop under this flood (its drops are printed).

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use logbus::appenders::{FileAppender, Layout};
use logbus::{Broker, LevelFilter, OverflowPolicy, Subscription};

use common::TARGET;

const BATCH: u64 = 20_000;

fn file_throughput(c: &mut Criterion) {
    log::set_max_level(LevelFilter::Trace);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("file_throughput");
    group.throughput(Throughput::Elements(BATCH));
    // One iteration is ~10-20 ms: fewer samples keep the run to seconds.
    group.sample_size(10);
    for (policy_name, policy) in [
        ("block", OverflowPolicy::Block),
        ("drop_oldest", OverflowPolicy::DropOldest),
    ] {
        for threads in [1u64, 4] {
            let path = dir.path().join(format!("{policy_name}-{threads}.log"));
            let file = FileAppender::builder(&path)
                .layout(Layout::parse("{ts} {level} {target}: {msg}{kv}").expect("layout"))
                .max_bytes(256 * 1024 * 1024)
                .keep(1)
                .build()
                .expect("file");
            let broker = Broker::new();
            broker
                .subscribe(Subscription::builder("file", file).overflow(policy))
                .expect("subscribe");
            let id = format!("{policy_name}/threads{threads}");
            group.bench_function(BenchmarkId::from_parameter(&id), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        std::thread::scope(|s| {
                            for t in 0..threads {
                                let broker = &broker;
                                s.spawn(move || {
                                    for i in (t..BATCH).step_by(threads as usize) {
                                        log::info!(logger: broker, target: TARGET, "request {} served in {} us", i, i % 1000);
                                    }
                                });
                            }
                        });
                        broker.flush().expect("flush");
                        total += start.elapsed();
                    }
                    total
                });
            });
            common::report(&id, &broker);
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = file_throughput
}
criterion_main!(benches);
