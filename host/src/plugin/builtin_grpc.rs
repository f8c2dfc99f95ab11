//! The builtin grpc workloads: grpc-ingest's `ingest` and `unary` performed
//! natively on the host's gRPC client instead of through a component.
//!
//! The workload code is the plugin's own, from the `blocklab-ingest` crate
//! (crates/ingest, with its hand-written wire format), so a builtin run and a plugin run send the same bytes and
//! differ only by the component boundary.

use super::env::Env;
use super::{Instance, WorkloadInfo};
use crate::target::Interface;
use crate::target::grpc::{CallOptions, GrpcClient, GrpcStream};
use anyhow::anyhow;
use bytes::Bytes;
use std::sync::Arc;

use blocklab_catalog::{params, status};
use blocklab_ingest::ingest;

/// grpc-ingest's workloads against a grpc target, without wasm.
pub struct BuiltinGrpc {
    client: Arc<GrpcClient>,
    env: Env,
    current: Option<ingest::Workload<HostStream>>,
}

impl BuiltinGrpc {
    /// Builtin grpc workloads calling through `client`, drawing from `env`.
    pub fn new(client: Arc<GrpcClient>, env: Env) -> Self {
        BuiltinGrpc {
            client,
            env,
            current: None,
        }
    }

    /// The workloads, without a client (for `blocklab workloads builtin`).
    pub fn infos() -> Vec<WorkloadInfo> {
        ingest::WORKLOADS
            .iter()
            .map(|spec| {
                WorkloadInfo::from_table(spec.name, spec.description, spec.params, Interface::Grpc)
            })
            .collect()
    }
}

/// The host's client and env as the workloads' [`ingest::Client`].
struct Host<'a> {
    client: &'a GrpcClient,
    env: &'a mut Env,
}

/// A stream and the method it was opened on, which its failures name.
struct HostStream {
    stream: GrpcStream,
    method: String,
}

fn describe(method: &str) -> impl Fn(tonic::Status) -> String + '_ {
    move |s| status::describe(s.code() as u32, method, s.message())
}

impl ingest::Client for Host<'_> {
    type Stream = HostStream;

    fn open_stream(&mut self, method: &str) -> Result<HostStream, String> {
        self.client
            .open_stream(method, CallOptions::default())
            .map(|stream| HostStream {
                stream,
                method: method.to_owned(),
            })
            .map_err(describe(method))
    }

    fn unary(&mut self, method: &str, request: &[u8]) -> Result<Vec<u8>, String> {
        self.client
            .unary(
                method,
                Bytes::copy_from_slice(request),
                CallOptions::default(),
            )
            .map(|reply| Vec::from(reply.message))
            .map_err(describe(method))
    }

    fn now_ns(&mut self) -> u64 {
        self.env.now_ns()
    }

    fn count(&mut self, name: &str, delta: i64) {
        self.env.count(name, delta);
    }

    fn random(&mut self, len: u32) -> Vec<u8> {
        self.env.random(len)
    }
}

impl ingest::Stream for HostStream {
    fn send(&mut self, message: &[u8]) -> Result<(), String> {
        // The component boundary copies the message out of linear memory;
        // this copy is the builtin's equivalent.
        self.stream
            .send(Bytes::copy_from_slice(message))
            .map_err(describe(&self.method))
    }

    fn recv(&mut self) -> Result<Option<Vec<u8>>, String> {
        self.stream
            .recv()
            .map(|m| m.map(Vec::from))
            .map_err(describe(&self.method))
    }
}

impl Instance for BuiltinGrpc {
    fn list(&mut self) -> anyhow::Result<Vec<WorkloadInfo>> {
        Ok(Self::infos())
    }

    fn setup(&mut self, name: &str, given: &[(String, String)]) -> anyhow::Result<()> {
        self.current = None;
        let spec = ingest::find(name).ok_or_else(|| {
            anyhow!(params::unknown_workload(
                name,
                ingest::WORKLOADS.iter().map(|s| s.name)
            ))
        })?;
        let params =
            params::Params::resolve(name, spec.params.iter().map(|(n, d, _)| (*n, *d)), given)
                .map_err(anyhow::Error::msg)?;
        let mut host = Host {
            client: &self.client,
            env: &mut self.env,
        };
        let workload = ingest::Workload::setup(&mut host, name, |p| params.u64(p))
            .map_err(|message| anyhow!("builtin workload `{name}` failed to set up: {message}"))?;
        self.current = Some(workload);
        Ok(())
    }

    fn run(&mut self, _iteration: u64) -> anyhow::Result<u32> {
        let current = self.current.as_mut().ok_or_else(|| {
            anyhow!("`run` was called before a successful `setup` (set a workload up first)")
        })?;
        let mut host = Host {
            client: &self.client,
            env: &mut self.env,
        };
        current
            .run(&mut host)
            .map_err(|message| anyhow!(crate::plugin::wasm::WorkloadFailed(message)))
    }

    fn env(&self) -> &Env {
        &self.env
    }
}

#[cfg(test)]
mod tests {
    use crate::target::grpc::proto::{Ack, Batch, EchoRequest, EchoResponse};
    use blocklab_ingest::wire;
    use prost::Message;

    #[test]
    fn the_hand_written_wire_format_is_ingest_v1() {
        let mut buf = Vec::new();
        wire::encode_batch(&mut buf, 300, 3, &[7u8; 200]);
        let batch = Batch::decode(buf.as_slice()).unwrap();
        let offsets: Vec<u64> = batch.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, [300, 301, 302]);
        assert!(batch.records.iter().all(|r| r.payload == [7u8; 200]));
        assert_eq!(buf, batch.encode_to_vec(), "byte for byte");

        // Offset 0 and an empty payload are left out, as proto3 does.
        wire::encode_batch(&mut buf, 0, 1, &[]);
        assert_eq!(buf, Batch::decode(buf.as_slice()).unwrap().encode_to_vec());

        // Two encoded batches concatenated decode as one with every record:
        // what the grpc-batching adapter relies on.
        let mut two = Vec::new();
        wire::encode_batch(&mut two, 1, 2, b"ab");
        let joined = [buf.clone(), two].concat();
        assert_eq!(Batch::decode(joined.as_slice()).unwrap().records.len(), 3);
        assert_eq!(wire::count_records(&joined), Ok(3));

        for next_offset in [0, 1, 127, 128, 1 << 40] {
            let ack = Ack { next_offset }.encode_to_vec();
            assert_eq!(wire::decode_ack(&ack), Ok(next_offset));
        }

        wire::encode_echo(&mut buf, b"hello");
        assert_eq!(
            EchoRequest::decode(buf.as_slice()).unwrap().payload,
            b"hello"
        );
        let response = EchoResponse {
            payload: vec![1; 300],
        }
        .encode_to_vec();
        assert_eq!(wire::decode_echo_len(&response), Ok(300));
    }
}
