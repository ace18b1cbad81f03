//! A disabled record should cost nanoseconds: filtered by `log`'s global max
//! level, and filtered by the broker (no subscription wants the level).

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use logbus::{Broker, LevelFilter, Subscription};

use common::{NullAppender, TARGET};

fn level_off(c: &mut Criterion) {
    let broker = Broker::new();
    broker
        .subscribe(Subscription::builder("null", NullAppender).level(LevelFilter::Info))
        .expect("subscribe");
    let mut group = c.benchmark_group("level_off");
    // `log::max_level()` is Info: the macro returns before calling the broker.
    group.bench_function("below_log_max_level", |b| {
        log::set_max_level(LevelFilter::Info);
        let mut i = 0u64;
        b.iter(|| {
            i += 1;
            log::debug!(logger: &broker, target: TARGET, "request {} served in {} us", i, i % 1000);
        });
    });
    // `log::max_level()` is Trace (another broker or a directive wants it),
    // but no subscription accepts DEBUG: the broker's cached empty route.
    group.bench_function("below_every_subscription", |b| {
        log::set_max_level(LevelFilter::Trace);
        let mut i = 0u64;
        b.iter(|| {
            i += 1;
            log::debug!(logger: &broker, target: TARGET, "request {} served in {} us", i, i % 1000);
        });
    });
    group.finish();
    common::report("level_off", &broker);
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = level_off
}
criterion_main!(benches);
