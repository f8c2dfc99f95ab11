//! Valgrind client requests: the magic instruction sequence of
//! `valgrind.h`, which a program running under Valgrind hands to the tool
//! and which natively is a no-op (four rotations of `rdi` by 128 bits in
//! total and `xchg rbx, rbx`) returning the default.
//!
//! Why client requests, not `--toggle-collect=FUNCTION`: callgrind's
//! collection state is per thread, so toggling on a marker function counts
//! only the thread that called it, while a run's window spans every worker
//! thread and the client's runtime threads (tokio, the embedded engine).
//! `CALLGRIND_START_INSTRUMENTATION` / `STOP_INSTRUMENTATION` switch the
//! whole process (`DUMP_STATS` before the stop writes the window's counts),
//! and with `--instr-atstart=no` everything outside the
//! window (start-up, plugin load, fixture, warmup, teardown) runs
//! uninstrumented, which is also several times faster. The same two
//! requests work from any language that can execute the sequence: the Go
//! and Python peers issue them at their `measured` and `measured-end`
//! marks (docs/process-arms.md, "Counted runs").
//!
//! Hand-written rather than a crate: the one crate with these requests
//! (`crabgrind`) builds them from Valgrind's headers with bindgen, which
//! needs libclang on every build machine, for six lines of assembly.

/// `VG_USERREQ_TOOL_BASE('C','T')`: callgrind's requests (callgrind.h).
const CALLGRIND_BASE: u64 = (b'C' as u64) << 24 | (b'T' as u64) << 16;
/// `VG_USERREQ__DUMP_STATS`.
const DUMP_STATS: u64 = CALLGRIND_BASE;
/// `VG_USERREQ__START_INSTRUMENTATION`.
const START_INSTRUMENTATION: u64 = CALLGRIND_BASE + 4;
/// `VG_USERREQ__STOP_INSTRUMENTATION`.
const STOP_INSTRUMENTATION: u64 = CALLGRIND_BASE + 5;
/// `VG_USERREQ__RUNNING_ON_VALGRIND` (valgrind.h).
const RUNNING_ON_VALGRIND: u64 = 0x1001;

/// Issues client request `request` with no arguments; returns Valgrind's
/// answer, or `default` when not running under Valgrind.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn client_request(default: u64, request: u64) -> u64 {
    let args: [u64; 6] = [request, 0, 0, 0, 0, 0];
    let result: u64;
    // SAFETY: the sequence only rotates rdi back to its value and exchanges
    // rbx with itself; under Valgrind the tool reads the six words at rax
    // and writes its answer to rdx. Nothing else is touched.
    unsafe {
        std::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            in("rax") args.as_ptr(),
            inout("rdx") default => result,
            out("rdi") _,
            options(nostack),
        );
    }
    result
}

/// Other architectures: no requests (counted runs need x86_64 here).
#[cfg(not(target_arch = "x86_64"))]
fn client_request(default: u64, _request: u64) -> u64 {
    default
}

/// How many Valgrind layers this process runs under (0: natively).
pub fn running_on_valgrind() -> u64 {
    client_request(0, RUNNING_ON_VALGRIND)
}

/// Switches callgrind's instrumentation on for the whole process (every
/// thread); a no-op natively and under other tools.
pub fn start_instrumentation() {
    client_request(0, START_INSTRUMENTATION);
}

/// Writes callgrind's counts so far to a numbered dump file
/// (`OUT.1` for the first), then switches instrumentation off for the
/// whole process. The dump, not the file written at exit, holds the
/// window: callgrind 3.19's exit summary after a stop is garbage (it
/// printed 2^64 − 1,094,470 for a window whose dump read 1,094,470).
pub fn dump_and_stop_instrumentation() {
    client_request(0, DUMP_STATS);
    client_request(0, STOP_INSTRUMENTATION);
}

/// Checks that `valgrind` starts here; sealing refuses a callgrind plan
/// on a machine without it.
pub fn require() -> anyhow::Result<()> {
    let out = std::process::Command::new("valgrind")
        .arg("--version")
        .output();
    match out {
        Ok(o) if o.status.success() => Ok(()),
        _ => anyhow::bail!(
            "`measure.counters = \"callgrind\"` runs each client under Valgrind, but `valgrind` does not start here; install Debian's (`apt-get install valgrind`, which `make test` does), or remove `measure.counters`"
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn requests_are_no_ops_natively() {
        // `cargo test` does not run under Valgrind; the counted-run tests
        // (host/tests/all/counters.rs) check the requests under it.
        assert_eq!(super::running_on_valgrind(), 0);
        super::start_instrumentation();
        super::dump_and_stop_instrumentation();
    }
}
