//! CPU placement: the runner, client and server groups of a campaign, read
//! from the plan or derived from the machine's sibling topology, checked
//! against the machine, and applied with sched_setaffinity(2).

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// `[cpus]`: CPU lists such as "0-1" or "8-15,24".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuSpec {
    pub runner: String,
    pub client: String,
    #[serde(default)]
    pub server: Option<String>,
}

/// The CPU groups a campaign uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub runner: Vec<usize>,
    pub client: Vec<usize>,
    pub server: Vec<usize>,
    /// How the groups were chosen: `plan`, or `derived` with a note.
    pub origin: String,
    /// `design = "duet"`: one disjoint CPU group per block position, the
    /// arms' of a block at once. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub duet: Vec<Vec<usize>>,
}

/// Parses a CPU list such as "0-1,4,8-11".
pub fn parse_cpu_list(text: &str) -> anyhow::Result<Vec<usize>> {
    let mut cpus = BTreeSet::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let lo: usize = lo.parse().with_context(|| {
            format!("`{part}` in CPU list `{text}` is not a CPU number or range")
        })?;
        let hi: usize = hi.parse().with_context(|| {
            format!("`{part}` in CPU list `{text}` is not a CPU number or range")
        })?;
        if hi < lo {
            bail!("range `{part}` in CPU list `{text}` runs backwards");
        }
        cpus.extend(lo..=hi);
    }
    if cpus.is_empty() {
        bail!("CPU list `{text}` is empty");
    }
    Ok(cpus.into_iter().collect())
}

/// Formats CPUs as a compact list ("0-3,8").
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        while i + 1 < cpus.len() && cpus[i + 1] == cpus[i] + 1 {
            i += 1;
        }
        parts.push(if cpus[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", cpus[i])
        });
        i += 1;
    }
    parts.join(",")
}

/// The sibling groups of the machine (one per physical core), from
/// /sys/devices/system/cpu/cpu*/topology/thread_siblings_list, restricted to
/// the CPUs this process may use.
pub fn sibling_groups() -> Vec<Vec<usize>> {
    let allowed: BTreeSet<usize> = crate::machine::cpu::machine_cpus().into_iter().collect();
    let mut groups: BTreeSet<Vec<usize>> = BTreeSet::new();
    for &cpu in &allowed {
        let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
        let group = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| parse_cpu_list(t.trim()).ok())
            .unwrap_or_else(|| vec![cpu]);
        groups.insert(group.into_iter().filter(|c| allowed.contains(c)).collect());
    }
    groups.into_iter().filter(|g| !g.is_empty()).collect()
}

impl Placement {
    /// The plan's groups checked against the machine, or groups derived from
    /// its topology: runner on the first core, server on the next quarter
    /// (when a local server is needed), client on the rest.
    pub fn resolve(spec: Option<&CpuSpec>, needs_server: bool) -> anyhow::Result<Placement> {
        let available: BTreeSet<usize> = crate::machine::cpu::machine_cpus().into_iter().collect();
        let Some(spec) = spec else {
            return Ok(Self::derive(&sibling_groups(), needs_server));
        };
        let runner = parse_cpu_list(&spec.runner).context("in `cpus.runner`")?;
        let client = parse_cpu_list(&spec.client).context("in `cpus.client`")?;
        let server = match &spec.server {
            Some(s) => parse_cpu_list(s).context("in `cpus.server`")?,
            None => Vec::new(),
        };
        for (name, group) in [
            ("runner", &runner),
            ("client", &client),
            ("server", &server),
        ] {
            let missing: Vec<usize> = group
                .iter()
                .copied()
                .filter(|c| !available.contains(c))
                .collect();
            if !missing.is_empty() {
                bail!(
                    "`cpus.{name}` names CPU {} which this machine does not have or does not let blocklab use (available: {}); pick CPUs from that list",
                    format_cpu_list(&missing),
                    format_cpu_list(&available.iter().copied().collect::<Vec<_>>())
                );
            }
        }
        for (a, ga, b, gb) in [
            ("runner", &runner, "client", &client),
            ("runner", &runner, "server", &server),
            ("client", &client, "server", &server),
        ] {
            let overlap: Vec<usize> = ga.iter().copied().filter(|c| gb.contains(c)).collect();
            if !overlap.is_empty() {
                bail!(
                    "`cpus.{a}` and `cpus.{b}` share CPU {}; groups must not overlap",
                    format_cpu_list(&overlap)
                );
            }
        }
        Ok(Placement {
            runner,
            client,
            server,
            origin: "plan".into(),
            duet: Vec::new(),
        })
    }

    /// Gives each of a duet's `arms` a CPU group of its own and of equal
    /// size: from `cpus.client` in the plan's order, or, `derived`, whole
    /// cores of the client group and then of the runner's (the supervisor
    /// only waits while a duet runs), never the server's.
    pub fn split_duet(mut self, arms: usize, derived: bool) -> anyhow::Result<Placement> {
        let units: Vec<Vec<usize>> = if derived {
            let cores = sibling_groups();
            let of = |group: &[usize]| -> Vec<Vec<usize>> {
                cores
                    .iter()
                    .filter(|core| core.iter().all(|c| group.contains(c)))
                    .cloned()
                    .collect()
            };
            let mut units = of(&self.client);
            if units.len() < arms {
                let runner: Vec<Vec<usize>> = of(&self.runner)
                    .into_iter()
                    .filter(|core| !units.contains(core))
                    .collect();
                units.extend(runner);
            }
            units
        } else {
            self.client.iter().map(|&c| vec![c]).collect()
        };
        let per_arm = units.len() / arms.max(1);
        if per_arm == 0 {
            let have = if derived {
                format!("this machine has {} core(s) free for them", units.len())
            } else {
                format!("`cpus.client` lists {} CPU(s)", units.len())
            };
            bail!(
                "`design = \"duet\"` runs each of the plan's {arms} arms on CPUs of its own, but {have}; use `design = \"sequential\"`, fewer arms, or more CPUs"
            );
        }
        let groups: Vec<Vec<usize>> = units
            .chunks(per_arm)
            .take(arms)
            .map(|chunk| chunk.iter().flatten().copied().collect())
            .collect();
        if let Some((i, shared)) = groups.iter().enumerate().find_map(|(i, g)| {
            let shared: Vec<usize> = g
                .iter()
                .copied()
                .filter(|c| self.server.contains(c))
                .collect();
            (!shared.is_empty()).then_some((i, shared))
        }) {
            bail!(
                "`design = \"duet\"` would put the local server on CPU {} beside the arm of block position {}, so one arm would share its CPUs with the server and the other not; give the server CPUs of its own (`cpus.server`), use a remote target, or use `design = \"sequential\"`",
                format_cpu_list(&shared),
                i + 1
            );
        }
        if derived && groups.iter().flatten().any(|c| self.runner.contains(c)) {
            self.origin
                .push_str("; duet: one arm's group shares the runner's core");
        }
        self.duet = groups;
        Ok(self)
    }

    fn derive(groups: &[Vec<usize>], needs_server: bool) -> Placement {
        let flat = |gs: &[Vec<usize>]| gs.iter().flatten().copied().collect::<Vec<_>>();
        match groups.len() {
            0 | 1 => {
                let all = flat(groups);
                Placement {
                    runner: all.clone(),
                    client: all.clone(),
                    server: if needs_server { all } else { Vec::new() },
                    origin:
                        "derived: one core, so runner, client and server share it (not isolated)"
                            .into(),
                    duet: Vec::new(),
                }
            }
            2 => Placement {
                runner: groups[0].clone(),
                client: groups[1].clone(),
                server: if needs_server {
                    groups[0].clone()
                } else {
                    Vec::new()
                },
                origin: if needs_server {
                    "derived: two cores, so the server shares the runner's core".into()
                } else {
                    "derived: runner on the first core, client on the second".into()
                },
                duet: Vec::new(),
            },
            n => {
                let server_cores = if needs_server { (n / 4).max(1) } else { 0 };
                Placement {
                    runner: groups[0].clone(),
                    server: flat(&groups[1..1 + server_cores]),
                    client: flat(&groups[1 + server_cores..]),
                    origin: "derived from the sibling topology".into(),
                    duet: Vec::new(),
                }
            }
        }
    }
}

/// Restricts the calling thread (and what it spawns) to `cpus`.
pub fn pin_current(cpus: &[usize]) -> std::io::Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    // Remember the machine before the first pin narrows this thread.
    let _ = crate::machine::cpu::machine_cpus();
    // SAFETY: cpu_set_t is plain data, CPU_SET indexes stay below
    // CPU_SETSIZE, and pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            if cpu < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(cpu, &mut set);
            }
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Tells a child spawned by [`spawn_pinned`] which process it must die
/// with ([`die_with_parent`]).
const PARENT_ENV: &str = "BLOCKLAB_PARENT_PID";

/// Spawns `command` on `cpus` without forking this process: the calling
/// thread holds `cpus` for the moment of the spawn, whose child inherits
/// them, and then gets its own CPUs back. A fork of the supervisor copies
/// its page tables, about 0.4 ms of every run's fixed cost
/// (docs/benchmarks.md); without a closure between fork and exec the
/// standard library spawns with `posix_spawn`, which does not. The child
/// must be a blocklab that calls [`die_with_parent`] first, since nothing
/// runs in it before exec to tie it to this process.
pub fn spawn_pinned(
    command: &mut std::process::Command,
    cpus: &[usize],
) -> std::io::Result<std::process::Child> {
    let own = crate::machine::cpu::affinity();
    command.env(PARENT_ENV, std::process::id().to_string());
    pin_current(cpus)?;
    let child = command.spawn();
    let restored = pin_current(&own);
    let mut child = child?;
    if let Err(e) = restored {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    Ok(child)
}

/// The child's side of [`spawn_pinned`]: dies with the process that
/// spawned it, as [`pin_child`]'s children do, and refuses to start when
/// that process is gone already. Without the variable (a worker started
/// by hand) there is nothing to die with.
pub fn die_with_parent() -> anyhow::Result<()> {
    let Some(parent) = std::env::var_os(PARENT_ENV) else {
        return Ok(());
    };
    let parent: libc::pid_t = parent
        .to_str()
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("`{PARENT_ENV}` is not a process id"))?;
    // SAFETY: prctl with integer arguments and getppid take no pointers.
    let alive = unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        libc::getppid() == parent
    };
    anyhow::ensure!(
        alive,
        "the blocklab that started this worker (pid {parent}) is gone, so it does not run"
    );
    Ok(())
}

/// Makes `command`'s child pin itself to `cpus` before it executes
/// anything, and die with this process (a worker or a local server must not
/// outlive a killed supervisor).
pub fn pin_child(command: &mut std::process::Command, cpus: &[usize]) {
    use std::os::unix::process::CommandExt;
    let cpus = cpus.to_vec();
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure only calls prctl, getppid and sched_setaffinity,
    // all async-signal-safe, between fork and exec.
    unsafe {
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // A parent killed between the fork and the prctl sends no
            // signal: the child has been reparented already, so it must not
            // go on to run beside a resumed campaign. (A raw errno: nothing
            // may allocate between fork and exec.)
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            pin_current(&cpus)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spawn without a fork: the child runs on the CPUs given, the
    /// caller stays on its own, and the child learns whom to die with.
    #[test]
    fn a_spawned_child_runs_on_its_cpus_while_the_caller_keeps_its_own() {
        let own = crate::machine::cpu::affinity();
        let cpu = *own.last().unwrap();
        let mut command = std::process::Command::new("sh");
        command
            .args([
                "-c",
                "grep Cpus_allowed_list /proc/self/status; echo $BLOCKLAB_PARENT_PID",
            ])
            .stdout(std::process::Stdio::piped());
        let out = spawn_pinned(&mut command, &[cpu])
            .unwrap()
            .wait_with_output()
            .unwrap();
        let out = String::from_utf8(out.stdout).unwrap();
        assert!(out.contains(&format!("\t{cpu}\n")), "{out}");
        assert!(
            out.ends_with(&format!("\n{}\n", std::process::id())),
            "{out}"
        );
        assert_eq!(crate::machine::cpu::affinity(), own);
    }

    #[test]
    fn cpu_lists_parse_and_format() {
        assert_eq!(
            parse_cpu_list("0-1,4, 8-10").unwrap(),
            vec![0, 1, 4, 8, 9, 10]
        );
        assert_eq!(format_cpu_list(&[0, 1, 4, 8, 9, 10]), "0-1,4,8-10");
        assert!(
            parse_cpu_list("3-1")
                .unwrap_err()
                .to_string()
                .contains("backwards")
        );
        assert!(parse_cpu_list("a").is_err());
    }

    #[test]
    fn seed_000_layout_is_derived_on_sixteen_threads() {
        let groups: Vec<Vec<usize>> = (0..8).map(|c| vec![2 * c, 2 * c + 1]).collect();
        let p = Placement::derive(&groups, true);
        assert_eq!(p.runner, vec![0, 1]);
        assert_eq!(p.server, vec![2, 3, 4, 5]);
        assert_eq!(p.client, (6..16).collect::<Vec<_>>());
    }

    #[test]
    fn plan_groups_that_do_not_exist_or_overlap_are_refused() {
        let spec = CpuSpec {
            runner: "0".into(),
            client: "4096".into(),
            server: None,
        };
        let err = Placement::resolve(Some(&spec), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`cpus.client` names CPU 4096"), "{err}");
        let cpu = crate::machine::cpu::affinity()[0];
        let spec = CpuSpec {
            runner: cpu.to_string(),
            client: cpu.to_string(),
            server: None,
        };
        let err = Placement::resolve(Some(&spec), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("share CPU"), "{err}");
    }

    fn listed(client: &[usize], server: &[usize]) -> Placement {
        Placement {
            runner: vec![0],
            client: client.to_vec(),
            server: server.to_vec(),
            origin: "plan".into(),
            duet: Vec::new(),
        }
    }

    #[test]
    fn a_duet_gives_each_arm_an_equal_group_of_the_listed_client_cpus() {
        let p = listed(&[2, 3, 4, 5, 6], &[1]).split_duet(2, false).unwrap();
        // Five CPUs for two arms: two each, the fifth left idle.
        assert_eq!(p.duet, [vec![2, 3], vec![4, 5]]);
    }

    #[test]
    fn a_duet_with_fewer_cpus_than_arms_is_refused_saying_so() {
        let err = listed(&[1], &[])
            .split_duet(2, false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("2 arms") && err.contains("`cpus.client` lists 1 CPU(s)"),
            "{err}"
        );
        assert!(err.contains("design = \"sequential\""), "{err}");
    }

    #[test]
    fn a_duet_group_that_would_share_the_local_servers_cpus_is_refused() {
        let err = listed(&[1, 2], &[2])
            .split_duet(2, false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("local server on CPU 2"), "{err}");
    }
}
