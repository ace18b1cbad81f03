//! Sends N records to a syslog collector over UDP, TCP or a Unix socket,
//! then prints the appender's counters as one JSON object on its last line.
//!
//! ```text
//! cargo run --example syslog --features syslog -- --tcp 127.0.0.1:514 --records 1000
//! cargo run --example syslog --features syslog -- --udp 127.0.0.1:514 --records 1000
//! cargo run --example syslog --features syslog -- --unix /dev/log --records 1000
//! ```
//!
//! Record `i` (from 0) has the message `record <i>` and one key-value,
//! `i=<i>`, so it arrives as
//! `<14>1 TIMESTAMP HOST syslog PID main [logbus@32473 i="<i>"] record <i>`.
//! Options: `--unix-stream PATH`, `--app NAME`, `--facility N` (0-23,
//! default 1, user), `--drop-oldest` (the default overflow policy; without
//! it the example waits for room in the queue so that every record is
//! offered to the collector), `--rfc3164`.
//!
//! The last line: `{"transport":"tcp","records":1000,"written":1000,
//! "dropped":0,"dead_lettered":0,"lost":0,"retried":0,"truncated":0,
//! "connects":1,"disconnects":0,"connect_failures":0}`.

use logbus::appenders::{Facility, Rfc3164, Syslog, SyslogBuilder, SyslogFormat};
use logbus::{OverflowPolicy, Subscription};

const USAGE: &str =
    "usage: syslog (--udp HOST:PORT | --tcp HOST:PORT | --unix PATH | --unix-stream PATH) \
     --records N [--app NAME] [--facility N] [--drop-oldest] [--rfc3164]";

/// Where the records go.
enum Transport {
    Udp(String),
    Tcp(String),
    Unix(String),
    UnixStream(String),
}

struct Args {
    transport: Transport,
    records: u64,
    app: String,
    facility: Facility,
    overflow: OverflowPolicy,
    format: SyslogFormat,
}

fn parse() -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut transport = None;
    let mut records = None;
    let mut app = "syslog".to_owned();
    let mut facility = Facility::USER;
    let mut overflow = OverflowPolicy::Block;
    let mut format = SyslogFormat::default();
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        let chosen = match arg {
            Long("udp") => Some(Transport::Udp(parser.value()?.string()?)),
            Long("tcp") => Some(Transport::Tcp(parser.value()?.string()?)),
            Long("unix") => Some(Transport::Unix(parser.value()?.string()?)),
            Long("unix-stream") => Some(Transport::UnixStream(parser.value()?.string()?)),
            Long("records") => {
                records = Some(parser.value()?.parse()?);
                None
            }
            Long("app") => {
                app = parser.value()?.string()?;
                None
            }
            Long("facility") => {
                let code: u8 = parser.value()?.parse()?;
                facility = Facility::from_code(code)
                    .ok_or_else(|| format!("--facility {code}: not a facility (0-23)"))?;
                None
            }
            Long("drop-oldest") => {
                overflow = OverflowPolicy::DropOldest;
                None
            }
            Long("rfc3164") => {
                format = Rfc3164::new().into();
                None
            }
            Long("help") => return Err(USAGE.into()),
            _ => return Err(arg.unexpected()),
        };
        if let Some(chosen) = chosen {
            if transport.replace(chosen).is_some() {
                return Err("give one of --udp, --tcp, --unix, --unix-stream".into());
            }
        }
    }
    Ok(Args {
        transport: transport.ok_or(USAGE)?,
        records: records.ok_or("missing --records N")?,
        app,
        facility,
        overflow,
        format,
    })
}

/// The settings every transport shares.
fn common<T>(builder: SyslogBuilder<T>, args: &Args) -> SyslogBuilder<T> {
    builder
        .app_name(args.app.as_str())
        .facility(args.facility)
        .format(args.format.clone())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("syslog: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let (name, syslog) = match &args.transport {
        Transport::Udp(addr) => ("udp", common(Syslog::udp(addr), &args).build()?),
        Transport::Tcp(addr) => ("tcp", common(Syslog::tcp(addr), &args).build()?),
        Transport::Unix(path) => ("unix", common(Syslog::unix().path(path), &args).build()?),
        Transport::UnixStream(path) => (
            "unix-stream",
            common(Syslog::unix_stream(path), &args).build()?,
        ),
    };
    let counters = syslog.counters();
    let guard = logbus::builder()
        .appender(Subscription::builder("syslog", syslog).overflow(args.overflow))
        .install()?;
    let handle = guard.handle();

    for i in 0..args.records {
        log::info!(target: "main", i = i; "record {i}");
    }
    drop(guard); // flushes: drains the queue and flushes the appender

    let stats = handle.stats().subscriptions["syslog"];
    let report = serde_json::json!({
        "transport": name,
        "records": args.records,
        "written": stats.written,
        "dropped": stats.dropped,
        "dead_lettered": stats.dead_lettered,
        "lost": stats.lost,
        "retried": stats.retried,
        "truncated": counters.truncated(),
        "connects": counters.connects(),
        "disconnects": counters.disconnects(),
        "connect_failures": counters.connect_failures(),
    });
    println!("{report}");
    Ok(())
}
