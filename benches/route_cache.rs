//! Caller cost with 1 and with 1,000 non-matching subscriptions, with and
//! without one matching `NullAppender`: the per-thread route cache must make
//! the number of subscriptions irrelevant.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use logbus::{Broker, LevelFilter, Subscription};

use common::{NullAppender, TARGET};

fn route_cache(c: &mut Criterion) {
    log::set_max_level(LevelFilter::Trace);
    let mut group = c.benchmark_group("route_cache");
    for matching in [0usize, 1] {
        for nonmatching in [1usize, 1000] {
            let broker = Broker::new();
            for i in 0..nonmatching {
                broker
                    .subscribe(
                        Subscription::builder(format!("other{i}"), NullAppender)
                            .pattern(format!("error.other{i}.#")),
                    )
                    .expect("subscribe");
            }
            if matching == 1 {
                broker
                    .subscribe(Subscription::builder("null", NullAppender).pattern("*.app.#"))
                    .expect("subscribe");
            }
            let id = format!("matching{matching}/nonmatching{nonmatching}");
            group.bench_function(BenchmarkId::from_parameter(&id), |b| {
                let mut i = 0u64;
                b.iter(|| {
                    i += 1;
                    log::info!(logger: &broker, target: TARGET, "request {} served in {} us", i, i % 1000);
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
    targets = route_cache
}
criterion_main!(benches);
