//! Adapters composed with a workload component at load time (wac-graph).
//!
//! An adapter (world `kv-adapter` or `grpc-adapter` of wit/worlds.wit)
//! exports a client interface and imports the same one. Composing plugs the
//! adapter's export into the workload's import, so calls between them are
//! wasm-to-wasm and the composed component imports the adapter's client
//! interface from the host. Adapters chain: with `[a1, a2]` the workload
//! calls `a1`, `a1` calls `a2`, and `a2` calls the host.
//!
//! The composed bytes are what the host compiles, caches and hashes: the
//! same inputs compose to the same bytes, so a sealed plan can name them.

use anyhow::Context;
use std::path::{Path, PathBuf};
use wac_graph::types::Package;
use wac_graph::{CompositionGraph, EncodeOptions, PlugError};

/// Why a composition failed.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error(
        "adapter `{adapter}` exports nothing that `{socket}` imports (an adapter exports the client interface it wraps: `blocklab:bench/kv@0.3.0` for world `kv-adapter`, `blocklab:bench/grpc@0.5.0` for `grpc-adapter`; `blocklab plugin inspect` shows both sides' interfaces. Check that the workload uses the interface the adapter wraps, at the same version: a grpc adapter built before 0.5.0 exports grpc@0.3.0, and a kv adapter built before `transaction.watch` was added cannot wrap a workload that calls it; rebuild the adapter with this release's SDK)"
    )]
    NothingPlugged { adapter: String, socket: String },
    #[error("cannot compose adapter `{adapter}` with `{socket}`: {message}")]
    Graph {
        adapter: String,
        socket: String,
        message: String,
    },
}

/// Composes `workload` with `adapters` (name and bytes each), the first
/// adapter nearest the workload. `name` labels the workload in errors.
pub fn compose(
    name: &str,
    workload: &[u8],
    adapters: &[(String, Vec<u8>)],
) -> Result<Vec<u8>, ComposeError> {
    let mut socket_name = name.to_owned();
    let mut composed = workload.to_vec();
    for (adapter, bytes) in adapters {
        composed = plug_one(&socket_name, composed, adapter, bytes)?;
        socket_name = format!("{socket_name}+{adapter}");
    }
    Ok(composed)
}

/// Plugs one adapter's exports into the socket's imports and exports what
/// the socket exported.
fn plug_one(
    socket: &str,
    socket_bytes: Vec<u8>,
    adapter: &str,
    adapter_bytes: &[u8],
) -> Result<Vec<u8>, ComposeError> {
    let graph_error = |e: anyhow::Error| ComposeError::Graph {
        adapter: adapter.to_owned(),
        socket: socket.to_owned(),
        message: format!("{e:#}"),
    };
    let mut graph = CompositionGraph::new();
    let socket_package =
        Package::from_bytes("blocklab:socket", None, socket_bytes, graph.types_mut())
            .map_err(graph_error)?;
    let socket_id = graph
        .register_package(socket_package)
        .map_err(|e| graph_error(e.into()))?;
    let plug_package = Package::from_bytes(
        "blocklab:adapter",
        None,
        adapter_bytes.to_vec(),
        graph.types_mut(),
    )
    .map_err(graph_error)?;
    let plug_id = graph
        .register_package(plug_package)
        .map_err(|e| graph_error(e.into()))?;
    match wac_graph::plug(&mut graph, vec![plug_id], socket_id) {
        Ok(()) => {}
        Err(PlugError::NoPlugHappened) => {
            return Err(ComposeError::NothingPlugged {
                adapter: adapter.to_owned(),
                socket: socket.to_owned(),
            });
        }
        Err(e) => return Err(graph_error(e.into())),
    }
    graph
        .encode(EncodeOptions::default())
        .map_err(|e| graph_error(e.into()))
}

/// The file name of `path`, for labels.
pub fn file_label(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Reads the workload and adapter files and composes them; returns the
/// label (`kv-basic.wasm+kv-passthrough.wasm`) and the composed bytes.
pub fn compose_files(workload: &Path, adapters: &[PathBuf]) -> anyhow::Result<(String, Vec<u8>)> {
    let read = |path: &Path| -> anyhow::Result<Vec<u8>> {
        let bytes = super::wasm::read_plugin(path)?;
        super::wasm::check_header(&file_label(path), &bytes)?;
        Ok(bytes)
    };
    let bytes = read(workload)?;
    let mut parts = Vec::with_capacity(adapters.len());
    for path in adapters {
        parts.push((file_label(path), read(path)?));
    }
    let name = file_label(workload);
    let composed = compose(&name, &bytes, &parts)
        .with_context(|| format!("cannot compose the adapters of `{name}`"))?;
    let label = std::iter::once(name)
        .chain(parts.into_iter().map(|(n, _)| n))
        .collect::<Vec<_>>()
        .join("+");
    Ok((label, composed))
}

/// What a composed component's input name starts with.
pub const INPUT_PREFIX: &str = "composed:";

/// The input name under which a composed component's sha256 is sealed and
/// reported: [`INPUT_PREFIX`] and the paths, workload first, joined with `+`.
pub fn input_name(workload: &Path, adapters: &[PathBuf]) -> String {
    let paths: Vec<String> = std::iter::once(workload)
        .chain(adapters.iter().map(PathBuf::as_path))
        .map(|p| p.display().to_string())
        .collect();
    format!("{INPUT_PREFIX}{}", paths.join("+"))
}
