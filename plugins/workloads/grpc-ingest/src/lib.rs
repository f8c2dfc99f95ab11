//! grpc-ingest: the `ingest` (streaming, window mode) and `unary` (echo)
//! workloads against an ingest.v1 endpoint, as a blocklab workload plugin.
//!
//! The workloads live in [`ingest`], shared with the host's builtin copy;
//! this file connects them to the SDK's grpc client and env.

use blocklab_ingest::ingest;

use blocklab_sdk::{Info, Params, Plugin, Workload, env, grpc};

struct GrpcIngest;

impl Plugin for GrpcIngest {
    fn workloads() -> Vec<Info> {
        ingest::WORKLOADS
            .iter()
            .map(|spec| {
                Info::new(spec.name, spec.description)
                    .params(spec.params)
                    .uses("grpc")
            })
            .collect()
    }

    fn setup(name: &str, params: &Params) -> Result<Box<dyn Workload>, String> {
        let workload = ingest::Workload::setup(&mut Sdk, name, |p| params.u64(p))?;
        Ok(Box::new(Set(workload)))
    }
}

blocklab_sdk::export_plugin!(GrpcIngest);

struct Set(ingest::Workload<SdkStream>);

impl Workload for Set {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        self.0.run(&mut Sdk)
    }
}

/// The SDK as the workloads' [`ingest::Client`].
struct Sdk;

struct SdkStream(grpc::Stream);

impl ingest::Client for Sdk {
    type Stream = SdkStream;

    fn open_stream(&mut self, method: &str) -> Result<SdkStream, String> {
        grpc::Stream::open(method)
            .map(SdkStream)
            .map_err(String::from)
    }

    fn unary(&mut self, method: &str, request: &[u8]) -> Result<Vec<u8>, String> {
        grpc::unary(method, request).map_err(String::from)
    }

    fn now_ns(&mut self) -> u64 {
        env::now_ns()
    }

    fn count(&mut self, name: &str, delta: i64) {
        env::count(name, delta);
    }

    fn random(&mut self, len: u32) -> Vec<u8> {
        env::random(len)
    }
}

impl ingest::Stream for SdkStream {
    fn send(&mut self, message: &[u8]) -> Result<(), String> {
        self.0.send(message).map_err(String::from)
    }

    fn recv(&mut self) -> Result<Option<Vec<u8>>, String> {
        self.0.recv().map_err(String::from)
    }
}
