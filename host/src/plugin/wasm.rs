//! The wasmtime side of plugins: one [`Runtime`] (engine, epoch ticker,
//! compiled-code cache) per process, a [`Plugin`] per loaded component
//! (checked, compiled once, pre-instantiated), and a [`WasmInstance`] per
//! worker, whose store holds the host's kv, grpc and env state.
//!
//! Host imports are synchronous: the guest never uses component-model async,
//! and a synchronous call is the cheapest crossing wasmtime offers (see
//! docs/adr/0001-wasmtime-features.md and docs/benchmarks.md).

use super::env::Env;
use super::grants::Grants;
use super::{Instance, ParamSpec, WorkloadInfo};
use crate::target::grpc::GrpcClient;
use crate::target::kv::{KvError, SharedDatabase, Transaction};
use anyhow::{Context, anyhow};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ResourceLimiter, Store,
    Trap,
};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use bindings::blocklab::bench::grpc as wit_grpc;

/// `to_wit` and `from_wit` between [`KvError`] and the `error` variant of
/// one version's kv bindings (the same cases in every version).
macro_rules! kv_error_conversions {
    ($wit_kv:ident) => {
        pub(super) fn to_wit(error: KvError) -> $wit_kv::Error {
            match error {
                KvError::NotCommitted => $wit_kv::Error::NotCommitted,
                KvError::TransactionTooOld => $wit_kv::Error::TransactionTooOld,
                KvError::FutureVersion => $wit_kv::Error::FutureVersion,
                KvError::KeyTooLarge => $wit_kv::Error::KeyTooLarge,
                KvError::ValueTooLarge => $wit_kv::Error::ValueTooLarge,
                KvError::TransactionTooLarge => $wit_kv::Error::TransactionTooLarge,
                KvError::TimedOut => $wit_kv::Error::TimedOut,
                KvError::Cancelled => $wit_kv::Error::Cancelled,
                KvError::Other { code, message } => {
                    $wit_kv::Error::Other($wit_kv::ErrorDetail { code, message })
                }
            }
        }

        pub(super) fn from_wit(error: $wit_kv::Error) -> KvError {
            match error {
                $wit_kv::Error::NotCommitted => KvError::NotCommitted,
                $wit_kv::Error::TransactionTooOld => KvError::TransactionTooOld,
                $wit_kv::Error::FutureVersion => KvError::FutureVersion,
                $wit_kv::Error::KeyTooLarge => KvError::KeyTooLarge,
                $wit_kv::Error::ValueTooLarge => KvError::ValueTooLarge,
                $wit_kv::Error::TransactionTooLarge => KvError::TransactionTooLarge,
                $wit_kv::Error::TimedOut => KvError::TimedOut,
                $wit_kv::Error::Cancelled => KvError::Cancelled,
                // A code with a case of its own (a plugin may build `other(1020)`)
                // maps to that case, so the host treats it alike.
                $wit_kv::Error::Other(d) => KvError::from_fdb_code(d.code, &d.message),
            }
        }
    };
}

#[macro_use]
mod forwarding;
mod futures;
mod grpc_host;
mod v1;
mod v2;
mod v3;
mod versions;

use versions::{
    Bindings, Pre, WORKLOAD_EXPORT, WitVersion, bindings, bindings_v2, bindings_v3, bindings_v4,
    bindings_v5, check_world,
};
pub use versions::{CLIENT_INTERFACES, SUPPORTED_WIT_VERSIONS, WIT_VERSION, wit_version_supported};

/// How often the epoch advances; deadlines are whole ticks.
const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Limits applied to every plugin instance.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest a single call into a plugin may run before it is interrupted.
    pub call_deadline: Duration,
    /// Most linear memory one instance may grow to, bytes.
    pub memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            call_deadline: Duration::from_millis(crate::limits::DEFAULT_CALL_DEADLINE_MS),
            memory_bytes: crate::limits::DEFAULT_MEMORY_MIB << 20,
        }
    }
}

/// A bad plugin file: what was wrong and what to do, without a Rust panic.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error(
        "cannot read plugin `{path}`: {error} (check the path; `make build` puts plugins in target/plugins/)"
    )]
    Read {
        path: String,
        // Not `source`: the message holds it, and `{:#}` would repeat it.
        error: crate::limits::FileError,
    },
    #[error(
        "plugin `{0}` is not a WebAssembly file (it does not start with `\\0asm`); pass a component built with `cargo build --target wasm32-wasip2`"
    )]
    NotWasm(String),
    #[error(
        "plugin `{0}` is a core WebAssembly module, not a component; build it with `cargo build --target wasm32-wasip2`, which emits a component, or wrap it with `wasm-tools component new`"
    )]
    CoreModule(String),
    #[error(
        "plugin `{name}` targets blocklab:bench@{found} but this host speaks {supported} (rebuild it against wit/v{WIT_VERSION}/ of this release)", supported = SUPPORTED_WIT_VERSIONS.join(", ")
    )]
    WitVersion { name: String, found: String },
    #[error(
        "plugin `{name}` does not export `{WORKLOAD_EXPORT}`, so it is not a workload plugin (it exports: {exports}); build it against the `workload-plugin` world of wit/v{WIT_VERSION}/worlds.wit"
    )]
    NotWorkload { name: String, exports: String },
    #[error(
        "plugin `{name}` imports `{import}`, which this host does not provide (plugins may import {CLIENT_INTERFACES} and WASI 0.2)"
    )]
    UnknownImport { name: String, import: String },
    #[error("plugin `{name}` failed to compile: {message}")]
    Compile { name: String, message: String },
    #[error(
        "plugin `{name}` needs at least {needs_mib} MiB of linear memory to start, more than the memory cap of {cap_mib} MiB; raise the cap (`--memory-cap-mib` on `blocklab run`, `limits.memory_mib` in a plan)"
    )]
    MemoryCap {
        name: String,
        needs_mib: u64,
        cap_mib: u64,
    },
}

/// Linear memories the engine's pool reserves address space for.
const POOL_MEMORIES: u32 = 256;

/// The same under Valgrind (counted runs, `measure.counters =
/// "callgrind"`), whose address space for the program is far smaller than
/// the pool's terabytes: fewer memories, each reserved at the memory cap
/// with a small guard. wasmtime then compiles explicit bounds checks
/// instead of relying on guard pages, so a counted run's instructions
/// include them; every arm of a counted campaign runs the same way.
const VALGRIND_POOL_MEMORIES: u32 = 32;

/// The process-wide wasmtime engine and compiled-code cache.
pub struct Runtime {
    engine: Engine,
    linker: Linker<HostState>,
    grants: Grants,
    cache: Option<super::cache::Cache>,
    limits: Limits,
    ticker: Arc<Ticker>,
}

/// Advances the engine's epoch so call deadlines fire; it stops when the
/// runtime and every plugin and instance made from it are gone.
struct Ticker(Arc<AtomicBool>);

impl Drop for Ticker {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Runtime {
    /// An engine with the pooling allocator and epoch interruption. Compiled
    /// components are cached under `cache_dir` (none: always compile).
    pub fn new(limits: Limits, cache_dir: Option<PathBuf>) -> anyhow::Result<Runtime> {
        Self::with_grants(limits, cache_dir, Grants::default())
    }

    /// [`Runtime::new`] whose plugins may also use the capabilities in
    /// `grants` (nothing else beyond the basics is linked).
    pub fn with_grants(
        limits: Limits,
        cache_dir: Option<PathBuf>,
        grants: Grants,
    ) -> anyhow::Result<Runtime> {
        Self::build(limits, cache_dir, grants, false)
    }

    /// [`Runtime::with_grants`] that also writes the names of compiled wasm
    /// functions to /tmp/perf-PID.map, for CPU profiles (`run::profile`).
    pub fn profiled(
        limits: Limits,
        cache_dir: Option<PathBuf>,
        grants: Grants,
    ) -> anyhow::Result<Runtime> {
        Self::build(limits, cache_dir, grants, true)
    }

    /// The engine: a pooling allocator sized for the workers (smaller
    /// under Valgrind), epoch interruption for call deadlines.
    fn engine(limits: &Limits, perf_map: bool) -> anyhow::Result<Engine> {
        let valgrind = crate::machine::valgrind::running_on_valgrind() > 0;
        let memories = if valgrind {
            VALGRIND_POOL_MEMORIES
        } else {
            POOL_MEMORIES
        };
        let mut pool = PoolingAllocationConfig::default();
        // A Rust wasip2 component holds a handful of core instances and
        // memories; these bounds allow a few dozen concurrent workers.
        pool.total_component_instances(crate::limits::WORKERS)
            .total_core_instances(512)
            .total_memories(memories)
            .total_tables(512)
            .max_memory_size(limits.memory_bytes as usize);
        let mut config = Config::new();
        config
            .wasm_component_model(true)
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        if valgrind {
            config
                .memory_reservation(limits.memory_bytes)
                .memory_guard_size(1 << 16)
                .memory_reservation_for_growth(0);
        }
        if perf_map {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        Engine::new(&config).map_err(|e| {
            let message = format!("{e:#}");
            if message.contains("mmap failed to reserve") {
                // wasmtime says this in hex bytes; say what it was for.
                anyhow::anyhow!(
                    "cannot reserve address space for the plugin engine's pool ({memories} memories of up to {} MiB each); lower the memory cap (`--memory-cap-mib` on `blocklab run`, `limits.memory_mib` in a plan) or raise this process's address-space limit (`ulimit -v`)",
                    limits.memory_bytes >> 20
                )
            } else {
                anyhow::Error::from(e)
            }
        })
    }

    fn build(
        limits: Limits,
        cache_dir: Option<PathBuf>,
        grants: Grants,
        perf_map: bool,
    ) -> anyhow::Result<Runtime> {
        grants.validate()?;
        let engine = Self::engine(&limits, perf_map)?;
        let mut linker = Linker::new(&engine);
        grants.add_to_linker(&mut linker)?;
        bindings::WorkloadPlugin::add_to_linker::<HostState, HasSelf<HostState>>(
            &mut linker,
            |state| state,
        )
        .map_err(anyhow::Error::from)?;
        bindings_v2::WorkloadPlugin::add_to_linker::<HostState, HasSelf<HostState>>(
            &mut linker,
            |state| state,
        )
        .map_err(anyhow::Error::from)?;
        bindings_v3::WorkloadPlugin::add_to_linker::<HostState, HasSelf<HostState>>(
            &mut linker,
            |state| state,
        )
        .map_err(anyhow::Error::from)?;
        v3::link_borrowed_lists(&mut linker)?;
        // 0.4.0 and 0.5.0 import 0.3.0's kv and env (on the linker now);
        // 0.5.0's grpc is the one interface of its own.
        bindings_v5::blocklab::bench0_5_0::grpc::add_to_linker::<HostState, HasSelf<HostState>>(
            &mut linker,
            |state| state,
        )
        .map_err(anyhow::Error::from)?;

        let ticker_stop = Arc::new(AtomicBool::new(false));
        let (ticker_engine, stop) = (engine.clone(), ticker_stop.clone());
        std::thread::Builder::new()
            .name("blocklab-epoch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    ticker_engine.increment_epoch();
                }
            })
            .context("cannot start the epoch ticker thread")?;

        let cache = match &cache_dir {
            Some(dir) => Some(super::cache::Cache::open(dir)?),
            None => None,
        };
        Ok(Runtime {
            engine,
            linker,
            grants,
            cache,
            limits,
            ticker: Arc::new(Ticker(ticker_stop)),
        })
    }

    /// The default cache directory: `$BLOCKLAB_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/blocklab/components`, else `~/.cache/blocklab/components`.
    pub fn default_cache_dir() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(base.join("blocklab").join("components"))
    }

    /// Reads, checks, compiles (or loads from the cache) and pre-instantiates
    /// the component at `path`.
    pub fn load(&self, path: &Path) -> anyhow::Result<Plugin> {
        let name = plugin_name(path);
        let bytes = read_plugin(path)?;
        self.load_bytes(&name, &bytes)
    }

    /// Composes the workload component at `workload` with `adapters` (the
    /// first nearest the workload; see [`super::compose`]) and loads the
    /// result: the composed bytes are what is checked, cached and hashed.
    pub fn load_composed(&self, workload: &Path, adapters: &[PathBuf]) -> anyhow::Result<Plugin> {
        if adapters.is_empty() {
            return self.load(workload);
        }
        let (label, bytes) = super::compose::compose_files(workload, adapters)?;
        self.load_bytes(&label, &bytes)
    }

    /// [`Runtime::load`] for bytes already in memory; `name` labels errors.
    pub fn load_bytes(&self, name: &str, bytes: &[u8]) -> anyhow::Result<Plugin> {
        check_header(name, bytes)?;
        let sha256 = hex::encode(Sha256::digest(bytes));
        let (component, cached) = self.compile(name, bytes, &sha256)?;
        let version = check_world(&self.engine, name, &component)?;
        let ty = component.component_type();
        let imports: Vec<String> = ty
            .imports(&self.engine)
            .map(|(n, _)| n.to_owned())
            .collect();
        self.grants
            .check_imports(name, imports.iter().map(String::as_str))?;
        let pre = self.linker.instantiate_pre(&component).map_err(|e| {
            let message = format!("{e:#}");
            match message.split('`').nth(1) {
                Some(import) if message.contains("import") => PluginError::UnknownImport {
                    name: name.to_owned(),
                    import: import.to_owned(),
                },
                _ => PluginError::Compile {
                    name: name.to_owned(),
                    message,
                },
            }
        })?;
        let compile_error = |e: wasmtime::Error| PluginError::Compile {
            name: name.to_owned(),
            message: format!("{e:#}"),
        };
        let pre = match version {
            WitVersion::V1 => {
                Pre::V1(bindings::WorkloadPluginPre::new(pre).map_err(compile_error)?)
            }
            WitVersion::V2 => {
                Pre::V2(bindings_v2::WorkloadPluginPre::new(pre).map_err(compile_error)?)
            }
            WitVersion::V3 => {
                Pre::V3(bindings_v3::WorkloadPluginPre::new(pre).map_err(compile_error)?)
            }
            WitVersion::V4 => {
                Pre::V4(bindings_v4::WorkloadPluginPre::new(pre).map_err(compile_error)?)
            }
        };
        Ok(Plugin {
            name: name.to_owned(),
            sha256,
            cached,
            pre,
            grants: self.grants.clone(),
            limits: self.limits,
            ticker: self.ticker.clone(),
        })
    }

    /// Compiles `bytes`, or deserializes them from the cache when an entry
    /// for this component and this engine exists and is intact.
    fn compile(&self, name: &str, bytes: &[u8], sha256: &str) -> anyhow::Result<(Component, bool)> {
        let entry = self.cache.as_ref().map(|cache| {
            let mut hasher = std::hash::DefaultHasher::new();
            self.engine
                .precompile_compatibility_hash()
                .hash(&mut hasher);
            cache.entry(sha256, hasher.finish())
        });
        if let Some(entry) = &entry
            && let Some(component) = self.read_cache(entry)
        {
            return Ok((component, true));
        }
        let component = Component::new(&self.engine, bytes).map_err(|e| {
            let message = format!("{e:#}");
            match initial_memory(&message) {
                // The engine reports this in hex bytes; say it in the cap's units.
                Some(bytes) => PluginError::MemoryCap {
                    name: name.to_owned(),
                    needs_mib: bytes.div_ceil(1 << 20),
                    cap_mib: self.limits.memory_bytes >> 20,
                },
                None => PluginError::Compile {
                    name: name.to_owned(),
                    message,
                },
            }
        })?;
        if let (Some(cache), Some(entry)) = (&self.cache, &entry) {
            // A cache that cannot be written costs only time: warn and go on.
            if let Err(e) = component
                .serialize()
                .map_err(anyhow::Error::from)
                .and_then(|bytes| cache.write(entry, &bytes))
            {
                eprintln!(
                    "warning: cannot write the plugin cache `{}`: {e:#}",
                    entry.display()
                );
            }
        }
        Ok((component, false))
    }

    fn read_cache(&self, entry: &Path) -> Option<Component> {
        let serialized = self.cache.as_ref()?.read(entry)?;
        // SAFETY: the bytes were written by `Component::serialize` of an engine
        // with the same compatibility hash (it is in the file name) and are
        // unchanged since: their MAC, under the cache's key, checks
        // (plugin/cache.rs).
        unsafe { Component::deserialize(&self.engine, &serialized) }.ok()
    }
}

/// Reads the plugin or adapter file at `path` within the cap on plugins;
/// a device, FIFO or directory is refused without waiting or reading.
pub fn read_plugin(path: &Path) -> Result<Vec<u8>, PluginError> {
    let cap = crate::limits::PLUGIN_BYTES as u64;
    crate::limits::read_file(path, cap, "plugin files").map_err(|error| PluginError::Read {
        path: path.display().to_string(),
        error,
    })
}

/// The initial memory size in the pooling allocator's refusal of a
/// component whose memory exceeds the cap ("memory has a minimum byte size
/// of N which exceeds the limit of 0x... bytes").
fn initial_memory(message: &str) -> Option<u64> {
    let rest = &message[message.find("minimum byte size of ")? + "minimum byte size of ".len()..];
    if !message.contains("exceeds the limit") {
        return None;
    }
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A plugin's display name: its file name.
fn plugin_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

pub(crate) fn check_header(name: &str, bytes: &[u8]) -> Result<(), PluginError> {
    // The preamble is `\0asm` then a 4-byte version: 1 for core modules,
    // 0x0001000d (version 0xd, layer 1) for components.
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(PluginError::NotWasm(name.to_owned()));
    }
    if bytes[6..8] == [0, 0] {
        return Err(PluginError::CoreModule(name.to_owned()));
    }
    Ok(())
}

/// A loaded, checked, pre-instantiated workload component.
pub struct Plugin {
    name: String,
    sha256: String,
    cached: bool,
    pre: Pre,
    grants: Grants,
    limits: Limits,
    ticker: Arc<Ticker>,
}

impl Plugin {
    /// The plugin's file name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// sha256 of the component bytes, hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Whether compilation was skipped thanks to the cache.
    pub fn from_cache(&self) -> bool {
        self.cached
    }

    /// A fresh instance with its own store, talking to `kv` or `grpc` (the
    /// arm's target) and using `env`.
    pub fn instantiate(
        &self,
        kv: Option<SharedDatabase>,
        grpc: Option<Arc<GrpcClient>>,
        env: Env,
        wasi_seed: u64,
    ) -> anyhow::Result<WasmInstance> {
        use rand_wasi::SeedableRng;
        let mut wasi = WasiCtxBuilder::new();
        // Deterministic randomness, even for std's hash seeds.
        wasi.secure_random(rand_wasi::rngs::StdRng::seed_from_u64(wasi_seed))
            .insecure_random(rand_wasi::rngs::StdRng::seed_from_u64(wasi_seed ^ 1))
            .insecure_random_seed(u128::from(wasi_seed));
        self.grants.configure(&mut wasi)?;
        let wasi = wasi.build();
        let sim = kv.as_ref().and_then(|db| db.simulated_latency());
        let state = HostState {
            wasi,
            table: ResourceTable::new(),
            env,
            kv,
            grpc,
            limiter: MemoryCap {
                cap: self.limits.memory_bytes,
                high_water: 0,
                refused: false,
            },
            live_resources: 0,
            idle_transactions: 0,
            sim,
            // Its own stream from the run's seed, so a simulation leaves the
            // plugin's `env.random` unchanged.
            sim_rng: wasi_seed ^ 0x9e37_79b9_7f4a_7c15,
            scratch: Vec::new(),
        };
        let engine = match &self.pre {
            Pre::V1(pre) => pre.engine(),
            Pre::V2(pre) => pre.engine(),
            Pre::V3(pre) => pre.engine(),
            Pre::V4(pre) => pre.engine(),
        };
        let mut store = Store::new(engine, state);
        store.limiter(|state| &mut state.limiter);
        let ticks = deadline_ticks(self.limits.call_deadline);
        store.set_epoch_deadline(ticks);
        store.epoch_deadline_trap();
        let bindings = match &self.pre {
            Pre::V1(pre) => pre.instantiate(&mut store).map(Bindings::V1),
            Pre::V2(pre) => pre.instantiate(&mut store).map(Bindings::V2),
            Pre::V3(pre) => pre.instantiate(&mut store).map(Bindings::V3),
            Pre::V4(pre) => pre.instantiate(&mut store).map(Bindings::V4),
        }
        .map_err(|e| self.call_error(&store, "instantiate", None, e.into()))?;
        Ok(WasmInstance {
            store,
            bindings,
            plugin: self.name.clone(),
            limits: self.limits,
            ticks,
            workload: None,
            _ticker: self.ticker.clone(),
        })
    }

    fn call_error(
        &self,
        store: &Store<HostState>,
        call: &str,
        workload: Option<&str>,
        error: anyhow::Error,
    ) -> anyhow::Error {
        describe_trap(&self.name, store, self.limits, call, workload, error)
    }
}

fn deadline_ticks(deadline: Duration) -> u64 {
    (deadline.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
}

/// Turns a trap into a short error naming the plugin, the workload, what
/// happened and what to do; the wasm backtrace follows in the chain.
fn describe_trap(
    plugin: &str,
    store: &Store<HostState>,
    limits: Limits,
    call: &str,
    workload: Option<&str>,
    error: anyhow::Error,
) -> anyhow::Error {
    let last_words: String = store
        .data()
        .env
        .call_log()
        .map(|line| format!("\n  plugin log: {line}"))
        .collect();
    let place = match workload {
        Some(w) => format!("plugin `{plugin}` workload `{w}`"),
        None => format!("plugin `{plugin}`"),
    };
    let limiter = &store.data().limiter;
    let what = match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => format!(
            "did not return from `{call}` within the {:?} call deadline (an endless loop?); fix the plugin or raise the deadline (`--call-deadline-ms` on `blocklab run`, `limits.call_deadline_ms` in a plan)",
            limits.call_deadline
        ),
        _ if limiter.refused => format!(
            "exceeded the memory cap of {} MiB in `{call}` (it asked for more linear memory); fix the plugin or raise the cap (`--memory-cap-mib` on `blocklab run`, `limits.memory_mib` in a plan)",
            limits.memory_bytes >> 20
        ),
        Some(trap) => format!("trapped in `{call}` ({trap}); this is a bug in the plugin"),
        None => format!("failed in `{call}`"),
    };
    error.context(format!("{place} {what}{last_words}"))
}

/// A live plugin instance, used by one worker thread.
pub struct WasmInstance {
    store: Store<HostState>,
    bindings: Bindings,
    plugin: String,
    limits: Limits,
    ticks: u64,
    workload: Option<String>,
    _ticker: Arc<Ticker>,
}

impl WasmInstance {
    /// Arms the call deadline and forgets the previous call's log lines.
    fn begin_call(&mut self) {
        self.store.set_epoch_deadline(self.ticks);
        self.store.data_mut().env.begin_call();
    }

    fn fail(&self, call: &str, error: anyhow::Error) -> anyhow::Error {
        describe_trap(
            &self.plugin,
            &self.store,
            self.limits,
            call,
            self.workload.as_deref(),
            error,
        )
    }
}

/// `$call` on the instance's `workload` export, bound to `$w`, whichever
/// version's bindings it has: each version's exports are a type of their
/// own (0.4.0's named with its version), so the call is written once and
/// expanded for each.
macro_rules! on_workload {
    ($bindings:expr, |$w:ident| $call:expr) => {
        match $bindings {
            Bindings::V1(b) => on_workload!(b.blocklab_bench_workload(), $w, $call),
            Bindings::V2(b) => on_workload!(b.blocklab_bench_workload(), $w, $call),
            Bindings::V3(b) => on_workload!(b.blocklab_bench_workload(), $w, $call),
            Bindings::V4(b) => on_workload!(b.blocklab_bench0_4_0_workload(), $w, $call),
        }
    };
    ($exports:expr, $w:ident, $call:expr) => {{
        let $w = $exports;
        $call
    }};
}

impl Instance for WasmInstance {
    fn list(&mut self) -> anyhow::Result<Vec<WorkloadInfo>> {
        self.begin_call();
        // The versions' `info` records are alike but distinct types.
        let infos = on_workload!(&self.bindings, |w| {
            w.call_list(&mut self.store).map(|infos| {
                infos
                    .into_iter()
                    .map(|i| WorkloadInfo {
                        name: i.name,
                        description: i.description,
                        params: i
                            .params
                            .into_iter()
                            .map(|p| ParamSpec {
                                name: p.name,
                                default: p.default,
                                help: p.help,
                            })
                            .collect(),
                        uses: i.uses,
                    })
                    .collect()
            })
        });
        infos.map_err(|e| self.fail("list", e.into()))
    }

    fn setup(&mut self, name: &str, params: &[(String, String)]) -> anyhow::Result<()> {
        self.workload = Some(name.to_owned());
        self.begin_call();
        let result = on_workload!(&self.bindings, |w| {
            w.call_setup(&mut self.store, name, params)
        })
        .map_err(|e| self.fail("setup", e.into()))?;
        result.map_err(|message| {
            anyhow!(
                "plugin `{}` refused to set up workload `{name}`: {message}",
                self.plugin
            )
        })
    }

    fn run(&mut self, iteration: u64) -> anyhow::Result<u32> {
        self.begin_call();
        let result = on_workload!(&self.bindings, |w| w.call_run(&mut self.store, iteration));
        match result {
            Ok(Ok(retries)) => Ok(retries),
            Ok(Err(message)) => Err(anyhow!(WorkloadFailed(message))),
            Err(e) => Err(self.fail("run", e.into())),
        }
    }

    /// 0.4.0's `teardown`; plugins of older versions have none to call.
    fn teardown(&mut self) -> anyhow::Result<()> {
        if !matches!(self.bindings, Bindings::V4(_)) {
            return Ok(());
        }
        self.begin_call();
        let Bindings::V4(b) = &self.bindings else {
            return Ok(());
        };
        let result = b
            .blocklab_bench0_4_0_workload()
            .call_teardown(&mut self.store)
            .map_err(|e| self.fail("teardown", e.into()))?;
        result.map_err(|message| {
            anyhow!(
                "plugin `{}` failed the teardown of workload `{}`: {message}",
                self.plugin,
                self.workload.as_deref().unwrap_or("?")
            )
        })
    }

    fn env(&self) -> &Env {
        &self.store.data().env
    }

    fn memory_high_water(&self) -> u64 {
        self.store.data().limiter.high_water
    }

    fn live_resources(&self) -> u64 {
        let state = self.store.data();
        // An idle transaction (reset, unused since) is a client's pooled
        // one, not a leak.
        state.live_resources.saturating_sub(state.idle_transactions)
    }
}

/// A transaction that returned an error: the run counts it and goes on.
/// Anything else out of `run` (a trap) ends the run.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WorkloadFailed(pub String);

/// Caps linear memory and remembers the largest size asked for.
struct MemoryCap {
    cap: u64,
    high_water: u64,
    refused: bool,
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.cap {
            self.refused = true;
            return Ok(false);
        }
        self.high_water = self.high_water.max(desired as u64);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

/// The store's data: everything the host imports of one instance touch.
struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    env: Env,
    kv: Option<SharedDatabase>,
    grpc: Option<Arc<GrpcClient>>,
    limiter: MemoryCap,
    /// Client resources the guest holds (transactions, futures, watches,
    /// streams): made minus dropped, through [`HostState::hold`] and
    /// [`HostState::release`]. What is still live when the run ends is
    /// reported as leaked.
    live_resources: u64,
    /// Of those, transactions reset and not used since (0.2.0's `reset`).
    idle_transactions: u64,
    /// The target's simulated round trips, waited out per call (futures.rs).
    sim: Option<crate::target::kv::SimulatedLatency>,
    /// The jitter's xorshift state.
    sim_rng: u64,
    /// Keys and values copied out of guest memory (v3.rs), reused.
    scratch: Vec<u8>,
}

impl HostState {
    /// Puts a client resource in the table, counted as live until released.
    fn hold<T: Send + 'static>(
        &mut self,
        value: T,
    ) -> anyhow::Result<wasmtime::component::Resource<T>> {
        let handle = self.table.push(value)?;
        self.live_resources += 1;
        Ok(handle)
    }

    /// Takes a client resource out of the table; it no longer counts.
    fn release<T: 'static>(
        &mut self,
        handle: wasmtime::component::Resource<T>,
    ) -> anyhow::Result<T> {
        let value = self.table.delete(handle)?;
        self.live_resources = self.live_resources.saturating_sub(1);
        Ok(value)
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// The host side of a `kv.transaction` resource.
pub struct TransactionHandle {
    tr: Box<dyn Transaction>,
    /// Reset and not used since: not counted as leaked.
    idle: bool,
    /// Futures of `get-versionstamp` waiting for this transaction's commit
    /// (their resource ids), answered when it commits or resets.
    stamp_waiters: Vec<u32>,
    /// When this transaction's read version is ready under a simulated
    /// round trip (futures.rs); `None` before it is fetched.
    grv_ready: Option<std::time::Instant>,
}

/// The host side of a `kv.watch` resource (WIT 0.3.0): the target's watch.
/// It waits on the target's own change, not on a simulated round trip.
pub struct WatchHandle(Box<dyn crate::target::kv::Watch>);

pub use futures::FutureHandle;
pub use grpc_host::StreamHandle;
