//! Wall-clock time as logbus stores and prints it: microseconds since the
//! Unix epoch, formatted as RFC 3339 UTC.
//!
//! On the ground floor: the queue stamps drop bursts with it and the worker
//! prints them; neither reaches up for it.

/// Now, in microseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Formats microseconds since the epoch as RFC 3339 UTC.
pub(crate) fn format_micros(micros: u64) -> String {
    chrono::DateTime::from_timestamp_micros(micros as i64).map_or_else(
        || micros.to_string(),
        |t| t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339_utc_with_microseconds() {
        assert_eq!(
            format_micros(1_700_000_000_123_456),
            "2023-11-14T22:13:20.123456Z"
        );
        assert!(now_micros() > 1_700_000_000_000_000);
    }
}
