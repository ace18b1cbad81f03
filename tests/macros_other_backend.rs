//! logbus's own macros when another `log` backend is installed (its own
//! process): every call takes the `log` crate's path, and the backend gets
//! the record `log::info!` would give it (message, level, target, module,
//! file, line, key-values).

use std::sync::Mutex;

/// What the backend saw of one record.
type Seen = (
    String,
    Option<String>,
    log::Level,
    String,
    Option<String>,
    Option<String>,
    Option<u32>,
    usize,
);

struct Other(Mutex<Vec<Seen>>);

impl log::Log for Other {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let args = record.args();
        self.0.lock().unwrap().push((
            args.to_string(),
            args.as_str().map(str::to_owned),
            record.level(),
            record.target().to_owned(),
            record.module_path().map(str::to_owned),
            record.file().map(str::to_owned),
            record.line(),
            record.key_values().count(),
        ));
    }

    fn flush(&self) {}
}

static OTHER: Other = Other(Mutex::new(Vec::new()));

/// Logs the same call both ways on one source line.
macro_rules! both {
    ($($arg:tt)+) => {
        logbus::info!($($arg)+); log::info!($($arg)+);
    };
}

#[test]
fn another_backend_gets_what_log_gives_it() {
    log::set_logger(&OTHER).unwrap();
    log::set_max_level(log::LevelFilter::Trace);
    let (id, ms) = (7u64, 2.5f64);
    both!(target: "app::http", "request {} served in {:.1} ms", id, ms);
    both!("{} {}", "GET", 5);
    both!("{:?}", String::from("owned"));
    both!(k = 1; "kv {}", id);
    let seen = OTHER.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 8);
    for pair in seen.chunks(2) {
        assert_eq!(pair[0], pair[1]);
    }
    assert_eq!(seen[0].0, "request 7 served in 2.5 ms");
    assert_eq!(
        seen[2].1.as_deref(),
        Some("GET 5"),
        "literals inlined as in log's expansion"
    );
}
