//! A real rsyslogd per test: started in the foreground on loopback with a
//! config written for the test (a free port, private socket paths, a
//! private work directory), writing every message to a file through a JSON
//! template, waited for by polling its inputs, stopped by its own pid.

use std::collections::hash_map::RandomState;
use std::collections::BTreeSet;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long anything may take before the test gives up: a safety net for
/// a stuck daemon, not a timing assumption.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

const INSTALL: &str = "install it with `apt-get install -y rsyslog rsyslog-gnutls` \
     (Debian, Ubuntu; `.ci/run` does this when it is missing)";

/// The inputs a test wants.
#[derive(Debug, Default, Clone)]
pub(crate) struct Inputs {
    pub(crate) udp: bool,
    pub(crate) tcp: bool,
    /// TLS on the TCP port: (CA, server certificate, server key) PEM files.
    pub(crate) tls: Option<(PathBuf, PathBuf, PathBuf)>,
    pub(crate) unix: bool,
    pub(crate) unix_stream: bool,
}

/// One stored message, as the JSON template wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    pub(crate) severity: u8,
    pub(crate) facility: u8,
    pub(crate) hostname: String,
    pub(crate) app: String,
    pub(crate) procid: String,
    pub(crate) msgid: String,
    pub(crate) sd: String,
    pub(crate) msg: String,
    pub(crate) input: String,
}

/// A running rsyslogd and its files.
#[derive(Debug)]
pub(crate) struct Rsyslogd {
    dir: tempfile::TempDir,
    inputs: Inputs,
    child: Option<Child>,
    pub(crate) port: u16,
    pub(crate) unix: PathBuf,
    pub(crate) unix_stream: PathBuf,
    output: PathBuf,
    starts: u32,
}

/// The rsyslogd binary, or a failure saying how to install it.
fn binary() -> PathBuf {
    let candidates = [
        "/usr/sbin/rsyslogd",
        "/sbin/rsyslogd",
        "/usr/local/sbin/rsyslogd",
    ];
    if let Some(found) = candidates.iter().map(PathBuf::from).find(|p| p.exists()) {
        return found;
    }
    let in_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("rsyslogd"))
            .find(|p| p.exists())
    });
    in_path.unwrap_or_else(|| panic!("rsyslogd not found: these tests need a real one; {INSTALL}"))
}

/// A port free for both TCP and UDP on 127.0.0.1, below the ephemeral
/// range (so no client connection of ours or of rsyslogd's can take it
/// between our look and rsyslogd's bind, nor while it restarts), and never
/// handed to two tests of this process.
fn free_port() -> u16 {
    static TAKEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let ephemeral: u16 = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768);
    let low = 10_000u16.min(ephemeral / 2);
    loop {
        let random = RandomState::new().build_hasher().finish();
        let port = low + (random % u64::from(ephemeral - low)) as u16;
        if TAKEN.lock().unwrap().insert(port)
            && TcpListener::bind(("127.0.0.1", port)).is_ok()
            && UdpSocket::bind(("127.0.0.1", port)).is_ok()
        {
            return port;
        }
    }
}

impl Rsyslogd {
    /// Starts rsyslogd with `inputs` and waits until each accepts.
    pub(crate) fn start(inputs: Inputs) -> Rsyslogd {
        let dir = tempfile::tempdir().expect("a temporary directory");
        fs::create_dir(dir.path().join("work")).unwrap();
        let mut daemon = Rsyslogd {
            port: free_port(),
            unix: dir.path().join("log.sock"),
            unix_stream: dir.path().join("stream.sock"),
            output: dir.path().join("out.json"),
            dir,
            inputs,
            child: None,
            starts: 0,
        };
        daemon.start_again();
        daemon
    }

    pub(crate) fn tcp_addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn config(&self) -> String {
        let dir = self.dir.path().display();
        let mut global = format!(
            "workDirectory=\"{dir}/work\" maxMessageSize=\"64k\" \
             parser.escapeControlCharactersOnReceive=\"off\""
        );
        let mut conf = String::new();
        if let Some((ca, cert, key)) = &self.inputs.tls {
            global.push_str(&format!(
                " defaultNetstreamDriver=\"gtls\" defaultNetstreamDriverCAFile=\"{}\" \
                 defaultNetstreamDriverCertFile=\"{}\" defaultNetstreamDriverKeyFile=\"{}\"",
                ca.display(),
                cert.display(),
                key.display()
            ));
        }
        conf.push_str(&format!("global({global})\n"));
        if self.inputs.unix {
            conf.push_str("module(load=\"imuxsock\" SysSock.Use=\"off\")\n");
            conf.push_str(&format!(
                "input(type=\"imuxsock\" Socket=\"{}\" CreatePath=\"on\" \
                 UseSpecialParser=\"off\" ParseHostname=\"on\")\n",
                self.unix.display()
            ));
        }
        if self.inputs.udp {
            conf.push_str("module(load=\"imudp\")\n");
            // A large receive buffer: UDP drops what does not fit.
            conf.push_str(&format!(
                "input(type=\"imudp\" address=\"127.0.0.1\" port=\"{}\" rcvbufSize=\"16m\")\n",
                self.port
            ));
        }
        if self.inputs.tls.is_some() {
            conf.push_str(
                "module(load=\"imtcp\" StreamDriver.Name=\"gtls\" StreamDriver.Mode=\"1\" \
                 StreamDriver.AuthMode=\"anon\")\n",
            );
        } else if self.inputs.tcp {
            conf.push_str("module(load=\"imtcp\")\n");
        }
        if self.inputs.tcp || self.inputs.tls.is_some() {
            conf.push_str(&format!(
                "input(type=\"imtcp\" address=\"127.0.0.1\" port=\"{}\")\n",
                self.port
            ));
        }
        if self.inputs.unix_stream {
            conf.push_str("module(load=\"imptcp\")\n");
            conf.push_str(&format!(
                "input(type=\"imptcp\" path=\"{}\" unlink=\"on\")\n",
                self.unix_stream.display()
            ));
        }
        conf.push_str(concat!(
            "template(name=\"json\" type=\"list\" option.jsonf=\"on\") {\n",
            "  property(outname=\"severity\" name=\"syslogseverity\" format=\"jsonf\")\n",
            "  property(outname=\"facility\" name=\"syslogfacility\" format=\"jsonf\")\n",
            "  property(outname=\"hostname\" name=\"hostname\" format=\"jsonf\")\n",
            "  property(outname=\"app\" name=\"app-name\" format=\"jsonf\")\n",
            "  property(outname=\"procid\" name=\"procid\" format=\"jsonf\")\n",
            "  property(outname=\"msgid\" name=\"msgid\" format=\"jsonf\")\n",
            "  property(outname=\"sd\" name=\"structured-data\" format=\"jsonf\")\n",
            "  property(outname=\"msg\" name=\"msg\" format=\"jsonf\")\n",
            "  property(outname=\"input\" name=\"inputname\" format=\"jsonf\")\n",
            "}\n",
        ));
        conf.push_str(&format!(
            "action(type=\"omfile\" file=\"{}\" template=\"json\" asyncWriting=\"on\" \
             flushInterval=\"1\" ioBufferSize=\"256k\")\n",
            self.output.display()
        ));
        conf
    }

    /// Starts rsyslogd (again, after [`stop`](Rsyslogd::stop)) with the same
    /// config, port, sockets and output file, and waits until it is ready.
    pub(crate) fn start_again(&mut self) {
        self.starts += 1;
        let conf = self.dir.path().join("rsyslog.conf");
        fs::write(&conf, self.config()).unwrap();
        let stderr =
            fs::File::create(self.dir.path().join(format!("stderr.{}", self.starts))).unwrap();
        let child = Command::new(binary())
            .arg("-n")
            .arg("-f")
            .arg(&conf)
            .arg("-i")
            .arg(self.dir.path().join("rsyslogd.pid"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start rsyslogd: {e}; {INSTALL}"));
        self.child = Some(child);
        self.wait_ready();
    }

    /// What rsyslogd said on stderr, for failure messages.
    fn stderr(&self) -> String {
        fs::read_to_string(self.dir.path().join(format!("stderr.{}", self.starts)))
            .unwrap_or_default()
    }

    /// Polls each input until it accepts, failing if rsyslogd exits.
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "rsyslogd exited at start ({status}); is a module missing? {INSTALL}\n{}",
                    self.stderr()
                );
            }
            let inputs = &self.inputs;
            let ready = (!inputs.udp || udp_taken(self.port))
                && (!(inputs.tcp || inputs.tls.is_some())
                    || TcpStream::connect(("127.0.0.1", self.port)).is_ok())
                && (!inputs.unix || UnixDatagram::unbound().unwrap().connect(&self.unix).is_ok())
                && (!inputs.unix_stream || UnixStream::connect(&self.unix_stream).is_ok());
            if ready {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "rsyslogd not ready after {DEADLINE:?}:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10)); // a poll interval, not a wait for an event
        }
    }

    /// Stops rsyslogd with SIGTERM (it drains its queues and closes its
    /// files) and waits for it to exit.
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = libc::pid_t::try_from(child.id()).expect("a pid fits pid_t");
            // SAFETY: kill(2) with our own child's pid, which `wait` below
            // reaps only after this: the pid cannot have been reused.
            let sent = unsafe { libc::kill(pid, libc::SIGTERM) };
            assert_eq!(sent, 0, "kill -TERM {pid}");
            child.wait().expect("wait for rsyslogd");
        }
    }

    /// The messages stored so far, rsyslogd's own left out.
    pub(crate) fn stored(&self) -> Vec<Stored> {
        let Ok(file) = fs::File::open(&self.output) else {
            return Vec::new();
        };
        BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            // A line being written may be partial: only whole ones count.
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(&line).ok())
            .map(|v| {
                let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
                Stored {
                    severity: s("severity").parse().unwrap_or(255),
                    facility: s("facility").parse().unwrap_or(255),
                    hostname: s("hostname"),
                    app: s("app"),
                    procid: s("procid"),
                    msgid: s("msgid"),
                    sd: s("sd"),
                    msg: s("msg"),
                    input: s("input"),
                }
            })
            .filter(|m| m.app != "rsyslogd")
            .collect()
    }

    /// Polls the output file until `done` holds for what is stored.
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&[Stored]) -> bool) -> Vec<Stored> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let stored = self.stored();
            if done(&stored) {
                return stored;
            }
            assert!(
                Instant::now() < deadline,
                "rsyslogd did not store {what} within {DEADLINE:?} ({} stored)\n{}",
                stored.len(),
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20)); // a poll interval
        }
    }
}

/// Whether rsyslogd holds the UDP port (our bind then fails).
fn udp_taken(port: u16) -> bool {
    UdpSocket::bind(("127.0.0.1", port)).is_err()
}

impl Drop for Rsyslogd {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.stop();
        } else if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
