//! The node side (`blocklab slurm-block`, run by a block's batch job): runs
//! the block's slots through the [`LocalExecutor`] on the node Slurm gave
//! the job, with the same rerun policy as a local campaign, and writes each
//! attempt into the spool, then `done.json`.

use super::commands;
use super::spool::{self, BlockJob, Done, Spool, SpooledRun, Started};
use crate::run::attempts::{self, Attempts, SlotEnd};
use crate::run::executor::{Executed, LocalExecutor, Settings};
use crate::run::interrupt::Interrupt;
use crate::run::unix_ms;
use crate::target::grpc::local::Remote;
use anyhow::Context;
use blocklab_store::CampaignId;
use std::path::{Path, PathBuf};

/// This node's name: Slurm's `SLURMD_NODENAME`, else the host name.
pub fn node_name() -> String {
    std::env::var("SLURMD_NODENAME")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_owned())
                .unwrap_or_else(|_| "unknown".to_owned())
        })
}

/// This execution's name: `<job>.<restart count>`, so a requeued job's
/// records land beside, never over, the ones of its earlier start.
fn execution_name() -> (String, String) {
    let job =
        std::env::var("SLURM_JOB_ID").unwrap_or_else(|_| format!("pid{}", std::process::id()));
    let restart = std::env::var("SLURM_RESTART_COUNT").unwrap_or_else(|_| "0".to_owned());
    (format!("{job}.{restart}"), job)
}

/// The other node of this two-node job, where the block's local servers
/// run: started with `srun` inside the allocation, reached at the node's
/// `NodeAddr`.
fn server_node(this: &str) -> anyhow::Result<Remote> {
    let list = std::env::var("SLURM_JOB_NODELIST").context(
        "this block asks for its server on a second node but `SLURM_JOB_NODELIST` is not set: `slurm-block` runs inside a Slurm job",
    )?;
    let nodes = commands::hostnames(&list)?;
    let node = nodes.iter().find(|n| *n != this).with_context(|| {
        format!("this block asks for its server on a second node but its allocation is `{list}` only: the coordinator submits such blocks on two nodes when the plan sets `executor.separate_server = true`")
    })?;
    Ok(Remote {
        launcher: vec![
            "srun".to_owned(),
            "--nodes=1".to_owned(),
            "--ntasks=1".to_owned(),
            format!("--nodelist={node}"),
            "--kill-on-bad-exit=1".to_owned(),
            "--quiet".to_owned(),
        ],
        connect_host: commands::node_addr(node)?,
        node: node.clone(),
    })
}

/// Runs block `block` of campaign `campaign` from the spool. Returns the
/// signal that interrupted it, if one did (the execution then has no
/// `done.json` and is never ingested).
pub fn run_block(
    spool_dir: &Path,
    campaign: CampaignId,
    block: u32,
    mut settings: Settings,
) -> anyhow::Result<Option<i32>> {
    let spool = Spool::new(spool_dir, campaign);
    let plan = spool.read_plan().with_context(|| {
        format!(
            "campaign {campaign}'s plan is not in the spool `{}`: is the spool on a filesystem this node sees (`--spool`)?",
            spool_dir.display()
        )
    })?;
    let job: BlockJob = spool::read_json(&spool.job_path(block))?;
    let host = node_name();
    let (execution, job_id) = execution_name();
    let dir = spool.block_dir(block).join(&execution);
    spool::write_json(
        &dir.join("started.json"),
        &Started {
            host: host.clone(),
            job: job_id.clone(),
            started_unix_ms: unix_ms(),
        },
    )?;
    let server_host = if job.server_node {
        let remote = server_node(&host)?;
        let node = remote.node.clone();
        settings.server_remote = Some(remote);
        Some(node)
    } else {
        None
    };
    let mut run = BlockRun {
        dir,
        host,
        server_host,
        interrupt: settings.interrupt.clone(),
        runs: 0,
    };
    let placement = LocalExecutor::placement(&plan)?;
    let mut executor = LocalExecutor::start(&plan, campaign, placement, settings)?;
    let mut stop = None;
    for &(slot_index, first_attempt) in &job.slots {
        let slot = plan.schedule.get(slot_index as usize).with_context(|| {
            format!("block {block}'s job names slot {slot_index}, which the plan does not have")
        })?;
        match attempts::run_slot(
            &mut executor,
            slot,
            first_attempt,
            &plan.spec.gates,
            &mut run,
        )? {
            SlotEnd::Done => {}
            SlotEnd::Interrupted(signal) => return Ok(Some(signal)),
            SlotEnd::Stop(why) => {
                stop = Some(why);
                break;
            }
        }
    }
    drop(executor);
    spool::write_json(
        &run.dir.join("done.json"),
        &Done {
            host: run.host,
            server_host: run.server_host,
            job: job_id,
            finished_unix_ms: unix_ms(),
            runs: run.runs,
            stop,
        },
    )?;
    Ok(None)
}

/// One execution of a block on this node: where its records go and what
/// each record says of the hosts.
struct BlockRun {
    /// The execution's directory in the spool.
    dir: PathBuf,
    host: String,
    server_host: Option<String>,
    interrupt: Interrupt,
    /// Records written so far.
    runs: u32,
}

/// A node writes each attempt into its execution's spool directory, with
/// the hosts the coordinator stores with it, and ends the execution on a
/// signal as soon as the attempt in flight is written.
impl Attempts for BlockRun {
    fn keep(&mut self, executed: Executed, is_final: bool) -> anyhow::Result<()> {
        let mut record = executed.record;
        record.host = Some(self.host.clone());
        record.server_host = self.server_host.clone();
        let attempt = record.attempt;
        let slot = record.slot.slot;
        spool::write_json(
            &Spool::run_path(&self.dir, slot, attempt),
            &SpooledRun {
                record,
                is_final,
                histogram: executed.histogram.map(|h| {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD.encode(h)
                }),
                profile_svg: executed.profile_svg,
            },
        )?;
        self.runs += 1;
        Ok(())
    }

    fn signal(&self) -> Option<i32> {
        self.interrupt.signal()
    }
}
