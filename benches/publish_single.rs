//! Caller cost of one `info!` with 0, 1 and 3 matching appenders
//! (`NullAppender`s, so only the broker is measured).

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use logbus::{Broker, LevelFilter, Subscription};

use common::{NullAppender, TARGET};

fn publish_single(c: &mut Criterion) {
    log::set_max_level(LevelFilter::Trace);
    let mut group = c.benchmark_group("publish_single");
    for appenders in [0usize, 1, 3] {
        let broker = Broker::new();
        for n in 0..appenders {
            broker
                .subscribe(Subscription::builder(format!("null{n}"), NullAppender))
                .expect("subscribe");
        }
        group.bench_with_input(BenchmarkId::new("appenders", appenders), &appenders, |b, _| {
            let mut i = 0u64;
            b.iter(|| {
                i += 1;
                log::info!(logger: &broker, target: TARGET, "request {} served in {} us", i, i % 1000);
            });
        });
        common::report(&format!("appenders={appenders}"), &broker);
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = publish_single
}
criterion_main!(benches);
