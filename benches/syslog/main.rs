//! Syslog throughput over TCP to a real rsyslogd on loopback, until
//! rsyslogd has stored every record (`omfile` with async writing), for one
//! writer and thread count per run; `benches/syslog/run.sh` runs them all.
//!
//! ```text
//! cargo bench --features syslog --bench syslog -- --writer logbus --threads 4 --records 1000000
//! ```
//!
//! Writers:
//! - `plain`: the floor. Each thread has its own TCP connection and sends
//!   the same octet-counted RFC 5424 frames the appender sends, rendered
//!   into a 64 KiB buffer written when full (the appender's batch size);
//! - `logbus`: `log::info!` through a local `Broker` to `Syslog::tcp`,
//!   `Block` overflow (every record is offered), default capacity;
//! - `logbus-drop`: the same under the default drop-oldest policy: what a
//!   log call costs the caller when the queue is never waited for;
//! - `file`: `log::info!` to a `FileAppender`, as `logbus-drop`: the
//!   caller's cost with the file appender, for comparison (nothing is sent
//!   to rsyslogd).
//!
//! `--burst B`: publish B records per thread, then flush, and time only
//! the publishing, so that the queue never overflows: the caller's cost of
//! a log call that finds room, which is what the two drop-oldest writers
//! are compared on (flooding, the caller of a slower appender does more
//! evictions).
//!
//! Prints one JSON line: the writer, threads, records, seconds from the
//! first record to the last one stored (for `file`: flushed), records per
//! second, the mean time per call on the publishing threads, and the
//! broker's written and dropped counts.

use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use logbus::appenders::{FileAppender, Syslog};
use logbus::{Broker, LevelFilter, OverflowPolicy, Subscription};

const APP: &str = "bench";
const HOST: &str = "localhost";
const TARGET: &str = "bench";
const DEADLINE: Duration = Duration::from_secs(300);

struct Args {
    writer: String,
    threads: u64,
    records: u64,
    burst: Option<u64>,
}

fn parse() -> Result<Option<Args>, lexopt::Error> {
    use lexopt::prelude::*;
    let (mut writer, mut threads, mut records, mut burst) = (None, 1, 1_000_000, None);
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("writer") => writer = Some(parser.value()?.string()?),
            Long("threads") => threads = parser.value()?.parse()?,
            Long("records") => records = parser.value()?.parse()?,
            Long("burst") => burst = Some(parser.value()?.parse()?),
            // What `cargo bench` passes to every bench target.
            Long("bench") => {}
            _ => return Err(arg.unexpected()),
        }
    }
    Ok(writer.map(|writer| Args {
        writer,
        threads,
        records,
        burst,
    }))
}

/// An rsyslogd with one imtcp input, storing into `out.log`.
struct Daemon {
    dir: tempfile::TempDir,
    child: Child,
    port: u16,
}

impl Daemon {
    fn start() -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("work")).unwrap();
        let port = loop {
            let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = tcp.local_addr().unwrap().port();
            if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
                break port;
            }
        };
        let d = dir.path().display();
        let conf = format!(
            "global(workDirectory=\"{d}/work\" maxMessageSize=\"64k\")\n\
             module(load=\"imtcp\")\n\
             input(type=\"imtcp\" address=\"127.0.0.1\" port=\"{port}\")\n\
             action(type=\"omfile\" file=\"{d}/out.log\" template=\"RSYSLOG_FileFormat\" \
             asyncWriting=\"on\" flushInterval=\"1\" ioBufferSize=\"256k\")\n"
        );
        fs::write(dir.path().join("rsyslog.conf"), conf).unwrap();
        let child = Command::new("rsyslogd")
            .arg("-n")
            .arg("-f")
            .arg(dir.path().join("rsyslog.conf"))
            .arg("-i")
            .arg(dir.path().join("pid"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(dir.path().join("stderr")).unwrap())
            .spawn()
            .expect("rsyslogd (apt-get install rsyslog; PATH must hold /usr/sbin)");
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "rsyslogd did not start");
            std::thread::sleep(Duration::from_millis(10)); // a poll interval
        }
        Daemon { dir, child, port }
    }

    fn output(&self) -> PathBuf {
        self.dir.path().join("out.log")
    }

    /// Waits until the output holds `lines` lines from `APP` (rsyslogd's
    /// own messages aside: counted by the tag); polls every 5 ms.
    fn wait_stored(&self, lines: u64) {
        let deadline = Instant::now() + DEADLINE;
        let mut counted = Counter::default();
        while counted.count(&self.output()) < lines {
            assert!(
                Instant::now() < deadline,
                "rsyslogd stored {} of {lines}",
                counted.lines
            );
            std::thread::sleep(Duration::from_millis(5)); // a poll interval
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) with our own child's pid, reaped only by the
            // `wait` below, so it cannot have been reused.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let _ = self.child.wait();
    }
}

/// Counts lines tagged `APP` in a growing file, reading only what is new.
#[derive(Default)]
struct Counter {
    offset: u64,
    lines: u64,
    partial: Vec<u8>,
}

impl Counter {
    fn count(&mut self, path: &Path) -> u64 {
        let Ok(mut file) = fs::File::open(path) else {
            return 0;
        };
        let mut new = Vec::new();
        use std::io::Seek;
        if file.seek(std::io::SeekFrom::Start(self.offset)).is_ok() {
            let _ = file.read_to_end(&mut new);
        }
        self.offset += new.len() as u64;
        self.partial.extend_from_slice(&new);
        let tag = format!(" {APP}[");
        let end = self
            .partial
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |e| e + 1);
        self.lines += self.partial[..end]
            .split(|&b| b == b'\n')
            .filter(|line| line.windows(tag.len()).any(|w| w == tag.as_bytes()))
            .count() as u64;
        self.partial.drain(..end);
        self.lines
    }
}

/// Renders the frame the appender sends for record `i`, with a
/// per-second cache of the timestamp's text.
struct Frames {
    second: u64,
    stamp: String,
    pid: u32,
}

impl Frames {
    fn push(&mut self, i: u64, out: &mut Vec<u8>) {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        if now.as_secs() != self.second {
            self.second = now.as_secs();
            let t: chrono::DateTime<chrono::Utc> =
                (UNIX_EPOCH + Duration::from_secs(self.second)).into();
            self.stamp = t.format("%Y-%m-%dT%H:%M:%S").to_string();
        }
        let mut message = Vec::with_capacity(128);
        let _ = write!(
            message,
            "<14>1 {}.{:06}Z {HOST} {APP} {} {TARGET} [logbus@32473 i=\"{i}\"] record {i}",
            self.stamp,
            now.subsec_micros(),
            self.pid
        );
        let _ = write!(out, "{} ", message.len());
        out.extend_from_slice(&message);
    }
}

/// The floor: frames written straight to a socket per thread.
fn plain(port: u16, threads: u64, records: u64) -> Vec<Duration> {
    let per = records / threads;
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
                socket.set_nodelay(true).unwrap();
                let mut frames = Frames {
                    second: 0,
                    stamp: String::new(),
                    pid: std::process::id(),
                };
                let mut buf = Vec::with_capacity(80 * 1024);
                let start = Instant::now();
                for i in t * per..(t + 1) * per {
                    frames.push(i, &mut buf);
                    if buf.len() >= 64 * 1024 {
                        socket.write_all(&buf).unwrap();
                        buf.clear();
                    }
                }
                socket.write_all(&buf).unwrap();
                start.elapsed()
            })
        })
        .collect();
    workers.into_iter().map(|w| w.join().unwrap()).collect()
}

/// `log::info!` from `threads` threads through `broker`; the loop times
/// (with `burst`, only the publishing, not the flushes between bursts).
fn publish(broker: &Broker, threads: u64, records: u64, burst: Option<u64>) -> Vec<Duration> {
    let per = records / threads;
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let step = burst.unwrap_or(per).max(1);
                    let mut spent = Duration::ZERO;
                    let mut i = t * per;
                    while i < (t + 1) * per {
                        let end = (i + step).min((t + 1) * per);
                        let start = Instant::now();
                        for i in i..end {
                            log::info!(logger: broker, target: TARGET, i = i; "record {i}");
                        }
                        spent += start.elapsed();
                        if burst.is_some() {
                            broker.flush().unwrap();
                        }
                        i = end;
                    }
                    spent
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(args) = parse()? else {
        eprintln!("benches/syslog: run by benches/syslog/run.sh (needs rsyslogd); nothing to do");
        return Ok(());
    };
    log::set_max_level(LevelFilter::Info);
    let records = args.records / args.threads * args.threads;
    let started = Instant::now();
    let (loops, written, dropped) = match args.writer.as_str() {
        "plain" => {
            let daemon = Daemon::start();
            let started = Instant::now();
            let loops = plain(daemon.port, args.threads, records);
            daemon.wait_stored(records);
            return report(&args, records, started.elapsed(), &loops, records, 0);
        }
        "logbus" | "logbus-drop" => {
            let daemon = Daemon::start();
            let syslog = Syslog::tcp(format!("127.0.0.1:{}", daemon.port))
                .app_name(APP)
                .hostname(HOST)
                .build()?;
            let overflow = if args.writer == "logbus" {
                OverflowPolicy::Block
            } else {
                OverflowPolicy::DropOldest
            };
            let broker = Broker::new();
            broker.subscribe(Subscription::builder("syslog", syslog).overflow(overflow))?;
            let started = Instant::now();
            let loops = publish(&broker, args.threads, records, args.burst);
            broker.flush()?;
            let s = broker.stats().subscriptions["syslog"];
            daemon.wait_stored(s.written);
            return report(
                &args,
                records,
                started.elapsed(),
                &loops,
                s.written,
                s.dropped,
            );
        }
        "file" => {
            let dir = tempfile::tempdir()?;
            let file = FileAppender::builder(dir.path().join("bench.log")).build()?;
            let broker = Broker::new();
            broker.subscribe(Subscription::builder("file", file))?;
            let loops = publish(&broker, args.threads, records, args.burst);
            broker.flush()?;
            let s = broker.stats().subscriptions["file"];
            (loops, s.written, s.dropped)
        }
        other => return Err(format!("unknown --writer {other}").into()),
    };
    report(&args, records, started.elapsed(), &loops, written, dropped)
}

fn report(
    args: &Args,
    records: u64,
    elapsed: Duration,
    loops: &[Duration],
    written: u64,
    dropped: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let per_thread = records / args.threads;
    let caller_ns = loops.iter().map(Duration::as_nanos).sum::<u128>() as f64
        / loops.len() as f64
        / per_thread as f64;
    println!(
        "{}",
        serde_json::json!({
            "writer": args.writer,
            "burst": args.burst,
            "threads": args.threads,
            "records": records,
            "seconds": elapsed.as_secs_f64(),
            "records_per_s": written as f64 / elapsed.as_secs_f64(),
            "caller_ns_per_call": caller_ns,
            "written": written,
            "dropped": dropped,
        })
    );
    Ok(())
}
