//! The identity of this machine as a testbed: what a campaign's results are
//! comparable only within (docs/reports.md, "Series"). Read from the
//! environment, never from the plan, so the same plan on two machines gives
//! two series.

use sha2::{Digest, Sha256};

/// The CPU model `/proc/cpuinfo` names, or `unknown`.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The kernel's hostname, or empty when it cannot be read.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// The CPUs the machine has online: the kernel's list in
/// /sys/devices/system/cpu/online, else `sysconf(_SC_NPROCESSORS_ONLN)`.
/// Not the CPUs this thread may use (`available_parallelism`): the
/// daemon pins itself to the runner CPUs, and the CLI and the daemon on
/// one machine must name one testbed (issue 31, point 5).
pub fn online_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|text| count_cpu_list(&text))
        .or_else(sysconf_online)
        .unwrap_or(1)
}

/// How many CPUs a kernel CPU list (`0-3,8`) names; `None` for none.
fn count_cpu_list(text: &str) -> Option<usize> {
    crate::machine::placement::parse_cpu_list(text.trim())
        .ok()
        .map(|cpus| cpus.len())
        .filter(|&n| n > 0)
}

fn sysconf_online() -> Option<usize> {
    // SAFETY: sysconf reads a configuration value and has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// This machine's default testbed name: `HOST-Ncpu-FINGERPRINT`, the
/// hostname, the CPU count and 8 hex digits of the sha256 of the CPU
/// model. A resized VM or a new CPU under the same hostname is a new
/// testbed, as its figures are not comparable with the old ones.
pub fn default_name() -> String {
    named(&hostname(), online_cpus(), &cpu_model())
}

fn named(host: &str, cpus: usize, model: &str) -> String {
    let digest = Sha256::digest(model.as_bytes());
    let host = if host.is_empty() { "unknown" } else { host };
    format!("{host}-{cpus}cpu-{}", &hex::encode(digest)[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_count_and_model_tell_testbeds_of_one_hostname_apart() {
        let a = named("bench1", 2, "Intel Xeon");
        assert!(a.starts_with("bench1-2cpu-"), "{a}");
        assert_ne!(a, named("bench1", 4, "Intel Xeon"));
        assert_ne!(a, named("bench1", 2, "AMD EPYC"));
        assert_eq!(a, named("bench1", 2, "Intel Xeon"));
    }

    #[test]
    fn cpu_lists_count_their_cpus() {
        assert_eq!(count_cpu_list("0-3,8\n"), Some(5));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list(""), None);
    }

    /// The daemon pins itself to the runner CPUs before it seals a plan;
    /// its testbed must still be the machine's, the CLI's.
    #[test]
    fn a_thread_pinned_to_one_cpu_names_the_machines_testbed() {
        let unpinned = (online_cpus(), default_name());
        let cpus = crate::machine::cpu::affinity();
        assert!(unpinned.0 >= cpus.len(), "{unpinned:?} {cpus:?}");
        let first = cpus[0];
        let pinned = std::thread::spawn(move || {
            crate::machine::placement::pin_current(&[first]).expect("pin to one CPU");
            assert_eq!(crate::machine::cpu::affinity(), vec![first]);
            (online_cpus(), default_name())
        })
        .join()
        .expect("the pinned thread");
        assert_eq!(pinned, unpinned);
    }
}
