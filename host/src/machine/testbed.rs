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

/// The CPUs this process may use.
pub fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
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
}
