//! The last-resort channel: rate-limited lines on stderr.
//!
//! Used only when there is nowhere else to put a problem (an appender failed
//! and there is no dead-letter route, the dead-letter appender itself failed,
//! a flush failed). At most one line per second reaches stderr; the lines
//! suppressed in between are counted and mentioned in the next line.

use std::fmt;
use std::io::Write as _;
use std::time::{Duration, Instant};

use crate::sync::{lock, Mutex};

/// Lines suppressed since the last one written, and when that was.
static STATE: Mutex<Option<(Instant, u64)>> = Mutex::new(None);

const INTERVAL: Duration = Duration::from_secs(1);

/// Writes `line` to stderr unless a line was written less than a second ago,
/// in which case it is only counted.
pub(crate) fn stderr(line: fmt::Arguments<'_>) {
    let suppressed = {
        // The lock guards only the two fields; no I/O happens under it.
        let mut state = lock(&STATE);
        let now = Instant::now();
        match *state {
            Some((last, ref mut count)) if now.duration_since(last) < INTERVAL => {
                *count += 1;
                return;
            }
            Some((_, count)) => {
                *state = Some((now, 0));
                count
            }
            None => {
                *state = Some((now, 0));
                0
            }
        }
    };
    let mut err = std::io::stderr().lock();
    // Nothing sensible remains to be done if stderr itself fails.
    let _ = if suppressed > 0 {
        writeln!(err, "{line} ({suppressed} similar lines suppressed)")
    } else {
        writeln!(err, "{line}")
    };
}
