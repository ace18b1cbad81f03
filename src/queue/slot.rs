//! One place in a lane (`lane.rs`): a plain record's parts, or a shared
//! record's pointer.
//!
//! The direct path (`broker/publish/direct.rs`, `publish_direct`) builds no record
//! on the caller's thread: the parts of a plain record (an interned topic,
//! a formatted message or a literal, a `'static` location, and key-values
//! of the kinds a slot carries, packed (`produce::KvPacker`): numbers,
//! booleans, texts, none; the copied message and the packed key-values at
//! most [`INLINE_TEXT`] bytes together: see `Parts`) are copied into the
//! slot field by field, and the worker builds its own record from the
//! copy, into one of its spares (`recycle::Spares`), their key-values'
//! strings into the spare's strings (no allocation while they have
//! room). A deferred message
//! of logbus's macros travels the same way: its template's pointer and its
//! arguments' bits ([`ARG_WORDS`] words at most, see [`args_fit`]), and
//! the worker formats it as it rebuilds the record
//! (`produce::set_taken_parts`). So the caller writes
//! only its stack and the slot, and no reference count, holders count or
//! recycled record crosses between the threads. The thread is the lane's
//! (one lane per thread), so the slot does not carry it. Any other record
//! (key-values that do not pack or do not fit beside the message, a
//! deferred message with key-values, a string argument or too many
//! arguments, one the journal or a flight recorder keeps, one for more
//! subscriptions than the direct path copies to, or with a predicate on
//! its route) travels as its `Arc`'s pointer. A record for two to four
//! subscriptions is copied, parts and all, into each one's lane.
//!
//! # Why every field is an atomic
//!
//! A slot is read by whoever takes its record (the worker) or evicts it
//! (any publisher of the subscription, drop-oldest), and the reads come
//! *before* the compare-and-swap on the lane's `head` that decides who owns
//! the record (`lane.rs`, "Protocol"). A reader that loses the race may
//! have read a slot that its producer was overwriting meanwhile (the record
//! was evicted and the producer came round the ring). With plain memory
//! that would be a data race, undefined behaviour even if the reading is
//! then thrown away; with atomics it is only a stale reading, and the
//! failed compare-and-swap throws it away. A reader whose compare-and-swap
//! succeeds read what the producer wrote before its `Release` store of
//! `tail` (which the reader acquired), and nothing newer: the producer
//! overwrites a slot only after its `Acquire` load of `head` saw the
//! reader's compare-and-swap (`AcqRel`), which comes after the reads.
//! `Relaxed` suffices for every field but `seq` (see `Lane::peek_seq`).
//!
//! Nothing read from a slot is dereferenced or trusted before that
//! compare-and-swap succeeded ([`Reading`] holds only integers and raw
//! pointers until [`Reading::take`] or [`Reading::size`], which are
//! `unsafe` for that reason).

use logbus_appenders::__private_api::{
    self as produce, Arg, DeferredParts, Parts, Stamp, StaticTopic, Template,
};
use logbus_appenders::Record;
use logbus_appenders::ThreadInfo;

use crate::recycle::Spares;

mod args;
mod memory;

use self::args::{args_fit, decode, ARG_WORDS};
use self::memory::Slots;
use crate::sync::{Arc, AtomicPtr, AtomicU64, Ordering};

/// Words of message text a slot holds.
const TEXT_WORDS: usize = 7;

/// The longest formatted message a slot holds (a longer one travels in a
/// shared record; a literal travels as its pointer, whatever its length).
/// With the nine words of the rest, a slot is 128 bytes, two cache lines:
/// a lane's ring grows with its backlog up to the queue's capacity, and at
/// 192 bytes four flooding threads' rings took the process past 16 MiB
/// (`benches/peers`, 4 threads: 19.3 MB against 14.6-16.0 at 128).
pub(crate) const INLINE_TEXT: usize = TEXT_WORDS * 8;

/// `meta` flags.
const SHARED: u64 = 1;
const HAS_LINE: u64 = 1 << 1;
const TICKS: u64 = 1 << 2;
const LITERAL: u64 = 1 << 3;
const DEFERRED: u64 = 1 << 4;

/// What a push hands a lane: a record to share, or a plain record's parts
/// to copy ([`Slot`]), checked to fit ([`Item::parts_with_seq`]).
#[derive(Debug)]
pub(crate) enum Item<'a> {
    Shared(Arc<Record>),
    Parts(Checked<'a>),
}

/// Parts a slot holds ([`holds`]): made only by [`Item::parts_with_seq`], so that
/// [`Reading::take`]'s UTF-8 and length argument rests on a check made
/// here, not by the caller.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checked<'a>(&'a Parts<'a>);

impl<'a> std::ops::Deref for Checked<'a> {
    type Target = Parts<'a>;

    fn deref(&self) -> &Parts<'a> {
        self.0
    }
}

impl<'a> Item<'a> {
    /// The parts as an item, if a slot holds them (see [`holds`]).
    #[cfg(test)]
    pub(crate) fn parts(parts: &'a Parts<'a>) -> Option<Item<'a>> {
        holds(parts).then_some(Item::Parts(Checked(parts)))
    }

    /// The parts as an item if a slot holds them, their `seq` set from
    /// `seq`, which is called only then.
    #[inline]
    pub(crate) fn parts_with_seq(
        parts: &'a mut Parts<'a>,
        seq: impl FnOnce() -> u64,
    ) -> Option<Item<'a>> {
        if !holds(parts) {
            return None;
        }
        parts.seq = seq();
        Some(Item::Parts(Checked(parts)))
    }
}

impl Item<'_> {
    /// The record's `seq`.
    pub(crate) fn seq(&self) -> u64 {
        match self {
            Item::Shared(record) => record.seq(),
            Item::Parts(parts) => parts.seq,
        }
    }

    /// What the record counts in a byte budget (`Record::approx_size`).
    pub(crate) fn size(&self) -> usize {
        match self {
            Item::Shared(record) => record.approx_size(),
            Item::Parts(parts) => parts.size(),
        }
    }

    /// The shared record, if this is one (a dropped one goes back to the
    /// publisher's stash).
    pub(crate) fn into_shared(self) -> Option<Arc<Record>> {
        match self {
            Item::Shared(record) => Some(record),
            Item::Parts(_) => None,
        }
    }

    /// A shared record, made from the parts if need be (for a queue end
    /// that holds only shared records).
    pub(crate) fn into_record(self) -> Arc<Record> {
        match self {
            Item::Shared(record) => record,
            Item::Parts(parts) => Arc::new(record_of(&parts, produce::set_parts)),
        }
    }
}

impl From<Arc<Record>> for Item<'_> {
    fn from(record: Arc<Record>) -> Self {
        Item::Shared(record)
    }
}

/// Whether a slot can hold `parts`: every length fits its field, the
/// copied message and the packed key-values fit the text's words together
/// (a literal's length takes the first word; a deferred message, whose
/// arguments must fit the words, has no key-values), and a wall-clock
/// stamp fits 64-bit nanoseconds.
#[inline]
fn holds(parts: &Parts<'_>) -> bool {
    let fits_u32 = |text: Option<&str>| text.map_or(0, str::len) <= u32::MAX as usize;
    let text = if parts.literal.is_some() {
        8
    } else {
        parts.message.len()
    };
    text + parts.kv.bytes().len() <= INLINE_TEXT
        && (parts.kv.is_empty() || parts.deferred.is_none())
        && parts.deferred.map_or(true, |d| args_fit(d.args))
        && fits_u32(parts.module_path)
        && fits_u32(parts.file)
        && match parts.stamp {
            Stamp::Wall(time) => {
                let nanos = produce::unix_nanos(time);
                nanos != i64::MAX && nanos != i64::MIN + 1
            }
            Stamp::Ticks(..) => true,
        }
}

/// A record evicted from a slot: the record itself if it was shared (for
/// the evictor's stash), or the length of its parts' message (what the
/// record counted in the byte budget).
pub(crate) struct Evicted {
    /// The record's `seq` (what the tests check).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) seq: u64,
    pub(crate) record: Option<Arc<Record>>,
    message_len: usize,
    /// What its packed key-values counted in the byte budget.
    kv_size: usize,
    /// A deferred message's template and its arguments' words: its length
    /// is worked out from them, only for a byte bound.
    deferred: Option<(&'static Template, [u64; TEXT_WORDS])>,
}

impl Evicted {
    /// A shared record, evicted.
    pub(crate) fn shared(record: Arc<Record>) -> Evicted {
        Evicted {
            seq: record.seq(),
            record: Some(record),
            message_len: 0,
            kv_size: 0,
            deferred: None,
        }
    }

    /// What the record counted in the byte budget (`Record::approx_size`),
    /// worked out only for a byte bound.
    pub(crate) fn size(&self) -> usize {
        if let Some((template, words)) = &self.deferred {
            // A deferred message has no key-values (`holds`).
            let mut args = [Arg::Bool(false); ARG_WORDS];
            let count = decode(words, &mut args);
            let deferred = DeferredParts {
                template,
                args: &args[..count],
            };
            return produce::parts_size(deferred.longest());
        }
        match &self.record {
            Some(record) => record.approx_size(),
            None => produce::parts_size(self.message_len) + self.kv_size,
        }
    }
}

/// One place in a wide ring. All-zero bytes are an empty slot (every field
/// an integer 0 or a null pointer), so a ring comes from zeroed memory.
/// `repr(C)`: a shared record's fields (`seq`, `meta`, `ptr`) are in the
/// first cache line.
#[repr(C, align(64))]
pub(super) struct Slot {
    /// The record's `seq`, stored first, with `Release` (`Lane::peek_seq`).
    pub(super) seq: AtomicU64,
    /// Flags (bits 0-7), the copied message's length (8-15), the packed
    /// key-values' length (16-23), the line (32-63). The thread is the
    /// lane's (`Lane::thread`).
    meta: AtomicU64,
    /// A shared record (`Arc::into_raw`, flag `SHARED`), or the topic
    /// (`StaticTopic::as_ptr`).
    ptr: AtomicPtr<()>,
    /// A literal message's text (its length in `text[0]`), or a deferred
    /// one's template (flag `DEFERRED`; its arguments in `text`).
    /// The text words hold the copied message and after it the packed
    /// key-values, as little-endian bytes; after a literal's length, the
    /// key-values alone.
    message: AtomicPtr<u8>,
    /// The module path's and file's text (null: none).
    module: AtomicPtr<u8>,
    file: AtomicPtr<u8>,
    /// A tick stamp's converter (a `fn(u64) -> i64`), or null.
    convert: AtomicPtr<()>,
    /// The ticks, or a wall-clock stamp's nanoseconds since the epoch.
    stamp: AtomicU64,
    /// The module path's length (low 32 bits) and the file's (high 32).
    lens: AtomicU64,
    text: [AtomicU64; TEXT_WORDS],
}

/// One place in a narrow ring: a shared record's pointer (16 bytes). A lane
/// that has carried no parts keeps its ring narrow, so the memory and cache
/// lines of a subscription whose records are all shared (more
/// subscriptions than the direct path copies to, key-values that do not
/// pack, deferred messages with a string argument) stay what they were. A lane that carries parts, plain or deferred,
/// moves to 128-byte slots: up to 1 MiB at the default capacity of 8,192,
/// against 128 KiB narrow.
#[repr(C)]
pub(super) struct Narrow {
    seq: AtomicU64,
    ptr: AtomicPtr<()>,
}

// Two cache lines, and a quarter of one (what the docs and bounds say).
const _: () = assert!(std::mem::size_of::<Slot>() == 128 && std::mem::size_of::<Narrow>() == 16);

/// Types whose all-zero bytes are a valid, empty value.
///
/// # Safety
///
/// Every field must be an atomic integer or pointer (zero: 0, null).
pub(super) unsafe trait Zeroed {}

// SAFETY: every field is an `AtomicU64` or an `AtomicPtr`.
unsafe impl Zeroed for Slot {}
// SAFETY: as above.
unsafe impl Zeroed for Narrow {}

/// A lane's ring: wide slots (parts or a pointer) or narrow ones (a
/// pointer). Indices are slot positions (`Lane` masks them).
pub(super) enum Ring {
    Narrow(Slots<Narrow>),
    Wide(Slots<Slot>),
}

impl Ring {
    /// A ring of `size` empty slots.
    pub(super) fn new(size: usize, wide: bool) -> Ring {
        if wide {
            Ring::Wide(Slots::new(size))
        } else {
            Ring::Narrow(Slots::new(size))
        }
    }

    /// Whether the ring holds parts.
    #[inline]
    pub(super) fn is_wide(&self) -> bool {
        matches!(self, Ring::Wide(_))
    }

    /// Slot `i`'s `seq`, stored first, with `Release` (`Lane::peek_seq`).
    #[inline]
    pub(super) fn seq(&self, i: usize) -> &AtomicU64 {
        match self {
            Ring::Narrow(slots) => &slots[i].seq,
            Ring::Wide(slots) => &slots[i].seq,
        }
    }

    /// Fills slot `i` with `item` (see [`Slot::put`]). A narrow ring takes
    /// parts as a shared record (the lane moves to a wide ring before it
    /// pushes parts, so this does not happen).
    #[inline]
    pub(super) fn put(&self, i: usize, item: Item<'_>) {
        match self {
            Ring::Wide(slots) => slots[i].put(item),
            Ring::Narrow(slots) => {
                let record = match item {
                    Item::Shared(record) => record,
                    Item::Parts(_) => return Ring::put_narrow_parts(&slots[i], item),
                };
                let slot = &slots[i];
                // Release: as in `Slot::put`.
                slot.seq.store(record.seq(), Ordering::Release);
                slot.ptr
                    .store(Arc::into_raw(record).cast_mut().cast(), Ordering::Relaxed);
            }
        }
    }

    /// Parts in a narrow ring (not reached: the lane moves to a wide ring
    /// first): a shared record made of them.
    #[cold]
    fn put_narrow_parts(slot: &Narrow, item: Item<'_>) {
        debug_assert!(false, "parts in a narrow ring");
        slot.seq.store(item.seq(), Ordering::Release);
        let record = item.into_record();
        slot.ptr
            .store(Arc::into_raw(record).cast_mut().cast(), Ordering::Relaxed);
    }

    /// Reads slot `i` for a taker (see [`Slot::read_into`]).
    #[inline]
    pub(super) fn read_into(&self, i: usize, reading: &mut Reading) {
        match self {
            Ring::Wide(slots) => slots[i].read_into(reading),
            Ring::Narrow(slots) => {
                reading.meta = SHARED;
                reading.ptr = slots[i].ptr.load(Ordering::Relaxed);
            }
        }
    }

    /// Reads slot `i` for an evictor (see [`Slot::read_for_eviction`]).
    #[inline]
    pub(super) fn read_for_eviction(&self, i: usize) -> Reading {
        match self {
            Ring::Wide(slots) => slots[i].read_for_eviction(),
            Ring::Narrow(slots) => {
                let mut reading = Reading::EMPTY;
                reading.meta = SHARED;
                reading.ptr = slots[i].ptr.load(Ordering::Relaxed);
                reading
            }
        }
    }

    /// Slot `i`'s shared record, if it holds one (a lane dropping what it
    /// still holds).
    pub(super) fn shared_record(&mut self, i: usize) -> Option<*const Record> {
        match self {
            Ring::Wide(slots) => slots[i].shared_record(),
            Ring::Narrow(slots) => Some(slots[i].ptr.get_mut().cast_const().cast()),
        }
    }
}

impl Slot {
    /// Fills the slot with `item` (the producer, in a slot whose previous
    /// record was taken; published by its `Release` store of `tail`).
    #[inline]
    pub(super) fn put(&self, item: Item<'_>) {
        // Release: for `peek_seq`'s reread of `head`.
        self.seq.store(item.seq(), Ordering::Release);
        let parts = match item {
            Item::Shared(record) => {
                self.ptr
                    .store(Arc::into_raw(record).cast_mut().cast(), Ordering::Relaxed);
                self.meta.store(SHARED, Ordering::Relaxed);
                return;
            }
            Item::Parts(parts) => parts,
        };
        let text = |text: Option<&'static str>| {
            text.map_or(std::ptr::null_mut(), |t| t.as_ptr().cast_mut())
        };
        let len = |text: Option<&str>| text.map_or(0, str::len) as u64;
        self.ptr
            .store(parts.topic.as_ptr().cast_mut(), Ordering::Relaxed);
        self.module
            .store(text(parts.module_path), Ordering::Relaxed);
        self.file.store(text(parts.file), Ordering::Relaxed);
        let (flags, stamp, convert) = match parts.stamp {
            Stamp::Ticks(ticks, convert) => (TICKS, ticks, convert as *mut ()),
            Stamp::Wall(time) => (0, produce::unix_nanos(time) as u64, std::ptr::null_mut()),
        };
        self.convert.store(convert, Ordering::Relaxed);
        self.stamp.store(stamp, Ordering::Relaxed);
        self.lens.store(
            len(parts.module_path) | len(parts.file) << 32,
            Ordering::Relaxed,
        );
        let mut flags = flags | if parts.line.is_some() { HAS_LINE } else { 0 };
        let mut message = parts.message.as_bytes();
        if let Some(deferred) = parts.deferred {
            flags |= DEFERRED;
            self.message.store(
                std::ptr::from_ref(deferred.template).cast_mut().cast(),
                Ordering::Relaxed,
            );
            args::put(&self.text, deferred.args);
            message = &[];
        } else if let Some(literal) = parts.literal {
            flags |= LITERAL;
            self.message
                .store(literal.as_ptr().cast_mut(), Ordering::Relaxed);
            self.text[0].store(literal.len() as u64, Ordering::Relaxed);
            message = &[];
        }
        self.meta.store(
            flags
                | (message.len() as u64) << 8
                | (parts.kv.bytes().len() as u64) << 16
                | u64::from(parts.line.unwrap_or(0)) << 32,
            Ordering::Relaxed,
        );
        if !parts.kv.is_empty() {
            let start = usize::from(flags & LITERAL != 0);
            return put_with_kv(&self.text[start..], message, parts.kv.bytes());
        }
        // Little-endian words, the last one zero-padded (`tail_word`).
        let mut words = message.chunks_exact(8);
        let mut at = 0;
        for (slot, chunk) in self.text.iter().zip(&mut words) {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
            slot.store(word, Ordering::Relaxed);
            at += 1;
        }
        let rest = words.remainder().len();
        if rest != 0 && at < TEXT_WORDS {
            self.text[at].store(tail_word(message, rest), Ordering::Relaxed);
        }
    }

    /// Reads the slot into `reading`, for a taker that will then try to
    /// own its record.
    #[inline]
    pub(super) fn read_into(&self, reading: &mut Reading) {
        let meta = self.meta.load(Ordering::Relaxed);
        reading.meta = meta;
        reading.ptr = self.ptr.load(Ordering::Relaxed);
        if meta & SHARED != 0 {
            return;
        }
        reading.seq = self.seq.load(Ordering::Relaxed);
        reading.message = self.message.load(Ordering::Relaxed);
        reading.module = self.module.load(Ordering::Relaxed);
        reading.file = self.file.load(Ordering::Relaxed);
        reading.convert = self.convert.load(Ordering::Relaxed);
        reading.stamp = self.stamp.load(Ordering::Relaxed);
        reading.lens = self.lens.load(Ordering::Relaxed);
        // A stale `meta` can claim any length: read at most the slot.
        let words = if meta & DEFERRED != 0 {
            TEXT_WORDS
        } else if meta & LITERAL != 0 {
            (1 + reading.kv_len().div_ceil(8)).min(TEXT_WORDS)
        } else {
            ((reading.message_len() + reading.kv_len()).div_ceil(8)).min(TEXT_WORDS)
        };
        for (word, slot) in reading.text[..words].iter_mut().zip(&self.text) {
            *word = slot.load(Ordering::Relaxed);
        }
    }

    /// Reads what an evictor needs: whether the record is shared, and its
    /// pointer or its message's length.
    #[inline]
    pub(super) fn read_for_eviction(&self) -> Reading {
        let mut reading = Reading::EMPTY;
        reading.meta = self.meta.load(Ordering::Relaxed);
        reading.ptr = self.ptr.load(Ordering::Relaxed);
        if reading.kv_len() > 0 {
            // The packed key-values' size, and a literal's length.
            for (word, slot) in reading.text.iter_mut().zip(&self.text) {
                *word = slot.load(Ordering::Relaxed);
            }
        } else if reading.meta & LITERAL != 0 {
            reading.text[0] = self.text[0].load(Ordering::Relaxed);
        } else if reading.meta & DEFERRED != 0 {
            reading.message = self.message.load(Ordering::Relaxed);
            for (word, slot) in reading.text.iter_mut().zip(&self.text) {
                *word = slot.load(Ordering::Relaxed);
            }
        }
        reading
    }

    /// Whether the slot holds a shared record (for a lane dropping what it
    /// still holds: only then does it own something to free).
    pub(super) fn shared_record(&mut self) -> Option<*const Record> {
        (*self.meta.get_mut() & SHARED != 0).then(|| self.ptr.get_mut().cast_const().cast())
    }
}

/// What a reader read of a slot: integers and raw pointers only, trusted
/// once its compare-and-swap made it the record's owner.
#[derive(Clone, Copy)]
pub(super) struct Reading {
    meta: u64,
    ptr: *mut (),
    seq: u64,
    message: *mut u8,
    module: *mut u8,
    file: *mut u8,
    convert: *mut (),
    stamp: u64,
    lens: u64,
    text: [u64; TEXT_WORDS],
}

impl Reading {
    /// Nothing read yet.
    pub(super) const EMPTY: Reading = Reading {
        meta: 0,
        ptr: std::ptr::null_mut(),
        seq: 0,
        message: std::ptr::null_mut(),
        module: std::ptr::null_mut(),
        file: std::ptr::null_mut(),
        convert: std::ptr::null_mut(),
        stamp: 0,
        lens: 0,
        text: [0; TEXT_WORDS],
    };

    fn message_len(&self) -> usize {
        ((self.meta >> 8) & 0xff) as usize
    }

    fn kv_len(&self) -> usize {
        ((self.meta >> 16) & 0xff) as usize
    }

    /// The packed key-values among the text words' bytes `text` (after a
    /// literal's length word, or the copied message).
    fn kv<'t>(&self, text: &'t [u8]) -> produce::Packed<'t> {
        let start = if self.meta & LITERAL != 0 {
            8
        } else {
            self.message_len()
        };
        // A stale `meta` can claim any length: at most the slot's bytes.
        let end = (start + self.kv_len()).min(text.len());
        produce::Packed::from_bytes(text.get(start..end).unwrap_or_default())
    }

    /// Whether the slot held a shared record (not parts to rebuild one).
    #[inline]
    pub(super) fn is_shared(&self) -> bool {
        self.meta & SHARED != 0
    }

    /// The record, as the slot held it: the shared record itself, or a
    /// record built from the parts (a spare one rewritten, or a new one)
    /// made on `thread`, the lane's.
    ///
    /// # Safety
    ///
    /// The caller's compare-and-swap on the lane's `head` moved it past
    /// this slot's index after the reading (`lane.rs`), which makes the
    /// caller the record's only owner and the reading what the producer
    /// wrote, with each pointer from `Slot::put`.
    #[inline(always)]
    pub(super) unsafe fn take(&self, thread: ThreadInfo, spares: &mut Spares) -> Arc<Record> {
        if self.meta & SHARED != 0 {
            // SAFETY: `ptr` came from `Arc::into_raw` in `Slot::put`, and
            // we own the record (the function's contract), so we turn it
            // back exactly once.
            return unsafe { Arc::from_raw(self.ptr.cast_const().cast()) };
        }
        // Every word, as little-endian bytes: a fixed copy of the reading
        // (no zeroed buffer first, which was a `memset` call a record).
        let words = self.text.map(u64::to_le_bytes);
        let len = self.message_len().min(INLINE_TEXT);
        // SAFETY: the first `len` bytes are a copy of a `&str`'s bytes, as
        // `Slot::put` wrote them (the contract), so they are UTF-8.
        let message = unsafe { std::str::from_utf8_unchecked(&words.as_flattened()[..len]) };
        let kv = if self.kv_len() == 0 {
            produce::Packed::default()
        } else {
            self.kv(words.as_flattened())
        };
        // Each pointer and length is a `&'static str`'s, or null,
        // as `Slot::put` wrote them (the contract).
        let text = |ptr: *mut u8, len: u64| {
            // SAFETY: a `&'static str`'s pointer and length (above).
            (!ptr.is_null()).then(|| unsafe {
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                    ptr.cast_const(),
                    len as usize,
                ))
            })
        };
        let stamp = if self.meta & TICKS != 0 {
            // SAFETY: `convert` is a `fn(u64) -> i64` cast to a pointer
            // by `Slot::put` (the contract); function pointers and data
            // pointers have the same size on every platform Rust runs on.
            let convert = unsafe { std::mem::transmute::<*mut (), fn(u64) -> i64>(self.convert) };
            Stamp::Ticks(self.stamp, convert)
        } else {
            Stamp::Wall(produce::from_unix_nanos(self.stamp as i64))
        };
        let literal = if self.meta & LITERAL != 0 {
            text(self.message, self.text[0])
        } else {
            None
        };
        // Set only for a deferred message: a plain one pays no copy.
        let args: [Arg; ARG_WORDS];
        let deferred = if self.meta & DEFERRED != 0 {
            let mut decoded = [Arg::Bool(false); ARG_WORDS];
            let count = decode(&self.text, &mut decoded);
            args = decoded;
            Some(DeferredParts {
                // SAFETY: a `&'static Template`'s pointer, as `Slot::put`
                // wrote it with the flag (the contract).
                template: unsafe { &*self.message.cast_const().cast::<Template>() },
                args: &args[..count],
            })
        } else {
            None
        };
        let parts = Parts {
            seq: self.seq,
            // SAFETY: `ptr` is a `StaticTopic`'s `as_ptr` (the contract),
            // and a `StaticTopic` is exactly that pointer
            // (`repr(transparent)` over a `&'static`).
            topic: unsafe { std::mem::transmute::<*mut (), StaticTopic>(self.ptr) },
            stamp,
            module_path: text(self.module, self.lens & 0xffff_ffff),
            file: text(self.file, self.lens >> 32),
            line: (self.meta & HAS_LINE != 0).then_some((self.meta >> 32) as u32),
            thread,
            message: literal.unwrap_or(message),
            literal,
            deferred,
            kv,
        };
        // The worker's own record, which its appender reads next: a
        // deferred message is formatted now (`produce::set_taken_parts`).
        match spares.take() {
            Some(spare) => spare.reuse(|record| produce::set_taken_parts(record, &parts)),
            None => Arc::new(record_of(&parts, produce::set_taken_parts)),
        }
    }

    /// What the record counts in a byte budget (`Record::approx_size`, as
    /// its push counted it, `Item::size`), for a taker that gives its bytes
    /// back before it rebuilds the record.
    ///
    /// # Safety
    ///
    /// As for [`take`](Reading::take), and before it: a shared record's
    /// count is still the reading's, not yet turned back into an `Arc`. A
    /// reading by `Slot::read_into` holds every field [`evicted`](Reading::evicted)
    /// reads (a literal's length, a deferred message's template and words,
    /// the packed key-values' words).
    pub(super) unsafe fn size(&self) -> usize {
        if self.meta & SHARED != 0 {
            // SAFETY: `ptr` came from `Arc::into_raw` in `Slot::put`, and
            // we own that count (the contract), so the record is alive.
            return unsafe { &*self.ptr.cast_const().cast::<Record>() }.approx_size();
        }
        // SAFETY: as for `evicted` (the same contract). A reading of parts
        // owns nothing to let go of: this is a copy's work, not a take.
        unsafe { self.evicted(self.seq) }.size()
    }

    /// The record an evictor took ownership of.
    ///
    /// # Safety
    ///
    /// As for [`take`](Reading::take), from `Slot::read_for_eviction`;
    /// `seq` is the slot's.
    pub(super) unsafe fn evicted(self, seq: u64) -> Evicted {
        if self.meta & SHARED != 0 {
            // SAFETY: as in `take`.
            let record: Arc<Record> = unsafe { Arc::from_raw(self.ptr.cast_const().cast()) };
            return Evicted::shared(record);
        }
        let message_len = if self.meta & LITERAL != 0 {
            self.text[0] as usize
        } else {
            self.message_len()
        };
        // SAFETY: as in `take`.
        let template = || unsafe { &*self.message.cast_const().cast::<Template>() };
        let kv_size = if self.kv_len() > 0 {
            produce::packed_size(self.kv(self.text.map(u64::to_le_bytes).as_flattened()))
        } else {
            0
        };
        Evicted {
            seq,
            record: None,
            message_len,
            kv_size,
            deferred: (self.meta & DEFERRED != 0).then(|| (template(), self.text)),
        }
    }
}

/// [`Slot::put`]'s text for parts with key-values: `message` (copied; empty
/// for a literal or a deferred message) and the packed `kv` after it, as
/// little-endian words into `words`, the last one zero-padded (`holds`
/// checked that they fit). Out of line: most records have no key-values.
#[inline(never)]
fn put_with_kv(words: &[AtomicU64], message: &[u8], kv: &[u8]) {
    let mut bytes = [0; INLINE_TEXT];
    let len = message.len() + kv.len();
    if len > bytes.len() {
        debug_assert!(false, "parts that do not fit a slot");
        return;
    }
    bytes[..message.len()].copy_from_slice(message);
    bytes[message.len()..len].copy_from_slice(kv);
    // Whole words, the bytes after `len` being zeros: a copy of each
    // chunk's bytes into a word cost about 170 instructions more a call
    // with two key-values (`benches/README.md`, "Twenty-sixth session").
    let word = |bits: &[u8]| u64::from_le_bytes(bits.try_into().unwrap_or_default());
    let used = bytes.chunks_exact(8).take(len.div_ceil(8));
    for (slot, bits) in words.iter().zip(used) {
        slot.store(word(bits), Ordering::Relaxed);
    }
}

/// The last `rest` bytes of `message` (1 to 7 of them) as a little-endian
/// word, zero-padded: a message's last, partial word in a slot. Loads that
/// overlap the bytes before them, then a shift, where a byte-by-byte fold
/// was a chain of 7 dependent steps (and a copy of a variable length a
/// call to `memcpy`).
#[inline(always)]
fn tail_word(message: &[u8], rest: usize) -> u64 {
    debug_assert!((1..8).contains(&rest) && rest <= message.len());
    let n = message.len();
    if n >= 8 {
        // The message's last 8 bytes, the wanted ones at the top.
        let last = u64::from_le_bytes(message[n - 8..].try_into().unwrap_or_default());
        return last >> ((8 - rest) * 8);
    }
    // The whole message is the rest (`n == rest`, under 8 bytes).
    if n >= 4 {
        // Two 4-byte loads that overlap where `n` is under 8: the bytes
        // they share are the same, so OR-ing them is exact.
        let head = u32::from_le_bytes(message[..4].try_into().unwrap_or_default());
        let tail = u32::from_le_bytes(message[n - 4..].try_into().unwrap_or_default());
        return u64::from(head) | u64::from(tail) << ((n - 4) * 8);
    }
    // 1 to 3 bytes: the first, the middle and the last (the same byte
    // twice where `n` is under 3).
    u64::from(message[0])
        | u64::from(message[n / 2]) << (n / 2 * 8)
        | u64::from(message[n - 1]) << ((n - 1) * 8)
}

/// A new record made of `parts` by `set` (`produce::set_parts` or
/// `set_taken_parts`).
fn record_of(parts: &Parts<'_>, set: fn(&mut Record, &Parts<'_>)) -> Record {
    let mut record = produce::new_record(parts.topic.topic(), parts.seq, parts.stamp);
    set(&mut record, parts);
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_parts;
    use logbus_appenders::Level;
    use std::borrow::Cow;

    fn thread() -> ThreadInfo {
        ThreadInfo {
            id: 9,
            name: Some("worker-9"),
        }
    }

    /// The parts of a deferred call: `template` with `args`, `seq`.
    fn deferred_parts<'a>(seq: u64, template: &'static Template, args: &'a [Arg]) -> Parts<'a> {
        Parts {
            message: "",
            deferred: Some(DeferredParts { template, args }),
            ..test_parts(seq, "", thread())
        }
    }

    /// Puts `item` into a fresh slot and takes it out as its owner would.
    fn round_trip(item: Item<'_>, spares: &mut Spares) -> Arc<Record> {
        let ring = Ring::new(1, true);
        ring.put(0, item);
        let mut reading = Reading::EMPTY;
        ring.read_into(0, &mut reading);
        // SAFETY: no one else reads or writes the slot, and it was put.
        unsafe { reading.take(thread(), spares) }
    }

    #[test]
    fn a_record_comes_out_of_its_parts_as_it_went_in() {
        let spares = &mut Spares::default();
        // Every length a word boundary can cut: none, part of one word,
        // one, one and a bit, all but one byte of the last word, all of it.
        for text in [
            "",
            "a",
            "seven..",
            "exactly8",
            "nine byte",
            "a message of fifty-five bytes, one short of the slot...",
            "a message of fifty-six bytes, the most a slot holds.....",
        ] {
            assert!(text.len() <= INLINE_TEXT);
            let parts = test_parts(41, text, thread());
            let record = round_trip(Item::parts(&parts).unwrap(), spares);
            assert_eq!(record.seq(), 41);
            assert_eq!(record.message(), text);
            assert!(matches!(record.message_cow(), Cow::Owned(_)));
            assert_eq!(record.topic().level(), Level::Info);
            assert_eq!(record.target(), "t");
            assert_eq!(record.module_path(), Some("m"));
            assert_eq!(record.file(), Some("f.rs"));
            assert_eq!(record.line(), Some(7));
            assert_eq!(record.thread(), thread());
            assert_eq!(record.time(), std::time::SystemTime::UNIX_EPOCH);
            assert!(record.key_values().is_empty());
            assert_eq!(record.approx_size(), Item::parts(&parts).unwrap().size());
        }
    }

    /// Key-values packed into `buf`: a text, a number, a boolean.
    fn packed(buf: &mut [u8]) -> produce::Packed<'_> {
        let mut packer = produce::KvPacker::new(buf);
        assert!(packer.pack("user", produce::Packable::Str("alice")));
        assert!(packer.pack("took_us", produce::Packable::U64(1234)));
        assert!(packer.pack("ok", produce::Packable::Bool(true)));
        let len = packer.packed().bytes().len();
        produce::Packed::from_bytes(&buf[..len])
    }

    /// Key-values travel packed after a copied message, or after a
    /// literal's length, and come out typed, for every length of message
    /// that leaves them room; what does not fit, or comes with a deferred
    /// message, is not a slot's.
    #[test]
    fn key_values_come_out_of_the_slot_beside_their_message() {
        use logbus_appenders::Value;
        let mut buf = [0; INLINE_TEXT];
        let kv = packed(&mut buf);
        let spares = &mut Spares::default();
        let room = INLINE_TEXT - kv.bytes().len();
        let text = "m".repeat(room);
        for len in 0..=room {
            let parts = Parts {
                kv,
                ..test_parts(7, &text[..len], thread())
            };
            let record = round_trip(Item::parts(&parts).unwrap(), spares);
            assert_eq!(record.message(), &text[..len]);
            let keys: Vec<&str> = record.key_values().iter().map(|(k, _)| &**k).collect();
            assert_eq!(keys, ["user", "took_us", "ok"], "message of {len}");
            assert!(matches!(record.get("user"), Some(Value::Str(s)) if s == "alice"));
            assert_eq!(record.get("took_us"), Some(&Value::U64(1234)));
            assert_eq!(record.get("ok"), Some(&Value::Bool(true)));
        }
        let longer = "m".repeat(room + 1);
        let too_long = test_parts(7, &longer, thread());
        assert!(Item::parts(&Parts { kv, ..too_long }).is_none());
        let literal = Parts {
            literal: Some("a literal"),
            kv,
            ..test_parts(8, "a literal", thread())
        };
        let record = round_trip(Item::parts(&literal).unwrap(), spares);
        assert!(matches!(record.message_cow(), Cow::Borrowed("a literal")));
        assert_eq!(record.key_values().len(), 3);
        assert_eq!(record.get("took_us"), Some(&Value::U64(1234)));
        // A literal's length takes the first word: eight bytes less room.
        let mut big = [0; INLINE_TEXT];
        let mut packer = produce::KvPacker::new(&mut big);
        assert!(packer.pack("k", produce::Packable::Str(&"v".repeat(INLINE_TEXT - 4))));
        let full = packer.packed();
        assert!(Item::parts(&Parts {
            kv: full,
            ..test_parts(9, "", thread())
        })
        .is_some());
        assert!(Item::parts(&Parts {
            kv: full,
            ..literal
        })
        .is_none());
        use logbus_appenders::__private_api::{parse, pieces, Piece};
        const FORMAT: &str = "{}";
        const PIECES: [Piece; pieces(FORMAT)] = parse(FORMAT);
        static TEMPLATE: Template = Template::new(FORMAT, &PIECES, 1);
        let args = [Arg::U8(1)];
        let deferred = Parts {
            kv,
            ..deferred_parts(10, &TEMPLATE, &args)
        };
        assert!(
            Item::parts(&deferred).is_none(),
            "a deferred message has none"
        );
    }

    /// An evictor counts the packed key-values' bytes as the push did.
    #[test]
    fn an_evicted_record_with_key_values_counts_what_its_push_counted() {
        let mut buf = [0; INLINE_TEXT];
        let kv = packed(&mut buf);
        for literal in [None, Some("lit")] {
            let parts = Parts {
                literal,
                kv,
                ..test_parts(3, literal.unwrap_or("short"), thread())
            };
            let item = Item::parts(&parts).unwrap();
            let pushed = item.size();
            let ring = Ring::new(1, true);
            ring.put(0, item);
            let reading = ring.read_for_eviction(0);
            // SAFETY: no one else reads or writes the slot, and it was put.
            let evicted = unsafe { reading.evicted(3) };
            assert_eq!(evicted.size(), pushed);
            assert!(pushed > produce::parts_size(parts.message.len()));
        }
    }

    /// A taker gives a record's bytes back from its reading, before it
    /// rebuilds the record: the reading counts what the push counted, for
    /// every kind of item.
    #[test]
    fn a_reading_counts_the_bytes_its_push_counted() {
        use logbus_appenders::__private_api::{parse, pieces, Piece};
        const FORMAT: &str = "{:>300} and {}";
        const PIECES: [Piece; pieces(FORMAT)] = parse(FORMAT);
        static TEMPLATE: Template = Template::new(FORMAT, &PIECES, 2);
        let args = [Arg::U64(7), Arg::I32(-1)];
        let deferred = deferred_parts(1, &TEMPLATE, &args);
        let plain = test_parts(2, "copied into the slot", thread());
        const LITERAL: &str = "a literal longer than a slot holds, which travels as its pointer";
        let literal = Parts {
            literal: Some(LITERAL),
            ..test_parts(3, LITERAL, thread())
        };
        let shared = || Item::Shared(Arc::new(record_of(&plain, produce::set_parts)));
        let mut buf = [0; INLINE_TEXT];
        let kv = packed(&mut buf);
        let with_kv = Parts { kv, ..plain };
        let literal_with_kv = Parts { kv, ..literal };
        let items = [
            Item::parts(&deferred).unwrap(),
            Item::parts(&plain).unwrap(),
            Item::parts(&literal).unwrap(),
            shared(),
            Item::parts(&with_kv).unwrap(),
            Item::parts(&literal_with_kv).unwrap(),
        ];
        for (i, item) in items.into_iter().enumerate() {
            let pushed = item.size();
            let ring = Ring::new(1, true);
            ring.put(0, item);
            let mut reading = Reading::EMPTY;
            ring.read_into(0, &mut reading);
            // SAFETY: no one else reads or writes the slot, and it was put;
            // the record is then taken, once.
            let (size, record) = unsafe {
                (
                    reading.size(),
                    reading.take(thread(), &mut Spares::default()),
                )
            };
            assert_eq!(size, pushed, "item {i}");
            assert_eq!(record.approx_size(), pushed, "item {i}");
        }
        assert!(
            Item::parts(&deferred).unwrap().size() > 300,
            "the padding counts"
        );
    }

    #[test]
    fn a_reused_record_carries_each_kind_of_message_in_turn() {
        use crate::recycle::Pool;
        use logbus_appenders::__private_api::{parse, pieces, Piece};
        const FORMAT: &str = "{} of {:>4}";
        const PIECES: [Piece; pieces(FORMAT)] = parse(FORMAT);
        static TEMPLATE: Template = Template::new(FORMAT, &PIECES, 2);
        let args = [Arg::U8(1), Arg::U16(2)];
        let deferred = deferred_parts(1, &TEMPLATE, &args);
        let plain = test_parts(2, "copied", thread());
        let literal = Parts {
            literal: Some("a literal"),
            message: "a literal",
            ..test_parts(3, "", thread())
        };
        let (spares, mut hand_back) = (&mut Spares::default(), Pool::new().hand_back());
        let mut last = None;
        let kinds = [
            &deferred, &plain, &deferred, &literal, &deferred, &deferred, &plain,
        ];
        for (i, parts) in kinds.into_iter().enumerate() {
            // The record taken before is written and given back, so this
            // take rewrites it.
            let before = last.take().map(|record: Arc<Record>| {
                let place = Arc::as_ptr(&record);
                spares.give_back(&mut vec![record], &mut hand_back);
                place
            });
            let record = round_trip(Item::parts(parts).unwrap(), spares);
            if let Some(before) = before {
                assert!(
                    std::ptr::eq(before, Arc::as_ptr(&record)),
                    "take {i}: reused"
                );
            }
            let (text, is_deferred) = match parts.deferred {
                Some(_) => ("1 of    2", true),
                None => (parts.message, false),
            };
            assert_eq!(record.message(), text, "take {i}");
            assert_eq!(produce::is_deferred(&record), is_deferred, "take {i}");
            assert_eq!(produce::is_formatted(&record), is_deferred, "take {i}");
            assert_eq!(record.approx_size(), Item::parts(parts).unwrap().size());
            last = Some(record);
        }
    }

    #[test]
    fn a_literal_travels_as_its_pointer_and_absent_fields_stay_absent() {
        let literal: &'static str =
            "a literal much longer than the fifty-six bytes of text a slot holds";
        let parts = Parts {
            literal: Some(literal),
            message: literal,
            module_path: None,
            file: None,
            line: None,
            ..test_parts(3, "", thread())
        };
        assert!(holds(&parts));
        let record = round_trip(Item::parts(&parts).unwrap(), &mut Spares::default());
        assert!(matches!(record.message_cow(), Cow::Borrowed(m) if std::ptr::eq(*m, literal)));
        assert_eq!(
            (record.module_path(), record.file(), record.line()),
            (None, None, None)
        );
        assert_eq!(record.approx_size(), Item::parts(&parts).unwrap().size());
    }

    #[test]
    fn a_deferred_message_travels_as_its_template_and_arguments() {
        use logbus_appenders::__private_api::{parse, pieces, Piece};
        const FORMAT: &str = "request {} served in {:>5} us, {:?} {}";
        const PIECES: [Piece; pieces(FORMAT)] = parse(FORMAT);
        static TEMPLATE: Template = Template::new(FORMAT, &PIECES, 4);
        let args = [Arg::U64(41), Arg::I128(-7), Arg::Char('"'), Arg::F64(2.5)];
        let parts = deferred_parts(6, &TEMPLATE, &args);
        let size = Item::parts(&parts).unwrap().size();
        let text = r#"request 41 served in    -7 us, '"' 2.5"#;
        // A record made of the parts on the caller's side (a push with no
        // lane) leaves the message to its first reader.
        let made = Item::parts(&parts).unwrap().into_record();
        assert!(produce::is_deferred(&made) && !produce::is_formatted(&made));
        assert_eq!((made.message(), made.approx_size()), (text, size));
        // The worker that takes it formats it at once, into the record's
        // own message; it stays deferred, and counts what it counted.
        let record = round_trip(Item::parts(&parts).unwrap(), &mut Spares::default());
        assert!(produce::is_deferred(&record) && produce::is_formatted(&record));
        assert_eq!(record.approx_size(), size, "as it counted when pushed");
        assert_eq!(record.message(), text);
        assert!(matches!(record.message_cow(), Cow::Owned(_)));
        let copy = Record::clone(&record);
        assert_eq!((copy.message(), produce::is_formatted(&copy)), (text, true));
        assert_eq!(copy.approx_size(), size);
        // Made fit to be retained, it keeps its text as a plain message.
        let mut kept = copy;
        produce::fit_for_retention(&mut kept);
        assert_eq!((kept.message(), produce::is_deferred(&kept)), (text, false));
        assert_eq!(record.seq(), 6);
        assert_eq!(record.line(), Some(7));

        // An evictor counts what the pusher counted.
        let ring = Ring::new(1, true);
        ring.put(0, Item::parts(&parts).unwrap());
        // SAFETY: no one else reads or writes the slot, and it was put.
        let evicted = unsafe { ring.read_for_eviction(0).evicted(6) };
        assert!(evicted.record.is_none());
        assert_eq!(evicted.size(), size);

        // A string argument, or too many, does not fit.
        let strings = [Arg::Str("x")];
        let parts = Parts {
            deferred: Some(DeferredParts {
                template: &TEMPLATE,
                args: &strings,
            }),
            ..parts
        };
        assert!(Item::parts(&parts).is_none());
    }

    #[test]
    fn a_tick_stamp_keeps_its_converter() {
        fn convert(ticks: u64) -> i64 {
            (ticks * 2) as i64
        }
        let parts = Parts {
            stamp: Stamp::Ticks(500, convert),
            ..test_parts(3, "x", thread())
        };
        let record = round_trip(Item::parts(&parts).unwrap(), &mut Spares::default());
        let since = record
            .time()
            .duration_since(std::time::SystemTime::UNIX_EPOCH);
        assert_eq!(since.unwrap().as_nanos(), 1000);
    }

    #[test]
    fn a_longer_message_or_a_far_time_does_not_fit_a_slot() {
        let long = "x".repeat(INLINE_TEXT + 1);
        assert!(!holds(&test_parts(1, &long, thread())));
        assert!(holds(&test_parts(1, &long[1..], thread())));
        let far =
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(300 * 365 * 86_400);
        let parts = Parts {
            stamp: Stamp::Wall(far),
            ..test_parts(1, "x", thread())
        };
        assert!(!holds(&parts));
    }

    #[test]
    fn a_spare_is_rewritten_whatever_it_held() {
        // A spare that was a record with key-values, a location and a long
        // message comes out as exactly the parts.
        let old = Arc::new(
            Record::builder(logbus_appenders::Topic::new(Level::Warn, "old"))
                .message("an old message".repeat(10))
                .kv("k", "v")
                .module_path(Some("old::m".to_owned().into()))
                .build(),
        );
        let mut spares = Spares::default();
        assert!(spares.take().is_none()); // now it wants one
        let mut hand_back = crate::recycle::Pool::new().hand_back();
        hand_back.release(old, &mut spares);
        let parts = test_parts(5, "new", thread());
        let record = round_trip(Item::parts(&parts).unwrap(), &mut spares);
        assert!(spares.take().is_none(), "the spare was used");
        assert_eq!(record.message(), "new");
        assert!(record.key_values().is_empty());
        assert_eq!(record.module_path(), Some("m"));
        assert_eq!(record.topic().level(), Level::Info);
    }

    #[test]
    fn a_shared_record_goes_through_as_itself() {
        let shared = crate::queue::test_record(8);
        let record = round_trip(Item::Shared(Arc::clone(&shared)), &mut Spares::default());
        assert!(Arc::ptr_eq(&record, &shared));
        let narrow = Ring::new(1, false);
        narrow.put(0, Item::Shared(Arc::clone(&shared)));
        let mut reading = Reading::EMPTY;
        narrow.read_into(0, &mut reading);
        // SAFETY: no one else reads or writes the slot, and it was put.
        let record = unsafe { reading.take(thread(), &mut Spares::default()) };
        assert!(Arc::ptr_eq(&record, &shared));
    }

    #[test]
    fn a_messages_last_word_is_its_last_bytes_zero_padded() {
        let text: Vec<u8> = (1..=INLINE_TEXT as u8).collect();
        for len in 1..=INLINE_TEXT {
            let message = &text[..len];
            let rest = len % 8;
            if rest == 0 {
                continue;
            }
            let mut bytes = [0; 8];
            bytes[..rest].copy_from_slice(&message[len - rest..]);
            assert_eq!(
                tail_word(message, rest),
                u64::from_le_bytes(bytes),
                "a message of {len} bytes"
            );
        }
    }
}
