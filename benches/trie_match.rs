//! Topic-pattern matching: `TopicPattern::matches` for a few patterns, and
//! routing through a broker whose subscriptions hold N patterns, on a route
//! cache hit (steady state) and on a miss (a new target: the trie walk).

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use logbus::{Broker, LevelFilter, Subscription, TopicPattern};

use common::NullAppender;

fn pattern_matches(c: &mut Criterion) {
    let mut group = c.benchmark_group("trie_match/pattern");
    let topic = "info.app.http.server";
    for pattern in [
        "#",
        "info.app.http.server",
        "error.#",
        "*.app.#",
        "*.*.http.*",
        "#.server",
        "*.app.db.#",
    ] {
        let p = TopicPattern::parse(pattern).expect("pattern");
        group.bench_function(BenchmarkId::from_parameter(pattern), |b| {
            b.iter(|| black_box(&p).matches(black_box(topic)));
        });
    }
    group.finish();
}

/// Targets that defeat the route cache: more distinct targets than it holds
/// (1,024 per thread), visited in a cycle, so every lookup is a miss.
fn miss_targets() -> Vec<&'static str> {
    (0..2048)
        .map(|k| &*Box::leak(format!("svc{}::t{k}", k % 7).into_boxed_str()))
        .collect()
}

fn broker_routing(c: &mut Criterion) {
    log::set_max_level(LevelFilter::Trace);
    let targets = miss_targets();
    let mut group = c.benchmark_group("trie_match/route");
    for patterns in [1usize, 100, 1000] {
        let broker = Broker::new();
        // One subscription holding every pattern (none matches `info.svc*`),
        // so the record is never built: only routing is measured.
        let mut builder = Subscription::builder("null", NullAppender);
        for i in 0..patterns {
            builder = if i % 2 == 0 {
                builder.pattern(format!("error.other{i}.#"))
            } else {
                builder.pattern(format!("*.other{i}.*.db"))
            };
        }
        broker.subscribe(builder).expect("subscribe");
        group.bench_with_input(BenchmarkId::new("hit", patterns), &patterns, |b, _| {
            b.iter(|| log::info!(logger: &broker, target: "svc1::t1", "request served"));
        });
        group.bench_with_input(BenchmarkId::new("miss", patterns), &patterns, |b, _| {
            let mut k = 0usize;
            b.iter(|| {
                k = (k + 1) % targets.len();
                log::info!(logger: &broker, target: targets[k], "request served");
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = pattern_matches, broker_routing
}
criterion_main!(benches);
