//! Runtime reconfiguration: under concurrent publishers every record is routed wholly under
//! one configuration (before or after each change) and delivered exactly once to each
//! appender it matched; `max_level` follows every change; refused changes change nothing;
//! global directives and predicate swaps apply to every record.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::LEVELS;
use log::{Level, LevelFilter, Metadata};
use logbus::{
    Broker, Directives, Memory, MemoryHandle, OverflowPolicy, ReconfigureError, Record,
    Subscription, SubscriptionStats, Topic, TopicParseErrorKind, TopicPattern,
};

const THREADS: u64 = 4;

const TARGETS: [&str; 6] = [
    "app",
    "app::db",
    "app::db::pool",
    "app::http",
    "other",
    "hyper",
];

/// Only a safety net against a hang: a healthy run never gets near it.
const SAFETY_NET: Duration = Duration::from_secs(60);

/// A broker with every level enabled for `logger:` macros.
fn broker() -> Broker {
    log::set_max_level(LevelFilter::Trace);
    Broker::new()
}

/// Sets the flag when dropped, also while unwinding, so that publishers stop
/// (and the scope fails instead of hanging) if the reconfigurer panics.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A predicate over a record's number (the `n` of its `"t/n"` message).
type NumberFilter = fn(u64) -> bool;

/// `(thread, number)` from a `"t/n"` message.
fn ident(record: &Record) -> (u64, u64) {
    let (t, n) = record
        .message()
        .split_once('/')
        .unwrap_or_else(|| panic!("unexpected message {:?}", record.message()));
    (t.parse().unwrap(), n.parse().unwrap())
}

/// Sets (`Some`) or clears (`None`) a predicate over the record's number.
fn set_number_filter(
    broker: &Broker,
    name: &str,
    filter: Option<NumberFilter>,
) -> Result<(), ReconfigureError> {
    match filter {
        Some(f) => broker.set_filter(name, move |r: &Record| f(ident(r).1)),
        None => broker.clear_filter(name),
    }
}

/// One subscription's configuration, as plain data.
#[derive(Clone, Debug)]
struct SubModel {
    patterns: Vec<TopicPattern>,
    level: LevelFilter,
    directives: Option<Directives>,
    filter: Option<NumberFilter>,
}

impl SubModel {
    fn accepts(&self, level: Level, target: &str, n: u64) -> bool {
        let topic = Topic::new(level, target);
        level <= self.level
            && self.patterns.iter().any(|p| p.matches(topic.as_str()))
            && self
                .directives
                .as_ref()
                .map_or(true, |d| d.enabled(level, target))
            && self.filter.map_or(true, |f| f(n))
    }
}

/// A whole broker configuration, as plain data.
#[derive(Clone, Debug, Default)]
struct Model {
    subs: BTreeMap<&'static str, SubModel>,
    global: Option<Directives>,
}

impl Model {
    /// The subscriptions a record should reach under this configuration.
    fn expected(&self, level: Level, target: &str, n: u64) -> BTreeSet<&'static str> {
        if !self
            .global
            .as_ref()
            .map_or(true, |d| d.enabled(level, target))
        {
            return BTreeSet::new();
        }
        self.subs
            .iter()
            .filter(|(_, sub)| sub.accepts(level, target, n))
            .map(|(&name, _)| name)
            .collect()
    }
}

fn patterns(texts: &[&str]) -> Vec<TopicPattern> {
    if texts.is_empty() {
        return vec![TopicPattern::match_all()];
    }
    texts
        .iter()
        .map(|p| TopicPattern::parse(p).unwrap())
        .collect()
}

fn directives(spec: Option<&str>) -> Option<Directives> {
    spec.map(|s| Directives::parse(s).unwrap())
}

/// One reconfiguration.
#[derive(Clone, Copy, Debug)]
enum Step {
    Subscribe {
        name: &'static str,
        patterns: &'static [&'static str],
        level: LevelFilter,
        directives: Option<&'static str>,
    },
    Unsubscribe(&'static str),
    Patterns(&'static str, &'static [&'static str]),
    Level(&'static str, LevelFilter),
    Directives(&'static str, Option<&'static str>),
    Filter(&'static str, Option<NumberFilter>),
    Global(Option<&'static str>),
}

/// A subscription that listens everywhere (`#`) at every level.
const fn sub(name: &'static str) -> Step {
    Step::Subscribe {
        name,
        patterns: &[],
        level: LevelFilter::Trace,
        directives: None,
    }
}

/// The test's side of the broker: what each appender captured, and the final
/// counters of those removed.
#[derive(Default)]
struct Appenders {
    captured: BTreeMap<&'static str, MemoryHandle>,
    removed: BTreeMap<&'static str, SubscriptionStats>,
}

/// Applies `step` to the broker and to the model, the same way.
fn apply(broker: &Broker, step: Step, model: &mut Model, appenders: &mut Appenders) {
    match step {
        Step::Subscribe {
            name,
            patterns: texts,
            level,
            directives: spec,
        } => {
            let (appender, captured) = Memory::new();
            let mut builder = Subscription::builder(name, appender)
                .level(level)
                // Nothing may be dropped: the test counts exactly.
                .overflow(OverflowPolicy::Block);
            for p in texts {
                builder = builder.pattern(*p);
            }
            if let Some(d) = directives(spec) {
                builder = builder.directives(d);
            }
            broker.subscribe(builder).unwrap();
            let model_sub = SubModel {
                patterns: patterns(texts),
                level,
                directives: directives(spec),
                filter: None,
            };
            assert!(model.subs.insert(name, model_sub).is_none(), "{name} twice");
            assert!(appenders.captured.insert(name, captured).is_none());
        }
        Step::Unsubscribe(name) => {
            let stats = broker.unsubscribe(name).unwrap();
            appenders.removed.insert(name, stats);
            model.subs.remove(name).unwrap();
        }
        Step::Patterns(name, texts) => {
            broker.set_patterns(name, texts).unwrap();
            model.subs.get_mut(name).unwrap().patterns = patterns(texts);
        }
        Step::Level(name, level) => {
            broker.set_level(name, level).unwrap();
            model.subs.get_mut(name).unwrap().level = level;
        }
        Step::Directives(name, spec) => {
            broker.set_directives(name, directives(spec)).unwrap();
            model.subs.get_mut(name).unwrap().directives = directives(spec);
        }
        Step::Filter(name, filter) => {
            set_number_filter(broker, name, filter).unwrap();
            model.subs.get_mut(name).unwrap().filter = filter;
        }
        Step::Global(spec) => {
            broker.set_global_directives(directives(spec));
            model.global = directives(spec);
        }
    }
}

/// One record as its publisher saw it: the configuration version read just
/// before and just after the log call.
#[derive(Debug)]
struct Published {
    n: u64,
    level: Level,
    target: &'static str,
    before: u64,
    after: u64,
}

/// Publishes from [`THREADS`] threads while applying `steps` one by one, each
/// once every thread has published `per_phase` records under the previous
/// configuration; then checks every record's delivery set, per-thread order
/// and the counters. Returns how many records were published.
fn run_concurrently(initial: &[Step], steps: &[Step], per_phase: u64) -> u64 {
    let broker = broker();
    let mut model = Model::default();
    let mut appenders = Appenders::default();
    for &step in initial {
        apply(&broker, step, &mut model, &mut appenders);
    }
    // configs[k]: the configuration after the k-th change (0: initial).
    let mut configs = vec![model.clone()];

    let version = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let (progress_tx, progress_rx) = mpsc::channel::<(u64, u64)>();
    let handle = broker.handle();

    let published: Vec<Vec<Published>> = thread::scope(|s| {
        let publishers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (version, done, handle) = (&version, &done, &handle);
                let progress = progress_tx.clone();
                s.spawn(move || {
                    let mut published = Vec::new();
                    let (mut phase, mut in_phase) = (u64::MAX, 0);
                    let mut n = 0u64;
                    while !done.load(Ordering::SeqCst) {
                        let i = ((n + 7 * t) % 30) as usize;
                        let (level, target) = (LEVELS[i % 5], TARGETS[i / 5]);
                        let before = version.load(Ordering::SeqCst);
                        log::log!(logger: handle, target: target, level, "{t}/{n}");
                        let after = version.load(Ordering::SeqCst);
                        published.push(Published {
                            n,
                            level,
                            target,
                            before,
                            after,
                        });
                        if before != phase {
                            (phase, in_phase) = (before, 0);
                        }
                        in_phase += 1;
                        if in_phase == per_phase {
                            let _ = progress.send((t, phase));
                        }
                        n += 1;
                    }
                    published
                })
            })
            .collect();
        drop(progress_tx);

        {
            let _stop = SetOnDrop(&done);
            for k in 0..=steps.len() {
                // Every thread has published under configuration k.
                for _ in 0..THREADS {
                    let (t, phase) = progress_rx
                        .recv_timeout(SAFETY_NET)
                        .expect("a publisher stopped reporting");
                    assert_eq!(phase, k as u64, "thread {t} reported out of phase");
                }
                let Some(&step) = steps.get(k) else { break };
                apply(&broker, step, &mut model, &mut appenders);
                configs.push(model.clone());
                // Announced only after the change returned.
                version.store(k as u64 + 1, Ordering::SeqCst);
            }
        }
        publishers.into_iter().map(|p| p.join().unwrap()).collect()
    });
    broker.flush().unwrap();

    // Who got what, exactly once each, in per-thread order.
    let mut delivered: HashMap<(u64, u64), BTreeSet<&str>> = HashMap::new();
    for (&name, captured) in &appenders.captured {
        let mut last: HashMap<u64, u64> = HashMap::new();
        for record in captured.records() {
            let (t, n) = ident(&record);
            let p = &published[t as usize][n as usize];
            assert_eq!(
                (record.level(), record.target()),
                (p.level, p.target),
                "{name}: {t}/{n}"
            );
            assert!(
                delivered.entry((t, n)).or_default().insert(name),
                "{name} got {t}/{n} twice"
            );
            if let Some(previous) = last.insert(t, n) {
                assert!(previous < n, "{name}: thread {t}'s {previous} before {n}");
            }
        }
    }

    // Each record went to exactly the set one configuration in its window
    // routes it to: wholly old or wholly new, never a mix.
    let last_config = steps.len() as u64;
    let mut expected_deliveries = 0;
    for (t, records) in published.iter().enumerate() {
        for p in records {
            let got = delivered.remove(&(t as u64, p.n)).unwrap_or_default();
            let window = p.before..=(p.after + 1).min(last_config);
            let fits = window
                .clone()
                .find(|&k| configs[k as usize].expected(p.level, p.target, p.n) == got);
            let Some(k) = fits else {
                let candidates: Vec<_> = window
                    .map(|k| (k, configs[k as usize].expected(p.level, p.target, p.n)))
                    .collect();
                panic!("{t}/{p:?} delivered to {got:?}; configurations allow {candidates:?}");
            };
            expected_deliveries +=
                configs[k as usize].expected(p.level, p.target, p.n).len() as u64;
        }
    }
    assert!(delivered.is_empty(), "never published: {delivered:?}");

    // The counters agree, and nothing was dropped.
    let stats = broker.stats();
    let live: BTreeSet<&str> = model.subs.keys().copied().collect();
    let reported: BTreeSet<&str> = stats.subscriptions.keys().map(String::as_str).collect();
    assert_eq!(reported, live);
    let mut matched = 0;
    for (&name, captured) in &appenders.captured {
        let s = appenders
            .removed
            .get(name)
            .copied()
            .unwrap_or_else(|| stats.subscriptions[name]);
        assert_eq!(
            s.matched,
            s.written + s.dropped + s.dead_lettered + s.lost + s.in_queue,
            "{name}: {s:?}"
        );
        assert_eq!(
            (s.dropped, s.dead_lettered, s.lost, s.in_queue),
            (0, 0, 0, 0),
            "{name}: {s:?}"
        );
        assert_eq!(s.written, captured.len() as u64, "{name}: {s:?}");
        matched += s.matched;
    }
    assert_eq!(matched, expected_deliveries);
    published.iter().map(|p| p.len() as u64).sum()
}

fn per_phase() -> u64 {
    if cfg!(miri) {
        3
    } else {
        200
    }
}

#[test]
fn concurrent_reconfiguration_routes_each_record_wholly_under_one_configuration() {
    let initial = [
        sub("all"),
        Step::Subscribe {
            name: "app",
            patterns: &["*.app.#"],
            level: LevelFilter::Info,
            directives: None,
        },
        Step::Subscribe {
            name: "env",
            patterns: &[],
            level: LevelFilter::Trace,
            directives: Some("warn,app::db=trace"),
        },
        Step::Subscribe {
            name: "errors",
            patterns: &["error.#"],
            level: LevelFilter::Trace,
            directives: None,
        },
    ];
    let steps = [
        Step::Level("all", LevelFilter::Warn),
        Step::Patterns("app", &["*.app.db.#", "error.#"]),
        Step::Subscribe {
            name: "debug",
            patterns: &["debug.#"],
            level: LevelFilter::Trace,
            directives: None,
        },
        Step::Directives("env", Some("info,hyper=off")),
        Step::Level("app", LevelFilter::Trace),
        Step::Unsubscribe("errors"),
        Step::Patterns("all", &["*.other", "*.hyper.#"]),
        Step::Directives("all", Some("hyper=debug,other=error")),
        Step::Subscribe {
            name: "late",
            patterns: &[],
            level: LevelFilter::Info,
            directives: Some("app=trace"),
        },
        Step::Level("debug", LevelFilter::Info),
        Step::Patterns("debug", &["trace.#", "*.app.http"]),
        Step::Directives("env", None),
        Step::Unsubscribe("app"),
        Step::Level("env", LevelFilter::Error),
        Step::Subscribe {
            name: "one_segment",
            patterns: &["#"],
            level: LevelFilter::Debug,
            directives: None,
        },
        Step::Patterns("one_segment", &["*.*"]),
        Step::Directives("one_segment", Some("trace,app=off")),
        Step::Unsubscribe("all"),
        Step::Level("late", LevelFilter::Off),
        Step::Patterns("env", &["warn.#", "error.#"]),
    ];
    assert_eq!(steps.len(), 20);
    let published = run_concurrently(&initial, &steps, per_phase());
    assert!(published >= THREADS * 21 * per_phase());
}

#[test]
fn concurrent_filter_and_global_directive_swaps_are_atomic() {
    let initial = [
        sub("even"),
        sub("plain"),
        Step::Subscribe {
            name: "app",
            patterns: &["*.app.#"],
            level: LevelFilter::Trace,
            directives: None,
        },
    ];
    let steps = [
        Step::Filter("even", Some(|n| n % 2 == 0)),
        Step::Global(Some("warn,app=debug")),
        Step::Filter("plain", Some(|n| n % 3 == 0)),
        Step::Filter("even", Some(|n| n % 5 != 0)),
        Step::Global(Some("off,other=trace,app::db=info")),
        Step::Filter("plain", None),
        Step::Global(None),
        Step::Filter("even", Some(|_| false)),
        Step::Filter("app", Some(|n| n % 7 < 3)),
        Step::Global(Some("trace,hyper=off")),
        Step::Filter("even", None),
    ];
    run_concurrently(&initial, &steps, per_phase());
}

/// The loosest level with some enabled (level, target) on the test grid,
/// according to `enabled`.
fn loosest(enabled: impl Fn(Level, &str) -> bool) -> LevelFilter {
    LEVELS
        .iter()
        .rev()
        .find(|&&level| TARGETS.iter().any(|t| enabled(level, t)))
        .map_or(LevelFilter::Off, |level| level.to_level_filter())
}

#[test]
fn max_level_is_the_loosest_enabled_level_after_every_change() {
    use LevelFilter::{Debug, Error, Info, Off, Trace, Warn};
    let broker = broker();
    let mut model = Model::default();
    let mut appenders = Appenders::default();
    assert_eq!(broker.max_level(), Off);

    let level_sub = |name, level| Step::Subscribe {
        name,
        patterns: &[],
        level,
        directives: None,
    };
    let table = [
        (level_sub("a", Warn), Warn),
        (level_sub("b", Error), Warn),
        (Step::Level("b", Debug), Debug),
        (Step::Directives("b", Some("info")), Info),
        (Step::Directives("b", Some("warn,app=trace")), Debug),
        (Step::Level("b", Trace), Trace),
        (Step::Directives("b", Some("warn,app=info,hyper=off")), Info),
        (Step::Level("a", Off), Info),
        (Step::Global(Some("error")), Error),
        (Step::Global(Some("error,app::db=debug")), Info),
        (Step::Global(None), Info),
        (Step::Unsubscribe("b"), Off),
        (Step::Level("a", Trace), Trace),
        (Step::Directives("a", Some("off")), Off),
        (
            Step::Subscribe {
                name: "c",
                patterns: &[],
                level: Trace,
                directives: Some("app=info"),
            },
            Info,
        ),
        (Step::Global(Some("warn")), Warn),
        (Step::Unsubscribe("c"), Off),
        (Step::Directives("a", None), Warn),
        (Step::Global(Some("other=trace")), Trace),
        (Step::Level("a", Debug), Debug),
        (Step::Unsubscribe("a"), Off),
    ];
    for (i, (step, expected)) in table.into_iter().enumerate() {
        apply(&broker, step, &mut model, &mut appenders);
        let from_model = loosest(|level, target| !model.expected(level, target, 0).is_empty());
        let from_broker = loosest(|level, target| {
            let metadata = Metadata::builder().level(level).target(target).build();
            log::Log::enabled(&*broker, &metadata)
        });
        assert_eq!(
            (broker.max_level(), from_broker, from_model),
            (expected, expected, expected),
            "row {i}: after {step:?}"
        );
    }
}

#[test]
fn refused_reconfigurations_change_nothing() {
    let broker = broker();
    let (appender, captured) = Memory::new();
    broker
        .subscribe(
            Subscription::builder("x", appender)
                .pattern("warn.#")
                .level(LevelFilter::Info),
        )
        .unwrap();
    let publish = || {
        for level in LEVELS {
            log::log!(logger: &broker, target: "app::db", level, "{level}");
        }
        broker.flush().unwrap();
        captured
            .take()
            .iter()
            .map(|r| r.level())
            .collect::<Vec<_>>()
    };
    assert_eq!(publish(), [Level::Warn]);

    // A malformed pattern among good ones: refused, named, nothing applied.
    match broker.set_patterns("x", &["#", "app..db"]) {
        Err(ReconfigureError::Pattern(e)) => {
            assert_eq!(
                (e.pattern(), e.position(), e.kind()),
                ("app..db", 4, TopicParseErrorKind::EmptySegment)
            );
        }
        other => panic!("expected a pattern error, got {other:?}"),
    }
    assert_eq!(publish(), [Level::Warn]);

    // Unknown names.
    let not_found = ReconfigureError::NotFound("nope".into());
    assert_eq!(broker.set_patterns("nope", &["#"]), Err(not_found.clone()));
    assert_eq!(
        broker.set_level("nope", LevelFilter::Trace),
        Err(not_found.clone())
    );
    assert_eq!(
        broker.set_directives("nope", Some(Directives::new(LevelFilter::Trace))),
        Err(not_found.clone())
    );
    assert_eq!(broker.set_filter("nope", |_| true), Err(not_found.clone()));
    assert_eq!(broker.clear_filter("nope"), Err(not_found));
    assert_eq!(publish(), [Level::Warn]);
    assert_eq!(broker.max_level(), LevelFilter::Info);

    // The subscription still reconfigures normally afterwards.
    broker.set_patterns("x", &["#"]).unwrap();
    assert_eq!(publish(), [Level::Error, Level::Warn, Level::Info]);
    let stats = broker.stats().subscriptions["x"];
    assert_eq!((stats.matched, stats.written, stats.dropped), (6, 6, 0));
}

#[test]
fn global_directives_filter_every_subscription() {
    let broker = broker();
    let mut model = Model::default();
    let mut appenders = Appenders::default();
    let setup = [
        sub("all"),
        Step::Subscribe {
            name: "app",
            patterns: &["*.app.#"],
            level: LevelFilter::Trace,
            directives: None,
        },
        Step::Subscribe {
            name: "info",
            patterns: &[],
            level: LevelFilter::Info,
            directives: Some("trace,hyper=off"),
        },
    ];
    for step in setup {
        apply(&broker, step, &mut model, &mut appenders);
    }
    let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
    for global in [
        Some("warn,app=debug"),
        Some("off"),
        Some("app::db=trace"),
        None,
    ] {
        apply(&broker, Step::Global(global), &mut model, &mut appenders);
        for level in LEVELS {
            for target in TARGETS {
                log::log!(logger: &broker, target: target, level, "0/0");
            }
        }
        broker.flush().unwrap();
        for (&name, captured) in &appenders.captured {
            let got: Vec<_> = captured
                .take()
                .iter()
                .map(|r| (r.level(), r.target().to_owned()))
                .collect();
            let expected: Vec<_> = LEVELS
                .iter()
                .flat_map(|&level| TARGETS.iter().map(move |&t| (level, t)))
                .filter(|&(level, target)| model.expected(level, target, 0).contains(name))
                .map(|(level, target)| (level, target.to_owned()))
                .collect();
            assert_eq!(got, expected, "{name} under global {global:?}");
            *totals.entry(name).or_default() += expected.len() as u64;
        }
    }
    // Under `off` nothing at all is routed.
    let stats = broker.stats();
    for (name, expected) in totals {
        let s = stats.subscriptions[name];
        assert_eq!((s.matched, s.written, s.dropped), (expected, expected, 0));
    }
}

#[test]
fn set_filter_swaps_the_predicate_for_the_very_next_record() {
    let broker = broker();
    let (appender, captured) = Memory::new();
    broker
        .subscribe(Subscription::builder("f", appender).filter(|r| ident(r).1 % 2 == 0))
        .unwrap();
    let filters: [Option<NumberFilter>; 4] = [
        Some(|n| n % 3 == 0),
        None,
        Some(|_| false),
        Some(|n| n % 2 == 1),
    ];
    let mut expected = Vec::new();
    let mut n = 0;
    let mut current: Option<NumberFilter> = Some(|n| n % 2 == 0);
    for next in filters.into_iter().map(Some).chain([None]) {
        for _ in 0..12 {
            log::info!(logger: &broker, target: "app", "0/{n}");
            if current.map_or(true, |f| f(n)) {
                expected.push(n);
            }
            n += 1;
        }
        let Some(next) = next else { break };
        set_number_filter(&broker, "f", next).unwrap();
        current = next;
    }
    broker.flush().unwrap();
    let got: Vec<u64> = captured.records().iter().map(|r| ident(r).1).collect();
    assert_eq!(got, expected);
    let s = broker.stats().subscriptions["f"];
    assert_eq!((s.matched, s.written), (got.len() as u64, got.len() as u64));
}
