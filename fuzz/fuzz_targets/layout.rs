//! Fuzz target: `Layout::parse` on arbitrary UTF-8 never panics, and a
//! layout it accepts renders a record without panicking (the strftime part
//! of `{ts:FMT}` is only probed at parse time, so rendering is where a
//! format chrono half-accepts would show).

#![no_main]

use libfuzzer_sys::fuzz_target;
use logbus::appenders::{Layout, Level, Record, Topic};

fuzz_target!(|pattern: &str| {
    let Ok(mut layout) = Layout::parse(pattern) else {
        return;
    };
    let record = Record::builder(Topic::new(Level::Warn, "app::db"))
        .message("slow query")
        .kv("ms", 1200u64)
        .build();
    let mut line = Vec::new();
    layout.render(&record, &mut line);
});
