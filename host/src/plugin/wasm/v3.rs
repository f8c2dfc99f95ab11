//! The host side of `blocklab:bench@0.3.0`, the version 0.2.0's kv and env
//! calls forward to ([`super::v2`], and 0.1.0's through it): the blocking
//! calls of 0.2.0, the same calls issued as futures ([`super::futures`]),
//! atomic operations, versionstamps, key selectors, conflict ranges, read
//! versions, size estimates and transaction options. Every call goes to the
//! arm's target through `target::kv::Transaction`; grpc is 0.1.0's calls
//! under the new package name and forwards to them. `set` and `get` are
//! linked a second time over bindgen's, reading their bytes in place
//! ([`link_borrowed_lists`]), since they are the hottest crossings.

use super::bindings_v3::blocklab::bench::{env as wit_env, grpc as wit_grpc, kv as wit_kv};
use super::{FutureHandle, HostState, KvError, StreamHandle, TransactionHandle, WatchHandle};
use crate::target::kv::{
    ConflictKind, KeyRange, KeySelector, KeyValue, MutationType, OpKind, Priority, RangeLimits,
    RangeOptions, SelectorRange, StreamingMode, Transaction, TransactionOption,
};
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource, WasmList};

kv_error_conversions!(wit_kv);

type KvResult<T> = anyhow::Result<Result<T, wit_kv::Error>>;

/// The rows as `packed-rows` (wit/v0.2.0/kv.wit): per row, the key's length
/// (u32 LE), the key, the value's length (u32 LE), the value.
pub(crate) fn pack_rows(rows: &[KeyValue]) -> Vec<u8> {
    let bytes: usize = rows.iter().map(|r| 8 + r.key.len() + r.value.len()).sum();
    let mut packed = Vec::with_capacity(bytes);
    for row in rows {
        // Keys are at most 10,000 bytes and values 100,000, so lengths fit.
        packed.extend_from_slice(&(row.key.len() as u32).to_le_bytes());
        packed.extend_from_slice(&row.key);
        packed.extend_from_slice(&(row.value.len() as u32).to_le_bytes());
        packed.extend_from_slice(&row.value);
    }
    packed
}

fn selector(s: wit_kv::KeySelector) -> KeySelector {
    KeySelector {
        key: s.key,
        or_equal: s.or_equal,
        offset: s.offset,
    }
}

fn range_limits(o: wit_kv::RangeOptions) -> RangeLimits {
    RangeLimits {
        limit: o.limit,
        target_bytes: o.target_bytes,
        mode: match o.mode {
            wit_kv::StreamingMode::WantAll => StreamingMode::WantAll,
            wit_kv::StreamingMode::Iterator => StreamingMode::Iterator,
            wit_kv::StreamingMode::Exact => StreamingMode::Exact,
            wit_kv::StreamingMode::Small => StreamingMode::Small,
            wit_kv::StreamingMode::Medium => StreamingMode::Medium,
            wit_kv::StreamingMode::Large => StreamingMode::Large,
            wit_kv::StreamingMode::Serial => StreamingMode::Serial,
        },
        iteration: o.iteration,
        reverse: o.reverse,
        snapshot: o.snapshot,
    }
}

fn mutation(op: wit_kv::MutationType) -> MutationType {
    match op {
        wit_kv::MutationType::Add => MutationType::Add,
        wit_kv::MutationType::BitAnd => MutationType::BitAnd,
        wit_kv::MutationType::BitOr => MutationType::BitOr,
        wit_kv::MutationType::BitXor => MutationType::BitXor,
        wit_kv::MutationType::Max => MutationType::Max,
        wit_kv::MutationType::Min => MutationType::Min,
        wit_kv::MutationType::ByteMax => MutationType::ByteMax,
        wit_kv::MutationType::ByteMin => MutationType::ByteMin,
        wit_kv::MutationType::CompareAndClear => MutationType::CompareAndClear,
        wit_kv::MutationType::AppendIfFits => MutationType::AppendIfFits,
    }
}

fn option(o: wit_kv::TransactionOption) -> TransactionOption {
    use wit_kv::TransactionOption as W;
    match o {
        W::Timeout(ms) => TransactionOption::Timeout(ms),
        W::RetryLimit(n) => TransactionOption::RetryLimit(n),
        W::MaxRetryDelay(ms) => TransactionOption::MaxRetryDelay(ms),
        W::SizeLimit(n) => TransactionOption::SizeLimit(n),
        W::Priority(p) => TransactionOption::Priority(match p {
            wit_kv::Priority::Default => Priority::Default,
            wit_kv::Priority::Batch => Priority::Batch,
            wit_kv::Priority::SystemImmediate => Priority::SystemImmediate,
        }),
        W::ReadYourWritesDisable => TransactionOption::ReadYourWritesDisable,
        W::SnapshotRywEnable => TransactionOption::SnapshotRywEnable,
        W::SnapshotRywDisable => TransactionOption::SnapshotRywDisable,
        W::CausalReadRisky => TransactionOption::CausalReadRisky,
        W::LockAware => TransactionOption::LockAware,
    }
}

type Tr = Resource<TransactionHandle>;
type Future = Resource<FutureHandle>;
type Watch = Resource<WatchHandle>;

impl wit_kv::Host for HostState {
    fn wait_all(&mut self, futures: Vec<Future>) -> anyhow::Result<()> {
        HostState::wait_all(self, &futures)
    }

    fn wait_any(&mut self, futures: Vec<Future>) -> anyhow::Result<u32> {
        HostState::wait_any(self, &futures)
    }
}

impl wit_kv::HostFuture for HostState {
    fn is_ready(&mut self, f: Future) -> anyhow::Result<bool> {
        self.future_is_ready(&f)
    }

    fn wait(&mut self, f: Future) -> KvResult<wit_kv::Answer> {
        Ok(self.wait_future(&f)?.map_err(to_wit))
    }

    fn drop(&mut self, f: Future) -> anyhow::Result<()> {
        self.drop_future(f)
    }
}

impl wit_kv::HostTransaction for HostState {
    fn new(&mut self) -> anyhow::Result<Tr> {
        self.begin_transaction()
    }

    fn get_read_version(&mut self, tr: Tr) -> KvResult<u64> {
        self.wait_round_trip(&tr, OpKind::Grv)?;
        Ok(self.transaction(&tr)?.get_read_version().map_err(to_wit))
    }

    fn get(&mut self, tr: Tr, key: Vec<u8>, snapshot: bool) -> KvResult<Option<Vec<u8>>> {
        self.point_get(&tr, &key, snapshot)
    }

    fn get_range(
        &mut self,
        tr: Tr,
        begin: Vec<u8>,
        end: Vec<u8>,
        limit: u32,
        reverse: bool,
        snapshot: bool,
    ) -> KvResult<Vec<u8>> {
        let options = RangeOptions {
            limit,
            reverse,
            snapshot,
        };
        let rows = self.range_rows(&tr, &begin, &end, options)?;
        Ok(rows.map(|rows| pack_rows(&rows)).map_err(to_wit))
    }

    fn set(&mut self, tr: Tr, key: Vec<u8>, value: Vec<u8>) -> anyhow::Result<()> {
        self.transaction(&tr)?.set(&key, &value);
        Ok(())
    }

    fn clear(&mut self, tr: Tr, key: Vec<u8>) -> anyhow::Result<()> {
        self.transaction(&tr)?.clear(&key);
        Ok(())
    }

    fn clear_range(&mut self, tr: Tr, begin: Vec<u8>, end: Vec<u8>) -> anyhow::Result<()> {
        self.transaction(&tr)?.clear_range(&begin, &end);
        Ok(())
    }

    fn commit(&mut self, tr: Tr) -> KvResult<u64> {
        self.wait_round_trip(&tr, OpKind::Commit)?;
        let result = self.transaction(&tr)?.commit();
        self.settle_stamps(&tr, false)?;
        Ok(result.map_err(to_wit))
    }

    fn on_error(&mut self, tr: Tr, e: wit_kv::Error) -> KvResult<()> {
        let result = self.transaction(&tr)?.on_error(from_wit(e));
        // A retry starts over: a new read version, and the versionstamp
        // futures of the failed attempt are answered `cancelled`.
        self.settle_stamps(&tr, true)?;
        self.table.get_mut(&tr)?.grv_ready = None;
        Ok(result.map_err(to_wit))
    }

    fn cancel(&mut self, tr: Tr) -> anyhow::Result<()> {
        self.transaction(&tr)?.cancel();
        self.settle_stamps(&tr, true)
    }

    fn reset(&mut self, tr: Tr) -> anyhow::Result<()> {
        self.settle_stamps(&tr, true)?;
        self.reset_transaction(&tr)
    }

    fn start_get_read_version(&mut self, tr: Tr) -> anyhow::Result<Future> {
        let answer = self.transaction(&tr)?.get_read_version();
        self.issue(&tr, OpKind::Grv, answer.map(wit_kv::Answer::Version))
    }

    fn start_get(&mut self, tr: Tr, key: Vec<u8>, snapshot: bool) -> anyhow::Result<Future> {
        let answer = self.transaction(&tr)?.get(&key, snapshot);
        self.issue(&tr, OpKind::Read, answer.map(wit_kv::Answer::Value))
    }

    fn start_get_key(
        &mut self,
        tr: Tr,
        s: wit_kv::KeySelector,
        snapshot: bool,
    ) -> anyhow::Result<Future> {
        let answer = self.transaction(&tr)?.get_key(&selector(s), snapshot);
        self.issue(&tr, OpKind::Read, answer.map(wit_kv::Answer::Key))
    }

    fn start_get_range(
        &mut self,
        tr: Tr,
        begin: wit_kv::KeySelector,
        end: wit_kv::KeySelector,
        options: wit_kv::RangeOptions,
    ) -> anyhow::Result<Future> {
        let (begin, end) = (selector(begin), selector(end));
        let range = SelectorRange {
            begin: &begin,
            end: &end,
        };
        let answer = self
            .transaction(&tr)?
            .get_range_selected(range, range_limits(options));
        let answer = answer.map(|r| {
            wit_kv::Answer::Range(wit_kv::RangeResult {
                rows: pack_rows(&r.rows),
                more: r.more,
            })
        });
        self.issue(&tr, OpKind::Read, answer)
    }

    fn start_commit(&mut self, tr: Tr) -> anyhow::Result<Future> {
        let answer = self.transaction(&tr)?.commit();
        self.settle_stamps(&tr, false)?;
        self.issue(&tr, OpKind::Commit, answer.map(wit_kv::Answer::Version))
    }

    fn start_get_estimated_range_size_bytes(
        &mut self,
        tr: Tr,
        begin: Vec<u8>,
        end: Vec<u8>,
    ) -> anyhow::Result<Future> {
        let answer = self
            .transaction(&tr)?
            .get_estimated_range_size_bytes(&begin, &end);
        self.issue(&tr, OpKind::Read, answer.map(wit_kv::Answer::Size))
    }

    fn atomic_op(
        &mut self,
        tr: Tr,
        op: wit_kv::MutationType,
        key: Vec<u8>,
        operand: Vec<u8>,
    ) -> anyhow::Result<()> {
        self.transaction(&tr)?
            .atomic_op(mutation(op), &key, &operand);
        Ok(())
    }

    fn set_versionstamped_key(
        &mut self,
        tr: Tr,
        key: Vec<u8>,
        offset: u32,
        value: Vec<u8>,
    ) -> anyhow::Result<()> {
        self.transaction(&tr)?
            .set_versionstamped_key(&key, offset, &value);
        Ok(())
    }

    fn set_versionstamped_value(
        &mut self,
        tr: Tr,
        key: Vec<u8>,
        value: Vec<u8>,
        offset: u32,
    ) -> anyhow::Result<()> {
        self.transaction(&tr)?
            .set_versionstamped_value(&key, &value, offset);
        Ok(())
    }

    fn get_versionstamp(&mut self, tr: Tr) -> anyhow::Result<Future> {
        self.transaction(&tr)?;
        self.issue_versionstamp(tr)
    }

    fn add_conflict_range(
        &mut self,
        tr: Tr,
        kind: wit_kv::ConflictKind,
        begin: Vec<u8>,
        end: Vec<u8>,
    ) -> anyhow::Result<()> {
        let kind = match kind {
            wit_kv::ConflictKind::Read => ConflictKind::Read,
            wit_kv::ConflictKind::Write => ConflictKind::Write,
        };
        self.transaction(&tr)?
            .add_conflict_range(kind, &begin, &end);
        Ok(())
    }

    fn set_read_version(&mut self, tr: Tr, version: u64) -> anyhow::Result<()> {
        self.transaction(&tr)?.set_read_version(version);
        // The caller supplied it: no GRV round trip to wait for.
        self.table.get_mut(&tr)?.grv_ready = Some(std::time::Instant::now());
        Ok(())
    }

    fn get_committed_version(&mut self, tr: Tr) -> anyhow::Result<Option<u64>> {
        Ok(self.transaction(&tr)?.get_committed_version())
    }

    fn get_approximate_size(&mut self, tr: Tr) -> KvResult<u64> {
        Ok(self
            .transaction(&tr)?
            .get_approximate_size()
            .map_err(to_wit))
    }

    fn set_option(&mut self, tr: Tr, o: wit_kv::TransactionOption) -> anyhow::Result<()> {
        self.transaction(&tr)?.set_option(option(o));
        Ok(())
    }

    fn watch(&mut self, tr: Tr, key: Vec<u8>) -> anyhow::Result<Watch> {
        let watch = self.transaction(&tr)?.watch(&key);
        self.hold(WatchHandle(watch))
    }

    fn drop(&mut self, tr: Tr) -> anyhow::Result<()> {
        self.settle_stamps(&tr, true)?;
        self.drop_transaction(tr)
    }
}

impl wit_kv::HostWatch for HostState {
    fn is_ready(&mut self, w: Watch) -> anyhow::Result<bool> {
        Ok(self.table.get_mut(&w)?.0.is_ready())
    }

    fn wait(&mut self, w: Watch) -> KvResult<()> {
        let fired = self.table.get_mut(&w)?.0.wait(None);
        Ok(fired.map(drop).map_err(to_wit))
    }

    fn wait_for(&mut self, w: Watch, timeout_ms: u32) -> KvResult<bool> {
        let timeout = std::time::Duration::from_millis(timeout_ms.into());
        Ok(self
            .table
            .get_mut(&w)?
            .0
            .wait(Some(timeout))
            .map_err(to_wit))
    }

    fn drop(&mut self, w: Watch) -> anyhow::Result<()> {
        self.release(w).map(drop)
    }
}

impl HostState {
    pub(super) fn transaction(
        &mut self,
        handle: &Resource<TransactionHandle>,
    ) -> anyhow::Result<&mut dyn Transaction> {
        let handle = self.table.get_mut(handle)?;
        if handle.idle {
            handle.idle = false;
            self.idle_transactions -= 1;
        }
        Ok(handle.tr.as_mut())
    }

    pub(super) fn begin_transaction(&mut self) -> anyhow::Result<Resource<TransactionHandle>> {
        let Some(db) = &self.kv else {
            anyhow::bail!(
                "the workload opened a kv transaction but the run has no kv target; leave out `blocklab run`'s `--endpoint`, or in a plan give the arm `target = {{ kind = \"embedded\" }}` (a workload whose info declares `uses: kv` is refused so before setup)"
            );
        };
        let tr = db.begin();
        self.hold(TransactionHandle {
            tr,
            idle: false,
            stamp_waiters: Vec::new(),
            grv_ready: None,
        })
    }

    pub(super) fn drop_transaction(
        &mut self,
        handle: Resource<TransactionHandle>,
    ) -> anyhow::Result<()> {
        if self.release(handle)?.idle {
            self.idle_transactions -= 1;
        }
        Ok(())
    }

    /// A fresh transaction from the target in place of the old one: what a
    /// constructor gives, without a table push and delete.
    fn reset_transaction(&mut self, handle: &Resource<TransactionHandle>) -> anyhow::Result<()> {
        let Some(db) = &self.kv else {
            // Only a constructor, which needs the target, makes handles.
            anyhow::bail!("a kv transaction was reset but this arm has no kv target");
        };
        let fresh = db.begin();
        let handle = self.table.get_mut(handle)?;
        handle.tr = fresh;
        handle.grv_ready = None;
        if !handle.idle {
            handle.idle = true;
            self.idle_transactions += 1;
        }
        Ok(())
    }
}

impl wit_env::Host for HostState {
    fn now_ns(&mut self) -> anyhow::Result<u64> {
        Ok(self.env.now_ns())
    }

    fn random(&mut self, len: u32) -> anyhow::Result<Vec<u8>> {
        // One call may not ask for more than the memory cap could ever hold.
        if u64::from(len) > self.limiter.cap {
            anyhow::bail!("env.random asked for {len} bytes, more than the memory cap");
        }
        Ok(self.env.random(len))
    }

    fn count(&mut self, name: String, delta: i64) -> anyhow::Result<()> {
        self.env.count(&name, delta);
        Ok(())
    }

    fn log(&mut self, level: u8, message: String) -> anyhow::Result<()> {
        self.env.log(level, &message);
        Ok(())
    }
}

impl HostState {
    /// A point read after its simulated round trip: bindgen's `get` and the
    /// borrowed-list one of [`link_borrowed_lists`].
    fn point_get(&mut self, tr: &Tr, key: &[u8], snapshot: bool) -> KvResult<Option<Vec<u8>>> {
        self.wait_round_trip(tr, OpKind::Read)?;
        Ok(self.transaction(tr)?.get(key, snapshot).map_err(to_wit))
    }

    /// A range read's rows after its simulated round trip: 0.3.0 and 0.2.0
    /// pack them, 0.1.0 lists them, so every version's range read goes
    /// through here.
    pub(super) fn range_rows(
        &mut self,
        tr: &Tr,
        begin: &[u8],
        end: &[u8],
        options: RangeOptions,
    ) -> anyhow::Result<Result<Vec<crate::target::kv::KeyValue>, KvError>> {
        self.wait_round_trip(tr, OpKind::Read)?;
        Ok(self
            .transaction(tr)?
            .get_range(KeyRange { begin, end }, options))
    }
}

grpc_forwarding!();

/// `set` and `get` of 0.3.0's transaction again, over bindgen's: their
/// keys and values are read in place from the guest's memory into one
/// buffer the instance reuses, where bindgen lifts each list into a fresh
/// `Vec` byte by byte (an allocation, a loop and a free per list: about
/// 50 ns of a ryw's crossings, docs/benchmarks.md). The two hottest calls
/// of every kv workload; the others keep bindgen's.
pub(super) fn link_borrowed_lists(linker: &mut Linker<HostState>) -> anyhow::Result<()> {
    linker.allow_shadowing(true);
    let mut kv = linker.instance("blocklab:bench/kv@0.3.0")?;
    kv.func_wrap(
        "[method]transaction.set",
        |mut cx: StoreContextMut<'_, HostState>,
         (tr, key, value): (Tr, WasmList<u8>, WasmList<u8>)| {
            with_guest_bytes(&mut cx, [&key, &value], |state, [key, value]| {
                state.transaction(&tr)?.set(key, value);
                Ok(())
            })
        },
    )?;
    kv.func_wrap(
        "[method]transaction.get",
        |mut cx: StoreContextMut<'_, HostState>, (tr, key, snapshot): (Tr, WasmList<u8>, bool)| {
            with_guest_bytes(&mut cx, [&key], |state, [key]| {
                state.point_get(&tr, key, snapshot)
            })
            .map(|got| (got,))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Runs `f` on the host state with `lists` copied out of guest memory into
/// the instance's scratch buffer (the slices borrow the store, which `f`
/// needs mutably).
fn with_guest_bytes<const N: usize, R>(
    cx: &mut StoreContextMut<'_, HostState>,
    lists: [&WasmList<u8>; N],
    f: impl FnOnce(&mut HostState, [&[u8]; N]) -> anyhow::Result<R>,
) -> wasmtime::Result<R> {
    let mut buf = std::mem::take(&mut cx.data_mut().scratch);
    buf.clear();
    let ends = lists.map(|list| {
        buf.extend_from_slice(list.as_le_slice(&*cx));
        buf.len()
    });
    let slices = std::array::from_fn(|i| &buf[if i == 0 { 0 } else { ends[i - 1] }..ends[i]]);
    let state = cx.data_mut();
    let result = f(state, slices);
    state.scratch = buf;
    result.map_err(wasmtime::Error::from_anyhow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_rows_are_length_prefixed_keys_and_values_in_order() {
        let rows = [
            KeyValue {
                key: b"a".to_vec(),
                value: b"xyz".to_vec(),
            },
            KeyValue {
                key: b"bc".to_vec(),
                value: Vec::new(),
            },
        ];
        let packed = pack_rows(&rows);
        let expected: Vec<u8> = [
            &1u32.to_le_bytes()[..],
            b"a",
            &3u32.to_le_bytes(),
            b"xyz",
            &2u32.to_le_bytes(),
            b"bc",
            &0u32.to_le_bytes(),
        ]
        .concat();
        assert_eq!(packed, expected);
        assert!(pack_rows(&[]).is_empty());
    }
}
