//! Process CPU and scheduling counters from getrusage(2), and the CPUs the
//! process may run on from sched_getaffinity(2).

/// User and system CPU time plus context switches of this process (all threads).
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub user_us: u64,
    pub system_us: u64,
    pub involuntary_switches: u64,
    pub voluntary_switches: u64,
}

impl Usage {
    pub fn now() -> Usage {
        // SAFETY: getrusage fills the zeroed struct we own.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: a valid pointer to a rusage; RUSAGE_SELF cannot fail.
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
        Usage {
            user_us: us(ru.ru_utime),
            system_us: us(ru.ru_stime),
            involuntary_switches: ru.ru_nivcsw as u64,
            voluntary_switches: ru.ru_nvcsw as u64,
        }
    }

    /// User plus system microseconds.
    pub fn cpu_us(&self) -> u64 {
        self.user_us + self.system_us
    }

    pub fn since(self, start: Usage) -> Usage {
        Usage {
            user_us: self.user_us.saturating_sub(start.user_us),
            system_us: self.system_us.saturating_sub(start.system_us),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(start.involuntary_switches),
            voluntary_switches: self
                .voluntary_switches
                .saturating_sub(start.voluntary_switches),
        }
    }
}

/// The CPUs this process was started on, read before blocklab pinned any
/// of its threads ([`crate::machine::placement::pin_current`] reads it
/// first): what placement divides. Reading the current affinity instead
/// would, in a process that runs several campaigns (`blocklab
/// calibrate`), see only the runner CPUs the first campaign pinned it to.
pub fn machine_cpus() -> Vec<usize> {
    static STARTED_WITH: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    STARTED_WITH.get_or_init(affinity).clone()
}

/// The CPUs this thread may run on now, as sched_getaffinity reports them.
pub fn affinity() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is this thread; the size matches the set we pass.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: the index is below CPU_SETSIZE.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}
