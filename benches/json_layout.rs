//! Per-record formatting on the worker: the pattern layout rendered into a
//! reused buffer, and the JSON appender writing to `io::sink()`.

#![allow(missing_docs)] // criterion_group! generates undocumented functions

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use logbus::appenders::{JsonAppender, Layout};
use logbus::{Appender, Level, Record, Topic};

fn records() -> [(&'static str, Record); 2] {
    let topic = Topic::new(Level::Info, common::TARGET);
    [
        (
            "message",
            Record::builder(topic.clone())
                .message("request 12345 served in 345 us")
                .build(),
        ),
        (
            "message_2kv",
            Record::builder(topic)
                .message("request served")
                .kv("request", 12345u64)
                .kv("path", "/api/v1/users")
                .build(),
        ),
    ]
}

fn layout(c: &mut Criterion) {
    let mut group = c.benchmark_group("json_layout/pattern");
    group.throughput(Throughput::Elements(1));
    for pattern in [
        "{ts} {level} {target}: {msg}{kv}",
        "{ts} {level:>5} {target}: {msg}{kv}",
        "{ts:%H:%M:%S%.3f} [{thread}] {level:<5} {module}:{line} {msg}{kv}",
    ] {
        let mut layout = Layout::parse(pattern).expect("layout");
        for (name, record) in records() {
            let mut out = Vec::with_capacity(256);
            group.bench_function(BenchmarkId::new(name, pattern), |b| {
                b.iter(|| {
                    out.clear();
                    layout.render(&record, &mut out);
                    out.len()
                });
            });
        }
    }
    group.finish();
}

fn json(c: &mut Criterion) {
    let mut group = c.benchmark_group("json_layout/json");
    group.throughput(Throughput::Elements(1));
    for (name, record) in records() {
        let mut json = JsonAppender::writer(std::io::sink());
        group.bench_function(name, |b| {
            b.iter(|| json.append(&record).expect("append"));
        });
        json.flush().expect("flush");
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion();
    targets = layout, json
}
criterion_main!(benches);
