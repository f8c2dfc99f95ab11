//! Where a transaction's time goes: every kv operation a workload makes in
//! the measured window, counted and timed per kind (docs/method.md, "Where
//! the time goes").
//!
//! One home for the timing: [`TimedDatabase`] wraps the arm's target where
//! the worker opens it, so every transaction of a builtin workload and of a
//! plugin of any WIT version is a [`TimedTransaction`], and every call of a
//! timed kind is timed here. The wasm host waits its simulated round trips
//! outside the transaction; that path only tells the recorder when a
//! blocking call's wait began ([`started_now`]) and when a future is ready
//! ([`ready_at`]), so an operation's time is always issue to ready.
//!
//! Recording is per thread, since each worker drives its instance on its
//! own thread: a worker of a run that asks for the breakdown
//! (`measure.operations`) arms the recorder before the window ([`prepare`],
//! which allocates), the driver switches it on for the measured window only
//! ([`start`]) and takes it at the end ([`finish`]). Outside the window, or
//! unarmed, a hook costs one thread-local check and no clock read; inside,
//! one `Instant` pair and a histogram record, no allocation.

use super::{
    ConflictKind, Database, KeyRange, KeySelector, KeyValue, KvError, MutationType, OpKind,
    RangeLimits, RangeOptions, RangeResult, SelectorRange, SimulatedLatency, Transaction,
    TransactionOption, Versionstamp,
};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Instant;

/// A kind of kv operation whose calls a run counts and times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvOp {
    /// Fetching the read version.
    Grv,
    /// A point read.
    Get,
    /// Resolving a key selector.
    GetKey,
    /// A range read, by keys or by selectors.
    GetRange,
    /// A commit.
    Commit,
    /// `on_error`: deciding on a retry, and its backoff wait.
    OnError,
}

impl KvOp {
    /// Every kind, in the order renderings list them (a transaction's own).
    pub const ALL: [KvOp; 6] = [
        KvOp::Grv,
        KvOp::Get,
        KvOp::GetKey,
        KvOp::GetRange,
        KvOp::Commit,
        KvOp::OnError,
    ];

    /// The name reports and the JSON use.
    pub fn name(self) -> &'static str {
        match self {
            KvOp::Grv => "grv",
            KvOp::Get => "get",
            KvOp::GetKey => "get_key",
            KvOp::GetRange => "get_range",
            KvOp::Commit => "commit",
            KvOp::OnError => "on_error",
        }
    }

    /// The simulated round trip an operation of this kind waits on a
    /// target with one (`on_error` waits none).
    pub fn round_trip(self) -> Option<OpKind> {
        match self {
            KvOp::Grv => Some(OpKind::Grv),
            KvOp::Get | KvOp::GetKey | KvOp::GetRange => Some(OpKind::Read),
            KvOp::Commit => Some(OpKind::Commit),
            KvOp::OnError => None,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What one thread recorded: per kind, its calls and their times from
/// issue to ready, nanoseconds.
#[derive(Debug, Clone)]
pub struct OpTimes {
    pub counts: [u64; 6],
    pub histograms: [Histogram<u64>; 6],
}

impl OpTimes {
    /// An empty record.
    pub fn new() -> anyhow::Result<OpTimes> {
        let h = histogram()?;
        Ok(OpTimes {
            counts: [0; 6],
            histograms: [h.clone(), h.clone(), h.clone(), h.clone(), h.clone(), h],
        })
    }

    /// Adds `other`'s calls and times to these.
    pub fn add(&mut self, other: &OpTimes) -> anyhow::Result<()> {
        for (n, m) in self.counts.iter_mut().zip(other.counts) {
            *n += m;
        }
        for (h, o) in self.histograms.iter_mut().zip(&other.histograms) {
            h.add(o)
                .map_err(|e| anyhow::anyhow!("operation histogram: {e:?}"))?;
        }
        Ok(())
    }

    /// Whether any call was recorded.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&n| n == 0)
    }

    /// The calls of `op`.
    pub fn count(&self, op: KvOp) -> u64 {
        self.counts[op.index()]
    }

    /// The times of `op`.
    pub fn histogram(&self, op: KvOp) -> &Histogram<u64> {
        &self.histograms[op.index()]
    }
}

/// The histogram an operation's times go in: the bounds and precision of
/// the run's transaction latency histogram (1 ns to 1 h, 3 digits).
fn histogram() -> anyhow::Result<Histogram<u64>> {
    Ok(Histogram::new_with_bounds(1, 3_600_000_000_000, 3)?)
}

/// The last timed call, kept until the next one so that a future's
/// readiness ([`ready_at`]) can extend it.
#[derive(Clone, Copy)]
struct Pending {
    op: KvOp,
    start: Instant,
    end: Instant,
    /// A future's readiness has not been applied yet.
    open: bool,
}

struct Recorder {
    times: OpTimes,
    on: bool,
    /// A blocking call's simulated wait began here ([`started_now`]).
    started: Option<Instant>,
    pending: Option<Pending>,
}

impl Recorder {
    fn flush(&mut self) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let ns = p.end.saturating_duration_since(p.start).as_nanos();
        self.times.histograms[p.op.index()]
            .saturating_record(u64::try_from(ns).unwrap_or(u64::MAX).max(1));
    }
}

thread_local! {
    static RECORDER: RefCell<Option<Recorder>> = const { RefCell::new(None) };
}

/// Arms this thread's recorder, off, with its histograms allocated (before
/// the measured window, so the window's allocation count is the
/// workload's).
pub fn prepare() -> anyhow::Result<()> {
    let times = OpTimes::new()?;
    RECORDER.with_borrow_mut(|r| {
        *r = Some(Recorder {
            times,
            on: false,
            started: None,
            pending: None,
        })
    });
    Ok(())
}

/// Starts recording on this thread (its measured window begins).
pub fn start() {
    RECORDER.with_borrow_mut(|r| {
        if let Some(r) = r {
            r.on = true;
        }
    });
}

/// Stops recording on this thread and returns what it recorded; `None` if
/// it was never prepared.
pub fn finish() -> Option<OpTimes> {
    RECORDER.with_borrow_mut(|r| {
        let mut r = r.take()?;
        r.flush();
        Some(r.times)
    })
}

/// The simulated round trip of the blocking call about to be made begins
/// now: its time counts from here. Outside the window it reads no clock.
pub fn started_now() {
    started_at(Instant::now);
}

/// As [`started_now`], from the instant `t` gives (read only in the window).
fn started_at(t: impl FnOnce() -> Instant) {
    RECORDER.with_borrow_mut(|r| {
        if let Some(r) = r.as_mut().filter(|r| r.on) {
            r.started = Some(t());
        }
    });
}

/// The call just made was issued as a future that is ready at `t`: its
/// time runs to then.
pub fn ready_at(t: Instant) {
    RECORDER.with_borrow_mut(|r| {
        if let Some(p) = r
            .as_mut()
            .and_then(|r| r.pending.as_mut())
            .filter(|p| p.open)
        {
            p.end = p.end.max(t);
            p.open = false;
        }
    });
}

/// When a call being recorded began; `None` outside the window.
fn begin() -> Option<Instant> {
    RECORDER.with_borrow_mut(|r| match r {
        Some(r) if r.on => Some(r.started.take().unwrap_or_else(Instant::now)),
        _ => None,
    })
}

fn end(op: KvOp, start: Option<Instant>) {
    let Some(start) = start else { return };
    let end = Instant::now();
    RECORDER.with_borrow_mut(|r| {
        let Some(r) = r else { return };
        r.times.counts[op.index()] += 1;
        r.flush();
        r.pending = Some(Pending {
            op,
            start,
            end,
            open: true,
        });
    });
}

/// A call that is not timed but is issued as a future: a readiness after
/// it must not extend the timed call before it.
fn untimed() {
    RECORDER.with_borrow_mut(|r| {
        if let Some(p) = r.as_mut().and_then(|r| r.pending.as_mut()) {
            p.open = false;
        }
    });
}

fn timed<T>(op: KvOp, call: impl FnOnce() -> T) -> T {
    let b = begin();
    let value = call();
    end(op, b);
    value
}

/// A target whose transactions are [`TimedTransaction`]s.
pub struct TimedDatabase(pub Arc<dyn Database>);

impl Database for TimedDatabase {
    fn begin(&self) -> Box<dyn Transaction> {
        Box::new(TimedTransaction(self.0.begin()))
    }
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn simulated_latency(&self) -> Option<SimulatedLatency> {
        self.0.simulated_latency()
    }
}

/// A transaction whose reads, read version, commit and `on_error` are
/// counted and timed; every other call passes straight through.
pub struct TimedTransaction(pub Box<dyn Transaction>);

impl Transaction for TimedTransaction {
    fn get_read_version(&mut self) -> Result<u64, KvError> {
        timed(KvOp::Grv, || self.0.get_read_version())
    }
    fn get(&mut self, key: &[u8], snapshot: bool) -> Result<Option<Vec<u8>>, KvError> {
        timed(KvOp::Get, || self.0.get(key, snapshot))
    }
    fn get_range(
        &mut self,
        range: KeyRange<'_>,
        options: RangeOptions,
    ) -> Result<Vec<KeyValue>, KvError> {
        timed(KvOp::GetRange, || self.0.get_range(range, options))
    }
    fn set(&mut self, key: &[u8], value: &[u8]) {
        self.0.set(key, value)
    }
    fn clear(&mut self, key: &[u8]) {
        self.0.clear(key)
    }
    fn clear_range(&mut self, begin: &[u8], end: &[u8]) {
        self.0.clear_range(begin, end)
    }
    fn commit(&mut self) -> Result<u64, KvError> {
        timed(KvOp::Commit, || self.0.commit())
    }
    fn on_error(&mut self, error: KvError) -> Result<(), KvError> {
        timed(KvOp::OnError, || self.0.on_error(error))
    }
    fn cancel(&mut self) {
        self.0.cancel()
    }
    fn get_key(&mut self, selector: &KeySelector, snapshot: bool) -> Result<Vec<u8>, KvError> {
        timed(KvOp::GetKey, || self.0.get_key(selector, snapshot))
    }
    fn get_range_selected(
        &mut self,
        range: SelectorRange<'_>,
        limits: RangeLimits,
    ) -> Result<RangeResult, KvError> {
        timed(KvOp::GetRange, || self.0.get_range_selected(range, limits))
    }
    fn atomic_op(&mut self, op: MutationType, key: &[u8], operand: &[u8]) {
        self.0.atomic_op(op, key, operand)
    }
    fn set_versionstamped_key(&mut self, key: &[u8], offset: u32, value: &[u8]) {
        self.0.set_versionstamped_key(key, offset, value)
    }
    fn set_versionstamped_value(&mut self, key: &[u8], value: &[u8], offset: u32) {
        self.0.set_versionstamped_value(key, value, offset)
    }
    fn request_versionstamp(&mut self) -> Result<(), KvError> {
        self.0.request_versionstamp()
    }
    fn versionstamp(&mut self) -> Result<Versionstamp, KvError> {
        self.0.versionstamp()
    }
    fn add_conflict_range(&mut self, kind: ConflictKind, begin: &[u8], end: &[u8]) {
        self.0.add_conflict_range(kind, begin, end)
    }
    fn set_read_version(&mut self, version: u64) {
        self.0.set_read_version(version)
    }
    fn get_committed_version(&self) -> Option<u64> {
        self.0.get_committed_version()
    }
    fn get_approximate_size(&mut self) -> Result<u64, KvError> {
        self.0.get_approximate_size()
    }
    fn get_estimated_range_size_bytes(&mut self, begin: &[u8], end: &[u8]) -> Result<u64, KvError> {
        untimed();
        self.0.get_estimated_range_size_bytes(begin, end)
    }
    fn set_option(&mut self, option: TransactionOption) {
        self.0.set_option(option)
    }
    fn watch(&mut self, key: &[u8]) -> Box<dyn super::Watch> {
        self.0.watch(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::kv::embedded::Embedded;
    use std::time::Duration;

    fn db() -> TimedDatabase {
        TimedDatabase(Arc::new(Embedded::new()))
    }

    #[test]
    fn only_the_window_is_recorded_and_each_kind_is_counted() {
        let db = db();
        prepare().unwrap();
        // Before `start`: the fixture's and the warmup's calls.
        db.begin().get(b"k", false).unwrap();
        start();
        let mut tr = db.begin();
        tr.get_read_version().unwrap();
        tr.get(b"a", false).unwrap();
        tr.get(b"b", false).unwrap();
        tr.set(b"a", b"1");
        tr.commit().unwrap();
        let times = finish().unwrap();
        let counts: Vec<u64> = KvOp::ALL.iter().map(|&op| times.count(op)).collect();
        assert_eq!(counts, [1, 2, 0, 0, 1, 0]);
        let h = times.histogram(KvOp::Get);
        assert_eq!(h.len(), 2, "every timed call is in its kind's histogram");
        // After `finish`, nothing is recorded.
        db.begin().get(b"k", false).unwrap();
        assert!(finish().is_none());
    }

    #[test]
    fn a_future_counts_to_its_readiness_and_a_blocking_call_from_its_wait() {
        let db = db();
        prepare().unwrap();
        start();
        let mut tr = db.begin();
        let t0 = Instant::now();
        started_at(|| t0 - Duration::from_secs(3));
        tr.get_read_version().unwrap();
        tr.get(b"k", false).unwrap();
        ready_at(Instant::now() + Duration::from_secs(5));
        // A second readiness belongs to no timed call.
        ready_at(Instant::now() + Duration::from_secs(50));
        let times = finish().unwrap();
        let grv = times.histogram(KvOp::Grv).max();
        let get = times.histogram(KvOp::Get).max();
        assert!(grv >= 3_000_000_000, "the wait before the call is in it");
        assert!(
            (5_000_000_000..50_000_000_000).contains(&get),
            "to the future's readiness, once: {get}"
        );
    }
}
