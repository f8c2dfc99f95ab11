//! The guest of the boundary benchmark (host/benches/boundary.rs): each
//! export crosses the component boundary in one known way and does nothing
//! else, so the host can time the crossings alone.

wit_bindgen::generate!({
    world: "probe",
    path: "wit",
});

use exports::probe::bench::guest::Guest;
use probe::bench::host;

/// Key and value of the ryw transaction: the sizes of seed 000's `ryw`.
const KEY: &[u8] = b"probe/ryw/key-0000";
const VALUE: [u8; 100] = [0x5a; 100];

struct Probe;

impl Guest for Probe {
    fn empty() {}

    fn one_call() {
        host::noop();
    }

    fn ryw() {
        host::set(KEY, &VALUE);
        let read = host::get(KEY);
        // A trap, not a panic message: the host bench reports it as a failure.
        if read != VALUE {
            core::arch::wasm32::unreachable();
        }
    }

    fn noop_loop(n: u64) {
        for _ in 0..n {
            host::noop();
        }
    }
}

export!(Probe);
