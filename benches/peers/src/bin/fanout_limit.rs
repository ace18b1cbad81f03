//! Stand-alone experiment for issue 16, item 2: what one more subscriber
//! costs the caller when a record reaches K readers, in three shapes, with
//! none of logbus' own code (no route, gate, budget or `Record`):
//!
//! - `broadcast`: one single-producer byte ring per caller, written once;
//!   each reader has its own cursor, and the writer waits for the slowest
//!   (the log-and-cursors shape of Aeron's broadcast buffer, without the
//!   lapping);
//! - `copies`: the message formatted once on the stack, then copied as
//!   bytes into each reader's own single-producer ring;
//! - `shared`: the message formatted into an `Arc<str>`, and the pointer
//!   pushed into each reader's own pointer ring (what logbus' shared path
//!   resembles: an allocation and one reference count per reader).
//!
//! Each reader renders `INFO app::http: {message}\n` into its buffer and
//! writes it to its own file with one `write(2)` per 32 KiB, as a file
//! appender does. Lossless: a writer that finds a ring full spins, then
//! yields. A reader that finds nothing yields.
//!
//!   fanout_limit SHAPE READERS RECORDS DIR
//!   FANOUT_NOWRITE=1 fanout_limit ...   (readers render but write nothing)
//!
//! prints the caller's per-call p50, mean and p99.9 in ns (each call timed
//! with `Instant`, the timer's own median cost printed too), the rate, the
//! number of calls that found a ring full (`waits`) and the nanoseconds a
//! call spent waiting on average (`wait_ns`, in the mean), and checks that
//! every reader saw every record once, in order, with its own message.
//! `benches/peers/fanout.sh` runs the rounds.

use std::cell::UnsafeCell;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

const RING_BYTES: usize = 1 << 20;

/// Calls that found a ring full, and the nanoseconds they waited: the
/// lossless caller's back-pressure, apart from its push.
static WAITS: AtomicU64 = AtomicU64::new(0);
static WAITED_NS: AtomicU64 = AtomicU64::new(0);

/// Spins, then yields, until `full()` is false; counts the wait.
#[inline]
fn wait_while(mut full: impl FnMut() -> bool) {
    if !full() {
        return;
    }
    let start = Instant::now();
    let mut spins = 0u32;
    while full() {
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            thread::yield_now();
        }
    }
    WAITS.fetch_add(1, Ordering::Relaxed);
    WAITED_NS.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
}
const POINTER_SLOTS: usize = 8192;
const FLUSH_AT: usize = 32 * 1024;
const HEADER: usize = 16;
/// A record's length word that says "the rest of the ring is padding".
const WRAP: u32 = u32::MAX;

/// A padded atomic, so that cursors do not share a cache line.
#[repr(align(128))]
struct Padded(AtomicU64);

/// A single-producer byte ring with `readers` cursors.
struct ByteRing {
    buf: Box<[UnsafeCell<u8>]>,
    tail: Padded,
    heads: Vec<Padded>,
    done: AtomicBool,
}

// SAFETY: bytes between a reader's head and the tail are written by the
// producer before its Release store of `tail` and only read after the
// reader's Acquire load of it; the producer writes only below the slowest
// head plus the ring's size, which readers publish with Release after
// reading (the usual single-producer ring argument).
unsafe impl Sync for ByteRing {}

impl ByteRing {
    fn new(readers: usize) -> ByteRing {
        ByteRing {
            buf: (0..RING_BYTES).map(|_| UnsafeCell::new(0)).collect(),
            tail: Padded(AtomicU64::new(0)),
            heads: (0..readers).map(|_| Padded(AtomicU64::new(0))).collect(),
            done: AtomicBool::new(false),
        }
    }

    fn ptr(&self, at: u64) -> *mut u8 {
        self.buf[(at as usize) & (RING_BYTES - 1)].get()
    }
}

/// The producer's side of a byte ring: its own tail, and the slowest head
/// it last read.
struct ByteWriter {
    ring: Arc<ByteRing>,
    tail: u64,
    room_until: u64,
}

impl ByteWriter {
    fn new(ring: Arc<ByteRing>) -> ByteWriter {
        ByteWriter {
            ring,
            tail: 0,
            room_until: RING_BYTES as u64,
        }
    }

    /// Waits until `need` bytes from the tail are free.
    fn reserve(&mut self, need: u64) {
        if self.tail + need <= self.room_until {
            return;
        }
        let (ring, tail) = (&self.ring, self.tail);
        let mut room_until = self.room_until;
        wait_while(|| {
            let slowest = ring
                .heads
                .iter()
                .map(|h| h.0.load(Ordering::Acquire))
                .min()
                .unwrap_or(tail);
            room_until = slowest + RING_BYTES as u64;
            tail + need > room_until
        });
        self.room_until = room_until;
    }

    /// Writes one record: a 16-byte header (length, seq) and `message`.
    fn push(&mut self, seq: u64, message: &[u8]) {
        let size = (HEADER + message.len()).next_multiple_of(8) as u64;
        let offset = self.tail & (RING_BYTES as u64 - 1);
        if offset + size > RING_BYTES as u64 {
            // Pad to the ring's end; the record starts at offset 0.
            let pad = RING_BYTES as u64 - offset;
            self.reserve(pad + size);
            // SAFETY: reserved, so no reader is at these bytes.
            unsafe { (self.ring.ptr(self.tail) as *mut u32).write_unaligned(WRAP) };
            self.tail += pad;
        } else {
            self.reserve(size);
        }
        let at = self.ring.ptr(self.tail);
        // SAFETY: reserved and contiguous (checked above).
        unsafe {
            (at as *mut u32).write_unaligned(message.len() as u32);
            (at.add(8) as *mut u64).write_unaligned(seq);
            std::ptr::copy_nonoverlapping(message.as_ptr(), at.add(HEADER), message.len());
        }
        self.tail += size;
        self.ring.tail.0.store(self.tail, Ordering::Release);
    }
}

/// A single-producer, single-consumer ring of `Arc<str>` pointers.
struct PointerRing {
    slots: Box<[UnsafeCell<(u64, *const str)>]>,
    tail: Padded,
    head: Padded,
    done: AtomicBool,
}

// SAFETY: as for `ByteRing`, with one reader.
unsafe impl Sync for PointerRing {}
// SAFETY: the pointers are `Arc<str>`s, which are `Send`.
unsafe impl Send for PointerRing {}

impl PointerRing {
    fn new() -> PointerRing {
        PointerRing {
            slots: (0..POINTER_SLOTS)
                .map(|_| {
                    UnsafeCell::new((
                        0,
                        std::ptr::slice_from_raw_parts(std::ptr::null::<u8>(), 0) as *const str,
                    ))
                })
                .collect(),
            tail: Padded(AtomicU64::new(0)),
            head: Padded(AtomicU64::new(0)),
            done: AtomicBool::new(false),
        }
    }

    fn push(&self, tail: &mut u64, seq: u64, message: Arc<str>) {
        let at = *tail;
        wait_while(|| at - self.head.0.load(Ordering::Acquire) >= POINTER_SLOTS as u64);
        // SAFETY: the slot is free (the head passed it).
        unsafe {
            *self.slots[(*tail as usize) & (POINTER_SLOTS - 1)].get() =
                (seq, Arc::into_raw(message))
        };
        *tail += 1;
        self.tail.0.store(*tail, Ordering::Release);
    }
}

/// A reader's file and render buffer, and what it checks.
struct Sink {
    /// `None` with `FANOUT_NOWRITE=1`: rendered, then discarded, so that
    /// the readers keep up and the caller's cost is the push's alone.
    file: Option<File>,
    out: Vec<u8>,
    seen: u64,
}

impl Sink {
    fn new(path: std::path::PathBuf) -> Sink {
        Sink {
            file: match std::env::var_os("FANOUT_NOWRITE") {
                Some(_) => None,
                None => Some(File::create(path).expect("file")),
            },
            out: Vec::with_capacity(FLUSH_AT * 2),
            seen: 0,
        }
    }

    fn render(&mut self, seq: u64, message: &[u8]) {
        assert_eq!(seq, self.seen, "records out of order or lost");
        // The message is the one logged with this seq: its first number.
        let number = message[b"request ".len()..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .fold(0u64, |n, b| n * 10 + u64::from(b - b'0'));
        assert_eq!(number, seq, "a message that is not its record's");
        self.seen += 1;
        self.out.extend_from_slice(b"INFO app::http: ");
        self.out.extend_from_slice(message);
        self.out.push(b'\n');
        if self.out.len() >= FLUSH_AT {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if let Some(file) = &mut self.file {
            file.write_all(&self.out).expect("write");
        }
        self.out.clear();
    }
}

/// A reader's loop over one ring: `read(head, tail, sink)` renders the
/// records from `head` to the acquired `tail` and returns the new head,
/// which is then published to the producer; idle, it flushes and yields,
/// and it ends once the producer is done and everything is read.
fn read_loop(
    tail: &AtomicU64,
    done: &AtomicBool,
    head_out: &AtomicU64,
    mut sink: Sink,
    mut read: impl FnMut(u64, u64, &mut Sink) -> u64,
) -> u64 {
    let mut head = 0u64;
    loop {
        let now = tail.load(Ordering::Acquire);
        if head == now {
            if done.load(Ordering::Acquire) && tail.load(Ordering::Acquire) == head {
                break;
            }
            sink.flush();
            thread::yield_now();
            continue;
        }
        head = read(head, now, &mut sink);
        head_out.store(head, Ordering::Release);
    }
    sink.flush();
    sink.seen
}

fn read_bytes(ring: &ByteRing, reader: usize, sink: Sink) -> u64 {
    read_loop(
        &ring.tail.0,
        &ring.done,
        &ring.heads[reader].0,
        sink,
        |mut head, tail, sink| {
            while head < tail {
                let at = ring.ptr(head);
                // SAFETY: below the tail we acquired, so written.
                let len = unsafe { (at as *const u32).read_unaligned() };
                if len == WRAP {
                    head += RING_BYTES as u64 - (head & (RING_BYTES as u64 - 1));
                    continue;
                }
                let len = len as usize;
                // SAFETY: as above; a record never straddles the ring's end.
                let (seq, message) = unsafe {
                    (
                        (at.add(8) as *const u64).read_unaligned(),
                        std::slice::from_raw_parts(at.add(HEADER), len),
                    )
                };
                sink.render(seq, message);
                head += (HEADER + len).next_multiple_of(8) as u64;
            }
            head
        },
    )
}

fn read_pointers(ring: &PointerRing, sink: Sink) -> u64 {
    read_loop(
        &ring.tail.0,
        &ring.done,
        &ring.head.0,
        sink,
        |mut head, tail, sink| {
            while head < tail {
                // SAFETY: below the acquired tail: an `Arc::into_raw` pointer
                // the producer gave to this reader alone.
                let (seq, message) =
                    unsafe { *ring.slots[(head as usize) & (POINTER_SLOTS - 1)].get() };
                // SAFETY: as above.
                let message: Arc<str> = unsafe { Arc::from_raw(message) };
                sink.render(seq, message.as_bytes());
                head += 1;
            }
            head
        },
    )
}

/// A message formatted into a stack buffer.
struct Stack {
    buf: [u8; 128],
    len: usize,
}

impl std::fmt::Write for Stack {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// One call of the `broadcast` and `copies` shapes: format on the stack,
/// push into each ring. Out of line, so that callgrind can count it alone
/// (`--toggle-collect=fanout_limit::call_bytes`).
#[inline(never)]
fn call_bytes(writers: &mut [ByteWriter], i: u64) {
    let mut stack = Stack {
        buf: [0; 128],
        len: 0,
    };
    let _ = write!(stack, "request {} served in {} us", i, i % 1000);
    for writer in writers {
        writer.push(i, &stack.buf[..stack.len]);
    }
}

/// One call of the `shared` shape: format into an `Arc<str>`, push a
/// reference into each ring (`--toggle-collect=fanout_limit::call_shared`).
#[inline(never)]
fn call_shared(rings: &[Arc<PointerRing>], tails: &mut [u64], text: &mut String, i: u64) {
    text.clear();
    let _ = write!(text, "request {} served in {} us", i, i % 1000);
    let message: Arc<str> = Arc::from(text.as_str());
    for (ring, tail) in rings.iter().zip(tails) {
        ring.push(tail, i, Arc::clone(&message));
    }
}

/// Runs `call` for each record, timing each call into `lat`; returns the
/// seconds the whole run took.
fn timed(lat: &mut [u32], mut call: impl FnMut(u64)) -> f64 {
    let start = Instant::now();
    for (i, slot) in lat.iter_mut().enumerate() {
        let t0 = Instant::now();
        call(i as u64);
        *slot = t0.elapsed().as_nanos() as u32;
    }
    start.elapsed().as_secs_f64()
}

/// Tells the readers the producer is done, and returns what each saw.
fn finish<'a>(
    done: impl Iterator<Item = &'a AtomicBool>,
    readers: Vec<thread::JoinHandle<u64>>,
) -> Vec<u64> {
    for done in done {
        done.store(true, Ordering::Release);
    }
    readers
        .into_iter()
        .map(|h| h.join().expect("reader"))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, shape, readers, records, dir] = &args[..] else {
        eprintln!("usage: fanout_limit broadcast|copies|shared READERS RECORDS DIR");
        std::process::exit(2);
    };
    let readers: usize = readers.parse().expect("READERS");
    let records: u64 = records.parse().expect("RECORDS");
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let sink = |r: usize| Sink::new(dir.join(format!("fanout-{r}.log")));
    let mut lat = vec![0u32; records as usize];

    let (elapsed, seen): (f64, Vec<u64>) = match shape.as_str() {
        "broadcast" | "copies" => {
            let rings: Vec<Arc<ByteRing>> = match shape.as_str() {
                "broadcast" => vec![Arc::new(ByteRing::new(readers))],
                _ => (0..readers).map(|_| Arc::new(ByteRing::new(1))).collect(),
            };
            let handles: Vec<_> = (0..readers)
                .map(|r| {
                    let (ring, cursor) = match rings.len() {
                        1 => (Arc::clone(&rings[0]), r),
                        _ => (Arc::clone(&rings[r]), 0),
                    };
                    let sink = sink(r);
                    thread::spawn(move || read_bytes(&ring, cursor, sink))
                })
                .collect();
            let mut writers: Vec<ByteWriter> = rings
                .iter()
                .map(|r| ByteWriter::new(Arc::clone(r)))
                .collect();
            let elapsed = timed(&mut lat, |i| call_bytes(&mut writers, i));
            let done = rings.iter().map(|r| &r.done);
            (elapsed, finish(done, handles))
        }
        "shared" => {
            let rings: Vec<Arc<PointerRing>> =
                (0..readers).map(|_| Arc::new(PointerRing::new())).collect();
            let handles: Vec<_> = (0..readers)
                .map(|r| {
                    let ring = Arc::clone(&rings[r]);
                    let sink = sink(r);
                    thread::spawn(move || read_pointers(&ring, sink))
                })
                .collect();
            let mut tails = vec![0u64; readers];
            let mut text = String::with_capacity(128);
            let elapsed = timed(&mut lat, |i| call_shared(&rings, &mut tails, &mut text, i));
            let done = rings.iter().map(|r| &r.done);
            (elapsed, finish(done, handles))
        }
        other => {
            eprintln!("unknown shape {other}");
            std::process::exit(2);
        }
    };
    assert!(
        seen.iter().all(|&n| n == records),
        "a reader missed records: {seen:?}"
    );
    let timer = {
        let mut t: Vec<u32> = (0..10_000)
            .map(|_| {
                let t0 = Instant::now();
                t0.elapsed().as_nanos() as u32
            })
            .collect();
        t.sort_unstable();
        t[t.len() / 2]
    };
    let mean = lat.iter().map(|&n| u64::from(n)).sum::<u64>() as f64 / records as f64;
    lat.sort_unstable();
    let at = |q: f64| lat[((lat.len() as f64 - 1.0) * q) as usize];
    println!(
        "FANOUT shape={shape} readers={readers} write={} records={records} timer_ns={timer} p50={} mean={mean:.1} p999={} rate={:.0} waits={} wait_ns={:.1}",
        std::env::var_os("FANOUT_NOWRITE").is_none(),
        at(0.5),
        at(0.999),
        records as f64 / elapsed,
        WAITS.load(Ordering::Relaxed),
        WAITED_NS.load(Ordering::Relaxed) as f64 / records as f64,
    );
}
