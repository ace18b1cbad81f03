//! A flight recorder: debug records are kept in the journal without
//! reaching the console; when an error is logged, the debug records that
//! led up to it are written first, marked `logbus.context=<seq of the
//! error>`.
//!
//! ```text
//! cargo run --example flight_recorder
//! ```

use logbus::appenders::Console;
use logbus::{FlightRecorder, Journal, LevelFilter, Subscription};

fn handle_request(id: u32) {
    log::debug!(target: "app::http", "request {id}: parsing headers");
    log::debug!(target: "app::db", "request {id}: checking out a connection");
    log::debug!(target: "app::db", "request {id}: running the query");
    if id == 3 {
        log::error!(target: "app::db", "request {id}: the query failed");
    } else {
        log::info!(target: "app::http", "request {id}: served");
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let guard = logbus::builder()
        .journal(Journal::new().records(1_000))
        .appender(
            Subscription::builder("console", Console::builder().build())
                .level(LevelFilter::Info)
                // Up to 3 debug records before each error, from its thread.
                .flight_recorder(FlightRecorder::new().context(3).same_thread(true)),
        )
        .install()?;

    for id in 1..=4 {
        handle_request(id);
    }

    drop(guard);
    Ok(())
}
