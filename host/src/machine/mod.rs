//! The machine a campaign runs on: CPU placement (groups, affinity,
//! pinning, children spawned on their CPUs), per-thread CPU time, the
//! counting allocator, its identity as a testbed (`testbed`), the network
//! namespace and shaped link a target can be placed behind (`netns`), the
//! kernel's performance counters (`pmu`), Valgrind's client requests
//! (`valgrind`) and its connections under a cap on how many are open, for
//! the servers blocklab runs (`accept`). The bottom layer: it imports no
//! other module of the crate, so every stage can use it.

pub mod accept;
pub mod alloc;
pub mod cpu;
pub mod netns;
pub mod placement;
pub mod pmu;
pub mod testbed;
pub mod valgrind;
