//! `blocklab serve`: the daemon.

use super::{CacheArgs, DataArgs};
use clap::Args;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Where to listen; loopback only (`127.0.0.1:0` lets the OS pick a port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    listen: std::net::SocketAddr,
    #[command(flatten)]
    cache: CacheArgs,
    /// Most `GET /api/events` streams open at once; more are refused with 503.
    #[arg(long, value_name = "N", default_value_t = crate::serve::DEFAULT_MAX_EVENT_STREAMS as u32,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    max_event_streams: u32,
    /// Accept posted plans with process arms, whose native programs run as
    /// this daemon's user (docs/process-arms.md): only where every holder of
    /// the token may run programs on this machine.
    #[arg(long)]
    allow_process_arms: bool,
    /// Also answer requests whose `Host` header names NAME (e.g. a name in
    /// /etc/hosts for this machine); by default only localhost, 127.0.0.1,
    /// [::1] and the listen address, against DNS rebinding. Repeatable.
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
}

pub(super) fn main(args: ServeArgs) -> anyhow::Result<ExitCode> {
    crate::serve::run(crate::serve::Config {
        data: args.data.data,
        listen: args.listen,
        cache_dir: args.cache.dir(),
        max_event_streams: args.max_event_streams as usize,
        allow_process_arms: args.allow_process_arms,
        allow_hosts: args.allow_hosts,
    })?;
    Ok(ExitCode::SUCCESS)
}
