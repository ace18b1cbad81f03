//! A global allocator that counts the allocations (and reallocations) a
//! thread makes while it asks for them, for `tests/allocations.rs` and
//! `benches/peers` (both include this file by path: it is not a module of
//! `common`, whose other users may forbid `unsafe`). The includer installs it: `#[global_allocator] static A:
//! Counting = Counting;`. Counting allocates nothing: the thread-locals are
//! const-initialised and without destructors (with native thread-locals,
//! as on Linux; where they fall back to OS keys the first access
//! allocates).

#![allow(dead_code, unreachable_pub)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting what a thread allocates inside
/// [`count`].
pub struct Counting;

thread_local! {
    static COUNTED: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn counted() {
    if COUNTED.try_with(Cell::get).unwrap_or(false) {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments,
// so `System`'s guarantees are this allocator's; counting allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        counted();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with `layout` (every method
        // above allocates there).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted();
        // SAFETY: as for `dealloc`, and the caller upholds `realloc`'s
        // contract for `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `f` and returns what it returned and how many allocations the
/// calling thread made in it (other threads' are not counted).
#[inline]
pub fn count<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = ALLOCATIONS.get();
    COUNTED.set(true);
    let result = f();
    COUNTED.set(false);
    (result, ALLOCATIONS.get() - before)
}
