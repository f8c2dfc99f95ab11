//! Stopping a campaign from outside: SIGINT, SIGTERM and SIGHUP become a
//! flag the supervisor polls, so it can kill the run in flight (which is not
//! stored, as after a crash), leave every finished run stored, and tell the
//! user how to resume instead of dying wherever the signal landed.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

/// The signals [`install`] turns into a stop request.
pub const SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A stop request: the number of the signal that asked, once one did.
/// Cheap to clone; the default never fires unless [`Interrupt::raise`]d.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Arc<AtomicI32>);

impl Interrupt {
    /// The signal that asked to stop, if one did.
    pub fn signal(&self) -> Option<i32> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            n => Some(n),
        }
    }

    /// Asks to stop as if `signal` had arrived.
    pub fn raise(&self, signal: i32) {
        self.0.store(signal, Ordering::Relaxed);
    }
}

/// The flag the handler sets; a handler can only reach statics.
static INSTALLED: OnceLock<Interrupt> = OnceLock::new();

extern "C" fn on_signal(signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    if let Some(flag) = INSTALLED.get() {
        flag.raise(signal);
    }
}

/// Routes SIGINT, SIGTERM and SIGHUP of this process to the returned flag.
/// Each handler fires once (`SA_RESETHAND`): a second Ctrl-C while the
/// supervisor is still stopping kills the process the usual way.
pub fn install() -> std::io::Result<Interrupt> {
    let flag = INSTALLED.get_or_init(Interrupt::default).clone();
    for signal in SIGNALS {
        // SAFETY: `on_signal` is async-signal-safe (one atomic store) and the
        // sigaction struct is fully initialised before the call.
        let installed = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if installed != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(flag)
}

/// The signal's name for messages (`SIGINT`), or its number.
pub fn name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".to_owned(),
        libc::SIGTERM => "SIGTERM".to_owned(),
        libc::SIGHUP => "SIGHUP".to_owned(),
        n => format!("signal {n}"),
    }
}
