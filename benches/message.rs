//! A literal message (borrowed, not copied) vs a formatted one, one
//! matching `NullAppender`; and the cost of formatting alone for reference.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use std::fmt::Write as _;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use logbus::{Broker, LevelFilter, Subscription};

use common::{NullAppender, TARGET};

fn message(c: &mut Criterion) {
    log::set_max_level(LevelFilter::Trace);
    let broker = Broker::new();
    broker
        .subscribe(Subscription::builder("null", NullAppender))
        .expect("subscribe");
    let mut group = c.benchmark_group("message");
    group.bench_function("literal", |b| {
        b.iter(|| log::info!(logger: &broker, target: TARGET, "request served"));
    });
    group.bench_function("formatted", |b| {
        let mut i = 0u64;
        b.iter(|| {
            i += 1;
            log::info!(logger: &broker, target: TARGET, "request {} served in {} us", i, i % 1000);
        });
    });
    // The floor: `format!` of the same message into a fresh String.
    group.bench_function("format_only", |b| {
        let mut i = 0u64;
        b.iter(|| {
            i += 1;
            black_box(format!(
                "request {} served in {} us",
                black_box(i),
                i % 1000
            ))
        });
    });
    group.bench_function("format_into_reused_string", |b| {
        let mut i = 0u64;
        let mut s = String::with_capacity(64);
        b.iter(|| {
            i += 1;
            s.clear();
            let _ = write!(s, "request {} served in {} us", black_box(i), i % 1000);
            black_box(s.len())
        });
    });
    group.finish();
    common::report("message", &broker);
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = message
}
criterion_main!(benches);
