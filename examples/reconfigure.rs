//! Reconfiguring logbus while threads log: raise a level, add a JSON appender, remove it,
//! then print the counters.
//!
//! ```text
//! cargo run --example reconfigure
//! ```
//!
//! Three threads each log 2,000 records: one info record every 500 (`demo::progress`),
//! one debug record every 250 (`demo::progress`), and a debug record for every other
//! one (`demo::worker`). The console only listens to `demo::progress`, at Info at first,
//! so it prints a dozen lines; raising it to Debug adds a few. The JSON appender (on
//! stdout) only takes `debug.demo.progress`, while it is subscribed.
//!
//! The main thread reconfigures while the threads log; a barrier a little later makes
//! them wait until it is done, so the output is the same from run to run except for the
//! records logged during the change, which each go wholly to the old or the new setup.

use std::sync::{mpsc, Arc, Barrier};
use std::thread;

use logbus::appenders::{Console, JsonAppender};
use logbus::{LevelFilter, Subscription};

const THREADS: u64 = 3;
const RECORDS: u64 = 2_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let guard = logbus::builder()
        .appender(
            Subscription::builder("console", Console::builder().build())
                .pattern("*.demo.progress")
                .level(LevelFilter::Info),
        )
        .install()?;
    // `install` sets `log::max_level` from the subscriptions: Info for now.
    println!("max level at start: {}", log::max_level());

    // Each thread reports when it is a third and two thirds of the way through, and
    // waits at the half and five-sixths marks until the main thread has reconfigured.
    let (progress_tx, progress_rx) = mpsc::channel();
    let reconfigured = Arc::new(Barrier::new(THREADS as usize + 1));
    let removed = Arc::new(Barrier::new(THREADS as usize + 1));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let progress = progress_tx.clone();
            let (reconfigured, removed) = (Arc::clone(&reconfigured), Arc::clone(&removed));
            thread::spawn(move || {
                for i in 0..RECORDS {
                    if i % 500 == 0 {
                        log::info!(target: "demo::progress", thread = t, i; "thread {t}: {i}/{RECORDS}");
                    } else if i % 250 == 0 {
                        log::debug!(target: "demo::progress", thread = t, i; "thread {t}: halfway to the next 500");
                    } else {
                        log::debug!(target: "demo::worker", thread = t, i; "working");
                    }
                    if i == RECORDS / 3 || i == 2 * RECORDS / 3 {
                        let _ = progress.send(i);
                    }
                    if i == RECORDS / 2 {
                        reconfigured.wait();
                    }
                    if i == 5 * RECORDS / 6 {
                        removed.wait();
                    }
                }
            })
        })
        .collect();
    drop(progress_tx);
    let wait_for_all = |rx: &mpsc::Receiver<u64>| {
        for _ in 0..THREADS {
            let _ = rx.recv();
        }
    };

    // While they log: more detail on the console, and a JSON copy of the debug records.
    wait_for_all(&progress_rx);
    guard.set_level("console", LevelFilter::Debug)?;
    guard.subscribe(
        Subscription::builder("json", JsonAppender::stdout())
            .pattern("debug.demo.progress")
            .level(LevelFilter::Debug),
    )?;
    println!("max level now: {}", log::max_level());
    reconfigured.wait();

    // Later, remove the JSON appender again: its final counters come back.
    wait_for_all(&progress_rx);
    let json = guard.unsubscribe("json")?;
    println!(
        "json appender removed after writing {} records",
        json.written
    );
    removed.wait();

    for worker in workers {
        worker.join().expect("a logging thread panicked");
    }
    log::logger().flush();
    println!("{}", serde_json::to_string_pretty(&guard.stats())?);
    Ok(())
}
