//! WIT 0.3.0's kv futures: the host side of the `future` resource, and
//! waiting on one or several.
//!
//! A call issued through a `start-*` function runs against the target at
//! once (so a read sees exactly the writes made before it, as
//! FoundationDB's read-your-writes does for a read issued then) and its
//! answer is kept in the future. What a future adds is *when* the answer is
//! ready: with a simulated round trip (docs/plans.md, `grv_us`, `read_us`,
//! `commit_us` on an embedded target) it is ready that long after it was
//! issued, so futures issued together wait out their round trips together,
//! as on a cluster; without one it is ready at once. `get-versionstamp`'s
//! future is the exception: it is answered when its transaction commits.
//!
//! Why a resource with a blocking `wait` rather than the component model's
//! async functions: docs/adr/0006-kv-futures.md.

use std::time::Instant;

use super::bindings_v3::blocklab::bench::kv::Answer;
use super::{HostState, TransactionHandle};
use crate::target::kv::{KvError, OpKind, ops};
use wasmtime::component::Resource;

/// The host side of a `kv.future` resource.
pub struct FutureHandle {
    state: State,
    /// When the answer is ready; `None` is now.
    ready_at: Option<Instant>,
}

enum State {
    Ready(Result<Answer, KvError>),
    /// `get-versionstamp` before its transaction committed.
    AwaitingCommit,
}

fn not_set() -> KvError {
    KvError::Other {
        code: 2015,
        message: "future_not_set: this versionstamp future is answered when its transaction commits; commit first (a cluster would wait forever here)".to_owned(),
    }
}

impl FutureHandle {
    fn is_ready(&self) -> bool {
        matches!(self.state, State::Ready(_)) && self.ready_at.is_none_or(|t| Instant::now() >= t)
    }
}

impl HostState {
    /// A future for `answer`, ready after the simulated round trip of
    /// `kind` (none without a simulation). A read waits for its
    /// transaction's read version first, as a cluster's read does.
    pub(super) fn issue(
        &mut self,
        tr: &Resource<TransactionHandle>,
        kind: OpKind,
        answer: Result<Answer, KvError>,
    ) -> anyhow::Result<Resource<FutureHandle>> {
        let ready_at = self.ready_at(tr, kind)?;
        if let Some(t) = ready_at {
            // The call was timed when issued; its time runs to readiness.
            ops::ready_at(t);
        }
        self.hold(FutureHandle {
            state: State::Ready(answer),
            ready_at,
        })
    }

    /// When an operation of `kind` on `tr` issued now is ready: `None`
    /// without a simulated latency.
    fn ready_at(
        &mut self,
        tr: &Resource<TransactionHandle>,
        kind: OpKind,
    ) -> anyhow::Result<Option<Instant>> {
        let Some(sim) = self.sim else {
            return Ok(None);
        };
        let delay = sim.delay(kind, &mut self.sim_rng);
        let now = Instant::now();
        let handle = self.table.get_mut(tr)?;
        let start = match (kind, handle.grv_ready) {
            (OpKind::Grv, _) => now,
            (_, Some(t)) => t.max(now),
            // A read or commit of a transaction without a read version
            // fetches one first.
            (_, None) => {
                let t = now + sim.delay(OpKind::Grv, &mut self.sim_rng);
                handle.grv_ready = Some(t);
                t
            }
        };
        let ready = start + delay;
        if kind == OpKind::Grv && handle.grv_ready.is_none() {
            handle.grv_ready = Some(ready);
        }
        Ok(Some(ready))
    }

    /// A blocking call's simulated round trip: issue and wait at once.
    pub(super) fn wait_round_trip(
        &mut self,
        tr: &Resource<TransactionHandle>,
        kind: OpKind,
    ) -> anyhow::Result<()> {
        if let Some(t) = self.ready_at(tr, kind)? {
            // The call's recorded time starts with its round trip.
            ops::started_now();
            sleep_until(t);
        }
        Ok(())
    }

    /// A `get-versionstamp` future: answered now if the transaction can no
    /// longer commit (used after commit, ended), else at its commit.
    pub(super) fn issue_versionstamp(
        &mut self,
        tr: Resource<TransactionHandle>,
    ) -> anyhow::Result<Resource<FutureHandle>> {
        let handle = self.table.get_mut(&tr)?;
        if let Err(e) = handle.tr.request_versionstamp() {
            return self.hold(FutureHandle {
                state: State::Ready(Err(e)),
                ready_at: None,
            });
        }
        let future = self.hold(FutureHandle {
            state: State::AwaitingCommit,
            ready_at: None,
        })?;
        self.table.get_mut(&tr)?.stamp_waiters.push(future.rep());
        Ok(future)
    }

    /// Answers the versionstamp futures of `tr` after a commit attempt
    /// (or a reset, which answers them `transaction_cancelled`).
    pub(super) fn settle_stamps(
        &mut self,
        tr: &Resource<TransactionHandle>,
        reset: bool,
    ) -> anyhow::Result<()> {
        let handle = self.table.get_mut(tr)?;
        if handle.stamp_waiters.is_empty() {
            return Ok(());
        }
        let answer = match reset {
            true => Err(KvError::Cancelled),
            false => handle.tr.versionstamp(),
        };
        // A failed commit leaves the futures waiting for a later one, as
        // FoundationDB's do until the transaction is reset or retried.
        if !reset && answer.as_ref().is_err_and(|e| e.code() == 2015) {
            return Ok(());
        }
        let answer = answer.map(|stamp| Answer::Versionstamp(stamp.to_vec()));
        let ready_at = handle.grv_ready.map(|_| Instant::now());
        for rep in std::mem::take(&mut handle.stamp_waiters) {
            let future: Resource<FutureHandle> = Resource::new_borrow(rep);
            // The guest may have dropped it already: nothing to answer.
            if let Ok(f) = self.table.get_mut(&future) {
                f.state = State::Ready(answer.clone());
                f.ready_at = ready_at;
            }
        }
        Ok(())
    }

    pub(super) fn future_is_ready(&mut self, f: &Resource<FutureHandle>) -> anyhow::Result<bool> {
        Ok(self.table.get(f)?.is_ready())
    }

    /// Blocks until `f` is ready and returns its answer.
    pub(super) fn wait_future(
        &mut self,
        f: &Resource<FutureHandle>,
    ) -> anyhow::Result<Result<Answer, KvError>> {
        let future = self.table.get(f)?;
        if let Some(t) = future.ready_at {
            sleep_until(t);
        }
        Ok(match &future.state {
            State::Ready(answer) => answer.clone(),
            State::AwaitingCommit => Err(not_set()),
        })
    }

    /// Blocks until every one of `futures` is ready: their simulated round
    /// trips overlap, so this costs the longest of them.
    pub(super) fn wait_all(&mut self, futures: &[Resource<FutureHandle>]) -> anyhow::Result<()> {
        let mut last = None;
        for f in futures {
            let ready_at = self.table.get(f)?.ready_at;
            last = last.max(ready_at);
        }
        if let Some(t) = last {
            sleep_until(t);
        }
        Ok(())
    }

    /// Blocks until one of `futures` is ready; the index of the first
    /// ready one (a versionstamp future still waiting for its commit is
    /// never ready, so it is skipped while another can become ready).
    pub(super) fn wait_any(&mut self, futures: &[Resource<FutureHandle>]) -> anyhow::Result<u32> {
        let mut soonest: Option<(usize, Option<Instant>)> = None;
        for (i, f) in futures.iter().enumerate() {
            let future = self.table.get(f)?;
            if !matches!(future.state, State::Ready(_)) {
                continue;
            }
            let at = future.ready_at;
            // `None` (ready now) sorts first.
            if soonest.is_none_or(|(_, best)| {
                at.is_none() || best.is_some_and(|b| at.is_some_and(|a| a < b))
            }) {
                soonest = Some((i, at));
            }
        }
        let Some((index, at)) = soonest else {
            return Ok(0);
        };
        if let Some(t) = at {
            sleep_until(t);
        }
        Ok(u32::try_from(index).unwrap_or(u32::MAX))
    }

    pub(super) fn drop_future(&mut self, f: Resource<FutureHandle>) -> anyhow::Result<()> {
        self.release(f).map(drop)
    }
}

/// Sleeps until `t` (returns at once when it has passed).
fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}
