//! The machine a campaign runs on: CPU placement (groups, affinity,
//! pinning), per-thread CPU time and the counting allocator. The bottom
//! layer: it imports no other module of the crate, so every stage can use it.

pub mod alloc;
pub mod cpu;
pub mod placement;
