//! The models. Each runs logbus' own gate and waker code (see `lib.rs`)
//! under every interleaving and every value the memory model lets a load
//! read, within loom's bounds; a lost wake-up shows as a deadlock (the
//! worker parked, every other thread done), a record enqueued after a
//! removal's final drain as a failed assertion.

use std::process::Command;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use crate::gate::{self, BusyFlag, SharedGate};
use crate::waker::{self, Waker};

/// What the protocols read of a lane (`src/queue/lane.rs`): its producer's
/// gate flag and its tail, stored with `Release` after the slot is filled
/// and loaded with `Acquire` by takers.
#[derive(Default)]
struct Lane {
    busy: BusyFlag,
    tail: AtomicUsize,
}

impl Lane {
    /// The producer's push (only it writes `tail`).
    fn push(&self) {
        let tail = self.tail.load(Ordering::Relaxed);
        self.tail.store(tail + 1, Ordering::Release);
    }

    /// Whether records past `head` are queued.
    fn queued(&self, head: usize) -> bool {
        self.tail.load(Ordering::Acquire) > head
    }
}

/// One subscription: a lane, the shared channel's gate and length, the
/// worker's waker.
#[derive(Default)]
struct Sub {
    lane: Lane,
    shared_gate: SharedGate,
    shared: AtomicUsize,
    waker: Waker,
}

/// A publisher as `src/broker/publish/` runs it: mark the lane busy,
/// the gate's fence, push, leave, then wake a worker that said it sleeps
/// (`PublishGate`'s, `LaneGate`'s and `CopiesGate`'s drop).
fn publish(sub: &Sub) {
    sub.lane.busy.enter();
    gate::fence();
    sub.lane.push();
    sub.lane.busy.leave();
    sub.waker.wake_if_sleeping();
}

/// A pusher without a lane (a dead letter; `SubShared::push_shared`).
fn push_shared(sub: &Sub) {
    {
        let _pass = sub.shared_gate.enter();
        sub.shared.fetch_add(1, Ordering::Release);
    }
    sub.waker.wake_if_sleeping();
}

/// The worker (`src/worker/mod.rs`): takes what is queued in the lane and
/// the shared channel, and when nothing is, sleeps with the drain's look
/// (`Drain::look`: each source's gate, then its records).
fn work_until(sub: &Sub, records: usize) {
    let (mut lane_head, mut shared_head) = (0, 0);
    while lane_head + shared_head < records {
        let (tail, shared) = (
            sub.lane.tail.load(Ordering::Acquire),
            sub.shared.load(Ordering::Acquire),
        );
        if tail > lane_head || shared > shared_head {
            (lane_head, shared_head) = (tail, shared);
            continue;
        }
        sub.waker.sleep(|| {
            let shared = std::iter::once_with(|| {
                waker::look(sub.shared_gate.is_set(), || {
                    sub.shared.load(Ordering::Acquire) > shared_head
                })
            });
            let lane = std::iter::once_with(|| {
                waker::look(sub.lane.busy.is_set(), || sub.lane.queued(lane_head))
            });
            // One lane, none added (`Drain::look` with a fixed registry).
            waker::look_all(shared.chain(lane), || false)
        });
    }
}

/// Starts the worker on its own thread, registered with the waker before
/// any publisher runs (as `worker::spawn` does before the subscription is
/// published). The publishers run on the model's main thread and the
/// threads it spawns; only the worker is ever unparked, and it never joins
/// (loom cannot unpark a thread blocked in `join`: loom issue #249).
fn worker(sub: &Arc<Sub>, records: usize) -> thread::JoinHandle<()> {
    let (registered, sub) = (Arc::new(AtomicBool::new(false)), Arc::clone(sub));
    let flag = Arc::clone(&registered);
    let handle = thread::spawn(move || {
        sub.waker.register();
        flag.store(true, Ordering::Release);
        work_until(&sub, records);
    });
    while !registered.load(Ordering::Acquire) {
        thread::yield_now();
    }
    handle
}

/// Runs `model` under loom with at most [`PREEMPTIONS`] preemptions per
/// execution (`LOOM_MAX_PREEMPTIONS` overrides it: `.ci/loom-long` runs
/// the models with more).
pub(crate) fn check(model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(PREEMPTIONS);
    }
    builder.check(model);
}

/// Preemptions per execution in the CI run: loom's documentation finds
/// that most bugs show within two or three; with 3 the suite's models take
/// about 15 s in a debug build on two cores (4: about 30 s in release).
const PREEMPTIONS: usize = 3;

#[test]
fn a_publisher_never_leaves_the_worker_asleep() {
    check(|| {
        let sub = Arc::new(Sub::default());
        let worker = worker(&sub, 2);
        publish(&sub);
        publish(&sub);
        worker.join().unwrap();
    });
}

#[test]
fn a_dead_letter_pusher_never_leaves_the_worker_asleep() {
    check(|| {
        let sub = Arc::new(Sub::default());
        let worker = worker(&sub, 2);
        push_shared(&sub);
        push_shared(&sub);
        worker.join().unwrap();
    });
}

#[test]
fn a_publisher_and_a_dead_letter_pusher_never_leave_the_worker_asleep() {
    check(|| {
        let sub = Arc::new(Sub::default());
        let worker = worker(&sub, 2);
        let dead_letters = {
            let sub = Arc::clone(&sub);
            thread::spawn(move || push_shared(&sub))
        };
        publish(&sub);
        dead_letters.join().unwrap();
        worker.join().unwrap();
    });
}

/// The wake-up of logbus before the delivery issue, in miniature: the
/// publisher read `sleeping` right after its push, inside the gate, and
/// the worker's last look before parking read the queue alone. (It also
/// looked again 1 ms after saying it sleeps, which loom cannot time; the
/// model shows that correctness rested on that timing.)
#[test]
fn the_earlier_wake_up_protocol_loses_a_wake_up() {
    must_fail("earlier_wake_up_protocol", "deadlock");
}

/// Set in the child process that runs a model expected to fail.
const EXPECT_FAILURE: &str = "LOGBUS_LOOM_EXPECT_FAILURE";

/// Runs the model test `name` in a child process (a failing loom model
/// aborts the process it runs in) and checks that loom rejected it, with
/// `reason` in its report.
pub(crate) fn must_fail(name: &str, reason: &str) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &if name.contains("::") {
                name.to_owned()
            } else {
                format!("models::{name}")
            },
            "--nocapture",
            "--test-threads=1",
        ])
        .env(EXPECT_FAILURE, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains(reason),
        "loom did not reject `{name}` with {reason:?}:\n{stderr}"
    );
}

/// The body of a model expected to fail; a plain pass when run by
/// `cargo test` itself, so that only `must_fail` runs it.
pub(crate) fn expected_failure(model: impl Fn() + Sync + Send + 'static) {
    if std::env::var_os(EXPECT_FAILURE).is_some() {
        check(model);
    }
}

#[test]
fn earlier_wake_up_protocol() {
    expected_failure(|| {
        let lane = Arc::new(Lane::default());
        let sleeping = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicBool::new(false));
        let worker = {
            let (lane, sleeping, started) = (
                Arc::clone(&lane),
                Arc::clone(&sleeping),
                Arc::clone(&started),
            );
            thread::spawn(move || {
                started.store(true, Ordering::Release);
                if !lane.queued(0) {
                    sleeping.store(true, Ordering::Relaxed);
                    loom::sync::atomic::fence(Ordering::SeqCst);
                    while !lane.queued(0) {
                        thread::park();
                    }
                }
            })
        };
        while !started.load(Ordering::Acquire) {
            thread::yield_now();
        }
        lane.busy.enter();
        gate::fence();
        lane.push();
        if sleeping.load(Ordering::Relaxed) {
            worker.thread().unpark();
        }
        lane.busy.leave();
        worker.join().unwrap();
    });
}

#[test]
fn a_removal_waits_for_the_publisher_or_the_publisher_routes_again() {
    check(|| removal(true));
}

/// Without the publisher's fence the gate does not hold: loom must find a
/// record enqueued after the removal's final drain.
#[test]
fn without_the_publishers_fence_a_record_slips_past_a_removal() {
    must_fail("removal_without_fence", "enqueued after the final drain");
}

#[test]
fn removal_without_fence() {
    expected_failure(|| removal(false));
}

/// A publisher racing a removal (`src/broker/config.rs` bumps the
/// generation, `worker::stop` waits for the gate, then the worker drains
/// for the last time).
fn removal(publisher_fences: bool) {
    let sub = Arc::new(Sub::default());
    let generation = Arc::new(AtomicUsize::new(0));
    let publisher = {
        let (sub, generation) = (Arc::clone(&sub), Arc::clone(&generation));
        thread::spawn(move || {
            sub.lane.busy.enter();
            if publisher_fences {
                gate::fence();
            }
            // Relaxed, after the fence, as in `publish_in`.
            let routed = generation.load(Ordering::Relaxed) == 0;
            if routed {
                sub.lane.push();
            }
            sub.lane.busy.leave();
            routed
        })
    };
    generation.store(1, Ordering::SeqCst);
    gate::wait_closed(&sub.shared_gate, std::iter::once(&sub.lane.busy), None);
    let drained = sub.lane.tail.load(Ordering::Acquire);
    let pushed = publisher.join().unwrap();
    assert_eq!(
        drained,
        usize::from(pushed),
        "a record was enqueued after the final drain"
    );
}

/// A lane's growth inside the gate (`Queue::renew`, `LaneProducer::replace`):
/// the producer registers a new lane after its fence, pushes there, clears
/// the new and then the old lane's flag, then wakes. The worker's look is
/// logbus's own (`waker::look_all`, which `Drain::look` runs: each lane it
/// knows, flag then records, the registry's version last) with
/// `version_last`, or the version read first, as it was before a review
/// found the lost wake-up.
fn growth(version_last: bool) {
    let (old, new) = (Arc::new(Lane::default()), Arc::new(Lane::default()));
    let version = Arc::new(AtomicUsize::new(0));
    let waker = Arc::new(Waker::default());
    let registered = Arc::new(AtomicBool::new(false));
    let worker = {
        let (old, new, version, waker, registered) = (
            Arc::clone(&old),
            Arc::clone(&new),
            Arc::clone(&version),
            Arc::clone(&waker),
            Arc::clone(&registered),
        );
        thread::spawn(move || {
            waker.register();
            registered.store(true, Ordering::Release);
            let mut knows_new = false;
            loop {
                // `Drain::refresh`, then the take.
                knows_new |= version.load(Ordering::Acquire) == 1;
                if knows_new && new.queued(0) {
                    return;
                }
                waker.sleep(|| {
                    let added = || version.load(Ordering::Acquire) != usize::from(knows_new);
                    let lanes = std::iter::once(&old).chain(knows_new.then_some(&new));
                    let looks =
                        lanes.map(|lane| waker::look(lane.busy.is_set(), || lane.queued(0)));
                    if version_last {
                        // logbus's own look (`Drain::look`).
                        return waker::look_all(looks, added);
                    }
                    // The broken order, for the model that must fail.
                    let first = waker::Work::from(added());
                    looks.fold(first, waker::Work::or)
                });
            }
        })
    };
    while !registered.load(Ordering::Acquire) {
        thread::yield_now();
    }
    old.busy.enter();
    gate::fence();
    version.fetch_add(1, Ordering::Release);
    new.busy.enter();
    new.push();
    new.busy.leave();
    old.busy.leave();
    waker.wake_if_sleeping();
    worker.join().unwrap();
}

#[test]
fn a_growing_lane_never_leaves_the_worker_asleep() {
    check(|| growth(true));
}

/// With the registry's version read before the flags, loom must find the
/// worker asleep with the record in the new lane.
#[test]
fn reading_the_version_first_loses_a_growing_lanes_wake_up() {
    must_fail("growth_version_first", "deadlock");
}

#[test]
fn growth_version_first() {
    expected_failure(|| growth(false));
}
