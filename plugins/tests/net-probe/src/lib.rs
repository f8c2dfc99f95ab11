//! net-probe: a test-only workload plugin that opens TCP connections with
//! std's `TcpStream`, so it imports wasi:sockets. The host must refuse it
//! unless the arm grants `wasi:sockets`, and then let it reach only the
//! allowed addresses. Its `stat` workload reads file metadata, so it imports
//! wasi:filesystem too, and a refusal must name both grants at once.

use blocklab_sdk::{Info, Params, Plugin, Workload};
use std::net::{SocketAddr, TcpStream};

struct NetProbe;

impl Plugin for NetProbe {
    fn workloads() -> Vec<Info> {
        vec![
            Info::new(
                "connect",
                "one TCP connect to `addr` per transaction, then close",
            )
            .param("addr", "127.0.0.1:7000", "IP:PORT to connect to"),
            Info::new("stat", "one metadata read of `path` per transaction").param(
                "path",
                ".",
                "the file or directory to read",
            ),
        ]
    }

    fn setup(name: &str, params: &Params) -> Result<Box<dyn Workload>, String> {
        if name == "stat" {
            return Ok(Box::new(Stat(params.str("path")?.to_string())));
        }
        let text = params.str("addr")?;
        let addr: SocketAddr = text
            .parse()
            .map_err(|_| format!("param `addr` = `{text}` is not IP:PORT"))?;
        Ok(Box::new(Connect(addr)))
    }
}

struct Connect(SocketAddr);

impl Workload for Connect {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        TcpStream::connect(self.0)
            .map(drop)
            .map_err(|e| format!("connect to {} failed: {e}", self.0))?;
        Ok(0)
    }
}

struct Stat(String);

impl Workload for Stat {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        std::fs::metadata(&self.0).map_err(|e| format!("metadata of `{}`: {e}", self.0))?;
        Ok(0)
    }
}

blocklab_sdk::export_plugin!(NetProbe);
