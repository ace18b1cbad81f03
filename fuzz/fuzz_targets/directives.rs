//! Fuzz target: parsing a `RUST_LOG`-style spec (`str::parse::<Directives>()`
//! and `Directives::parse_lossy`) on arbitrary UTF-8 never panics, and an
//! accepted spec's canonical `Display` parses back to an equal value (as its
//! docs promise).

#![no_main]

use libfuzzer_sys::fuzz_target;
use logbus::Directives;

fuzz_target!(|spec: &str| {
    let _ = Directives::parse_lossy(spec);
    let Ok(directives) = spec.parse::<Directives>() else {
        return;
    };
    let _ = directives.level_for(spec);
    assert_eq!(directives.to_string().parse::<Directives>(), Ok(directives));
});
