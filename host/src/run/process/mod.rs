//! A process arm's run (docs/process-arms.md): one fresh native program per
//! run, in its own process group, pinned to the client CPUs, given the run
//! request on stdin and read event by event on stdout. The host reads the
//! program's CPU time at its marks and its rusage at exit, checks every
//! figure it reports, and kills its whole process tree on a timeout, an
//! interrupt, a protocol violation or children left behind. The outcome is
//! a [`RunResult`] like a worker's.

use super::child::{self, Ended, Finished};
use super::counters::Callgrind;
use super::executor::Halt;
use super::interrupt::Interrupt;
use super::schedule::RunSchedule;
use crate::limits;
use crate::plan::inputs::{self, HashedFile, process_files};
use crate::plan::seal::{SealedPlan, Slot};
use crate::plan::spec::{CounterSource, Counters, Measure, ParamValue, ProcessSpec};
use crate::record::result::{Cpu, Latency, OpenLoop, RunResult, WindowStats, encode_histogram};
use crate::target::TargetSpec;
use anyhow::{Context, bail};
use check::{Bounds, Checked, Reported, check};
use events::{Events, Mark, Needs, Seen, read_events};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

mod check;
mod events;

/// The protocol version this host speaks.
pub const PROTOCOL: u32 = 1;

/// A run request's seed is below 2^53 (docs/process-arms.md).
pub const SEED_MASK: u64 = (1 << 53) - 1;

/// Everything one process run needs, from the sealed plan and the slot.
#[derive(Debug, Clone)]
pub struct ProcessJob {
    pub process: ProcessSpec,
    /// The workload the program runs.
    pub workload: String,
    /// The plan's name for it, under which the result is recorded (a rate
    /// sweep's `get100@2000`).
    pub entry: String,
    pub arm: String,
    /// Resolved by the caller (`local:` endpoints become addresses).
    pub target: TargetSpec,
    pub params: BTreeMap<String, ParamValue>,
    pub seed: u64,
    pub workers: u32,
    pub measure: Measure,
    pub call_deadline_ms: u64,
    /// Input file → sha256 as sealed.
    pub expected_inputs: BTreeMap<String, String>,
    /// A counted run's counters (`measure.counters`).
    pub counters: Option<Counters>,
    /// A test arm's known work per transaction (`inject_loop_iterations`),
    /// which the program runs itself: its hello must list `"inject-loop"`.
    pub inject_loop_iterations: u64,
    /// A duet's start barrier (set by the executor, [`super::duet`]): the
    /// program waits there, set up, until every partner is; its hello must
    /// list `"start-barrier"`.
    pub start_barrier: Option<PathBuf>,
}

impl ProcessJob {
    /// The job of `slot`, if its arm is a process arm.
    pub fn of(plan: &SealedPlan, slot: &Slot) -> anyhow::Result<Option<ProcessJob>> {
        let (workload, arm) = plan.workload_and_arm(slot)?;
        let Some(process) = arm.process() else {
            return Ok(None);
        };
        let spec = &plan.spec;
        let mut params = workload.params.clone();
        params.extend(arm.params.clone());
        Ok(Some(ProcessJob {
            process: process.clone(),
            workload: workload.plugin_workload().to_owned(),
            entry: workload.name.clone(),
            arm: arm.name.clone(),
            target: arm.target.clone(),
            params,
            // 53 bits: every JSON reader holds it exactly (JavaScript's
            // numbers, Go's int64), and it stays reproducible from the plan.
            // A counted run's seed is its block's (common random numbers).
            seed: match spec.counters_for(workload) {
                Some(_) => crate::plan::seal::counted_seed(spec.seed, slot),
                None => crate::plan::seal::run_seed(spec.seed, slot),
            } & SEED_MASK,
            workers: spec.workers,
            measure: spec.measure_for(workload)?,
            call_deadline_ms: spec.limits.call_deadline_ms,
            expected_inputs: plan.inputs_of(slot)?,
            counters: spec.counters_for(workload),
            inject_loop_iterations: arm.inject_loop_iterations,
            start_barrier: None,
        }))
    }

    /// The run request the program reads on stdin.
    fn request(&self) -> Request<'_> {
        Request {
            protocol: PROTOCOL,
            workload: &self.workload,
            arm: &self.arm,
            target: &self.target,
            params: &self.params,
            seed: self.seed,
            workers: self.workers,
            measure: self.measure,
            call_deadline_ms: self.call_deadline_ms,
            schedule: RunSchedule::of(self.measure, self.seed, self.workers),
            counters: self.counters.map(|c| c.source),
            inject_loop_iterations: (self.inject_loop_iterations > 0)
                .then_some(self.inject_loop_iterations),
            start_barrier: self.start_barrier.as_deref(),
        }
    }

    /// What the program's hello must declare for this run.
    fn needs(&self) -> Needs {
        Needs {
            rate: matches!(self.measure, Measure::Rate { .. }),
            inject_loop: self.inject_loop_iterations > 0,
            start_barrier: self.start_barrier.is_some(),
        }
    }
}

/// The run request (stdin), docs/process-arms.md "Run request".
#[derive(Serialize)]
struct Request<'a> {
    protocol: u32,
    workload: &'a str,
    arm: &'a str,
    target: &'a TargetSpec,
    params: &'a BTreeMap<String, ParamValue>,
    seed: u64,
    workers: u32,
    measure: Measure,
    call_deadline_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule: Option<RunSchedule>,
    /// `"callgrind"` in a counted run: the program issues
    /// CALLGRIND_START_INSTRUMENTATION at its `measured` mark and
    /// CALLGRIND_STOP_INSTRUMENTATION at `measured-end` (docs/process-arms.md,
    /// "Counted runs"). Absent otherwise, so other requests are unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    counters: Option<CounterSource>,
    /// A test arm's `inject_loop_iterations`: the program runs that many
    /// iterations of a two-instruction loop (`dec`, `jnz`) before each
    /// transaction (docs/process-arms.md, "Injected work"). Absent when 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    inject_loop_iterations: Option<u64>,
    /// A duet's start barrier, a Unix stream socket: the program connects
    /// after its setup and reads one byte before its `warmup` mark
    /// (docs/process-arms.md, "Duets"). Absent outside a duet.
    #[serde(skip_serializing_if = "Option::is_none")]
    start_barrier: Option<&'a Path>,
}

/// Runs `job`'s program once, pinned to `cpus`, killed with its whole
/// process group after `timeout_s`; an interrupt kills it and returns
/// [`Halt::Interrupted`]. Every failure of the run is a [`Halt::Broken`]
/// naming the arm. `binary` is the caller's hash of blocklab.
pub fn run(
    job: &ProcessJob,
    cpus: &[usize],
    timeout_s: f64,
    interrupt: &Interrupt,
    binary: Option<&HashedFile>,
) -> Result<RunResult, Halt> {
    run_checked(job, cpus, timeout_s, interrupt, binary).map_err(|e| {
        match e.downcast_ref::<InterruptedBy>() {
            Some(InterruptedBy(signal)) => Halt::Interrupted(*signal),
            None => Halt::Broken(limits::clipped(e.context(format!(
                "process arm `{}` (`{}`)",
                job.arm,
                job.process.name()
            )))),
        }
    })
}

/// The run was killed because of this signal (a [`Halt::Interrupted`]).
#[derive(Debug, thiserror::Error)]
#[error("interrupted by signal {0}")]
struct InterruptedBy(i32);

fn run_checked(
    job: &ProcessJob,
    cpus: &[usize],
    timeout_s: f64,
    interrupt: &Interrupt,
    binary: Option<&HashedFile>,
) -> anyhow::Result<RunResult> {
    let timeout = limits::seconds("gates.run_timeout_s", timeout_s, true, limits::TIMEOUT_S)?;
    let inputs = inputs::check(&job.expected_inputs, process_files(&job.process)?, binary)?;
    let program = PathBuf::from(&job.process.command[0]);
    let needs = job.needs();
    let dir = program.parent().unwrap_or(Path::new("/")).to_owned();
    let callgrind = match job.counters {
        Some(c) if c.source == CounterSource::Callgrind => Some(Callgrind::new(c)?),
        Some(_) => bail!(
            "`measure.counters = \"pmu\"` is not available for process arms yet; count them with `measure.counters = \"callgrind\"`"
        ),
        None => None,
    };
    let mut command = match &callgrind {
        Some(c) => c.command(&program),
        None => Command::new(&program),
    };
    command
        .args(&job.process.command[1..])
        .current_dir(&dir)
        .env("BLOCKLAB_PROTOCOL", PROTOCOL.to_string())
        // Python writes no __pycache__ beside a script it runs.
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let finished = child::Job {
        command,
        cpus,
        timeout,
        interrupt,
        stdin: serde_json::to_vec(&job.request())?,
        kind: child::Kind::Program,
    }
    .run(
        || {
            format!(
                "cannot start `{}`; check that it runs by hand",
                program.display()
            )
        },
        move |stdout, pid| read_events(stdout, pid, needs),
        stderr_tail,
    )?;
    let exit = Exit::judge(finished, timeout_s, needs.rate)?;
    let run = Marked::of(exit.events)?;
    let bounds = Bounds {
        in_flight: job.workers.max(1) as f64,
        window_s: run.end.at.duration_since(run.start.at).as_secs_f64(),
        // A measured transaction started in the window may end after it,
        // but not after the program.
        measured_to_exit_s: exit.exited_at.duration_since(run.start.at).as_secs_f64(),
        lifetime_s: exit.exited_at.duration_since(exit.spawned).as_secs_f64(),
        schedule: RunSchedule::of(job.measure, job.seed, job.workers).zip(match job.measure {
            Measure::Rate { measured_s, .. } => Some(measured_s),
            _ => None,
        }),
    };
    let checked = check(&run.reported, &bounds)?;
    let phases_ms = run.phases_ms(exit.spawned, exit.exited_at);
    let mut result = result(job, cpus, inputs, run, checked, &exit.usage, phases_ms)?;
    if let Some(c) = &callgrind {
        result.counts = Some(c.counts(result.measured)?);
    }
    Ok(result)
}

/// A program that exited by itself, with every event it wrote in order.
struct Exit {
    events: Events,
    usage: libc::rusage,
    spawned: Instant,
    exited_at: Instant,
}

impl Exit {
    /// How the program ended, judged before its figures are: an interrupt,
    /// a timeout, a protocol violation, processes left behind, a signal or
    /// a non-zero exit each fail the run, with its stderr's last lines.
    fn judge(
        finished: Finished<Result<Events, String>>,
        timeout_s: f64,
        needs_rate: bool,
    ) -> anyhow::Result<Exit> {
        let Finished {
            ended,
            stdout: events,
            stderr,
            strays,
            spawned,
            exited_at,
        } = finished;
        let said = |why: String| -> anyhow::Error {
            match stderr.is_empty() {
                true => anyhow::anyhow!("{why} (its stderr was empty)"),
                false => anyhow::anyhow!("{why}; its stderr ended with:\n{stderr}"),
            }
        };
        let (status, usage) = match ended {
            Ended::Interrupted(signal) => {
                return Err(InterruptedBy(signal).into());
            }
            Ended::TimedOut => {
                return Err(said(format!(
                    "it ran longer than `gates.run_timeout_s = {}` and was killed with its process group{}; fix the hang, or raise `gates.run_timeout_s` if runs are that long",
                    limits::show(timeout_s),
                    marked(&events)
                )));
            }
            Ended::Exited(status, usage) => (status, usage),
        };
        let events = events.map_err(|why| said(format!("{why}; it was killed")))?;
        if strays > 0 {
            bail!(
                "it left {strays} process(es) running after it exited, which were killed; a client must end every process it starts before it exits"
            );
        }
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            return Err(said(format!(
                "it was killed by signal {signal} ({}){}",
                signal_name(signal),
                marked(&Ok(events))
            )));
        }
        let code = libc::WEXITSTATUS(status);
        if code != 0 {
            let hint = match (code, needs_rate) {
                (2, false) => {
                    "; exit status 2 means the program does not know the workload or the request"
                }
                (2, true) => {
                    "; exit status 2 means the program does not know the workload or the request, here perhaps rate mode: use a client whose `hello` lists `\"rate\"` in `modes` (docs/process-arms.md, \"Rate mode\"), or run this arm with `measure.mode = \"window\"`"
                }
                _ => "",
            };
            return Err(said(format!("it exited with status {code}{hint}")));
        }
        Ok(Exit {
            events,
            usage,
            spawned,
            exited_at,
        })
    }
}

/// A complete run's events: its hello, its three marks and its result.
struct Marked {
    client: Option<String>,
    hello: Instant,
    warm: Seen,
    start: Seen,
    end: Seen,
    reported: Reported,
}

impl Marked {
    fn of(events: Events) -> anyhow::Result<Marked> {
        let hello = events.hello.context(
            "it exited without writing its `hello` event (docs/process-arms.md, \"Events\")",
        )?;
        if events.marks.len() < Mark::ORDER.len() {
            bail!(
                "it exited without marking `{}`; a client marks warmup, measured and measured-end in order (docs/process-arms.md)",
                Mark::ORDER[events.marks.len()].name()
            );
        }
        let reported = events
            .result
            .context("it exited without writing its `result` event")?;
        Ok(Marked {
            client: events.client,
            hello,
            warm: events.marks[0],
            start: events.marks[1],
            end: events.marks[2],
            reported,
        })
    }

    /// The run's phases as the host's clock saw them, milliseconds.
    fn phases_ms(&self, spawned: Instant, exited_at: Instant) -> BTreeMap<String, f64> {
        let ms = |a: Instant, b: Instant| b.duration_since(a).as_secs_f64() * 1_000.0;
        BTreeMap::from([
            ("start".to_owned(), ms(spawned, self.hello)),
            ("setup".to_owned(), ms(self.hello, self.warm.at)),
            ("warmup".to_owned(), ms(self.warm.at, self.start.at)),
            ("measure".to_owned(), ms(self.start.at, self.end.at)),
            ("teardown".to_owned(), ms(self.end.at, exited_at)),
        ])
    }
}

/// The run's [`RunResult`] from its checked figures and the host's CPU
/// readings (at the marks, and the rusage at exit).
fn result(
    job: &ProcessJob,
    cpus: &[usize],
    inputs: BTreeMap<String, String>,
    run: Marked,
    checked: Checked,
    usage: &libc::rusage,
    phases_ms: BTreeMap<String, f64>,
) -> anyhow::Result<RunResult> {
    let reported = &run.reported;
    let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    let process_us = us(usage.ru_utime) + us(usage.ru_stime);
    let window_us = run.end.cpu_us.saturating_sub(run.start.cpu_us);
    let measured = checked.measured;
    let per_txn = |x: u64| x as f64 / measured.max(1) as f64;
    // Rate mode keeps window mode's acknowledged records (ingest's
    // offered records per second against the acknowledged ones).
    let window = matches!(job.measure, Measure::Window { .. } | Measure::Rate { .. }).then(|| {
        WindowStats::of_window(reported.measured_s, &checked.counters, &checked.histograms)
    });
    Ok(RunResult {
        workload: job.entry.clone(),
        arm: job.arm.clone(),
        target: job.target.label(),
        plugin: job.process.label(),
        client: run.client,
        mode: job.measure.mode(),
        workers: job.workers,
        seed: job.seed,
        warmup: checked.warmup,
        measured,
        measured_s: reported.measured_s,
        errors: checked.errors,
        errors_by_kind: checked.errors_by_kind,
        retries: checked.retries,
        latency_us: Latency::from_histogram(&checked.latency),
        throughput_per_s: measured as f64 / reported.measured_s,
        cpu: Cpu {
            measured_us_per_txn: per_txn(window_us),
            process_us_per_txn: per_txn(process_us),
            involuntary_switches: 0,
        },
        alloc: Default::default(),
        // ru_maxrss is in KiB: the program's peak resident memory.
        plugin_memory_bytes: (usage.ru_maxrss.max(0) as u64) << 10,
        // A process arm holds no host resources of ours to leak.
        leaked_resources: 0,
        counters: checked.counters,
        setup_counters: Default::default(),
        inputs,
        cpus: cpus.to_vec(),
        from_cache: false,
        phases_ms,
        window,
        open_loop: open_loop(job.measure, reported.measured_s, checked.open_loop),
        client_runtime: None,
        histogram: Some(encode_histogram(&checked.latency)?),
        batches: checked.batches,
        // The host's reading of the `measured` mark: the program's own
        // clock is not comparable across processes, the wall clock is.
        window_started_unix_us: job.start_barrier.as_ref().map(|_| run.start.unix_us),
        // No profile, sched or counts: the protocol carries none.
        ..RunResult::default()
    })
}

/// A rate-mode run's stored account of its schedule.
fn open_loop(
    measure: Measure,
    measured_s: f64,
    checked: Option<check::CheckedOpenLoop>,
) -> Option<OpenLoop> {
    match (measure, checked) {
        (
            Measure::Rate {
                rate_per_s,
                arrival,
                ..
            },
            Some(o),
        ) => Some(OpenLoop::of(
            rate_per_s,
            arrival,
            measured_s,
            o.counts,
            &o.start_lag,
            &o.service,
        )),
        _ => None,
    }
}

/// ` after marking `X``, the last mark the program reached, for messages.
fn marked(events: &Result<Events, String>) -> String {
    match events {
        Ok(e) if !e.marks.is_empty() => {
            format!(" after marking `{}`", Mark::ORDER[e.marks.len() - 1].name())
        }
        Ok(e) if e.hello.is_some() => " after its `hello`, before marking `warmup`".to_owned(),
        _ => " before its `hello`".to_owned(),
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        _ => "a signal",
    }
}

/// The last lines of the program's stderr (at most
/// [`limits::PROCESS_STDERR_LINES`] lines, each clipped); the rest is read
/// and dropped so the program never blocks on a full pipe.
fn stderr_tail(stderr: std::process::ChildStderr) -> String {
    let mut lines = std::collections::VecDeque::new();
    let mut reader = BufReader::new(stderr);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match (&mut reader)
            .take(limits::PROCESS_LINE_BYTES)
            .read_until(b'\n', &mut buf)
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf).trim_end().to_owned();
                if line.trim().is_empty() {
                    continue;
                }
                lines.push_back(limits::clip(&line).into_owned());
                if lines.len() > limits::PROCESS_STDERR_LINES {
                    lines.pop_front();
                }
            }
        }
    }
    Vec::from(lines).join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::spec::Arrival;
    use crate::record::result::OpenLoopCounts;

    fn reported(json: &str) -> Reported {
        serde_json::from_str(json).unwrap()
    }

    fn bounds(in_flight: f64) -> Bounds {
        Bounds {
            in_flight,
            window_s: 1.0,
            measured_to_exit_s: 1.0,
            lifetime_s: 2.0,
            schedule: None,
        }
    }

    #[test]
    fn a_result_whose_latencies_exceed_the_window_is_refused() {
        // 1000 transactions of 10 ms each: 10 s in a 1 s window.
        let r = reported(
            r#"{"warmup":0,"measured":1000,"measured_s":1.0,"errors":0,"latency_ns":[[10000000,1000]]}"#,
        );
        let e = check(&r, &bounds(1.0)).err().unwrap().to_string();
        assert!(e.contains("more transactions than time allows"), "{e}");
        // The same over 16 workers fits.
        assert!(check(&r, &bounds(16.0)).is_ok());
    }

    #[test]
    fn a_latency_longer_than_the_program_ran_is_refused() {
        let r = reported(
            r#"{"warmup":0,"measured":1,"measured_s":1.0,"errors":0,"latency_ns":[[5000000000,1]]}"#,
        );
        let e = check(&r, &bounds(64.0)).err().unwrap().to_string();
        assert!(e.contains("cannot outlast the program"), "{e}");
        // Issue 32, item 6: 9.2e18 ns was quoted as the histogram's clamp
        // ("3601.330 s"), not as what the program sent.
        let r = reported(
            r#"{"warmup":0,"measured":1,"measured_s":1.0,"errors":0,"latency_ns":[[9200000000000000000,1]]}"#,
        );
        let e = check(&r, &bounds(64.0)).err().unwrap().to_string();
        assert!(e.contains("longest latency is 9200000000.000 s"), "{e}");
    }

    fn rate(arrival: Arrival) -> Measure {
        Measure::Rate {
            warmup_s: 0.0,
            measured_s: 1.0,
            rate_per_s: 200.0,
            arrival,
        }
    }

    #[test]
    fn a_constant_schedule_spreads_the_rate_evenly_over_the_workers() {
        let s = RunSchedule::of(rate(Arrival::Constant), 7, 4).unwrap();
        let shares: Vec<(f64, f64, u64)> = s
            .workers
            .iter()
            .map(|w| (w.rate_per_s, w.phase_s, w.seed))
            .collect();
        assert_eq!(
            shares,
            [
                (50.0, 0.0, 7),
                (50.0, 0.005, 8),
                (50.0, 0.01, 9),
                (50.0, 0.015, 10)
            ]
        );
        // Merged, the workers' starts are 1/200 s apart.
        let mut starts: Vec<f64> = s
            .workers
            .iter()
            .flat_map(|w| (0..50).map(move |k| w.phase_s + k as f64 / w.rate_per_s))
            .collect();
        starts.sort_by(f64::total_cmp);
        for pair in starts.windows(2) {
            assert!((pair[1] - pair[0] - 0.005).abs() < 1e-9, "{pair:?}");
        }
        assert_eq!(s.scheduled_bounds(1.0), (195.0, 205.0));
        let poisson = RunSchedule::of(rate(Arrival::Poisson), 7, 4).unwrap();
        assert_eq!(poisson.workers[3].phase_s, 0.015);
        assert_eq!(poisson.scheduled_bounds(1.0).0, 195.0 - 6.0 * 200f64.sqrt());
        assert!(
            RunSchedule::of(
                Measure::Transactions {
                    warmup: 0,
                    measured: 1
                },
                7,
                4
            )
            .is_none()
        );
    }

    #[test]
    fn a_rate_result_is_bounded_by_its_service_time_not_its_queueing() {
        let mut b = bounds(1.0);
        b.schedule = Some((RunSchedule::of(rate(Arrival::Constant), 7, 1).unwrap(), 1.0));
        // 200 transactions of 1 ms service, queued up to 400 ms behind
        // schedule: latencies add up to 40 s in a 1 s window, service to
        // 0.2 s, which one worker can spend.
        let r = reported(
            r#"{"warmup":0,"measured":200,"measured_s":1.0,"errors":0,"latency_ns":[[200000000,200]],
                "open_loop":{"scheduled":200,"started":200,"late":199,
                  "start_lag_ns":[[0,1],[199000000,199]],"service_ns":[[1000000,200]]}}"#,
        );
        let c = check(&r, &b).unwrap().open_loop.unwrap();
        assert_eq!(
            c.counts,
            OpenLoopCounts {
                scheduled: 200,
                started: 200,
                late: 199
            }
        );
        // Without the schedule (another mode) the same latencies are refused.
        let e = check(&r, &bounds(1.0)).err().unwrap().to_string();
        assert!(e.contains("more transactions than time allows"), "{e}");
    }

    fn job(start_barrier: Option<&str>) -> ProcessJob {
        ProcessJob {
            process: ProcessSpec {
                command: vec!["/bin/true".into()],
                inputs: Vec::new(),
                script: false,
            },
            workload: "noop".into(),
            entry: "noop".into(),
            arm: "a".into(),
            target: TargetSpec::default(),
            params: BTreeMap::new(),
            seed: 1,
            workers: 1,
            measure: Measure::Window {
                warmup_s: 0.0,
                measured_s: 0.1,
            },
            call_deadline_ms: 1000,
            expected_inputs: BTreeMap::new(),
            counters: None,
            inject_loop_iterations: 0,
            start_barrier: start_barrier.map(PathBuf::from),
        }
    }

    #[test]
    fn only_a_duets_request_names_the_start_barrier_and_needs_the_feature() {
        let alone = job(None);
        let json = serde_json::to_value(alone.request()).unwrap();
        assert!(json.get("start_barrier").is_none(), "{json}");
        assert!(!alone.needs().start_barrier);
        let duet = job(Some("/tmp/blocklab-duet-1-0.sock"));
        let json = serde_json::to_value(duet.request()).unwrap();
        assert_eq!(json["start_barrier"], "/tmp/blocklab-duet-1-0.sock");
        assert!(duet.needs().start_barrier);
    }

    #[test]
    fn counts_must_match_measured_minus_errors() {
        let r = reported(
            r#"{"warmup":0,"measured":10,"measured_s":1.0,"errors":2,"latency_ns":[[1000,9]]}"#,
        );
        let e = check(&r, &bounds(1.0)).err().unwrap().to_string();
        assert!(e.contains("counts 9 transactions"), "{e}");
    }
}
