//! A ring's memory (`slot.rs`, `Ring`): zeroed slots, mapped straight from
//! the kernel for a large ring and unmapped when the ring goes.
//!
//! A lane's ring grows with its backlog (from 1,024 narrow or 256 wide
//! slots up to the queue's capacity, 8,192 by default: 1 MiB of wide
//! slots) and shrinks back when the lane idles. From the global allocator,
//! the rings that growth and shrinking freed stayed in its free lists:
//! glibc raises its mmap threshold to the largest chunk freed (up to 32
//! MiB), so a freed 1 MiB ring was kept for reuse, and the process's peak
//! RSS counted rings no lane held any more (`benches/README.md`, "Rings
//! mapped from the kernel": a 4-thread run 2-5 MB smaller with rings
//! mapped). A mapped ring is given back whole when it goes, so a lane's
//! memory is what it holds.
//!
//! A ring of up to [`POPULATE_AT_MOST`] is populated (`MAP_POPULATE`): the
//! kernel zeroes its pages when it is made, at once, on the thread that
//! grows the lane (a publisher's: about 0.5 ms for 1 MiB on the machine of
//! the figures). Left to fault in one by one as the lane fills, every 32nd
//! record of a filling wide ring paid a page fault on the caller's thread,
//! which took the 1-thread p99.9 from about 600 ns to about 2,800. A ring
//! is this large only when its lane's backlog needed it (it grows when
//! full), so its pages are about to be written anyway. A larger ring (a
//! capacity above the default) is mapped without populating, as glibc maps
//! its largest chunks: populating 128 MiB would stall one call for some
//! 55 ms.
//!
//! Small rings, other platforms than Linux and Android, and Miri take the
//! global allocator's zeroed memory.

use std::alloc::Layout;
use std::ptr::NonNull;

use super::Zeroed;

/// The smallest ring mapped from the kernel (a narrow ring of 4,096 slots,
/// a wide one of 512): below it the allocator's rounding is small and its
/// reuse cheaper than a system call.
#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
const MAP_AT_LEAST: usize = 64 * 1024;

/// The largest ring populated when it is mapped: the default capacity's
/// wide ring.
#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
const POPULATE_AT_MOST: usize = 1024 * 1024;

/// `len` zeroed slots (at least one), owned.
pub(in crate::queue) struct Slots<T: Zeroed> {
    ptr: NonNull<T>,
    len: usize,
    mapped: bool,
}

// SAFETY: a `Slots<T>` owns its `T`s as a `Box<[T]>` would, so it may move
// to and be shared with other threads exactly when `T` may.
unsafe impl<T: Zeroed + Send> Send for Slots<T> {}
// SAFETY: as above; `&Slots<T>` gives only `&[T]`.
unsafe impl<T: Zeroed + Sync> Sync for Slots<T> {}

impl<T: Zeroed> Slots<T> {
    /// `len` (at least 1) empty slots.
    pub(in crate::queue) fn new(len: usize) -> Slots<T> {
        // What `drop` and the `SAFETY` notes rest on: a slot has a size,
        // and nothing to drop (a `Zeroed` type is atomics only).
        const {
            assert!(std::mem::size_of::<T>() > 0 && !std::mem::needs_drop::<T>());
        }
        let len = len.max(1);
        let layout = Self::layout(len);
        #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
        if layout.size() >= MAP_AT_LEAST {
            if let Some(ptr) = map(layout.size()) {
                return Slots {
                    ptr: ptr.cast(),
                    len,
                    mapped: true,
                };
            }
        }
        // SAFETY: `layout` has a non-zero size (at least one slot of 16 or
        // 128 bytes).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
        let Some(ptr) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        Slots {
            ptr,
            len,
            mapped: false,
        }
    }

    fn layout(len: usize) -> Layout {
        Layout::array::<T>(len)
            .unwrap_or_else(|_| panic!("lane of {len} slots overflows the address space"))
    }
}

impl<T: Zeroed> std::ops::Deref for Slots<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` points to `len` values of `T`, all-zero bytes at
        // first, which are valid (`Zeroed`), owned by `self` and live until
        // its drop; `&self` lends them shared.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zeroed> std::ops::DerefMut for Slots<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`; `&mut self` lends them exclusively.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zeroed> Drop for Slots<T> {
    /// Gives the memory back. The slots need no drop of their own: a
    /// `Zeroed` type is atomics only (a lane frees the records its slots
    /// still point to before, `Lane`'s drop).
    fn drop(&mut self) {
        let layout = Self::layout(self.len);
        #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
        if self.mapped {
            // SAFETY: `ptr` and `layout.size()` are the mapping `map` made
            // for this `Slots`, unmapped only here, once; no reference into
            // it outlives `self`.
            let unmapped = unsafe { libc::munmap(self.ptr.as_ptr().cast(), layout.size()) };
            debug_assert_eq!(unmapped, 0, "munmap of a ring");
            return;
        }
        debug_assert!(!self.mapped);
        // SAFETY: `ptr` came from `alloc_zeroed` with this same `layout`
        // (`new`), and is freed only here, once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
    }
}

/// A new anonymous private mapping of `bytes` (zeroed, page-aligned;
/// populated up to [`POPULATE_AT_MOST`]), or `None` if the kernel refused
/// one (the allocator is asked then).
#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
fn map(bytes: usize) -> Option<NonNull<u8>> {
    let populate = if bytes <= POPULATE_AT_MOST {
        libc::MAP_POPULATE
    } else {
        0
    };
    // SAFETY: an anonymous private mapping at an address the kernel picks:
    // it aliases no memory of the process, and `bytes` is not zero.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | populate,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    NonNull::new(addr.cast())
}

#[cfg(test)]
mod tests {
    use super::super::{Narrow, Slot};
    use super::*;
    use crate::sync::Ordering;

    #[test]
    fn rings_small_and_large_are_zeroed_writable_and_mapped_when_large() {
        // The last: a ring mapped without populating it.
        for len in [1, 255, 4096, 8192, 16_384] {
            let mut narrow = Slots::<Narrow>::new(len);
            let wide = Slots::<Slot>::new(len);
            assert_eq!((narrow.len(), wide.len()), (len, len));
            assert!(narrow.iter().all(|s| s.seq.load(Ordering::Relaxed) == 0));
            assert!(wide.iter().all(|s| s.seq.load(Ordering::Relaxed) == 0));
            wide[len - 1].seq.store(7, Ordering::Relaxed);
            *narrow[len - 1].seq.get_mut() = 9;
            assert_eq!(wide[len - 1].seq.load(Ordering::Relaxed), 7);
            assert_eq!(*narrow[len - 1].seq.get_mut(), 9);
            assert_eq!(wide.as_ptr().align_offset(64), 0, "a slot's alignment");
            #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
            {
                let mapped = |bytes: usize| bytes >= MAP_AT_LEAST;
                assert_eq!(narrow.mapped, mapped(len * 16), "{len} narrow");
                assert_eq!(wide.mapped, mapped(len * 128), "{len} wide");
            }
        }
    }
}
