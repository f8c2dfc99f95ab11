//! The host side of `blocklab:bench@0.2.0`, linked over 0.3.0's as 0.1.0's
//! is over 0.2.0's: every kv and env call forwards to [`super::v3`] with
//! the error converted (the same cases), so a 0.2.0 plugin runs on exactly
//! the host implementation 0.3.0 plugins do; 0.1.0's calls reach it through
//! here. grpc is 0.1.0's calls under this package name and forwards to them.

use super::bindings_v2::blocklab::bench::{env as wit_env, grpc as wit_grpc, kv as wit_kv};
use super::bindings_v3::blocklab::bench::{env as v3_env, kv as v3_kv};
use super::{HostState, KvError, StreamHandle, TransactionHandle};
use v3_kv::HostTransaction as V3;
use wasmtime::component::Resource;

kv_error_conversions!(wit_kv);

type KvResult<T> = anyhow::Result<Result<T, wit_kv::Error>>;

/// A 0.3.0 kv answer as 0.2.0's.
fn v2<T>(answer: anyhow::Result<Result<T, v3_kv::Error>>) -> KvResult<T> {
    Ok(answer?.map_err(|e| to_wit(super::v3::from_wit(e))))
}

type Tr = Resource<TransactionHandle>;

impl wit_kv::Host for HostState {}

impl wit_kv::HostTransaction for HostState {
    fn new(&mut self) -> anyhow::Result<Tr> {
        V3::new(self)
    }

    fn get_read_version(&mut self, tr: Tr) -> KvResult<u64> {
        v2(V3::get_read_version(self, tr))
    }

    fn get(&mut self, tr: Tr, key: Vec<u8>, snapshot: bool) -> KvResult<Option<Vec<u8>>> {
        v2(V3::get(self, tr, key, snapshot))
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
        v2(V3::get_range(
            self, tr, begin, end, limit, reverse, snapshot,
        ))
    }

    fn set(&mut self, tr: Tr, key: Vec<u8>, value: Vec<u8>) -> anyhow::Result<()> {
        V3::set(self, tr, key, value)
    }

    fn clear(&mut self, tr: Tr, key: Vec<u8>) -> anyhow::Result<()> {
        V3::clear(self, tr, key)
    }

    fn clear_range(&mut self, tr: Tr, begin: Vec<u8>, end: Vec<u8>) -> anyhow::Result<()> {
        V3::clear_range(self, tr, begin, end)
    }

    fn commit(&mut self, tr: Tr) -> KvResult<u64> {
        v2(V3::commit(self, tr))
    }

    fn on_error(&mut self, tr: Tr, e: wit_kv::Error) -> KvResult<()> {
        v2(V3::on_error(self, tr, super::v3::to_wit(from_wit(e))))
    }

    fn cancel(&mut self, tr: Tr) -> anyhow::Result<()> {
        V3::cancel(self, tr)
    }

    fn reset(&mut self, tr: Tr) -> anyhow::Result<()> {
        V3::reset(self, tr)
    }

    fn drop(&mut self, tr: Tr) -> anyhow::Result<()> {
        V3::drop(self, tr)
    }
}

env_forwarding!(v3_env);

grpc_forwarding!();
