//! Reading a file by lines, and following its path across rotations the
//! way `tail -F` does.
//!
//! logbus' file appender rotates by renaming `app.log` to `app.log.1`
//! (after shifting `.1` to `.2`, and so on), or with dated names to
//! `app.log.2026-12-01` (`app.log.2026-12-01T13` hourly, `.1`, `.2` after
//! it for more files of one period), and opening a new `app.log`
//! (`appenders/src/destination/file/rotate.rs`). A [`Follower`] keeps the
//! file it reads open and knows it by its identity (device and inode).
//! When the path names another file, the open handle is read to its end
//! (the appender never writes to a file after renaming it), then the
//! rotated files newer than it that were never read (several rotations
//! between two looks), oldest first, then the new live file from its
//! start. The held handle is what makes this exact: while it is open its
//! inode cannot be reused, so finding it among the rotated files (listed
//! newest first by their names) tells which of them are newer: the
//! appender never gives a rotated file a name sorting before one already
//! present, even when its clock goes back. When it is
//! no longer among them (retention deleted it, or compression replaced it
//! by `app.log.N.gz`), the rotated files modified since it was last
//! written are read instead. Compressed `.gz` files are skipped, and so,
//! with a notice on stderr, is a rotated file deleted or compressed between
//! the look that chose it and its read. The rotated files are looked at by
//! their paths, chosen by identity and read one at a time, found under
//! their names of the moment if a rotation moved them meanwhile, so a
//! rotation takes one descriptor beyond the two held, however many rotated
//! files there are.
//!
//! A file that shrinks below the offset read so far was truncated
//! (`copytruncate`): it is read again from its start. A last line without
//! its line feed is held until the line feed arrives, or until the file is
//! finished (rotated away, or the end of a read without `--follow`).
//!
//! The identity comes from `std::os::unix`; elsewhere every file has the
//! same identity, so only growth and truncation are followed.

use std::cmp::Reverse;
use std::fmt;
use std::fs::{self, File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Where a line goes: `tail`'s filter, renderer and stdout.
pub(crate) type Emit<'a> = dyn FnMut(&[u8]) -> io::Result<()> + 'a;

/// Why `tail` stopped; `main` exits with status 1, or 0 for a closed pipe.
#[derive(Debug)]
pub(crate) enum TailError {
    /// FILE cannot be opened at the start.
    Open(PathBuf, io::Error),
    /// A file cannot be read.
    Read(PathBuf, io::Error),
    /// Stdout cannot be written (a closed pipe is [`TailError::is_closed_pipe`]).
    Write(io::Error),
}

impl TailError {
    /// Whether the reader of stdout went away (`logbus tail ... | head`):
    /// the end of the job, not a failure.
    pub(crate) fn is_closed_pipe(&self) -> bool {
        matches!(self, TailError::Write(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for TailError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TailError::Open(path, e) => write!(f, "cannot open {}: {e}", path.display()),
            TailError::Read(path, e) => write!(f, "cannot read {}: {e}", path.display()),
            TailError::Write(e) => write!(f, "cannot write to stdout: {e}"),
        }
    }
}

/// What tells two files apart: (device, inode). A file held open keeps
/// its inode, so this is enough for the current file and the next one.
type FileId = (u64, u64);

#[cfg(unix)]
fn file_id(meta: &Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn file_id(_meta: &Metadata) -> FileId {
    (0, 0)
}

/// A file's birth time, modification time and length, the times where
/// known. With its inode, they tell a rotated file from a later one on its
/// freed inode, since the rotated files chosen for reading are not held
/// open (a review found a deleted file's inode reused at once, on ext4, by
/// a new file that was then read in its place). The birth time (`statx`)
/// is missing on musl builds, NFSv3, ext4 with small inodes and most FUSE
/// file systems, and overlayfs gives a file a new one when it copies it up
/// (as a rename of a file of a lower layer does), so the held files do
/// without.
type Times = (Option<SystemTime>, Option<SystemTime>, u64);

fn times(meta: &Metadata) -> Times {
    (meta.created().ok(), meta.modified().ok(), meta.len())
}

/// Whether a chosen rotated file (`id`, `times`) is the one opened or
/// looked at (`other`): the same inode, and the same birth time unless
/// either lacks one, or else the same modification time and length (a
/// copy-up keeps both; a new file on the freed inode was written since).
fn same_file(id: FileId, times: Times, other: (FileId, Times)) -> bool {
    let (born, modified, len) = times;
    let (other_id, (other_born, other_modified, other_len)) = other;
    id == other_id
        && (born.zip(other_born).map_or(true, |(a, b)| a == b)
            || modified.is_some() && modified == other_modified && len == other_len)
}

/// How much is read at once.
const CHUNK: usize = 64 * 1024;

/// An open file read by lines: its handle, identity, offset, and the
/// unterminated line read so far.
#[derive(Debug)]
pub(crate) struct Source {
    /// The name it was opened under, for messages.
    path: PathBuf,
    file: File,
    id: FileId,
    /// Its birth and modification times when opened ([`times`]).
    times: Times,
    offset: u64,
    pending: Vec<u8>,
}

impl Source {
    /// Opens `path` to read it from its start.
    pub(crate) fn open(path: &Path) -> Result<Source, TailError> {
        let file = File::open(path).map_err(|e| TailError::Open(path.to_owned(), e))?;
        Source::new(path, file)
    }

    fn new(path: &Path, file: File) -> Result<Source, TailError> {
        let meta = file
            .metadata()
            .map_err(|e| TailError::Read(path.to_owned(), e))?;
        Ok(Source {
            path: path.to_owned(),
            file,
            id: file_id(&meta),
            times: times(&meta),
            offset: 0,
            pending: Vec::new(),
        })
    }

    fn read_error(&self, e: io::Error) -> TailError {
        TailError::Read(self.path.clone(), e)
    }

    /// Reads what the file holds now and emits each complete line (without
    /// its line feed); returns whether anything was read.
    pub(crate) fn read_lines(&mut self, emit: &mut Emit<'_>) -> Result<bool, TailError> {
        let len = self.file.metadata().map_err(|e| self.read_error(e))?.len();
        if len < self.offset {
            eprintln!("logbus tail: {}: file truncated", self.path.display());
            self.file
                .seek(SeekFrom::Start(0))
                .map_err(|e| self.read_error(e))?;
            self.offset = 0;
            self.pending.clear();
        }
        let mut buf = vec![0; CHUNK];
        let mut any = false;
        loop {
            let n = match self.file.read(&mut buf) {
                Ok(0) => return Ok(any),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.read_error(e)),
            };
            any = true;
            self.offset += n as u64;
            let mut chunk = &buf[..n];
            while let Some(end) = chunk.iter().position(|&b| b == b'\n') {
                if self.pending.is_empty() {
                    emit(&chunk[..end]).map_err(TailError::Write)?;
                } else {
                    self.pending.extend_from_slice(&chunk[..end]);
                    emit(&self.pending).map_err(TailError::Write)?;
                    self.pending.clear();
                }
                chunk = &chunk[end + 1..];
            }
            self.pending.extend_from_slice(chunk);
        }
    }

    /// Reads the file to its end, and emits a last line that has no line
    /// feed (nothing will complete it).
    pub(crate) fn finish(&mut self, emit: &mut Emit<'_>) -> Result<(), TailError> {
        self.read_lines(emit)?;
        if !self.pending.is_empty() {
            emit(&self.pending).map_err(TailError::Write)?;
            self.pending.clear();
        }
        Ok(())
    }

    /// When the file was last written.
    fn modified(&self) -> Option<SystemTime> {
        self.file.metadata().and_then(|m| m.modified()).ok()
    }
}

/// Follows a path across rotations and truncation, like `tail -F`.
#[derive(Debug)]
pub(crate) struct Follower {
    path: PathBuf,
    current: Source,
}

impl Follower {
    /// Follows `path`, whose file `current` is being read.
    pub(crate) fn new(path: &Path, current: Source) -> Follower {
        Follower {
            path: path.to_owned(),
            current,
        }
    }

    /// One look: reads what the current file gained; when the path names
    /// another file now, finishes the current one, reads the rotated files
    /// between the two, oldest first, and moves to the new live file.
    /// Returns whether anything was read.
    pub(crate) fn poll(&mut self, emit: &mut Emit<'_>) -> Result<bool, TailError> {
        let read = self.current.read_lines(emit)?;
        let live = match fs::metadata(&self.path) {
            Ok(meta) => meta,
            // Between a rotation's rename and its new file, or deleted:
            // look again later.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(read),
            Err(e) => return Err(TailError::Read(self.path.clone(), e)),
        };
        if file_id(&live) == self.current.id {
            return Ok(read);
        }
        // Open the new live file first: what lies between it and the
        // current one is then fixed by the two handles held.
        let next = match File::open(&self.path) {
            Ok(file) => Source::new(&self.path, file)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(read),
            Err(e) => return Err(TailError::Read(self.path.clone(), e)),
        };
        self.current.finish(emit)?;
        self.read_rotated_between(&next, emit)?;
        self.current = next;
        self.current.read_lines(emit)?;
        Ok(true)
    }

    /// Reads the rotated files (`app.log.N`) newer than the current file
    /// and older than `next`, oldest first, each to its end. The scan
    /// ([`choose_between`](Self::choose_between)) looks at the files by
    /// their paths and chooses them by identity, and each is opened, read
    /// and closed before the next, so a rotation takes one descriptor
    /// beyond the two held (a review found `tail -F` failing past 1,020
    /// rotated files, each opened at once, and then again when retention
    /// had deleted the followed file and every file left was newer). The
    /// files chosen are the ones read, in their order: a chosen name that
    /// holds another file when opened, or none (a rotation since the
    /// scan), sends it to look up the chosen files' names again
    /// ([`names`]), nothing more. A chosen file not found under any name
    /// after [`SCANS`] such looks in a row was deleted or compressed before
    /// it was read (or keeps moving): it is skipped, with a notice on
    /// stderr, and the next one is read.
    fn read_rotated_between(&self, next: &Source, emit: &mut Emit<'_>) -> Result<(), TailError> {
        let mut left = self.choose_between(next)?;
        #[cfg(test)]
        tests::after_scan();
        // Oldest last, taken from the end.
        let mut looks = 0;
        while let Some((path, id, chosen_times)) = left.last() {
            let opened = match File::open(path) {
                Ok(file) => Some(Source::new(path, file)?),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => return Err(TailError::Read(path.clone(), e)),
            };
            let chosen = (*id, *chosen_times);
            if let Some(mut source) = opened.filter(|s| same_file(s.id, s.times, chosen)) {
                source.finish(emit)?;
                left.pop();
                looks = 0;
                continue;
            }
            looks += 1;
            if looks > SCANS {
                skipped(
                    path,
                    "went before it was read (deleted, compressed or moving)",
                );
                left.pop();
                looks = 0;
                continue;
            }
            // Moved: the chosen files' names now (a name not found may be
            // a rename between the listing and its look: looked for again).
            let names = names(&self.path)?;
            #[cfg(test)]
            tests::after_scan();
            for (path, id, chosen_times) in &mut left {
                let this = |(_, other_id, other_born): &&Named| {
                    same_file(*other_id, *other_born, (*id, *chosen_times))
                };
                if let Some((named, _, _)) = names.iter().find(this) {
                    path.clone_from(named);
                }
            }
        }
        Ok(())
    }

    /// [`read_rotated_between`](Self::read_rotated_between)'s scan: the
    /// paths and identities of the files to read, newest first, each
    /// looked at with `fs::metadata` (no descriptor).
    fn choose_between(&self, next: &Source) -> Result<Vec<Named>, TailError> {
        let rotated =
            rotated_files(&self.path).map_err(|e| TailError::Read(self.path.clone(), e))?;
        let since = self.current.modified();
        // Newest first: app.log.1, app.log.2, ... (or the latest date first).
        let mut seen: Vec<Named> = Vec::new();
        for path in rotated {
            let meta = match fs::metadata(&path) {
                Ok(meta) => meta,
                // Shifted or deleted by a rotation since the listing.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(TailError::Read(path, e)),
            };
            let id = file_id(&meta);
            // A rotation during the listing can show one file twice.
            if seen.iter().all(|(_, seen, _)| *seen != id) {
                seen.push((path, id, times(&meta)));
            }
            if id == self.current.id {
                break;
            }
        }
        // `next` may itself have been rotated since it was opened.
        let newer_than_next = seen
            .iter()
            .position(|(_, id, _)| *id == next.id)
            .map_or(0, |at| at + 1);
        let chosen = match seen.iter().position(|(_, id, _)| *id == self.current.id) {
            Some(at) if at >= newer_than_next => seen.drain(newer_than_next..at).collect(),
            Some(_) => Vec::new(),
            None => seen
                .drain(newer_than_next..)
                .filter(|(_, id, _)| *id != next.id)
                .filter(|(_, _, (_, modified, _))| match (since, modified) {
                    (Some(since), Some(modified)) => *modified >= since,
                    _ => false,
                })
                .collect(),
        };
        Ok(chosen)
    }
}

/// A rotated file's name, identity and times.
type Named = (PathBuf, FileId, Times);

/// The rotated files of `path` now, each with its identity (by
/// `fs::metadata`, no descriptor), newest first.
fn names(path: &Path) -> Result<Vec<Named>, TailError> {
    let rotated = rotated_files(path).map_err(|e| TailError::Read(path.to_owned(), e))?;
    let mut named = Vec::with_capacity(rotated.len());
    for rotated in rotated {
        match fs::metadata(&rotated) {
            Ok(meta) => named.push((rotated, file_id(&meta), times(&meta))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(TailError::Read(rotated, e)),
        }
    }
    Ok(named)
}

/// Says on stderr that `path`'s lines were skipped, and why.
fn skipped(path: &Path, why: &str) {
    #[cfg(test)]
    tests::skipped(path);
    eprintln!(
        "logbus tail: {}: {why}; its lines are skipped",
        path.display()
    );
}

/// How many looks for the chosen files' names in a row, with no file read
/// in between, [`Follower::read_rotated_between`] makes before it skips the
/// oldest file left (deleted, or a name that moves again at once:
/// rotations by size under a flood).
const SCANS: u32 = 3;

/// What a rotated file's name says after `app.log.`, ordered newest
/// first: dated names (`2026-12-01`, `2026-12-01T13`, then `.<counter>`),
/// latest period and counter first, then numbered ones (`1`, `2`, ...).
/// One appender writes one kind; in a directory holding both, the dated
/// ones are taken as the newer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Stamp {
    Dated(Reverse<(String, u64)>),
    Index(u64),
}

/// Digits without a leading zero, as the appender writes numbers.
fn number(text: &str) -> Option<u64> {
    let canonical =
        !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && !text.starts_with('0');
    canonical.then(|| text.parse().ok()).flatten()
}

/// `2026-12-01` or `2026-12-01T13`: the shape of the appender's labels,
/// which sort as the periods they name.
fn is_label(text: &str) -> bool {
    let shape = match text.len() {
        10 => "dddd-dd-dd",
        13 => "dddd-dd-ddTdd",
        _ => return false,
    };
    text.bytes().zip(shape.bytes()).all(|(b, s)| {
        if s == b'd' {
            b.is_ascii_digit()
        } else {
            b == s
        }
    })
}

impl Stamp {
    /// The stamp of a rotated file's name after `app.log.`; `None` for
    /// any other name, and for a compressed `.gz` file.
    fn parse(rest: &str) -> Option<Stamp> {
        if let Some(index) = number(rest) {
            return Some(Stamp::Index(index));
        }
        let (label, counter) = match rest.split_once('.') {
            Some((label, counter)) => (label, number(counter)?),
            None => (rest, 0),
        };
        is_label(label).then(|| Stamp::Dated(Reverse((label.to_owned(), counter))))
    }
}

/// The rotated files of `path` (`app.log.1`, `app.log.2`, ..., or
/// `app.log.2026-12-02`, `app.log.2026-12-01.1`, `app.log.2026-12-01`;
/// not the compressed `.gz` ones), newest first.
fn rotated_files(path: &Path) -> io::Result<Vec<PathBuf>> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(Vec::new());
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Some(name) = name.to_str() else {
        return Ok(Vec::new());
    };
    let mut stamped = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let file_name = entry.file_name();
        let Some(stamp) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(name))
            .and_then(|n| n.strip_prefix('.'))
            .and_then(Stamp::parse)
        else {
            continue;
        };
        stamped.push((stamp, dir.join(&file_name)));
    }
    stamped.sort();
    Ok(stamped.into_iter().map(|(_, path)| path).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn lines(emitted: &[Vec<u8>]) -> Vec<String> {
        emitted
            .iter()
            .map(|l| String::from_utf8(l.clone()).unwrap())
            .collect()
    }

    #[test]
    fn lines_wait_for_their_line_feed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.log");
        let mut file = File::create(&path).unwrap();
        file.write_all(b"one\ntw").unwrap();
        let mut source = Source::open(&path).unwrap();
        let mut seen = Vec::new();
        let mut emit = |l: &[u8]| {
            seen.push(l.to_vec());
            Ok(())
        };
        assert!(source.read_lines(&mut emit).unwrap());
        assert!(!source.read_lines(&mut emit).unwrap());
        file.write_all(b"o\nthree").unwrap();
        source.read_lines(&mut emit).unwrap();
        source.finish(&mut emit).unwrap();
        assert_eq!(lines(&seen), ["one", "two", "three"]);
    }

    #[test]
    fn a_truncated_file_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.log");
        fs::write(&path, "a long first line\n").unwrap();
        let mut source = Source::open(&path).unwrap();
        let mut seen = Vec::new();
        let mut emit = |l: &[u8]| {
            seen.push(l.to_vec());
            Ok(())
        };
        source.read_lines(&mut emit).unwrap();
        fs::write(&path, "short\n").unwrap();
        source.read_lines(&mut emit).unwrap();
        assert_eq!(lines(&seen), ["a long first line", "short"]);
    }

    thread_local! {
        /// Run after the scan of `read_rotated_between` on this thread, and
        /// after each look for names.
        static AFTER_SCAN: std::cell::RefCell<Box<dyn FnMut()>> =
            std::cell::RefCell::new(Box::new(|| {}));
    }

    /// Runs this thread's [`AfterScan`] hook.
    pub(super) fn after_scan() {
        AFTER_SCAN.with(|hook| (hook.borrow_mut())());
    }

    thread_local! {
        /// The files `skipped` named on this thread.
        static SKIPPED: std::cell::RefCell<Vec<PathBuf>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// Notes that `skipped` named `path`.
    pub(super) fn skipped(path: &Path) {
        SKIPPED.with(|skipped| skipped.borrow_mut().push(path.to_owned()));
    }

    /// The files skipped on this thread so far, by name.
    fn skipped_names() -> Vec<String> {
        SKIPPED.with(|skipped| {
            let skipped = skipped.borrow();
            skipped
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        })
    }

    /// What runs after a rotation's scan and each look for names on this
    /// thread, until the guard goes (a failed assertion included).
    struct AfterScan;

    impl AfterScan {
        fn set(hook: impl FnMut() + 'static) -> AfterScan {
            AFTER_SCAN.with(|slot| *slot.borrow_mut() = Box::new(hook));
            AfterScan
        }
    }

    impl Drop for AfterScan {
        fn drop(&mut self) {
            AFTER_SCAN.with(|slot| *slot.borrow_mut() = Box::new(|| {}));
        }
    }

    /// `app.log` in a directory of its own, written with `first`, followed
    /// from its start; the lines it emitted.
    struct Followed {
        dir: tempfile::TempDir,
        path: PathBuf,
        follower: Follower,
        seen: Vec<Vec<u8>>,
    }

    impl Followed {
        fn new(first: &str) -> Followed {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("app.log");
            fs::write(&path, first).unwrap();
            let follower = Follower::new(&path, Source::open(&path).unwrap());
            Followed {
                dir,
                path,
                follower,
                seen: Vec::new(),
            }
        }

        /// The rotated file `app.log.<n>`.
        fn rotated(&self, n: usize) -> PathBuf {
            self.dir.path().join(format!("app.log.{n}"))
        }

        fn poll(&mut self) -> Result<bool, TailError> {
            let seen = &mut self.seen;
            self.follower.poll(&mut |line: &[u8]| {
                seen.push(line.to_vec());
                Ok(())
            })
        }

        fn append(&self, text: &str) {
            let mut file = fs::OpenOptions::new()
                .append(true)
                .open(&self.path)
                .unwrap();
            file.write_all(text.as_bytes()).unwrap();
        }
    }

    /// Sets `path`'s modification time to `secs` after the epoch.
    fn set_time(path: &Path, secs: u64) {
        let file = File::options().write(true).open(path).unwrap();
        let time = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        file.set_modified(time).unwrap();
    }

    /// Weeks of hourly rotation: more rotated files than the process may
    /// hold open (its soft limit lowered to 256 for the test); one
    /// rotation later, every line is read once, in order.
    #[cfg(unix)]
    #[test]
    fn many_rotated_files_take_few_descriptors() {
        let mut tail = Followed::new("a\n");
        for n in 1..=600 {
            fs::write(tail.rotated(n), "old\n").unwrap();
        }
        tail.poll().unwrap();
        for n in (1..=600).rev() {
            fs::rename(tail.rotated(n), tail.rotated(n + 1)).unwrap();
        }
        tail.append("b\n");
        fs::rename(&tail.path, tail.rotated(1)).unwrap();
        fs::write(&tail.path, "c\n").unwrap();
        with_descriptor_limit(256, || tail.poll()).unwrap();
        assert_eq!(lines(&tail.seen), ["a", "b", "c"]);
    }

    /// As above, but the followed file was deleted by hand: the scan no
    /// longer stops at it, and looks at every rotated file by its path,
    /// reading only the one written since (it opened all 600, and failed).
    #[cfg(unix)]
    #[test]
    fn many_rotated_files_take_few_descriptors_when_the_followed_one_is_gone() {
        let mut tail = Followed::new("a\n");
        for n in 2..=601 {
            fs::write(tail.rotated(n), "history\n").unwrap();
            set_time(&tail.rotated(n), 1_000_000);
        }
        tail.poll().unwrap();
        fs::remove_file(&tail.path).unwrap();
        fs::write(tail.rotated(1), "b\n").unwrap();
        fs::write(&tail.path, "c\n").unwrap();
        with_descriptor_limit(256, || tail.poll()).unwrap();
        assert_eq!(lines(&tail.seen), ["a", "b", "c"]);
    }

    /// Retention deletes the oldest files first: once it took the followed
    /// one, every rotated file left is newer, and each is read, one open at
    /// a time (opened all at once, they failed at `app.log.351`).
    #[cfg(unix)]
    #[test]
    fn many_newer_rotated_files_take_few_descriptors_when_retention_took_the_followed_one() {
        let mut tail = Followed::new("a\n");
        tail.poll().unwrap();
        fs::remove_file(&tail.path).unwrap();
        for n in (1..=600).rev() {
            fs::write(tail.rotated(n), format!("b{n}\n")).unwrap();
        }
        fs::write(&tail.path, "c\n").unwrap();
        with_descriptor_limit(256, || tail.poll()).unwrap();
        let mut expected = vec!["a".to_owned()];
        expected.extend((1..=600).rev().map(|n| format!("b{n}")));
        expected.push("c".to_owned());
        assert_eq!(lines(&tail.seen), expected);
    }

    /// Rotates the file at `path` as the appender does (`app.log.N` to
    /// `N + 1`, `app.log` to `app.log.1`) and writes `next` into a new one.
    fn rotate(path: &Path, next: &str) {
        let rotated = |n: usize| path.with_file_name(format!("app.log.{n}"));
        for n in (1..=16).rev() {
            if rotated(n).exists() {
                fs::rename(rotated(n), rotated(n + 1)).unwrap();
            }
        }
        fs::rename(path, rotated(1)).unwrap();
        fs::write(path, next).unwrap();
    }

    /// `app.log` followed from "a", then rotated twice ("b", "c" after it),
    /// with `meanwhile` run at the next rotation's scan, once.
    fn a_b_c_then(meanwhile: impl FnOnce(&Path) + 'static) -> (Followed, AfterScan) {
        let mut tail = Followed::new("a\n");
        tail.poll().unwrap();
        rotate(&tail.path, "b\n");
        rotate(&tail.path, "c\n");
        let (path, mut meanwhile) = (tail.path.clone(), Some(meanwhile));
        let hook = AfterScan::set(move || {
            if let Some(meanwhile) = meanwhile.take() {
                meanwhile(&path);
            }
        });
        (tail, hook)
    }

    /// A rotation between the scan and its opens: the chosen name holds
    /// the next file, so the chosen files' names are looked up again, and
    /// each is read once, in order.
    #[cfg(unix)]
    #[test]
    fn a_rotation_between_the_scan_and_its_opens_is_followed() {
        let (mut tail, _hook) = a_b_c_then(move |path| {
            rotate(path, "d\n");
        });
        tail.poll().unwrap();
        tail.poll().unwrap();
        assert_eq!(lines(&tail.seen), ["a", "b", "c", "d"]);
        assert!(skipped_names().is_empty());
    }

    /// A chosen file deleted (compressed) after the scan, while an older
    /// one is read: its lines are skipped with a notice, and the file read
    /// before the rescan is not read again.
    #[cfg(unix)]
    #[test]
    fn a_chosen_file_gone_before_it_is_read_is_skipped_once() {
        let mut tail = Followed::new("a\n");
        tail.poll().unwrap();
        rotate(&tail.path, "b\n");
        rotate(&tail.path, "c\n");
        rotate(&tail.path, "d\n");
        let (gone, once) = (tail.rotated(1), std::cell::Cell::new(true));
        let _hook = AfterScan::set(move || {
            if once.replace(false) {
                fs::remove_file(&gone).unwrap();
            }
        });
        tail.poll().unwrap();
        assert_eq!(lines(&tail.seen), ["a", "b", "d"]);
        assert_eq!(skipped_names(), ["app.log.1"]);
    }

    /// A chosen file deleted before its read, and two rotations after it,
    /// whose new files may take its freed inode (ext4 gives it to the next
    /// file made): the file under its name then is not it (birth times
    /// differ), and is read in its turn, once (a review found `a d c d e`).
    #[cfg(unix)]
    #[test]
    fn a_new_file_on_a_deleted_chosen_files_inode_is_not_read_in_its_place() {
        let (mut tail, _hook) = a_b_c_then(move |path| {
            fs::remove_file(path.with_file_name("app.log.1")).unwrap();
            rotate(path, "d\n");
            rotate(path, "e\n");
        });
        tail.poll().unwrap();
        tail.poll().unwrap();
        assert_eq!(lines(&tail.seen), ["a", "c", "d", "e"]);
        assert_eq!(skipped_names(), ["app.log.1"]);
    }

    /// A rotated file's identity beyond its inode: its birth time where
    /// both sides have one, or else its modification time and length (an
    /// overlayfs copy-up gives it a new birth time and keeps those).
    #[test]
    fn a_rotated_file_is_told_by_birth_time_or_by_time_and_length() {
        let at = |secs| Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs));
        let id = (1, 2);
        let chosen = (at(10), at(20), 5);
        assert!(same_file(id, chosen, (id, (at(10), at(30), 9))));
        assert!(same_file(id, chosen, (id, (None, at(30), 9))));
        assert!(same_file(id, chosen, (id, (at(11), at(20), 5))));
        assert!(!same_file(id, chosen, (id, (at(11), at(20), 6))));
        assert!(!same_file(id, chosen, (id, (at(11), at(21), 5))));
        assert!(!same_file(id, chosen, ((1, 3), chosen)));
    }

    /// The next file rotated twice and then deleted (compressed) while the
    /// files before it are read: the file rotated after it is not read
    /// among the older ones (a review found `a b d c d e`), but after it,
    /// once, even with the same modification time.
    #[cfg(unix)]
    #[test]
    fn files_newer_than_a_next_file_since_deleted_wait_their_turn() {
        let mut tail = Followed::new("a\n");
        tail.poll().unwrap();
        rotate(&tail.path, "b\n");
        rotate(&tail.path, "c\n");
        set_time(&tail.rotated(2), 100);
        set_time(&tail.rotated(1), 500);
        set_time(&tail.path, 1_000);
        let (path, once) = (tail.path.clone(), std::cell::Cell::new(true));
        let _hook = AfterScan::set(move || {
            if once.replace(false) {
                rotate(&path, "d\n");
                rotate(&path, "e\n");
                // Written in the same tick as the next file (a flood).
                set_time(&path.with_file_name("app.log.1"), 1_000);
                // The next file, compressed.
                fs::remove_file(path.with_file_name("app.log.2")).unwrap();
            }
        });
        tail.poll().unwrap();
        tail.poll().unwrap();
        assert_eq!(lines(&tail.seen), ["a", "b", "c", "d", "e"]);
        assert!(skipped_names().is_empty());
    }

    /// Names that move at every look: after more than [`SCANS`] looks in a
    /// row that read nothing a file is skipped, and no line is read twice
    /// or out of order.
    #[cfg(unix)]
    #[test]
    fn names_that_keep_moving_skip_files_but_never_repeat_one() {
        let mut tail = Followed::new("a\n");
        tail.poll().unwrap();
        let (path, rotations) = (tail.path.clone(), std::cell::Cell::new(0));
        let again = move || {
            rotations.set(rotations.get() + 1);
            rotate(&path, &format!("r{}\n", rotations.get()));
        };
        again();
        again();
        let _hook = AfterScan::set(again);
        for _ in 0..4 {
            tail.poll().unwrap();
        }
        let seen = lines(&tail.seen);
        assert_eq!(seen[0], "a", "{seen:?}");
        let rotations: Vec<u32> = seen[1..].iter().map(|l| l[1..].parse().unwrap()).collect();
        assert!(rotations.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        assert!(!skipped_names().is_empty(), "{seen:?}");
    }

    /// A file rotated after the current one but last written before it
    /// (the writer went on appending to the current file after the next
    /// rotation) is still read, in rotation order.
    #[test]
    fn a_rotated_file_older_by_its_time_is_still_read() {
        let mut tail = Followed::new("a\n");
        tail.poll().unwrap();
        // Two rotations before the next look: the followed file is
        // app.log.2 now, app.log.1 came after it.
        fs::rename(&tail.path, tail.rotated(1)).unwrap();
        fs::write(&tail.path, "b\n").unwrap();
        fs::rename(tail.rotated(1), tail.rotated(2)).unwrap();
        fs::rename(&tail.path, tail.rotated(1)).unwrap();
        fs::write(&tail.path, "c\n").unwrap();
        set_time(&tail.rotated(1), 1_000);
        set_time(&tail.rotated(2), 2_000);
        tail.poll().unwrap();
        assert_eq!(lines(&tail.seen), ["a", "b", "c"]);
    }

    /// Runs `f` with the process's soft limit of open files at `limit`,
    /// then puts the limit back.
    #[cfg(unix)]
    fn with_descriptor_limit<T>(limit: u64, f: impl FnOnce() -> T) -> T {
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        // The limit is the process's: two tests lowering it at once would
        // put back each other's.
        static LIMITED: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one_at_a_time = LIMITED.lock().unwrap_or_else(|e| e.into_inner());
        let old = getrlimit(Resource::Nofile);
        let lowered = Rlimit {
            current: Some(old.current.map_or(limit, |current| current.min(limit))),
            maximum: old.maximum,
        };
        setrlimit(Resource::Nofile, lowered).unwrap();
        // Put back on the way out, a panic in `f` included.
        struct Restore(Rlimit);
        impl Drop for Restore {
            fn drop(&mut self) {
                let _ = setrlimit(Resource::Nofile, self.0);
            }
        }
        let _restore = Restore(old);
        f()
    }

    #[test]
    fn rotated_files_in_number_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.log");
        for name in [
            "app.log",
            "app.log.10",
            "app.log.2",
            "app.log.1",
            "app.log.1.gz",
            "app.log.x",
            "app.log.",
            "app.logs.1",
            "other.1",
        ] {
            fs::write(dir.path().join(name), "").unwrap();
        }
        let names: Vec<_> = rotated_files(&path)
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["app.log.1", "app.log.2", "app.log.10"]);
    }

    #[test]
    fn dated_rotated_files_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.log");
        for name in [
            "app.log",
            "app.log.2026-11-30",
            "app.log.2026-12-01",
            "app.log.2026-12-01.1",
            "app.log.2026-12-01.10",
            "app.log.2026-12-01.2",
            "app.log.2026-12-02",
            "app.log.2026-12-02.gz",
            "app.log.2026-12-01.1.gz",
            "app.log.2026-12-01T13",
            "app.log.2026-12-01.01",
            "app.log.2026-12-01.bak",
            "app.log.2026-1-01",
            "app.log.2026-12-01T1",
        ] {
            fs::write(dir.path().join(name), "").unwrap();
        }
        let names: Vec<_> = rotated_files(&path)
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            [
                "app.log.2026-12-02",
                "app.log.2026-12-01T13",
                "app.log.2026-12-01.10",
                "app.log.2026-12-01.2",
                "app.log.2026-12-01.1",
                "app.log.2026-12-01",
                "app.log.2026-11-30",
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn three_rotations_between_two_looks() {
        let mut tail = Followed::new("a\n");
        fs::write(tail.rotated(1), "history\n").unwrap();
        tail.poll().unwrap();
        // The old file ends unterminated (a writer that died mid-line):
        // rotated away, nothing will complete that line.
        tail.append("b\nb2");
        for next in ["c\n", "d\n", "e\n"] {
            for n in (1..=3).rev() {
                if tail.rotated(n).exists() {
                    fs::rename(tail.rotated(n), tail.rotated(n + 1)).unwrap();
                }
            }
            fs::rename(&tail.path, tail.rotated(1)).unwrap();
            fs::write(&tail.path, next).unwrap();
        }
        tail.append("f");
        tail.poll().unwrap();
        tail.append("\n");
        tail.poll().unwrap();
        assert!(!tail.poll().unwrap());
        assert_eq!(lines(&tail.seen), ["a", "b", "b2", "c", "d", "e", "f"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_deleted_old_file_falls_back_to_modification_times() {
        let mut tail = Followed::new("a\n");
        // Last written before the followed file: history, not to be read.
        fs::write(tail.rotated(2), "history\n").unwrap();
        set_time(&tail.rotated(2), 1_000_000);
        tail.poll().unwrap();
        // Retention deleted the followed file; app.log.1 came after it.
        fs::remove_file(&tail.path).unwrap();
        fs::write(tail.rotated(1), "b\n").unwrap();
        fs::write(&tail.path, "c\n").unwrap();
        tail.poll().unwrap();
        assert_eq!(lines(&tail.seen), ["a", "b", "c"]);
    }
}
