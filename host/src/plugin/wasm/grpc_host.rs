//! The host side of the WIT `grpc` interface: unary calls and streams of a
//! plugin instance go to the run's [`GrpcClient`]. Each call blocks the
//! plugin's worker thread on the client's runtime (`Handle::block_on`); the
//! guest stays synchronous.

use super::{HostState, wit_grpc};
use crate::target::grpc::{GrpcClient, GrpcStream};
use anyhow::bail;
use bytes::Bytes;
use std::sync::Arc;
use wasmtime::component::Resource;

/// The host side of a `grpc.stream` resource.
pub struct StreamHandle(GrpcStream);

fn to_wit(status: tonic::Status) -> wit_grpc::Status {
    wit_grpc::Status {
        code: status.code() as u32,
        message: status.message().to_owned(),
    }
}

impl HostState {
    fn grpc_client(&self) -> anyhow::Result<&Arc<GrpcClient>> {
        match &self.grpc {
            Some(client) => Ok(client),
            None => bail!(
                "the workload called grpc but the run has no grpc target; give `blocklab run` `--endpoint http://HOST:PORT`, or in a plan the arm's `target = {{ kind = \"grpc\", endpoint = ... }}` (a workload whose info declares `uses: grpc` is refused so before setup)"
            ),
        }
    }

    fn stream(&mut self, handle: &Resource<StreamHandle>) -> anyhow::Result<&mut GrpcStream> {
        Ok(&mut self.table.get_mut(handle)?.0)
    }
}

type GrpcResult<T> = anyhow::Result<Result<T, wit_grpc::Status>>;

impl wit_grpc::Host for HostState {
    fn unary(&mut self, method: String, request: Vec<u8>) -> GrpcResult<Vec<u8>> {
        let client = self.grpc_client()?;
        Ok(client
            .unary(&method, Bytes::from(request))
            .map(Vec::from)
            .map_err(to_wit))
    }

    fn open_stream(&mut self, method: String) -> GrpcResult<Resource<StreamHandle>> {
        let client = self.grpc_client()?;
        match client.open_stream(&method) {
            Ok(stream) => Ok(Ok(self.hold(StreamHandle(stream))?)),
            Err(status) => Ok(Err(to_wit(status))),
        }
    }
}

impl wit_grpc::HostStream for HostState {
    fn send(&mut self, stream: Resource<StreamHandle>, message: Vec<u8>) -> GrpcResult<()> {
        Ok(self
            .stream(&stream)?
            .send(Bytes::from(message))
            .map_err(to_wit))
    }

    fn recv(&mut self, stream: Resource<StreamHandle>) -> GrpcResult<Option<Vec<u8>>> {
        Ok(self
            .stream(&stream)?
            .recv()
            .map(|m| m.map(Vec::from))
            .map_err(to_wit))
    }

    fn close_send(&mut self, stream: Resource<StreamHandle>) -> anyhow::Result<()> {
        self.stream(&stream)?.close_send();
        Ok(())
    }

    fn drop(&mut self, stream: Resource<StreamHandle>) -> anyhow::Result<()> {
        self.release(stream).map(drop)
    }
}
