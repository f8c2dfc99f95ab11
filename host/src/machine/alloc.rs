//! A counting global allocator: the host heap's bytes and allocations, read
//! at the edges of the measured window.
//!
//! What it sees: every allocation through Rust's global allocator in the
//! blocklab process, on every thread: the host's own work per transaction,
//! wasmtime's host-side lifting and lowering, and the target's (the embedded
//! engine's) allocations. What it does not see: a plugin's linear memory
//! (reported separately as its high-water mark), and native libraries that
//! call malloc directly (libfdb_c).
//!
//! The binary installs it with `#[global_allocator]`; without that (e.g. in
//! library unit tests) the counters stay at zero.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

static BYTES: AtomicU64 = AtomicU64::new(0);
static COUNT: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting.
pub struct CountingAlloc;

// SAFETY: every method forwards to `System` with the caller's arguments; the
// counters are only statistics.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A growing realloc counts as one allocation of the new size: that is
        // what a fresh allocation plus copy would have cost.
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Bytes and allocations so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllocCount {
    pub bytes: u64,
    pub allocs: u64,
}

impl AllocCount {
    pub fn now() -> Self {
        AllocCount {
            bytes: BYTES.load(Ordering::Relaxed),
            allocs: COUNT.load(Ordering::Relaxed),
        }
    }

    pub fn since(self, start: AllocCount) -> AllocCount {
        AllocCount {
            bytes: self.bytes - start.bytes,
            allocs: self.allocs - start.allocs,
        }
    }
}
