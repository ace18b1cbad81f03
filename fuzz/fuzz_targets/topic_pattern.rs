//! Fuzz target: `TopicPattern::parse` on arbitrary UTF-8 never panics, and
//! `matches` of an accepted pattern against a second, arbitrary topic never
//! panics either. The input is split in two by `arbitrary`: pattern, topic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use logbus::TopicPattern;

fuzz_target!(|input: (&str, &str)| {
    let (pattern, topic) = input;
    let Ok(parsed) = TopicPattern::parse(pattern) else {
        return;
    };
    // Documented: the pattern keeps its source text, and matches by it.
    assert_eq!(parsed.as_str(), pattern);
    let _ = parsed.matches(topic);
    let _ = parsed.matches(pattern);
});
