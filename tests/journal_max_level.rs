//! `log::max_level()` admits what the journal keeps, and only that, when
//! the broker is the `log` backend. Its own process: it installs the
//! global backend.

use log::{Level, LevelFilter, Metadata};
use logbus::{FlightRecorder, Journal, JournalQuery, Memory, Subscription};

fn enabled(level: Level, target: &str) -> bool {
    log::logger().enabled(&Metadata::builder().level(level).target(target).build())
}

fn kept(journal: &logbus::JournalReader) -> Vec<String> {
    journal
        .iter(JournalQuery::new())
        .unwrap()
        .map(|r| r.message().to_owned())
        .collect()
}

#[test]
fn max_level_admits_the_journal_and_flight_recorders() {
    let (appender, captured) = Memory::new();
    let guard = logbus::builder()
        .journal(Journal::new().level(LevelFilter::Debug).pattern("*.app.#"))
        .appender(Subscription::builder("a", appender).level(LevelFilter::Warn))
        .install()
        .unwrap();
    let journal = guard.journal().unwrap();
    assert_eq!(log::max_level(), LevelFilter::Debug);
    // Admitted by the level, built only where the journal or an appender
    // takes it.
    assert!(enabled(Level::Debug, "app::db"));
    assert!(!enabled(Level::Debug, "lib"));
    assert!(!enabled(Level::Trace, "app::db"));
    log::debug!(target: "app::db", "kept");
    log::debug!(target: "lib", "not kept");
    log::warn!(target: "lib", "written");
    log::trace!(target: "app::db", "not built");
    log::logger().flush();
    assert_eq!(kept(&journal), ["kept"]);
    assert_eq!(captured.messages(), ["written"]);

    // A flight recorder that keeps trace records admits them too.
    guard
        .subscribe(
            Subscription::builder("fr", Memory::new().0)
                .level(LevelFilter::Error)
                .flight_recorder(FlightRecorder::new().keep(LevelFilter::Trace)),
        )
        .unwrap();
    assert_eq!(log::max_level(), LevelFilter::Trace);
    assert!(enabled(Level::Trace, "lib"));
    guard.unsubscribe("fr").unwrap();
    assert_eq!(log::max_level(), LevelFilter::Debug);

    // Without the journal, only the appender's level is left.
    guard.remove_journal().unwrap();
    assert_eq!(log::max_level(), LevelFilter::Warn);
    assert!(!enabled(Level::Debug, "app::db"));
}
