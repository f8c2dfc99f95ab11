//! The host side of `blocklab:bench@0.2.0`, the kv and env calls 0.1.0's
//! forward to ([`super::v1`]); grpc is 0.1.0's calls under the new package
//! name and forwards to them. kv differs from 0.1.0 in two ways that cut
//! boundary cost: a range read returns its rows packed into one buffer,
//! and `reset` makes a transaction fresh again, so a client keeps one
//! resource instead of a constructor and a drop per transaction.

use super::bindings_v2::blocklab::bench::{env as wit_env, grpc as wit_grpc, kv as wit_kv};
use super::{HostState, KvError, StreamHandle, TransactionHandle};
use crate::target::kv::{KeyValue, RangeOptions, Transaction};
use wasmtime::component::Resource;

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

impl wit_kv::Host for HostState {}

impl wit_kv::HostTransaction for HostState {
    fn new(&mut self) -> anyhow::Result<Resource<TransactionHandle>> {
        self.begin_transaction()
    }

    fn get_read_version(&mut self, tr: Resource<TransactionHandle>) -> KvResult<u64> {
        Ok(self.transaction(&tr)?.get_read_version().map_err(to_wit))
    }

    fn get(
        &mut self,
        tr: Resource<TransactionHandle>,
        key: Vec<u8>,
        snapshot: bool,
    ) -> KvResult<Option<Vec<u8>>> {
        Ok(self.transaction(&tr)?.get(&key, snapshot).map_err(to_wit))
    }

    fn get_range(
        &mut self,
        tr: Resource<TransactionHandle>,
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
        Ok(self
            .transaction(&tr)?
            .get_range(&begin, &end, options)
            .map(|rows| pack_rows(&rows))
            .map_err(to_wit))
    }

    fn set(
        &mut self,
        tr: Resource<TransactionHandle>,
        key: Vec<u8>,
        value: Vec<u8>,
    ) -> anyhow::Result<()> {
        self.transaction(&tr)?.set(&key, &value);
        Ok(())
    }

    fn clear(&mut self, tr: Resource<TransactionHandle>, key: Vec<u8>) -> anyhow::Result<()> {
        self.transaction(&tr)?.clear(&key);
        Ok(())
    }

    fn clear_range(
        &mut self,
        tr: Resource<TransactionHandle>,
        begin: Vec<u8>,
        end: Vec<u8>,
    ) -> anyhow::Result<()> {
        self.transaction(&tr)?.clear_range(&begin, &end);
        Ok(())
    }

    fn commit(&mut self, tr: Resource<TransactionHandle>) -> KvResult<u64> {
        Ok(self.transaction(&tr)?.commit().map_err(to_wit))
    }

    fn on_error(&mut self, tr: Resource<TransactionHandle>, e: wit_kv::Error) -> KvResult<()> {
        Ok(self.transaction(&tr)?.on_error(from_wit(e)).map_err(to_wit))
    }

    fn cancel(&mut self, tr: Resource<TransactionHandle>) -> anyhow::Result<()> {
        self.transaction(&tr)?.cancel();
        Ok(())
    }

    fn reset(&mut self, tr: Resource<TransactionHandle>) -> anyhow::Result<()> {
        self.reset_transaction(&tr)
    }

    fn drop(&mut self, tr: Resource<TransactionHandle>) -> anyhow::Result<()> {
        self.drop_transaction(tr)
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
                "the workload opened a kv transaction but this arm has no kv target; set `target = {{ kind = \"embedded\" }}` on the arm"
            );
        };
        let tr = db.begin();
        let handle = self.table.push(TransactionHandle { tr, idle: false })?;
        self.live_resources += 1;
        Ok(handle)
    }

    pub(super) fn drop_transaction(
        &mut self,
        handle: Resource<TransactionHandle>,
    ) -> anyhow::Result<()> {
        if self.table.delete(handle)?.idle {
            self.idle_transactions -= 1;
        }
        self.live_resources = self.live_resources.saturating_sub(1);
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

fn status(s: super::wit_grpc::Status) -> wit_grpc::Status {
    wit_grpc::Status {
        code: s.code,
        message: s.message,
    }
}

type GrpcResult<T> = anyhow::Result<Result<T, wit_grpc::Status>>;

impl wit_grpc::Host for HostState {
    fn unary(&mut self, method: String, request: Vec<u8>) -> GrpcResult<Vec<u8>> {
        Ok(super::wit_grpc::Host::unary(self, method, request)?.map_err(status))
    }

    fn open_stream(&mut self, method: String) -> GrpcResult<Resource<StreamHandle>> {
        Ok(super::wit_grpc::Host::open_stream(self, method)?.map_err(status))
    }
}

impl wit_grpc::HostStream for HostState {
    fn send(&mut self, stream: Resource<StreamHandle>, message: Vec<u8>) -> GrpcResult<()> {
        Ok(super::wit_grpc::HostStream::send(self, stream, message)?.map_err(status))
    }

    fn recv(&mut self, stream: Resource<StreamHandle>) -> GrpcResult<Option<Vec<u8>>> {
        Ok(super::wit_grpc::HostStream::recv(self, stream)?.map_err(status))
    }

    fn close_send(&mut self, stream: Resource<StreamHandle>) -> anyhow::Result<()> {
        super::wit_grpc::HostStream::close_send(self, stream)
    }

    fn drop(&mut self, stream: Resource<StreamHandle>) -> anyhow::Result<()> {
        super::wit_grpc::HostStream::drop(self, stream)
    }
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
