//! The plugin boundary's per-call cost (issue 2, docs/benchmarks.md).
//!
//! Two questions, answered with this crate's own wasmtime build:
//!
//! 1. Are async host imports (fibers, `call_async`) cheaper than the
//!    synchronous ones the host uses? The `boundary-probe` component
//!    (plugins/tests/boundary-probe) is called through sync bindings and
//!    through async bindings, driven either by one `block_on` around the
//!    whole timing loop (async's best case: a worker written as one future)
//!    or by a current-thread tokio runtime's `block_on` per call (a sync
//!    worker driving an async instance).
//! 2. How does that compare to the kinds of call wasmtime's own
//!    `benches/call.rs` measures: a typed no-op called host→wasm in a core
//!    module and in a component, and a no-op host function called wasm→host
//!    in a guest loop? Those run here in hand-written `.wat`, on an engine
//!    configured like wasmtime's bench (`plain`) and on one configured like
//!    `plugin::wasm::Runtime` (`ours`: pooling allocator, epoch deadlines).
//!
//! Method: every variant owns its own store and instance; after a warmup
//! each repetition runs every variant once for about `REP_TIME`, in forward
//! order on even repetitions and reverse order on odd ones, so sync and
//! async share the machine's state. Figures are the median ns per call over
//! the repetitions; async/sync ratios are medians of within-repetition
//! ratios.
//!
//! Run it with `make bench-boundary` (or `make plugins` once, then
//! `cargo bench -p blocklab --bench boundary`). A plain argument keeps only
//! the variants whose `call / driver` label contains it; with
//! `BOUNDARY_CALLS=N` each kept variant makes exactly 10,000 + N calls and
//! nothing is timed, for counting instructions with valgrind's callgrind
//! (this VM exposes no hardware counters to `perf stat`).

use anyhow::{Context as _, bail, ensure};
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Repetitions per variant; the median is reported.
const REPS: usize = 21;
/// Wall time of one repetition of one variant.
const REP_TIME: Duration = Duration::from_millis(40);
/// Wall time of one timed chunk of calls within a repetition.
const CHUNK_TIME: Duration = Duration::from_millis(2);
/// Deadline in epoch ticks: nothing advances the epoch here, but the host
/// sets one before every call, so the probe does too.
const DEADLINE_TICKS: u64 = 1_000;

mod sync_bindings {
    wasmtime::component::bindgen!({
        path: "../plugins/tests/boundary-probe/wit",
        world: "probe",
        imports: { default: trappable },
    });
}

mod async_bindings {
    wasmtime::component::bindgen!({
        path: "../plugins/tests/boundary-probe/wit",
        world: "probe",
        imports: { default: async | trappable },
        exports: { default: async },
    });
}

/// The store's data: WASI (the probe is a wasip2 component) and the
/// key-value slot behind `set` and `get`.
struct ProbeState {
    wasi: WasiCtx,
    table: ResourceTable,
    values: HashMap<Vec<u8>, Vec<u8>>,
    /// Every `noop` bumps it: proof the calls happened.
    noops: u64,
}

impl ProbeState {
    fn new() -> ProbeState {
        ProbeState {
            wasi: WasiCtxBuilder::new()
                .allow_tcp(false)
                .allow_udp(false)
                .allow_ip_name_lookup(false)
                .build(),
            table: ResourceTable::new(),
            values: HashMap::new(),
            noops: 0,
        }
    }

    fn get(&self, k: &[u8]) -> Vec<u8> {
        self.values.get(k).cloned().unwrap_or_default()
    }
}

impl WasiView for ProbeState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl sync_bindings::probe::bench::host::Host for ProbeState {
    fn noop(&mut self) -> wasmtime::Result<()> {
        self.noops += 1;
        Ok(())
    }

    fn set(&mut self, k: Vec<u8>, v: Vec<u8>) -> wasmtime::Result<()> {
        self.values.insert(k, v);
        Ok(())
    }

    fn get(&mut self, k: Vec<u8>) -> wasmtime::Result<Vec<u8>> {
        Ok(ProbeState::get(self, &k))
    }
}

impl async_bindings::probe::bench::host::Host for ProbeState {
    async fn noop(&mut self) -> wasmtime::Result<()> {
        self.noops += 1;
        Ok(())
    }

    async fn set(&mut self, k: Vec<u8>, v: Vec<u8>) -> wasmtime::Result<()> {
        self.values.insert(k, v);
        Ok(())
    }

    async fn get(&mut self, k: Vec<u8>) -> wasmtime::Result<Vec<u8>> {
        Ok(ProbeState::get(self, &k))
    }
}

/// Polls `future` to completion on this thread. Nothing here ever waits on
/// I/O, so it never actually spins: every future is ready at first poll.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

/// Runs `n` calls and returns how long they took.
type Timed = Box<dyn FnMut(u64) -> anyhow::Result<Duration>>;

/// A core module's body that imports `host.nop` and exports `run(n)`,
/// which calls it `n` times.
const LOOP_BODY: &str = r#"
    (import "host" "nop" (func $nop))
    (func (export "run") (param $n i64)
        (block $done
            (loop $again
                (br_if $done (i64.eqz (local.get $n)))
                (call $nop)
                (local.set $n (i64.sub (local.get $n) (i64.const 1)))
                (br $again))))"#;

/// One way of making one kind of call.
struct Variant {
    case: &'static str,
    driver: &'static str,
    run: Timed,
    /// Calls per timed chunk, and calls made over all repetitions.
    chunk: u64,
    calls: u64,
    ns_per_call: Vec<f64>,
}

impl Variant {
    fn new(case: &'static str, driver: &'static str, run: Timed) -> Variant {
        Variant {
            case,
            driver,
            run,
            chunk: 0,
            calls: 0,
            ns_per_call: Vec::with_capacity(REPS),
        }
    }

    /// Warms up and picks a chunk of calls that takes about `CHUNK_TIME`.
    fn calibrate(&mut self) -> anyhow::Result<()> {
        let mut n = 1_000;
        loop {
            let took = (self.run)(n)?;
            if took >= CHUNK_TIME {
                self.chunk = n;
                return Ok(());
            }
            n *= 2;
        }
    }

    /// One repetition: whole chunks until `REP_TIME` has passed, so a busy
    /// moment during calibration cannot shrink the sample.
    fn measure(&mut self) -> anyhow::Result<()> {
        let (mut calls, mut took) = (0, Duration::ZERO);
        while took < REP_TIME {
            took += (self.run)(self.chunk)?;
            calls += self.chunk;
        }
        self.calls += calls;
        self.ns_per_call.push(took.as_nanos() as f64 / calls as f64);
        Ok(())
    }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// The engine `plugin::wasm::Runtime` builds (same pool shape, epoch
/// interruption), so the probe pays what a workload plugin pays. `pooled`
/// false drops the pool, whose terabyte reservation valgrind cannot map; the
/// pool only changes instantiation, not calls.
fn our_engine(pooled: bool) -> anyhow::Result<Engine> {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(64)
        .total_core_instances(512)
        .total_memories(256)
        .total_tables(512)
        .max_memory_size(256 << 20);
    let mut config = Config::new();
    config.wasm_component_model(true).epoch_interruption(true);
    if pooled {
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    Ok(Engine::new(&config)?)
}

/// An engine configured like the ones in wasmtime's `benches/call.rs`
/// (default config plus the component model), with this crate's features.
fn plain_engine() -> anyhow::Result<Engine> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    Ok(Engine::new(&config)?)
}

fn new_store<T>(engine: &Engine, data: T) -> Store<T> {
    let mut store = Store::new(engine, data);
    store.set_epoch_deadline(DEADLINE_TICKS);
    store.epoch_deadline_trap();
    store
}

fn probe_path() -> PathBuf {
    let dir = std::env::var_os("BLOCKLAB_PLUGINS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(|d| PathBuf::from(d).join("plugins")))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/plugins"));
    dir.join("boundary-probe.wasm")
}

#[derive(Clone, Copy)]
enum ProbeCall {
    Empty,
    OneImport,
    Ryw,
}

impl ProbeCall {
    const ALL: [ProbeCall; 3] = [ProbeCall::Empty, ProbeCall::OneImport, ProbeCall::Ryw];

    fn name(self) -> &'static str {
        match self {
            ProbeCall::Empty => "probe empty",
            ProbeCall::OneImport => "probe one-call",
            ProbeCall::Ryw => "probe ryw",
        }
    }
}

/// The probe's variants: each call through sync bindings, async bindings in
/// one `block_on`, and async bindings with tokio's `block_on` per call; and
/// the guest-side import loop, sync and async.
fn probe_variants(engine: &Engine, component: &Component) -> anyhow::Result<Vec<Variant>> {
    let mut sync_linker = Linker::<ProbeState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut sync_linker)?;
    sync_bindings::Probe::add_to_linker::<ProbeState, HasSelf<ProbeState>>(
        &mut sync_linker,
        |s| s,
    )?;
    let sync_pre = sync_bindings::ProbePre::new(sync_linker.instantiate_pre(component)?)?;

    let mut async_linker = Linker::<ProbeState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut async_linker)?;
    async_bindings::Probe::add_to_linker::<ProbeState, HasSelf<ProbeState>>(
        &mut async_linker,
        |s| s,
    )?;
    let async_pre = async_bindings::ProbePre::new(async_linker.instantiate_pre(component)?)?;

    let mut variants = Vec::new();
    for call in ProbeCall::ALL {
        let mut store = new_store(engine, ProbeState::new());
        let probe = sync_pre.instantiate(&mut store)?;
        variants.push(Variant::new(
            call.name(),
            "sync",
            Box::new(move |n| {
                let guest = probe.probe_bench_guest();
                let start = Instant::now();
                for _ in 0..n {
                    // The host sets the deadline before every call too.
                    store.set_epoch_deadline(DEADLINE_TICKS);
                    match call {
                        ProbeCall::Empty => guest.call_empty(&mut store)?,
                        ProbeCall::OneImport => guest.call_one_call(&mut store)?,
                        ProbeCall::Ryw => guest.call_ryw(&mut store)?,
                    }
                }
                Ok(start.elapsed())
            }),
        ));

        let mut store = new_store(engine, ProbeState::new());
        let probe = block_on(async_pre.instantiate_async(&mut store))?;
        variants.push(Variant::new(
            call.name(),
            "async, one block_on",
            Box::new(move |n| {
                block_on(async {
                    let guest = probe.probe_bench_guest();
                    let start = Instant::now();
                    for _ in 0..n {
                        store.set_epoch_deadline(DEADLINE_TICKS);
                        match call {
                            ProbeCall::Empty => guest.call_empty(&mut store).await?,
                            ProbeCall::OneImport => guest.call_one_call(&mut store).await?,
                            ProbeCall::Ryw => guest.call_ryw(&mut store).await?,
                        }
                    }
                    Ok(start.elapsed())
                })
            }),
        ));

        let mut store = new_store(engine, ProbeState::new());
        let probe = block_on(async_pre.instantiate_async(&mut store))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .context("cannot build a current-thread tokio runtime")?;
        variants.push(Variant::new(
            call.name(),
            "async, tokio block_on per call",
            Box::new(move |n| {
                let guest = probe.probe_bench_guest();
                let start = Instant::now();
                for _ in 0..n {
                    store.set_epoch_deadline(DEADLINE_TICKS);
                    runtime.block_on(async {
                        match call {
                            ProbeCall::Empty => guest.call_empty(&mut store).await,
                            ProbeCall::OneImport => guest.call_one_call(&mut store).await,
                            ProbeCall::Ryw => guest.call_ryw(&mut store).await,
                        }
                    })?;
                }
                Ok(start.elapsed())
            }),
        ));
    }

    // `noop-loop(n)`: n imports inside one export call.
    let mut store = new_store(engine, ProbeState::new());
    let probe = sync_pre.instantiate(&mut store)?;
    variants.push(Variant::new(
        "probe import in guest loop",
        "sync",
        Box::new(move |n| {
            let before = store.data().noops;
            let start = Instant::now();
            probe.probe_bench_guest().call_noop_loop(&mut store, n)?;
            let took = start.elapsed();
            ensure!(store.data().noops - before == n, "the probe skipped noops");
            Ok(took)
        }),
    ));
    let mut store = new_store(engine, ProbeState::new());
    let probe = block_on(async_pre.instantiate_async(&mut store))?;
    variants.push(Variant::new(
        "probe import in guest loop",
        "async, one block_on",
        Box::new(move |n| {
            let before = store.data().noops;
            let start = Instant::now();
            block_on(probe.probe_bench_guest().call_noop_loop(&mut store, n))?;
            let took = start.elapsed();
            ensure!(store.data().noops - before == n, "the probe skipped noops");
            Ok(took)
        }),
    ));
    Ok(variants)
}

/// A [`Timed`] calling the no-op `$nop` `n` times on `$store`, through
/// `call_async` when `$is_async`. Core and component typed functions share
/// these method names but no trait, hence a macro.
macro_rules! timed_nop_calls {
    ($is_async:expr, $nop:ident, $store:ident) => {{
        let run: Timed = if $is_async {
            Box::new(move |n| {
                block_on(async {
                    let start = Instant::now();
                    for _ in 0..n {
                        $nop.call_async(&mut $store, ()).await?;
                    }
                    Ok(start.elapsed())
                })
            })
        } else {
            Box::new(move |n| {
                let start = Instant::now();
                for _ in 0..n {
                    $nop.call(&mut $store, ())?;
                }
                Ok(start.elapsed())
            })
        };
        run
    }};
}

/// The kinds of call wasmtime's `benches/call.rs` measures (typed API
/// only), in `.wat` written here, on `engine`: sync, and async driven by one
/// `block_on` (wasmtime's bench polls each call with a dummy waker).
fn reference_variants(engine: &Engine, tag: &'static str) -> anyhow::Result<Vec<Variant>> {
    let [sync_driver, async_driver] = match tag {
        "plain" => ["sync, plain engine", "async, plain engine"],
        _ => ["sync, our engine", "async, our engine"],
    };
    let mut variants = Vec::new();

    // host→wasm, core module.
    let module = wasmtime::Module::new(engine, r#"(module (func (export "nop")))"#)?;
    for is_async in [false, true] {
        let mut store = new_store(engine, ());
        let instance = if is_async {
            block_on(wasmtime::Instance::new_async(&mut store, &module, &[]))?
        } else {
            wasmtime::Instance::new(&mut store, &module, &[])?
        };
        let nop = instance.get_typed_func::<(), ()>(&mut store, "nop")?;
        let run = timed_nop_calls!(is_async, nop, store);
        let driver = if is_async { async_driver } else { sync_driver };
        variants.push(Variant::new("core host→wasm nop", driver, run));
    }

    // host→wasm, component: one lifted core no-op.
    let component = Component::new(
        engine,
        r#"(component
            (core module $m (func (export "nop")))
            (core instance $i (instantiate $m))
            (func (export "nop") (canon lift (core func $i "nop"))))"#,
    )?;
    for is_async in [false, true] {
        let mut store = new_store(engine, ());
        let linker = Linker::<()>::new(engine);
        let instance = if is_async {
            block_on(linker.instantiate_async(&mut store, &component))?
        } else {
            linker.instantiate(&mut store, &component)?
        };
        let nop = instance.get_typed_func::<(), ()>(&mut store, "nop")?;
        let run = timed_nop_calls!(is_async, nop, store);
        let driver = if is_async { async_driver } else { sync_driver };
        variants.push(Variant::new("component host→wasm nop", driver, run));
    }

    // wasm→host, core module: the guest loops `n` times over the import.
    let looper = format!("(module {LOOP_BODY})");
    let module = wasmtime::Module::new(engine, looper)?;
    for is_async in [false, true] {
        let mut store = new_store(engine, 0u64);
        let mut linker = wasmtime::Linker::<u64>::new(engine);
        let instance = if is_async {
            linker.func_wrap_async("host", "nop", |mut caller, (): ()| {
                *caller.data_mut() += 1;
                Box::new(async {})
            })?;
            block_on(linker.instantiate_async(&mut store, &module))?
        } else {
            linker.func_wrap("host", "nop", |mut caller: wasmtime::Caller<'_, u64>| {
                *caller.data_mut() += 1;
            })?;
            linker.instantiate(&mut store, &module)?
        };
        let run_fn = instance.get_typed_func::<u64, ()>(&mut store, "run")?;
        let run: Timed = Box::new(move |n| {
            let before = *store.data();
            let start = Instant::now();
            if is_async {
                block_on(run_fn.call_async(&mut store, n))?;
            } else {
                run_fn.call(&mut store, n)?;
            }
            let took = start.elapsed();
            ensure!(*store.data() - before == n, "the loop skipped calls");
            Ok(took)
        });
        let driver = if is_async { async_driver } else { sync_driver };
        variants.push(Variant::new("core wasm→host nop", driver, run));
    }

    // wasm→host, component: the same loop over a lowered component import.
    let component = Component::new(
        engine,
        format!(
            r#"(component
                (import "nop" (func $nop))
                (core func $nop_lowered (canon lower (func $nop)))
                (core module $m {LOOP_BODY})
                (core instance $i (instantiate $m
                    (with "host" (instance (export "nop" (func $nop_lowered))))))
                (func (export "run") (param "n" u64) (canon lift (core func $i "run"))))"#,
        ),
    )?;
    for is_async in [false, true] {
        let mut store = new_store(engine, 0u64);
        let mut linker = Linker::<u64>::new(engine);
        let instance = if is_async {
            linker.root().func_wrap_async("nop", |mut store, (): ()| {
                *store.data_mut() += 1;
                Box::new(async { Ok(()) })
            })?;
            block_on(linker.instantiate_async(&mut store, &component))?
        } else {
            linker.root().func_wrap("nop", |mut store, (): ()| {
                *store.data_mut() += 1;
                Ok(())
            })?;
            linker.instantiate(&mut store, &component)?
        };
        let run_fn = instance.get_typed_func::<(u64,), ()>(&mut store, "run")?;
        let run: Timed = Box::new(move |n| {
            let before = *store.data();
            let start = Instant::now();
            if is_async {
                block_on(run_fn.call_async(&mut store, (n,)))?;
            } else {
                run_fn.call(&mut store, (n,))?;
            }
            let took = start.elapsed();
            ensure!(*store.data() - before == n, "the loop skipped calls");
            Ok(took)
        });
        let driver = if is_async { async_driver } else { sync_driver };
        variants.push(Variant::new("component wasm→host nop", driver, run));
    }
    Ok(variants)
}

fn find<'a>(variants: &'a [Variant], case: &str, driver: &str) -> anyhow::Result<&'a Variant> {
    variants
        .iter()
        .find(|v| v.case == case && v.driver == driver)
        .with_context(|| format!("no variant `{case} / {driver}`"))
}

/// Median over repetitions of `a`'s time over `b`'s in the same repetition.
fn paired_ratio(a: &Variant, b: &Variant) -> f64 {
    let ratios: Vec<f64> = a
        .ns_per_call
        .iter()
        .zip(&b.ns_per_call)
        .map(|(x, y)| x / y)
        .collect();
    median(&ratios)
}

fn main() -> anyhow::Result<()> {
    // `cargo bench` passes `--bench`; a plain argument keeps only the
    // variants whose `call / driver` label contains it (for profiling one).
    let filter = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let path = probe_path();
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) => bail!(
            "cannot read the probe component `{}`: {e} (run `make plugins` first, or point BLOCKLAB_PLUGINS at the directory holding boundary-probe.wasm)",
            path.display()
        ),
    };
    let counting = std::env::var_os("BOUNDARY_CALLS");
    let ours = our_engine(counting.is_none())?;
    let plain = plain_engine()?;
    let component = Component::new(&ours, &bytes)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("cannot compile `{}`", path.display()))?;

    let mut variants = probe_variants(&ours, &component)?;
    variants.extend(reference_variants(&ours, "ours")?);
    variants.extend(reference_variants(&plain, "plain")?);
    if let Some(filter) = &filter {
        variants.retain(|v| format!("{} / {}", v.case, v.driver).contains(filter.as_str()));
        ensure!(!variants.is_empty(), "no variant matches `{filter}`");
    }

    // Fixed-count mode for callgrind: the difference between two counts
    // over the difference in calls is instructions per call, whatever else
    // the process does and however busy the machine is.
    if let Some(calls) = counting {
        let calls: u64 = calls
            .to_str()
            .and_then(|c| c.parse().ok())
            .context("`BOUNDARY_CALLS` must be a whole number of calls")?;
        for variant in &mut variants {
            (variant.run)(10_000)?;
            (variant.run)(calls)?;
            println!("{} / {}: {calls} calls", variant.case, variant.driver);
        }
        return Ok(());
    }
    for variant in &mut variants {
        variant.calibrate()?;
    }
    eprintln!(
        "boundary: {} variants, {REPS} repetitions of ~{REP_TIME:?} each",
        variants.len()
    );
    for rep in 0..REPS {
        let order: Vec<usize> = if rep % 2 == 0 {
            (0..variants.len()).collect()
        } else {
            (0..variants.len()).rev().collect()
        };
        for i in order {
            variants[i].measure()?;
        }
    }

    println!("| call | driver | median ns/call | min | max | calls |");
    println!("|---|---|---|---|---|---|");
    for v in &variants {
        let min = v.ns_per_call.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.ns_per_call.iter().copied().fold(0.0, f64::max);
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {} |",
            v.case,
            v.driver,
            median(&v.ns_per_call),
            min,
            max,
            v.calls
        );
    }

    if filter.is_some() {
        return Ok(());
    }
    println!();
    println!("async / sync, median of within-repetition ratios:");
    for case in [
        "probe empty",
        "probe one-call",
        "probe ryw",
        "probe import in guest loop",
    ] {
        let sync = find(&variants, case, "sync")?;
        let one = find(&variants, case, "async, one block_on")?;
        print!("  {case}: one block_on {:.2}", paired_ratio(one, sync));
        if let Ok(tokio) = find(&variants, case, "async, tokio block_on per call") {
            print!(", tokio block_on per call {:.2}", paired_ratio(tokio, sync));
        }
        println!();
    }
    for case in [
        "core host→wasm nop",
        "component host→wasm nop",
        "core wasm→host nop",
        "component wasm→host nop",
    ] {
        for engine in ["our engine", "plain engine"] {
            let sync = find(&variants, case, &format!("sync, {engine}"))?;
            let asy = find(&variants, case, &format!("async, {engine}"))?;
            println!("  {case}, {engine}: {:.2}", paired_ratio(asy, sync));
        }
    }

    println!();
    println!("probe (sync) / wasmtime-style reference (sync), median of within-repetition ratios:");
    let pairs = [
        ("probe empty", "component host→wasm nop"),
        ("probe import in guest loop", "component wasm→host nop"),
    ];
    for (probe, reference) in pairs {
        let p = find(&variants, probe, "sync")?;
        for engine in ["our engine", "plain engine"] {
            let r = find(&variants, reference, &format!("sync, {engine}"))?;
            println!(
                "  {probe} / {reference} ({engine}): {:.2}",
                paired_ratio(p, r)
            );
        }
    }
    Ok(())
}
