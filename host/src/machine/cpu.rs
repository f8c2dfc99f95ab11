//! Process CPU and scheduling counters from getrusage(2), a thread's from
//! its schedstat, and the CPUs the process may run on from
//! sched_getaffinity(2).

use std::fs::File;
use std::os::unix::fs::FileExt;

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

/// A thread's scheduler counters (`/proc/thread-self/schedstat`, fields
/// 1–3), nanoseconds and switches since it started: what the batches of a
/// run and the spinning gate read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sched {
    pub on_cpu_ns: u64,
    pub runqueue_ns: u64,
    pub switches: u64,
}

/// The calling thread's `/proc/thread-self/schedstat`, opened once: the
/// open resolves `thread-self`, so each thread opens its own.
pub struct SchedProbe {
    file: File,
}

impl SchedProbe {
    pub fn open() -> Option<SchedProbe> {
        File::open("/proc/thread-self/schedstat")
            .ok()
            .map(|file| SchedProbe { file })
    }

    pub fn read(&self) -> Option<Sched> {
        let mut buf = [0u8; 96];
        let n = self.file.read_at(&mut buf, 0).ok()?;
        parse_schedstat(std::str::from_utf8(&buf[..n]).ok()?)
    }
}

/// Fields 1–3 of schedstat: time on the CPU, time waiting on a run queue
/// (both ns), timeslices run.
fn parse_schedstat(text: &str) -> Option<Sched> {
    let mut fields = text.split_ascii_whitespace().map(str::parse::<u64>);
    Some(Sched {
        on_cpu_ns: fields.next()?.ok()?,
        runqueue_ns: fields.next()?.ok()?,
        switches: fields.next()?.ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn schedstat_is_read_for_the_calling_thread() {
        assert_eq!(
            parse_schedstat("1263296 52 1\n"),
            Some(Sched {
                on_cpu_ns: 1_263_296,
                runqueue_ns: 52,
                switches: 1
            })
        );
        assert_eq!(parse_schedstat("12 x"), None);
        // Where the kernel has it, busy work shows as time on the CPU.
        if let Some(probe) = SchedProbe::open() {
            let a = probe.read().expect("schedstat parses");
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(5) {
                std::hint::spin_loop();
            }
            let b = probe.read().expect("schedstat parses");
            assert!(b.on_cpu_ns > a.on_cpu_ns);
        }
    }
}
