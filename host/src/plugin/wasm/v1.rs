//! The host side of `blocklab:bench@0.1.0`, linked over 0.2.0's as spin's
//! key-value factor links v1 over v2: kv and env calls forward to
//! [`super::v2`] with the error converted (the same cases); a range read
//! reads its rows through 0.3.0's (`range_rows`, with its simulated round
//! trip) but returns them as a list rather than packed; grpc is
//! 0.1.0's own (grpc_host.rs), which 0.2.0's forwards to.

use super::bindings::blocklab::bench::{env as wit_env, kv as wit_kv};
use super::bindings_v2::blocklab::bench::{env as v2_env, kv as v2_kv};
use super::{HostState, KvError, TransactionHandle};
use crate::target::kv::RangeOptions;
use v2_kv::HostTransaction as V2;
use wasmtime::component::Resource;

kv_error_conversions!(wit_kv);

type KvResult<T> = anyhow::Result<Result<T, wit_kv::Error>>;

/// A 0.2.0 kv answer as 0.1.0's.
fn v1<T>(answer: anyhow::Result<Result<T, v2_kv::Error>>) -> KvResult<T> {
    Ok(answer?.map_err(|e| to_wit(super::v2::from_wit(e))))
}

impl wit_kv::Host for HostState {}

impl wit_kv::HostTransaction for HostState {
    fn new(&mut self) -> anyhow::Result<Resource<TransactionHandle>> {
        V2::new(self)
    }

    fn get_read_version(&mut self, tr: Resource<TransactionHandle>) -> KvResult<u64> {
        v1(V2::get_read_version(self, tr))
    }

    fn get(
        &mut self,
        tr: Resource<TransactionHandle>,
        key: Vec<u8>,
        snapshot: bool,
    ) -> KvResult<Option<Vec<u8>>> {
        v1(V2::get(self, tr, key, snapshot))
    }

    fn get_range(
        &mut self,
        tr: Resource<TransactionHandle>,
        begin: Vec<u8>,
        end: Vec<u8>,
        limit: u32,
        reverse: bool,
        snapshot: bool,
    ) -> KvResult<Vec<wit_kv::KeyValue>> {
        let options = RangeOptions {
            limit,
            reverse,
            snapshot,
        };
        Ok(self
            .range_rows(&tr, &begin, &end, options)?
            .map(|rows| {
                rows.into_iter()
                    .map(|kv| wit_kv::KeyValue {
                        key: kv.key,
                        value: kv.value,
                    })
                    .collect()
            })
            .map_err(to_wit))
    }

    fn set(
        &mut self,
        tr: Resource<TransactionHandle>,
        key: Vec<u8>,
        value: Vec<u8>,
    ) -> anyhow::Result<()> {
        V2::set(self, tr, key, value)
    }

    fn clear(&mut self, tr: Resource<TransactionHandle>, key: Vec<u8>) -> anyhow::Result<()> {
        V2::clear(self, tr, key)
    }

    fn clear_range(
        &mut self,
        tr: Resource<TransactionHandle>,
        begin: Vec<u8>,
        end: Vec<u8>,
    ) -> anyhow::Result<()> {
        V2::clear_range(self, tr, begin, end)
    }

    fn commit(&mut self, tr: Resource<TransactionHandle>) -> KvResult<u64> {
        v1(V2::commit(self, tr))
    }

    fn on_error(&mut self, tr: Resource<TransactionHandle>, e: wit_kv::Error) -> KvResult<()> {
        v1(V2::on_error(self, tr, super::v2::to_wit(from_wit(e))))
    }

    fn cancel(&mut self, tr: Resource<TransactionHandle>) -> anyhow::Result<()> {
        V2::cancel(self, tr)
    }

    fn drop(&mut self, tr: Resource<TransactionHandle>) -> anyhow::Result<()> {
        V2::drop(self, tr)
    }
}

env_forwarding!(v2_env);
