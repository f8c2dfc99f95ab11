//! The Slurm client commands the coordinator runs (`sbatch`, `squeue`,
//! `scontrol`, `scancel`, `sinfo`), with their output parsed into types.
//! They find the cluster the usual way (`SLURM_CONF`, /etc/slurm), and jobs
//! inherit the submitter's environment (`sbatch`'s default `--export=ALL`).

use anyhow::{Context, bail};
use std::io::Write;
use std::process::{Command, Stdio};

/// A job's state as Slurm reports it, reduced to what the coordinator acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Waiting for a node (also after a requeue).
    Pending,
    Running,
    /// Ended: completed, failed, cancelled, timed out, node failure...
    Ended,
}

/// What `squeue`/`scontrol` say of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    pub state: JobState,
    /// Slurm's own state name, e.g. `RUNNING`, `NODE_FAIL`.
    pub slurm_state: String,
    /// The nodes it runs (or ran) on, Slurm's list syntax.
    pub nodes: String,
    /// Why it is pending or ended, e.g. `Resources`, `NodeDown`.
    pub reason: String,
}

fn run(command: &mut Command, what: &str) -> anyhow::Result<String> {
    let output = command.output().with_context(|| {
        format!("cannot run `{what}`: is Slurm's client installed (`apt-get install slurm-client`) and on PATH?")
    })?;
    if !output.status.success() {
        bail!(
            "`{what}` failed with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Submits `script` with `args` (`sbatch --parsable ARGS`, the script on
/// stdin) and returns the job id.
pub fn sbatch(args: &[String], script: &str) -> anyhow::Result<String> {
    let mut child = Command::new("sbatch")
        .arg("--parsable")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run `sbatch`: is Slurm's client installed (`apt-get install slurm-client`) and on PATH?")?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .context("cannot hand the job script to `sbatch`")?;
    }
    let output = child
        .wait_with_output()
        .context("`sbatch` did not finish")?;
    if !output.status.success() {
        bail!(
            "`sbatch {}` refused the block job: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    // `--parsable` prints `ID` or `ID;CLUSTER`.
    let id = text.trim().split(';').next().unwrap_or_default().to_owned();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        bail!(
            "`sbatch --parsable` printed `{}`, not a job id",
            text.trim()
        );
    }
    Ok(id)
}

/// The state of each of `jobs` that Slurm still knows; a job missing from
/// the answer has left Slurm's memory (`MinJobAge`) and has ended.
pub fn jobs(jobs: &[String]) -> anyhow::Result<Vec<(String, JobInfo)>> {
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let list = jobs.join(",");
    let mut command = Command::new("squeue");
    command.args(["-h", "-t", "all", "-j", &list, "-o", "%i|%T|%N|%r"]);
    let text = match run(&mut command, "squeue") {
        Ok(t) => t,
        // squeue refuses the whole list when one id is unknown: ask one by one.
        Err(_) if jobs.len() > 1 => {
            let mut all = Vec::new();
            for job in jobs {
                all.extend(self::jobs(std::slice::from_ref(job)).unwrap_or_default());
            }
            return Ok(all);
        }
        Err(e) => return Err(e),
    };
    Ok(text.lines().filter_map(parse_squeue_line).collect())
}

/// One `%i|%T|%N|%r` line.
fn parse_squeue_line(line: &str) -> Option<(String, JobInfo)> {
    let mut fields = line.trim().split('|');
    let id = fields.next()?.to_owned();
    let slurm_state = fields.next()?.to_owned();
    let nodes = fields.next().unwrap_or_default().to_owned();
    let reason = fields.next().unwrap_or_default().to_owned();
    let state = match slurm_state.as_str() {
        "PENDING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "CONFIGURING"
        | "RESV_DEL_HOLD" => JobState::Pending,
        "RUNNING" | "COMPLETING" | "SUSPENDED" | "STOPPED" | "SIGNALING" | "STAGE_OUT"
        | "RESIZING" => JobState::Running,
        _ => JobState::Ended,
    };
    Some((
        id,
        JobInfo {
            state,
            slurm_state,
            nodes,
            reason,
        },
    ))
}

/// Cancels `jobs` (best effort: a job that already ended is no error).
pub fn scancel(jobs: &[String]) {
    if !jobs.is_empty() {
        let _ = Command::new("scancel")
            .args(jobs)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The nodes of `partition` (or every partition) that can take a job now:
/// not down, drained or failing.
pub fn usable_nodes(partition: Option<&str>) -> anyhow::Result<Vec<String>> {
    let mut command = Command::new("sinfo");
    command.args(["-h", "-N", "-o", "%N|%t"]);
    if let Some(p) = partition {
        command.args(["-p", p]);
    }
    let text = run(&mut command, "sinfo")?;
    let mut nodes: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let (node, state) = l.trim().split_once('|')?;
            let usable = ![
                "down", "drain", "drng", "fail", "maint", "boot", "unk", "inval",
            ]
            .iter()
            .any(|bad| state.starts_with(bad))
                && !state.ends_with('*');
            usable.then(|| node.to_owned())
        })
        .collect();
    nodes.sort();
    nodes.dedup();
    Ok(nodes)
}

/// The address a node is reached at (`scontrol show node`'s `NodeAddr`).
pub fn node_addr(node: &str) -> anyhow::Result<String> {
    let text = run(
        Command::new("scontrol").args(["show", "node", "-o", node]),
        "scontrol show node",
    )?;
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("NodeAddr="))
        .map(str::to_owned)
        .with_context(|| format!("`scontrol show node {node}` gave no `NodeAddr`"))
}

/// Expands Slurm's node list syntax (`n[1-3],m2`) with `scontrol show
/// hostnames`.
pub fn hostnames(list: &str) -> anyhow::Result<Vec<String>> {
    let text = run(
        Command::new("scontrol").args(["show", "hostnames", list]),
        "scontrol show hostnames",
    )?;
    Ok(text.split_whitespace().map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squeue_lines_map_to_the_states_the_coordinator_acts_on() {
        let (id, info) = parse_squeue_line("42|RUNNING|n1|None").unwrap();
        assert_eq!(
            (id.as_str(), info.state, info.nodes.as_str()),
            ("42", JobState::Running, "n1")
        );
        let (_, requeued) = parse_squeue_line("43|PENDING||BeginTime").unwrap();
        assert_eq!(requeued.state, JobState::Pending);
        for ended in [
            "COMPLETED",
            "FAILED",
            "NODE_FAIL",
            "CANCELLED",
            "TIMEOUT",
            "OUT_OF_MEMORY",
        ] {
            let (_, info) = parse_squeue_line(&format!("44|{ended}|n2|x")).unwrap();
            assert_eq!(info.state, JobState::Ended, "{ended}");
        }
        assert!(parse_squeue_line("").is_none());
    }
}
