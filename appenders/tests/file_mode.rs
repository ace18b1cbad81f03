//! Created files get the configured mode whatever the umask.
//!
//! The umask is process-wide: this test lives alone in its own binary.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use logbus_appenders::{Appender, FileAppender, Level, Record, Topic};

#[test]
fn created_files_have_mode_0640_whatever_the_umask() {
    // SAFETY: umask only swaps the process's file creation mask; no other
    // test runs in this binary.
    let old = unsafe { libc::umask(0) };
    let dir = tempfile::tempdir().unwrap();

    let path = dir.path().join("app.log");
    let mut appender = FileAppender::builder(&path)
        .max_bytes(10)
        .keep(2)
        .build()
        .unwrap();
    let mode = |p: &std::path::Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&path), 0o640);

    // Files created by rotation too.
    for _ in 0..3 {
        let record = Record::builder(Topic::new(Level::Info, "app"))
            .message("0123456789")
            .build();
        appender.append(&record).unwrap();
    }
    appender.flush().unwrap();
    assert_eq!(mode(&path), 0o640);
    assert_eq!(mode(&dir.path().join("app.log.1")), 0o640);

    let custom = dir.path().join("custom.log");
    FileAppender::builder(&custom).mode(0o600).build().unwrap();
    assert_eq!(mode(&custom), 0o600);

    // SAFETY: as above.
    unsafe { libc::umask(old) };
}
