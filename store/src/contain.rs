//! sled's panics, contained: sled 0.34.7 panics on some damaged logs where
//! it should return `Corruption`, and a tool made for damaged stores must
//! say so instead of exiting 101.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Whether this thread is inside [`panics`]: its panic is an answer,
    /// not a crash, and is not printed.
    static CONTAINING: Cell<bool> = const { Cell::new(false) };
}

static QUIET_HOOK: Once = Once::new();

/// Runs `f`; a panic in it becomes `Err` with the panic's message. The
/// panic hook in place stays in charge of every other panic (it is wrapped,
/// once, so that only a contained panic goes unprinted).
pub(crate) fn panics<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    QUIET_HOOK.call_once(|| {
        let print = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !CONTAINING.with(Cell::get) {
                print(info);
            }
        }));
    });
    let outer = CONTAINING.with(|c| c.replace(true));
    // sled's state is not shared with the caller: a database whose open
    // panicked is dropped with the unwinding and never used.
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CONTAINING.with(|c| c.set(outer));
    result.map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a panic without a message".to_owned())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_becomes_its_message_and_a_value_passes() {
        assert_eq!(super::panics(|| 7), Ok(7));
        let index = 5;
        let caught = super::panics(|| [1, 2][index % 8]);
        assert_eq!(
            caught,
            Err("index out of bounds: the len is 2 but the index is 5".to_owned())
        );
    }
}
