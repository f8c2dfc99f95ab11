//! A real two-node Slurm cluster on this machine for the Slurm executor's
//! tests (docs/fleet.md, "A two-node cluster on one machine"): munged with
//! its own key and socket, one slurmctld and `slurmd -N n1` / `-N n2` on
//! their own ports, everything under one temp dir, stopped by PID on drop.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One cluster at a time: the daemons and the blocks share two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

pub struct SlurmCluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    /// Job ids start here, distinct per cluster, so the test's
    /// `slurmstepd: [ID.` processes are told from any other cluster's.
    first_job: u32,
    munged: Option<Child>,
    slurmctld: Option<Child>,
    slurmds: Vec<(String, Option<Child>)>,
    _lock: MutexGuard<'static, ()>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn found(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl SlurmCluster {
    /// Starts the cluster, or `None` (with the reason printed) when Slurm
    /// or munge is missing or this is not root and `BLOCKLAB_REQUIRE_SLURM`
    /// is unset; with it set, a missing piece fails the test.
    pub fn start() -> Option<SlurmCluster> {
        let missing: Vec<&str> = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo"]
            .into_iter()
            .filter(|p| !found(p))
            .collect();
        // slurmd runs jobs as their submitter: root here.
        let root = std::fs::read_to_string("/proc/self/status")
            .map(|s| {
                s.lines()
                    .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
            })
            .unwrap_or(false);
        let reason = if !missing.is_empty() {
            Some(format!(
                "{} not installed (`make test` installs slurm-wlm and munge)",
                missing.join(", ")
            ))
        } else if !root {
            Some("slurmd runs jobs as root here; run the tests as root".to_owned())
        } else {
            None
        };
        if let Some(reason) = reason {
            if std::env::var_os("BLOCKLAB_REQUIRE_SLURM").is_some() {
                panic!("BLOCKLAB_REQUIRE_SLURM is set but {reason}");
            }
            eprintln!("skipped: {reason}");
            return None;
        }
        let lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::Builder::new()
            .prefix("blocklab-slurm")
            .tempdir()
            .unwrap();
        let d = dir.path();
        for sub in ["munge", "state", "spool/n1", "spool/n2", "log", "shared"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        let key = d.join("munge/munge.key");
        std::fs::write(&key, rand_bytes(1024)).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).unwrap();
        std::fs::set_permissions(d.join("munge"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let socket = d.join("munge/munge.sock");
        let munged = Command::new("munged")
            .args(["-F", "-f"])
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!(
                "--pid-file={}",
                d.join("munge/munged.pid").display()
            ))
            .arg(format!("--log-file={}", d.join("log/munged.log").display()))
            .arg(format!("--seed-file={}", d.join("munge/seed").display()))
            .stdout(Stdio::null())
            .stderr(log(d, "munged.out"))
            .spawn()
            .expect("munged starts");
        let (ctld_port, p1, p2) = (free_port(), free_port(), free_port());
        let first_job = 1000 + u32::from(ctld_port % 50_000) * 10;
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        let host = host.trim().split('.').next().unwrap().to_owned();
        let conf = d.join("slurm.conf");
        let p = |s: &str| d.join(s).display().to_string();
        std::fs::write(
            &conf,
            format!(
                "ClusterName=blocklabtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket},cred_expire=5
StateSaveLocation={state}
SlurmdSpoolDir={spool}/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmdTimeout=3
MessageTimeout=3
SlurmctldTimeout=10
InactiveLimit=0
KillWait=2
MinJobAge=600
FirstJobId={first_job}
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
NodeName=n1 NodeHostname={host} NodeAddr=127.0.0.1 Port={p1} CPUs=2 State=UNKNOWN
NodeName=n2 NodeHostname={host} NodeAddr=127.0.0.1 Port={p2} CPUs=2 State=UNKNOWN
PartitionName=bench Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE
",
                socket = socket.display(),
                state = p("state"),
                spool = p("spool"),
                d = d.display(),
            ),
        )
        .unwrap();
        let mut cluster = SlurmCluster {
            conf,
            first_job,
            munged: Some(munged),
            slurmctld: None,
            slurmds: Vec::new(),
            _lock: lock,
            dir,
        };
        cluster.wait_for_munge();
        cluster.slurmctld = Some(
            cluster
                .command("slurmctld")
                .args(["-D", "-i"])
                .stdout(Stdio::null())
                .stderr(log(cluster.dir.path(), "slurmctld.out"))
                .spawn()
                .expect("slurmctld starts"),
        );
        for node in ["n1", "n2"] {
            cluster.start_node(node);
        }
        cluster.wait_until("both nodes idle", Duration::from_secs(60), |c| {
            c.node_states().iter().filter(|(_, s)| s == "idle").count() == 2
        });
        Some(cluster)
    }

    fn wait_for_munge(&self) {
        let socket = self.dir.path().join("munge/munge.sock");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !socket.exists() {
            assert!(
                Instant::now() < deadline,
                "munged did not create its socket: {}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn start_node(&mut self, node: &str) {
        let child = self
            .command("slurmd")
            .args(["-D", "-N", node])
            .stdout(Stdio::null())
            .stderr(log(self.dir.path(), &format!("slurmd-{node}.out")))
            .spawn()
            .expect("slurmd starts");
        match self.slurmds.iter_mut().find(|(n, _)| n == node) {
            Some((_, c)) => *c = Some(child),
            None => self.slurmds.push((node.to_owned(), Some(child))),
        }
    }

    /// A Slurm client command aimed at this cluster.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// A directory both nodes see (the spool's filesystem).
    pub fn shared_dir(&self) -> PathBuf {
        self.dir.path().join("shared")
    }

    pub fn conf(&self) -> &Path {
        &self.conf
    }

    /// `node → state` as `sinfo` reports it (`idle`, `alloc`, `down*`...).
    pub fn node_states(&self) -> Vec<(String, String)> {
        let out = self
            .command("sinfo")
            .args(["-h", "-N", "-o", "%N %t"])
            .output()
            .expect("sinfo runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let (n, s) = l.trim().split_once(' ')?;
                Some((n.to_owned(), s.to_owned()))
            })
            .collect()
    }

    /// Job ids running on `node`.
    pub fn jobs_on(&self, node: &str) -> Vec<String> {
        let out = self
            .command("squeue")
            .args(["-h", "-t", "running", "-w", node, "-o", "%A"])
            .output()
            .expect("squeue runs");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    /// Polls `ready` until it holds, failing the test with the daemons'
    /// logs after `timeout`.
    pub fn wait_until(&self, what: &str, timeout: Duration, ready: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + timeout;
        while !ready(self) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills node `node` as a power cut would: its slurmd, the slurmstepd
    /// of each job on it and every process of those jobs are stopped at
    /// once (SIGSTOP, so none of them reports anything), then killed.
    pub fn kill_node(&mut self, node: &str) {
        let jobs = self.jobs_on(node);
        let mut pids: Vec<i32> = Vec::new();
        if let Some((_, Some(child))) = self.slurmds.iter().find(|(n, _)| n == node) {
            pids.push(child.id() as i32);
        }
        pids.extend(processes_where(|cmdline, environ| {
            jobs.iter()
                .any(|j| cmdline.starts_with(&format!("slurmstepd: [{j}.")))
                || (environ.contains(&format!("\nSLURMD_NODENAME={node}\n"))
                    && environ.contains(&format!("\nSLURM_CONF={}\n", self.conf.display())))
        }));
        signal_all(&pids, libc::SIGSTOP);
        signal_all(&pids, libc::SIGKILL);
        if let Some((_, c)) = self.slurmds.iter_mut().find(|(n, _)| n == node)
            && let Some(mut child) = c.take()
        {
            let _ = child.wait();
        }
    }

    /// The daemons' logs, for a failure message.
    pub fn logs(&self) -> String {
        let mut text = String::new();
        if let Ok(entries) = std::fs::read_dir(self.dir.path().join("log")) {
            for e in entries.flatten() {
                let body = std::fs::read_to_string(e.path()).unwrap_or_default();
                let lines: Vec<&str> = body.lines().collect();
                let tail = lines[lines.len().saturating_sub(15)..].join("\n");
                text.push_str(&format!("\n--- {} ---\n{tail}", e.path().display()));
            }
        }
        text
    }
}

impl Drop for SlurmCluster {
    fn drop(&mut self) {
        let _ = self.command("scancel").args(["-u", "root"]).status();
        let first = self.first_job;
        let conf = format!("\nSLURM_CONF={}\n", self.conf.display());
        // This cluster's jobs and steps, by job id range and by SLURM_CONF.
        let leftovers = processes_where(|cmdline, environ| {
            cmdline
                .strip_prefix("slurmstepd: [")
                .and_then(|r| r.split('.').next())
                .and_then(|id| id.parse::<u32>().ok())
                .is_some_and(|id| (first..first + 10_000).contains(&id))
                || environ.contains(&conf)
        });
        signal_all(&leftovers, libc::SIGKILL);
        for (_, child) in &mut self.slurmds {
            if let Some(c) = child {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        for child in [&mut self.slurmctld, &mut self.munged]
            .into_iter()
            .flatten()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn signal_all(pids: &[i32], signal: i32) {
    let me = std::process::id() as i32;
    for &pid in pids.iter().filter(|&&p| p != me && p > 1) {
        // SAFETY: kill(2) with a PID this test found for its own cluster.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

/// PIDs whose command line (NULs as spaces) and environment (one
/// `KEY=VALUE` per line) satisfy `pick`.
fn processes_where(pick: impl Fn(&str, &str) -> bool) -> Vec<i32> {
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        let environ = std::fs::read(e.path().join("environ"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', "\n"))
            .unwrap_or_default();
        // Each variable between newlines, so `\nKEY=VALUE\n` matches whole.
        let environ: String = std::iter::once("\n".to_owned())
            .chain(environ.lines().map(|l| format!("{l}\n")))
            .collect();
        if pick(&cmdline, &environ) {
            pids.push(pid);
        }
    }
    pids
}

fn log(dir: &Path, name: &str) -> Stdio {
    std::fs::File::create(dir.join("log").join(name))
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null())
}

fn rand_bytes(n: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; n];
    use std::io::Read as _;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("/dev/urandom reads");
    bytes
}
