//! The versions of `blocklab:bench` this host speaks: one set of wasmtime
//! bindings per WIT package version, which version a component was built
//! against (`check_world`), and its pre-instantiated form and exports.
//! 0.3.0's client interfaces are the host's own (v3.rs), which 0.4.0
//! imports unchanged; 0.2.0 forwards to them (v2.rs) and 0.1.0 to 0.2.0
//! (v1.rs).

use super::{HostState, PluginError};
// Public so that the bindings can name them (bindgen's `with` re-exports).
pub use super::{FutureHandle, StreamHandle, TransactionHandle, WatchHandle};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The host bindings of one version of the `workload-plugin` world under
/// `wit` (a path from host/), with its resources mapped to the host's
/// handles: every version shares the handle types, so a host links them
/// side by side.
macro_rules! bench_bindings {
    ($wit:literal, { $($resource:literal: $handle:path),* $(,)? }) => {
        wasmtime::component::bindgen!({
            path: $wit,
            world: "workload-plugin",
            imports: { default: trappable },
            with: { $($resource: $handle),* },
            anyhow: true,
        });
    };
}

/// `blocklab:bench@0.1.0` (wit/): what Python and JavaScript plugins, and
/// Rust plugins built before 0.2.0, import and export.
pub(super) mod bindings {
    bench_bindings!("../wit", {
        "blocklab:bench/kv.transaction": super::TransactionHandle,
        "blocklab:bench/grpc.stream": super::StreamHandle,
    });
}

/// `blocklab:bench@0.2.0` (wit/v0.2.0/): packed range rows and a
/// transaction `reset`. Linked beside 0.1.0 and 0.3.0, so a host loads
/// plugins of any.
pub(super) mod bindings_v2 {
    bench_bindings!("../wit/v0.2.0", {
        "blocklab:bench/kv.transaction": super::TransactionHandle,
        "blocklab:bench/grpc.stream": super::StreamHandle,
    });
}

/// `blocklab:bench@0.3.0` (wit/v0.3.0/): futures, atomic operations,
/// versionstamps, key selectors, conflict ranges and options; the Rust
/// SDK's version, and the one 0.2.0's and (through it) 0.1.0's kv calls
/// forward to.
pub(super) mod bindings_v3 {
    bench_bindings!("../wit/v0.3.0", {
        "blocklab:bench/kv.transaction": super::TransactionHandle,
        "blocklab:bench/kv.future": super::FutureHandle,
        "blocklab:bench/kv.watch": super::WatchHandle,
        "blocklab:bench/grpc.stream": super::StreamHandle,
    });
}

/// `blocklab:bench@0.4.0` (wit/v0.4.0/): 0.3.0's client interfaces,
/// imported as they are, and a `workload` export with `teardown`. The
/// imports are 0.3.0's own bindings (`with`), so a 0.4.0 plugin's kv, grpc
/// and env calls are exactly a 0.3.0 plugin's, already on the linker; only
/// the export is new.
pub(super) mod bindings_v4 {
    wasmtime::component::bindgen!({
        path: "../wit/v0.4.0",
        world: "workload-plugin",
        imports: { default: trappable },
        with: {
            "blocklab:bench/kv@0.3.0": super::bindings_v3::blocklab::bench::kv,
            "blocklab:bench/grpc@0.3.0": super::bindings_v3::blocklab::bench::grpc,
            "blocklab:bench/env@0.3.0": super::bindings_v3::blocklab::bench::env,
        },
        anyhow: true,
    });
}

/// `blocklab:bench@0.5.0` (wit/v0.5.0/): only the grpc client moved
/// (request metadata, response headers and trailers, deadlines,
/// compression). Its world exports 0.4.0's workload, so a 0.5.0 plugin
/// instantiates as a 0.4.0 one ([`WitVersion::V4`]); these bindings only
/// put `grpc@0.5.0` on the linker, beside 0.3.0's.
pub(super) mod bindings_v5 {
    wasmtime::component::bindgen!({
        path: "../wit/v0.5.0",
        world: "workload-plugin",
        imports: { default: trappable },
        with: {
            "blocklab:bench/kv@0.3.0": super::bindings_v3::blocklab::bench::kv,
            "blocklab:bench/env@0.3.0": super::bindings_v3::blocklab::bench::env,
            "blocklab:bench/grpc.stream": super::StreamHandle,
        },
        anyhow: true,
    });
}

/// The WIT package version this host's bindings are generated from: the
/// newest it speaks, and the one new plugins should be built against.
pub const WIT_VERSION: &str = "0.5.0";
/// The client interfaces the newest world imports, each at its version:
/// 0.4.0 changed only the workload export, 0.5.0 only `grpc`.
pub const CLIENT_INTERFACES: &str = "blocklab:bench/kv@0.3.0, blocklab:bench/env@0.3.0 and blocklab:bench/grpc@0.5.0 (or grpc@0.3.0)";
/// Every version of `blocklab:bench` this host loads plugins of. The
/// promise (docs/plugins.md): a 0.x.y host loads every 0.x.z plugin, since
/// patch releases only add docs; minor and major releases may break and are
/// listed here only once the host carries bindings for them.
pub const SUPPORTED_WIT_VERSIONS: &[&str] = &[WIT_VERSION, "0.4.0", "0.3.0", "0.2.0", "0.1.0"];

/// Whether plugins built against `blocklab:bench@version` load here.
pub fn wit_version_supported(version: &str) -> bool {
    SUPPORTED_WIT_VERSIONS.contains(&version)
}
/// The interface a workload plugin must export (or its 0.3.0, 0.2.0 or
/// 0.1.0 twin).
pub(super) const WORKLOAD_EXPORT: &str = "blocklab:bench/workload@0.4.0";
const WORKLOAD_EXPORT_V3: &str = "blocklab:bench/workload@0.3.0";
const WORKLOAD_EXPORT_V2: &str = "blocklab:bench/workload@0.2.0";
const WORKLOAD_EXPORT_V1: &str = "blocklab:bench/workload@0.1.0";

/// The versions of the workload world this host has bindings for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WitVersion {
    V1,
    V2,
    V3,
    V4,
}

pub(super) fn check_world(
    engine: &Engine,
    name: &str,
    component: &Component,
) -> Result<WitVersion, PluginError> {
    let ty = component.component_type();
    let exports: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_owned()).collect();
    if exports.iter().any(|e| e == WORKLOAD_EXPORT) {
        return Ok(WitVersion::V4);
    }
    if exports.iter().any(|e| e == WORKLOAD_EXPORT_V3) {
        return Ok(WitVersion::V3);
    }
    if exports.iter().any(|e| e == WORKLOAD_EXPORT_V2) {
        return Ok(WitVersion::V2);
    }
    if exports.iter().any(|e| e == WORKLOAD_EXPORT_V1) {
        return Ok(WitVersion::V1);
    }
    // A blocklab:bench interface of another version, exported or imported,
    // means the plugin was built against another release's wit/.
    let imports: Vec<String> = ty.imports(engine).map(|(n, _)| n.to_owned()).collect();
    let other_version = exports
        .iter()
        .chain(&imports)
        .filter_map(|e| e.strip_prefix("blocklab:bench/")?.split_once('@'))
        .map(|(_, version)| version.to_owned())
        .find(|version| !wit_version_supported(version));
    if let Some(found) = other_version {
        return Err(PluginError::WitVersion {
            name: name.to_owned(),
            found,
        });
    }
    Err(PluginError::NotWorkload {
        name: name.to_owned(),
        exports: if exports.is_empty() {
            "nothing".to_owned()
        } else {
            exports.join(", ")
        },
    })
}

/// A pre-instantiated component of one of the WIT versions.
pub(super) enum Pre {
    V1(bindings::WorkloadPluginPre<HostState>),
    V2(bindings_v2::WorkloadPluginPre<HostState>),
    V3(bindings_v3::WorkloadPluginPre<HostState>),
    V4(bindings_v4::WorkloadPluginPre<HostState>),
}

/// An instance's exports, of the version its component was built against.
pub(super) enum Bindings {
    V1(bindings::WorkloadPlugin),
    V2(bindings_v2::WorkloadPlugin),
    V3(bindings_v3::WorkloadPlugin),
    V4(bindings_v4::WorkloadPlugin),
}
