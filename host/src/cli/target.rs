//! `blocklab target grpc-ingest`: a local target for gRPC arms.

use anyhow::Context;
use clap::{Args, Subcommand};
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub(super) enum TargetCommand {
    /// The ingest.v1 gRPC server: a bidirectional ingest stream with
    /// cumulative durability acks, a unary Echo and the standard health
    /// service. Prints `listening on ADDR` once bound; runs until killed.
    GrpcIngest(GrpcIngestArgs),
}

#[derive(Debug, Args)]
pub(super) struct GrpcIngestArgs {
    /// Address to listen on; port 0 picks a free one (printed).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50051")]
    listen: std::net::SocketAddr,
    /// Pin the server to these CPUs, e.g. `2-3`.
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    #[command(flatten)]
    settings: crate::target::grpc::IngestSettings,
}

pub(super) fn main(command: TargetCommand) -> anyhow::Result<ExitCode> {
    match command {
        TargetCommand::GrpcIngest(args) => grpc_ingest(args),
    }
}

fn grpc_ingest(args: GrpcIngestArgs) -> anyhow::Result<ExitCode> {
    if let Some(list) = &args.cpus {
        let cpus = crate::machine::placement::parse_cpu_list(list).context("in `--cpus`")?;
        crate::machine::placement::pin_current(&cpus)
            .with_context(|| format!("cannot pin the server to CPUs `{list}`"))?;
    }
    let listener = std::net::TcpListener::bind(args.listen).with_context(|| {
        format!(
            "cannot listen on `{}` (is the port in use? `--listen 127.0.0.1:0` picks a free one)",
            args.listen
        )
    })?;
    crate::target::grpc::server::serve(listener, args.settings)?;
    Ok(ExitCode::SUCCESS)
}
