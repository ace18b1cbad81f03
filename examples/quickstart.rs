//! The README's first command: logbus as the `log` backend, two appenders
//! with different topics and levels.
//!
//! ```text
//! cargo run --example quickstart
//! ```

use std::io::Write as _;

use logbus::{AppendError, Appender, LevelFilter, Memory, Record, Subscription};

/// Prints `LEVEL target: message` lines on stderr.
struct Stderr;

impl Appender for Stderr {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        writeln!(
            std::io::stderr().lock(),
            "{:>5} {}: {}",
            record.level(),
            record.target(),
            record.message()
        )
        .map_err(|e| AppendError::io(logbus::Operation::Write, e))
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (errors, captured) = Memory::new();
    let guard = logbus::builder()
        // Everything at Info and above goes to the console.
        .appender(Subscription::builder("console", Stderr).level(LevelFilter::Info))
        // Every error, whatever its target, is also kept in memory.
        .appender(Subscription::builder("errors", errors).pattern("error.#"))
        .install()?;

    log::info!(target: "app::http", "listening on {}", "127.0.0.1:8080");
    log::debug!(target: "app::http", "not shown: below the console's level");
    log::warn!(target: "app::db", "slow query took {} ms", 1200);
    log::error!(target: "app::db", user = "ann", attempt = 3; "connection lost");

    log::logger().flush();
    let stats = guard.stats();
    drop(guard);

    println!("errors captured: {:?}", captured.messages());
    println!("{}", serde_json::to_string_pretty(&stats)?);
    Ok(())
}
