//! A message the caller did not format: its call site's format string,
//! read at compile time (a `&'static` [`Template`]), and copies of its
//! arguments, formatted at once by the worker that rebuilds the record from
//! its lane's slot (the usual way), or when the message is first read, on
//! whichever thread reads it (a record that travelled shared: usually its
//! worker, or the caller's thread for a predicate, a redaction rewrite or
//! the journal). logbus's own macros
//! (`logbus::info!` ...) make such records.
//!
//! This file is the storage (kept across a record's reuse, formatted once
//! by whichever reader comes first, or by the record's maker into the
//! record's own message); `deferred/format.rs` is the format language,
//! read at compile time to decide and at run time to format.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Mutex, OnceLock, PoisonError};

mod format;
mod size;
mod write;

pub use format::{parse, pieces, Piece, Plan, Template};

/// One argument of a deferred message: an owned copy of a value of one of
/// a closed set of `Copy` types, or a string literal. Macro plumbing.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg {
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    U128(u128),
    Usize(usize),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    I128(i128),
    Isize(isize),
    F32(f32),
    F64(f64),
    Bool(bool),
    Char(char),
    /// A string literal (the macro saw the token; a `&'static str` cannot
    /// be told from a borrowed one by its type).
    Str(&'static str),
}

/// What a box made for a first deferred message holds until it gets one.
static EMPTY: Template = Template::new("", &[], 0);

/// Largest buffer a reused record keeps (as for its message).
const MAX_KEPT_CAPACITY: usize = 4096;

/// The deferred message of a [`Record`](super::Record), if it has one:
/// boxed, so a record that never carries one pays a pointer; the box and
/// its buffers are kept across reuse, so the steady state allocates
/// nothing, neither on the caller nor on the worker that formats.
#[derive(Default)]
pub(crate) struct Deferred(Option<Box<Inner>>);

struct Inner {
    /// Whether the record's message is this one.
    active: bool,
    /// Whether it was formatted at once into the record's own message
    /// ([`Deferred::set_formatted`]): `text` then stays empty and readers
    /// read the record's message.
    in_message: bool,
    template: &'static Template,
    args: Vec<Arg>,
    /// The message, formatted by its first reader; a record shared (`Arc`)
    /// by several subscriptions' workers is formatted by exactly one. (What
    /// the broker copies for each subscription instead is a record per
    /// worker, each formatted once.)
    text: OnceLock<Cow<'static, str>>,
    /// The buffer the first reader formats into, taken back from `text`
    /// when the record is reused. A mutex because readers share the
    /// record: the one reader inside `text`'s initialisation takes it, so
    /// the lock is never contended.
    buffer: Mutex<String>,
}

impl Inner {
    /// What the box holds, its buffer holding `buffer` bytes.
    fn held_bytes(&self, buffer: usize, alloc: impl Fn(usize) -> usize) -> usize {
        let text = match self.text.get() {
            Some(Cow::Owned(text)) => alloc(text.capacity()),
            _ => 0,
        };
        alloc(std::mem::size_of::<Inner>())
            + alloc(self.args.capacity() * std::mem::size_of::<Arg>())
            + text
            + alloc(buffer)
    }

    fn format(&self) -> Cow<'static, str> {
        let mut text =
            std::mem::take(&mut *self.buffer.lock().unwrap_or_else(PoisonError::into_inner));
        text.clear();
        // A new record's buffer: skip the first growth steps.
        text.reserve(self.template.format().len() + 16 * self.args.len());
        format::render(self.template, &self.args, &mut text);
        Cow::Owned(text)
    }

    /// Back to inactive, keeping the buffers.
    fn reset(&mut self) {
        self.active = false;
        self.in_message = false;
        self.args.clear();
        if let Some(Cow::Owned(text)) = self.text.take() {
            let buffer = self
                .buffer
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner);
            if text.capacity() <= MAX_KEPT_CAPACITY && text.capacity() > buffer.capacity() {
                *buffer = text;
            }
        }
    }
}

impl Deferred {
    /// The message, formatted now if no reader did before; `None` if the
    /// record's message is not deferred, or was formatted into the
    /// record's own message ([`set_formatted`](Deferred::set_formatted)).
    #[inline]
    pub(crate) fn text(&self) -> Option<&Cow<'static, str>> {
        match &self.0 {
            Some(inner) if inner.active && !inner.in_message => {
                Some(inner.text.get_or_init(|| inner.format()))
            }
            _ => None,
        }
    }

    pub(crate) fn is_active(&self) -> bool {
        self.0.as_ref().is_some_and(|inner| inner.active)
    }

    pub(crate) fn is_formatted(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|inner| inner.active && (inner.in_message || inner.text.get().is_some()))
    }

    /// Makes `template` with `args` the message (not formatted). A buffer
    /// to format into that has no capacity (a new box, or one whose text a
    /// retained record took) takes `spare`'s, the record's buffer for a
    /// message formatted by the caller, which is then empty.
    pub(crate) fn set(&mut self, template: &'static Template, args: &[Arg], spare: &mut String) {
        let inner = self.activate(template, args);
        let buffer = inner
            .buffer
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if buffer.capacity() == 0 {
            std::mem::swap(buffer, spare);
        }
    }

    /// Makes `template` with `args` the message, formatted at once into
    /// `message` (emptied before), the record's own: for a record its maker
    /// alone holds (a worker rebuilding a record it took from a lane, which
    /// its appender reads next). It then needs neither the formatted-once
    /// cell nor the buffer's lock, which a first read pays (about 100
    /// instructions a record), nor a buffer of its own. The message is
    /// still deferred, formatted: its size, what byte budgets count, is
    /// still its arguments' longest.
    pub(crate) fn set_formatted(
        &mut self,
        template: &'static Template,
        args: &[Arg],
        message: &mut String,
    ) {
        let inner = self.activate(template, args);
        inner.in_message = true;
        message.clear();
        message.reserve(template.format().len() + 16 * args.len());
        format::render(template, args, message);
    }

    /// The box, made the first time, holding `template` and copies of
    /// `args`, active and not formatted.
    fn activate(&mut self, template: &'static Template, args: &[Arg]) -> &mut Inner {
        let inner = self.0.get_or_insert_with(|| {
            Box::new(Inner {
                active: false,
                in_message: false,
                template: &EMPTY,
                args: Vec::new(),
                text: OnceLock::new(),
                buffer: Mutex::new(String::new()),
            })
        });
        // A recycled record was reset already (`clear`).
        if inner.active {
            inner.reset();
        }
        inner.active = true;
        inner.template = template;
        inner.args.extend_from_slice(args);
        inner
    }

    /// No deferred message any more; the buffers stay for the next one.
    #[inline]
    pub(crate) fn clear(&mut self) {
        if let Some(inner) = &mut self.0 {
            if inner.active {
                inner.reset();
            }
            if inner.args.capacity() > 64 {
                inner.args = Vec::new();
            }
        }
    }

    /// The formatted message as a `String` of its own (formatted now if no
    /// reader did, in the buffer `set` gave it; `None` if it was formatted
    /// into the record's message, `set_formatted`), leaving the deferred
    /// message inactive: the box and the arguments' slots stay for the
    /// next one, so a record the journal keeps and then lets go of is
    /// reused without allocating. Nothing in it changes while the record
    /// is retained (an inactive message is never formatted), so what
    /// `held_bytes` counts stays the same.
    pub(crate) fn take_formatted(&mut self) -> Option<String> {
        let inner = self.0.as_mut().filter(|inner| inner.active)?;
        if inner.in_message {
            inner.reset();
            return None;
        }
        let text = match inner.text.take() {
            Some(text) => text,
            None => inner.format(),
        };
        inner.reset();
        Some(text.into_owned())
    }

    /// A size that does not change when the message is formatted (byte
    /// budgets take and give back the same amount) and is never less than
    /// the formatted message's length (a reader, another subscription's
    /// worker or a predicate, may format it while the record is queued):
    /// the longest the message of these arguments can be (`size.rs`).
    pub(crate) fn approx_len(&self) -> Option<usize> {
        let inner = self.0.as_ref().filter(|inner| inner.active)?;
        Some(inner.template.longest(&inner.args))
    }

    /// The heap bytes it holds: the box, the arguments' slots and the
    /// text buffers, each by capacity, through `alloc` (the allocator's
    /// rounding, as `held_bytes` counts).
    pub(crate) fn held_bytes(&self, alloc: impl Fn(usize) -> usize) -> usize {
        let Some(inner) = &self.0 else { return 0 };
        // A poisoned lock still holds its buffer (`format` and `reset` use
        // it all the same): it counts.
        let buffer = inner
            .buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .capacity();
        inner.held_bytes(buffer, alloc)
    }

    /// Whether it holds nothing at all: the record never carried a
    /// deferred message (then [`held_bytes`](Deferred::held_bytes) is 0).
    pub(crate) fn owns_nothing(&self) -> bool {
        self.0.is_none()
    }

    /// [`held_bytes`](Deferred::held_bytes) of a record no one else holds:
    /// the buffer read without its lock.
    pub(crate) fn held_bytes_mut(&mut self, alloc: impl Fn(usize) -> usize) -> usize {
        let Some(inner) = &mut self.0 else { return 0 };
        let buffer = inner
            .buffer
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .capacity();
        inner.held_bytes(buffer, alloc)
    }
}

impl Clone for Deferred {
    fn clone(&self) -> Deferred {
        Deferred(self.0.as_ref().filter(|inner| inner.active).map(|inner| {
            Box::new(Inner {
                active: true,
                in_message: inner.in_message,
                template: inner.template,
                args: inner.args.clone(),
                text: inner.text.clone(),
                buffer: Mutex::new(String::new()),
            })
        }))
    }
}

impl fmt::Debug for Deferred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_deref().filter(|inner| inner.active) {
            None => f.write_str("None"),
            Some(inner) => f
                .debug_struct("Deferred")
                .field("format", &inner.template.format())
                .field("args", &inner.args)
                .field(
                    "formatted",
                    &(inner.in_message || inner.text.get().is_some()),
                )
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static TEMPLATE: Template = Template::new("", &[], 0);

    #[test]
    fn a_poisoned_buffer_is_counted_and_used() {
        let mut deferred = Deferred::default();
        let mut spare = String::with_capacity(100);
        deferred.set(&TEMPLATE, &[], &mut spare);
        let counted = |deferred: &Deferred| deferred.held_bytes(|bytes| bytes);
        let held = counted(&deferred);
        let inner = deferred.0.as_deref().unwrap();
        let _ = std::panic::catch_unwind(|| {
            let _guard = inner.buffer.lock().unwrap();
            panic!("poisons the buffer's lock");
        });
        assert!(inner.buffer.is_poisoned());
        assert_eq!(counted(&deferred), held);
        // Formatting takes it all the same.
        assert!(matches!(deferred.text(), Some(Cow::Owned(text)) if text.capacity() == 100));
        assert_eq!(counted(&deferred), held);
    }
}
