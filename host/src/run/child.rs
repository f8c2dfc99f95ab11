//! The one way a run's child process is started and ended: a `blocklab
//! worker` ([`super::executor`]) and a process arm's program
//! ([`super::process`]) both run here. The child gets its own process
//! group (a Ctrl-C at the terminal reaches the supervisor only, which
//! decides the run's fate; a timeout or an interrupt kills the whole
//! group), is pinned to the client CPUs, is given its request on stdin and
//! is read on stdout and stderr by the caller's readers. It is reaped with
//! `wait4` for its rusage; for a process arm ([`Kind::Program`]), what it leaves
//! running after it exits is found and killed too.

use super::interrupt::Interrupt;
use crate::machine::placement;
use anyhow::Context;
use std::collections::BTreeSet;
use std::io::Write;
use std::process::{ChildStderr, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The children of the runs in flight, each the leader of its own process
/// group. A duet runs several at once, all children of this process: one
/// run's stray scan must not take a partner, or a member of a partner's
/// group, for what it left behind.
static RUNNING: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn running() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    // The set stays consistent: each change is one insert or remove.
    RUNNING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A run's child in [`RUNNING`] until it is reaped (dropped after it).
struct Registered(i32);

impl Drop for Registered {
    fn drop(&mut self) {
        running().remove(&self.0);
    }
}

/// Who the child is, which decides how it is started on its CPUs and what
/// the host does about processes it leaves behind. Either way its process
/// group is killed when it ends early (timeout, interrupt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A `blocklab worker`: spawned without a fork
    /// ([`placement::spawn_pinned`]), since it ties itself to this process
    /// first thing.
    Worker,
    /// A process arm's program, which is not blocklab: forked, then pinned
    /// and given its death signal before it executes anything; and this
    /// process becomes the subreaper of its descendants, so that any that
    /// outlive it, even in a session of their own, are killed and counted
    /// ([`Finished::strays`]).
    Program,
}

/// How the child ended.
#[derive(Debug)]
pub enum Ended {
    /// It exited by itself: its wait status and rusage.
    Exited(i32, libc::rusage),
    /// It outlived its deadline and was killed with its group.
    TimedOut,
    /// A signal asked the host to stop; the child was killed with its group.
    Interrupted(i32),
}

/// A finished child and what its readers returned.
pub struct Finished<O> {
    pub ended: Ended,
    pub stdout: O,
    pub stderr: String,
    /// Processes it left running after it exited, now killed
    /// ([`Kind::Program`] only).
    pub strays: usize,
    /// Just before it was spawned.
    pub spawned: Instant,
    /// When the host saw it exit.
    pub exited_at: Instant,
}

/// One child to run: its command, where it runs and how long it may.
pub struct Job<'a> {
    pub command: Command,
    /// The client CPUs it is pinned to.
    pub cpus: &'a [usize],
    pub timeout: Duration,
    pub interrupt: &'a Interrupt,
    /// Written to its stdin from a thread of its own, then closed.
    pub stdin: Vec<u8>,
    pub kind: Kind,
}

impl Job<'_> {
    /// Spawns the child, feeds its stdin, reads stdout with `stdout(pipe,
    /// pid)` and stderr with `stderr`, each on a thread, and waits for it
    /// under the deadline and the interrupt. `spawn_error` names the child
    /// when it cannot be started at all.
    pub fn run<O: Send + 'static>(
        mut self,
        spawn_error: impl FnOnce() -> String,
        stdout: impl FnOnce(ChildStdout, i32) -> O + Send + 'static,
        stderr: impl FnOnce(ChildStderr) -> String + Send + 'static,
    ) -> anyhow::Result<Finished<O>> {
        use std::os::unix::process::CommandExt as _;
        if self.kind == Kind::Program {
            // Without it a child that left the group (setsid) and outlived
            // the program would go to init, out of reach: no run without it.
            become_subreaper().context("cannot become the subreaper of the program's children")?;
        }
        // Only a subreaper needs to tell a stray from an earlier child, and
        // reading every process's stat costs a run about a millisecond.
        let before = match self.kind {
            Kind::Program => children(),
            Kind::Worker => BTreeSet::new(),
        };
        self.command
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let spawned = Instant::now();
        let (mut child, pid) = self.spawn().with_context(spawn_error)?;
        let _registered = Registered(pid);
        let mut pipe_in = child.stdin.take().context("the child's stdin")?;
        let request = self.stdin;
        let writer = std::thread::spawn(move || {
            // A child that exits without reading its request is judged by
            // its exit and output, not by this write.
            let _ = pipe_in.write_all(&request);
        });
        let pipe_out = child.stdout.take().context("the child's stdout")?;
        let reader = std::thread::spawn(move || stdout(pipe_out, pid));
        let pipe_err = child.stderr.take().context("the child's stderr")?;
        let tail = std::thread::spawn(move || stderr(pipe_err));

        let (done, watchdog) = watch(pid, spawned + self.timeout, self.interrupt.clone());
        // std's Child is not waited on: the child is reaped below by wait4,
        // for its rusage, once its output is read.
        let exited = wait_exited(pid);
        let exited_at = Instant::now();
        drop(done);
        let killed = watchdog.join().ok().flatten();
        // Whatever is left holds the pipes open: kill it before joining
        // the readers.
        let strays = match self.kind {
            Kind::Program => kill_strays(pid, &before),
            Kind::Worker => 0,
        };
        let _ = writer.join();
        let stdout = reader.join().map_err(|_| {
            anyhow::anyhow!("the child's stdout reader panicked; this is a bug in blocklab")
        })?;
        let stderr = tail.join().unwrap_or_default();
        exited.context("cannot wait for the child")?;
        let (status, usage) = reap(pid).context("cannot wait for the child")?;
        Ok(Finished {
            ended: killed.unwrap_or(Ended::Exited(status, usage)),
            stdout,
            stderr,
            strays,
            spawned,
            exited_at,
        })
    }

    /// Starts the child on its CPUs as its [`Kind`] is started, registered in
    /// [`RUNNING`] under the lock, so that no stray scan sees it before it
    /// is known for a run's.
    fn spawn(&mut self) -> std::io::Result<(std::process::Child, i32)> {
        let mut running = running();
        let child = match self.kind {
            Kind::Program => {
                placement::pin_child(&mut self.command, self.cpus);
                self.command.spawn()
            }
            Kind::Worker => placement::spawn_pinned(&mut self.command, self.cpus),
        }?;
        let pid = child.id() as i32;
        running.insert(pid);
        Ok((child, pid))
    }
}

/// A thread that kills group `pid` at `deadline` or on an interrupt, until
/// the returned sender is dropped; it returns why it killed, if it did.
fn watch(
    pid: i32,
    deadline: Instant,
    interrupt: Interrupt,
) -> (mpsc::Sender<()>, std::thread::JoinHandle<Option<Ended>>) {
    let (done, finished) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        loop {
            match finished.recv_timeout(Duration::from_millis(10)) {
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(signal) = interrupt.signal() {
                        kill_group(pid);
                        return Some(Ended::Interrupted(signal));
                    }
                    if Instant::now() >= deadline {
                        kill_group(pid);
                        return Some(Ended::TimedOut);
                    }
                }
                _ => return None,
            }
        }
    });
    (done, watchdog)
}

/// Makes this process the subreaper of its descendants (prctl
/// `PR_SET_CHILD_SUBREAPER`), so that a program's children that outlive it,
/// even in a session of their own (`setsid`), become this process's
/// children, where they can be found and killed, instead of init's.
fn become_subreaper() -> std::io::Result<()> {
    // SAFETY: prctl with an integer argument; no pointers.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// This process's children: every process whose parent is this one.
///
/// Read from each process's `stat`, whose ppid is the parent's process
/// id, not from the threads' `children` lists: an orphan is adopted by
/// one of our threads, and when that thread ends (a pipe reader, say) it
/// moves to another, so a walk over the threads can miss it, and a stray
/// seen by neither list would be left running.
fn children() -> BTreeSet<i32> {
    let me = std::process::id() as i32;
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| parent_of(*pid) == Some(me))
        .collect()
}

/// The parent of `pid` (the field after the state).
fn parent_of(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

/// The process group of `pid` (the field after the parent).
fn group_of(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(2)?.parse().ok()
}

/// The fields of `/proc/PID/stat` after the command name, from the state
/// (field 3, counting from 1) on. The name may hold spaces and
/// parentheses, so the fields follow its last `)`.
pub(super) fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_owned).collect())
}

/// SIGKILL to every process of group `pgid`.
pub fn kill_group(pgid: i32) {
    // SAFETY: kill with a negative pid signals a process group.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

/// Waits until child `pid` has exited without reaping it: while it is a
/// zombie its /proc entry (and the CPU time a late mark reads there) stays.
fn wait_exited(pid: i32) -> std::io::Result<()> {
    loop {
        // SAFETY: zeroed siginfo is valid plain data that waitid fills.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid pointer to our local.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reaps child `pid` and returns its wait status and rusage.
fn reap(pid: i32) -> std::io::Result<(i32, libc::rusage)> {
    loop {
        let mut status = 0;
        // SAFETY: zeroed rusage is valid plain data that wait4 fills.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers to our locals.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc == pid {
            return Ok((status, usage));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Of this process's `children`, those run `pid` left behind: neither its
/// own child, nor there before it started (`before`), nor another run's
/// child or a member of its group (`running`, [`RUNNING`]).
fn strays_of(
    pid: i32,
    children: BTreeSet<i32>,
    before: &BTreeSet<i32>,
    running: &BTreeSet<i32>,
    group_of: impl Fn(i32) -> Option<i32>,
) -> Vec<i32> {
    let partner = |q: i32| q != pid && running.contains(&q);
    children
        .into_iter()
        .filter(|&p| p != pid && !before.contains(&p))
        .filter(|&p| !partner(p) && !group_of(p).is_some_and(partner))
        .collect()
}

/// Kills what the exited child `pid` left behind and returns how many
/// processes that was. Its process group gets SIGKILL; and since this
/// process is their subreaper ([`become_subreaper`]), every descendant that
/// outlived its parent, even in a session of its own, is now a child of
/// this process that was not one before the run (`before`) and is neither
/// another run's child nor in its group: each is killed and reaped, which
/// hands its own children up here in turn, until none is left.
fn kill_strays(pid: i32, before: &BTreeSet<i32>) -> usize {
    let mut seen = BTreeSet::new();
    // Bounded: a fork bomb outrunning the kills still ends the loop.
    for _ in 0..10_000 {
        kill_group(pid);
        let strays = {
            // Scanned under the lock: a partner is registered by then.
            let running = running();
            strays_of(pid, children(), before, &running, group_of)
        };
        if strays.is_empty() {
            break;
        }
        for stray in strays {
            seen.insert(stray);
            // SAFETY: signalling and reaping a child of ours.
            unsafe {
                libc::kill(stray, libc::SIGKILL);
                libc::waitpid(stray, std::ptr::null_mut(), 0);
            }
        }
    }
    seen.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A duet's runs are children of one process at once: the first to end
    /// takes neither its partner nor what is in the partner's group for
    /// its strays, but does take what it left, in its group or out of it.
    #[test]
    fn a_runs_strays_are_neither_its_partners_nor_in_their_groups() {
        let set = |pids: &[i32]| pids.iter().copied().collect::<BTreeSet<i32>>();
        // Run 10 and its partner 20 (started after it); 11 is in 10's group,
        // 12 left it (setsid), 21 is in 20's group, 5 was there before.
        let groups = |p: i32| Some(if p == 12 { 12 } else { p / 10 * 10 });
        let children = set(&[5, 10, 11, 12, 20, 21]);
        let strays = strays_of(10, children, &set(&[5]), &set(&[10, 20]), groups);
        assert_eq!(strays, [11, 12]);
    }
}
