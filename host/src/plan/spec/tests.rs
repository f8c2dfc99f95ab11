//! The plan file's tests: parsing, `--set`, expansion, validation and the
//! statistics a plan compares, over examples/quick.toml and its variants.

use super::*;
use crate::statistic::MeasureMode;

fn quick_with(overrides: &[&str]) -> anyhow::Result<PlanSpec> {
    let quick = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/quick.toml");
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    PlanSpec::load(&quick, &overrides)
}

/// quick.toml in rate mode: a 0.2 s window at `rate`, or swept; without
/// the workloads' own transaction counts, which rate mode refuses.
fn rate_plan(extra: &[&str]) -> anyhow::Result<PlanSpec> {
    let quick = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/quick.toml");
    let text = std::fs::read_to_string(quick).unwrap();
    let (head, workloads) = text.split_once("[[workloads]]").unwrap();
    let workloads: String = workloads
        .lines()
        .filter(|l| !l.starts_with("measured = "))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut o = vec!["measure.mode=\"rate\"", "measure.measured_s=0.2"];
    o.extend_from_slice(extra);
    let overrides: Vec<String> = o.iter().map(|s| s.to_string()).collect();
    PlanSpec::parse(&format!("{head}[[workloads]]{workloads}"), &overrides)
}

#[test]
fn a_workload_measures_its_own_number_of_transactions_in_transactions_mode_only() {
    let plan = quick_with(&[]).unwrap();
    let count = |name: &str| {
        let w = plan.workloads.iter().find(|w| w.name == name).unwrap();
        match plan.measure_for(w).unwrap() {
            Measure::Transactions { warmup, measured } => (warmup, measured),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(count("grv"), (1000, 40000));
    assert_eq!(count("batchset50"), (1000, 500));
    assert!(
        plan.describe_measure().contains("40000 for grv"),
        "{}",
        plan.describe_measure()
    );
    let e = format!(
        "{:#}",
        quick_with(&[
            "measure.mode=\"rate\"",
            "measure.measured_s=0.2",
            "measure.rate=100"
        ])
        .unwrap_err()
    );
    assert!(
        e.contains("workload `grv`") && e.contains("`measured` on a workload counts transactions"),
        "{e}"
    );
    let e = format!(
        "{:#}",
        quick_with(&["workloads=[{name=\"grv\",measured=0}]"]).unwrap_err()
    );
    assert!(
        e.contains("workload `grv`") && e.contains("at least 1"),
        "{e}"
    );
}

#[test]
fn counters_count_every_run_or_a_counted_twin_beside_each_workload() {
    let every = quick_with(&["measure.counters=\"callgrind\""]).unwrap();
    assert_eq!(every.workloads.len(), 11);
    let counted = every.counters_for(&every.workloads[0]).unwrap();
    assert_eq!(counted.source, CounterSource::Callgrind);
    assert!(!counted.cache_sim);
    assert!(
        every
            .primary_statistics()
            .contains(&Statistic::InstructionsPerTxn)
    );

    let beside = quick_with(&[
        "measure.counters=\"callgrind\"",
        "measure.counted=\"beside\"",
        "measure.cache_sim=true",
    ])
    .unwrap();
    let names: Vec<&str> = beside.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names.len(), 22, "{names:?}");
    assert_eq!(&names[..2], ["grv", "grv:counted"]);
    assert_eq!(beside.workloads[1].plugin_workload(), "grv");
    assert_eq!(beside.counters_for(&beside.workloads[0]), None);
    assert!(beside.counters_for(&beside.workloads[1]).unwrap().cache_sim);

    // A plan without counters seals to the same text as before they existed.
    let plain = quick_with(&[]).unwrap();
    let text = toml::to_string(&plain).unwrap();
    for key in ["counters", "counted", "cache_sim", "inject_loop_iterations"] {
        assert!(!text.contains(key), "{key} in {text}");
    }
}

#[test]
fn counter_keys_that_cannot_apply_are_refused_naming_the_fix() {
    let e = |o: &[&str]| format!("{:#}", quick_with(o).unwrap_err());
    let stray = e(&["measure.cache_sim=true"]);
    assert!(
        stray.contains("`measure.cache_sim` is set but `measure.counters` is not"),
        "{stray}"
    );
    let pmu_cache = e(&["measure.counters=\"pmu\"", "measure.cache_sim=true"]);
    assert!(
        pmu_cache.contains("set `measure.counters = \"callgrind\"`"),
        "{pmu_cache}"
    );
    let rate = format!(
        "{:#}",
        rate_plan(&["measure.counters=\"callgrind\"", "measure.rate=100"]).unwrap_err()
    );
    assert!(
        rate.contains("cannot keep `measure.mode = \"rate\"`"),
        "{rate}"
    );
    let unknown = e(&["measure.counters=\"perf\""]);
    assert!(unknown.contains("unknown variant `perf`"), "{unknown}");
}

#[test]
fn a_rate_sweep_is_a_factor_crossed_with_arms_under_names_that_say_the_rate() {
    let plan = rate_plan(&["measure.rates=[1000, 2500.5]"]).unwrap();
    let names: Vec<&str> = plan.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names.len(), 22, "{names:?}");
    assert_eq!(&names[..2], ["grv@1000", "grv@2500.5"]);
    let w = &plan.workloads[1];
    assert_eq!((w.plugin_workload(), w.rate), ("grv", Some(2500.5)));
    match plan.measure_for(w).unwrap() {
        Measure::Rate {
            rate_per_s,
            arrival,
            measured_s,
            ..
        } => assert_eq!(
            (rate_per_s, arrival, measured_s),
            (2500.5, Arrival::Constant, 0.2)
        ),
        other => panic!("{other:?}"),
    }
    // The sealed spec parses back to the same workloads: no second sweep.
    let text = toml::to_string(&plan).unwrap();
    assert_eq!(
        PlanSpec::parse(&text, &[]).unwrap().workloads,
        plan.workloads
    );
}

#[test]
fn rate_mode_refuses_a_missing_or_impossible_rate_and_stray_rate_keys() {
    let e = format!("{:#}", rate_plan(&[]).unwrap_err());
    assert!(e.contains("set `measure.rate`"), "{e}");
    let own = "name = \"p\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmode = \"rate\"\nmeasured_s = 0.1\n[[workloads]]\nname = \"grv\"\nrate = -1.0\n[[arms]]\nname = \"a\"\nbaseline = true\n";
    let e = format!("{:#}", PlanSpec::parse(own, &[]).unwrap_err());
    assert!(e.contains("in workload `grv`: `rate = -1`"), "{e}");
    for bad in ["measure.rate=0", "measure.rate=-5", "measure.rate=1e12"] {
        let e = format!("{:#}", rate_plan(&[bad]).unwrap_err());
        assert!(
            e.contains("out of range") && e.contains("10000000"),
            "{bad}: {e}"
        );
    }
    let e = format!("{:#}", rate_plan(&["measure.rates=[100, 0]"]).unwrap_err());
    assert!(e.contains("`measure.rates = 0` is out of range"), "{e}");
    let e = format!("{:#}", quick_with(&["measure.rate=100"]).unwrap_err());
    assert!(
        e.contains("`rate` is set") && e.contains("measure.mode = \"rate\""),
        "{e}"
    );
    let e = format!(
        "{:#}",
        quick_with(&["measure.arrival=\"poisson\""]).unwrap_err()
    );
    assert!(e.contains("`arrival` is set"), "{e}");
    let e = format!(
        "{:#}",
        rate_plan(&["measure.rate=100", "measure.arrival=\"bursty\""]).unwrap_err()
    );
    assert!(e.contains("bursty") && e.contains("poisson"), "{e}");
    let plan = rate_plan(&["measure.rate=100", "measure.arrival=\"poisson\""]).unwrap();
    assert_eq!(plan.workloads.len(), 11);
    assert!(matches!(
        plan.measure_for(&plan.workloads[0]).unwrap(),
        Measure::Rate {
            rate_per_s: 100.0,
            arrival: Arrival::Poisson,
            ..
        }
    ));
}

#[test]
fn statistics_headline_chooses_the_headline_and_refuses_what_the_mode_lacks() {
    let set = "statistics.headline=[\"batch_median_latency\", \"cpu_measured\"]";
    let plan = quick_with(&[set]).unwrap();
    assert_eq!(
        plan.primary_statistics(),
        vec!["batch_median_latency".to_owned(), "cpu_measured".to_owned()]
    );
    // A plan without the section serialises as before (hash unchanged)
    // and keeps its mode's primary statistics.
    let plain = quick_with(&[]).unwrap();
    assert!(!toml::to_string(&plain).unwrap().contains("statistics"));
    assert_eq!(
        plain.primary_statistics(),
        vec!["mean_latency", "cpu_process"]
    );
    for (bad, words) in [
        (
            "statistics.headline=[\"records_per_s\"]",
            "does not compare",
        ),
        // Window mode's slice median: a transactions run has no slices.
        (
            "statistics.headline=[\"slice_median_records_per_s\"]",
            "does not compare",
        ),
        ("statistics.headline=[]", "is empty"),
        (
            "statistics.headline=[\"cpu_measured\", \"cpu_measured\"]",
            "twice",
        ),
    ] {
        let e = format!("{:#}", quick_with(&[bad]).unwrap_err());
        assert!(e.contains(words), "{bad}: {e}");
        assert!(e.contains("statistics.headline"), "{bad}: {e}");
    }
    let e = format!(
        "{:#}",
        quick_with(&["statistics.headline=[\"nope\"]"]).unwrap_err()
    );
    assert!(
        e.contains("`nope` is not a statistic") && e.contains("statistics.headline"),
        "{e}"
    );
}

#[test]
fn an_slo_statistic_is_written_as_the_rate_mode_statistic_it_bounds() {
    use SloStatistic::*;
    for s in [P50Latency, P99Latency, MeanLatency, ServiceP99Latency] {
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            format!("\"{}\"", s.name())
        );
        assert!(Statistic::of_mode(MeasureMode::Rate).contains(&s.statistic()));
    }
}

#[test]
fn an_slo_needs_a_swept_rate_plan_a_latency_statistic_and_a_positive_bound() {
    let slo = "measure.slo={ statistic = \"p99_latency\", max_ms = 2.0 }";
    let plan = rate_plan(&["measure.rates=[1000, 2000]", slo]).unwrap();
    let got = plan.measure.slo.unwrap();
    assert_eq!((got.statistic, got.max_ms), (SloStatistic::P99Latency, 2.0));
    assert!(plan.swept());
    // Sealed and parsed back: the same objective, no second sweep.
    let text = toml::to_string(&plan).unwrap();
    assert_eq!(PlanSpec::parse(&text, &[]).unwrap().measure, plan.measure);
    // A plan without one serialises as before (its hash is unchanged).
    let plain = rate_plan(&["measure.rates=[1000, 2000]"]).unwrap();
    assert!(!toml::to_string(&plain).unwrap().contains("slo"));
    let e = format!("{:#}", quick_with(&[slo]).unwrap_err());
    assert!(
        e.contains("`slo` is set") && e.contains("measure.mode = \"rate\""),
        "{e}"
    );
    let e = format!("{:#}", rate_plan(&["measure.rate=1000", slo]).unwrap_err());
    assert!(
        e.contains("`measure.slo` searches") && e.contains("measure.rates"),
        "{e}"
    );
    for bad in ["0", "-1", "1e9"] {
        let e = format!(
            "{:#}",
            rate_plan(&[
                "measure.rates=[1000, 2000]",
                &format!("measure.slo={{ statistic = \"p99_latency\", max_ms = {bad} }}"),
            ])
            .unwrap_err()
        );
        assert!(
            e.contains("is not a usable bound") && e.contains("max_ms = 2.0"),
            "{bad}: {e}"
        );
    }
    let e = format!(
        "{:#}",
        rate_plan(&[
            "measure.rates=[1000, 2000]",
            "measure.slo={ statistic = \"throughput\", max_ms = 2 }",
        ])
        .unwrap_err()
    );
    assert!(e.contains("throughput") && e.contains("p99_latency"), "{e}");
}

#[test]
fn a_slurm_executor_needs_a_spool_and_sane_options() {
    let e = format!(
        "{:#}",
        quick_with(&["executor.kind=\"slurm\""]).unwrap_err()
    );
    assert!(e.contains("executor.spool") && e.contains("--spool"), "{e}");
    let e = format!(
        "{:#}",
        quick_with(&["executor.partition=\"bench\""]).unwrap_err()
    );
    assert!(e.contains("executor.kind = \"slurm\""), "{e}");
    let e = format!(
        "{:#}",
        quick_with(&[
            "executor.kind=\"slurm\"",
            "executor.spool=\"/s\"",
            "executor.partition=\"a b\""
        ])
        .unwrap_err()
    );
    assert!(e.contains("executor.partition"), "{e}");
    let e = format!(
        "{:#}",
        quick_with(&[
            "executor.kind=\"slurm\"",
            "executor.spool=\"/s\"",
            "executor.nodelist=[\"n1\"]",
            "executor.distinct_hosts=2"
        ])
        .unwrap_err()
    );
    assert!(e.contains("distinct_hosts = 2"), "{e}");
    let ok = quick_with(&["executor.kind=\"slurm\"", "executor.spool=\"/s\""]).unwrap();
    assert_eq!(ok.executor.kind, ExecutorKind::Slurm);
}

#[test]
fn a_local_plan_seals_without_an_executor_key() {
    // Plans sealed before `[executor]` existed keep their hash.
    let spec = quick_with(&[]).unwrap();
    let json = serde_json::to_value(&spec).unwrap();
    assert!(json.get("executor").is_none(), "{json}");
}

/// The plans users copy must stay valid as the format evolves.
#[test]
fn every_example_plan_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            PlanSpec::load(&path, &[]).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            seen += 1;
        }
    }
    assert!(seen >= 3, "examples/ should hold the documented plans");
}

#[test]
fn set_overrides_nested_fields_and_is_typed() {
    let text = "name = \"p\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmeasured = 10\n[[workloads]]\nname = \"grv\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n";
    let spec = PlanSpec::parse(
        text,
        &[
            "measure.measured=500".into(),
            "bootstrap.method=\"bca\"".into(),
        ],
    )
    .unwrap();
    assert_eq!(spec.measure.measured, Some(500));
    assert_eq!(spec.bootstrap.method, Method::Bca);
    let err = PlanSpec::parse(text, &["measure.measured=lots".into()]).unwrap_err();
    assert!(format!("{err:#}").contains("measured"), "{err:#}");
    let err = PlanSpec::parse(text, &["nonsense".into()]).unwrap_err();
    assert!(err.to_string().contains("is not PATH=VALUE"), "{err}");
}

/// A window-mode grpc plan with `network` and `arms` appended.
fn grpc_plan(rest: &str) -> anyhow::Result<PlanSpec> {
    let text = format!(
        "name = \"p\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmode = \"window\"\nmeasured_s = 1.0\n[[workloads]]\nname = \"ingest\"\n{rest}"
    );
    PlanSpec::parse(&text, &[])
}

const LOCAL_ARMS: &str = "[[arms]]\nname = \"a\"\nbaseline = true\ntarget = { kind = \"grpc\", endpoint = \"local:grpc-ingest\" }\n[[arms]]\nname = \"b\"\ntarget = { kind = \"grpc\", endpoint = \"local:grpc-ingest\" }\nlink = { rate_mbit = 10 }\n";

#[test]
fn links_need_a_namespace_and_a_local_target() {
    // The arm link without `placement = "netns"`.
    let e = grpc_plan(LOCAL_ARMS).unwrap_err().to_string();
    assert!(
        e.contains("arm `b` sets `link`") && e.contains("set `network.placement = \"netns\"`"),
        "{e}"
    );
    let spec = grpc_plan(&format!("[network]\nplacement = \"netns\"\n{LOCAL_ARMS}")).unwrap();
    let (a, b) = (&spec.arms[0], &spec.arms[1]);
    assert_eq!(spec.link_for(a), None);
    assert_eq!(spec.link_for(b).unwrap().rate_mbit, Some(10.0));
    // Arms that differ only in their link are not the same arm.
    assert!(spec.warnings().is_empty(), "{:?}", spec.warnings());
    // The plan's link is every arm's that sets none.
    let spec = grpc_plan(&format!(
        "[network]\nplacement = \"netns\"\nlink = {{ rate_mbit = 1000 }}\n{LOCAL_ARMS}"
    ))
    .unwrap();
    assert_eq!(
        spec.link_for(&spec.arms[0]).unwrap().rate_mbit,
        Some(1000.0)
    );
    // A namespace with nothing of ours to put in it.
    let e = grpc_plan(
        "[network]\nplacement = \"netns\"\n[[arms]]\nname = \"a\"\nbaseline = true\ntarget = { kind = \"grpc\", endpoint = \"http://127.0.0.1:9\" }\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no arm's target is one"), "{e}");
    // Unknown link keys and out-of-range values name the key.
    let e = grpc_plan(&format!(
        "[network]\nplacement = \"netns\"\nlink = {{ rate = 10 }}\n{LOCAL_ARMS}"
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("unknown field `rate`"), "{e}");
    let e = grpc_plan(&format!(
        "[network]\nplacement = \"netns\"\nlink = {{ delay_ms = -1 }}\n{LOCAL_ARMS}"
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("`network.link.delay_ms = -1` is out of range"),
        "{e}"
    );
}

#[test]
fn exactly_one_baseline_is_required() {
    let text = "name = \"p\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmeasured = 10\n[[workloads]]\nname = \"grv\"\n[[arms]]\nname = \"a\"\n[[arms]]\nname = \"b\"\n";
    let err = PlanSpec::parse(text, &[]).unwrap_err();
    assert!(
        err.to_string().contains("mark one with `baseline = true`"),
        "{err}"
    );
}

#[test]
fn a_spinning_gate_takes_a_short_window_and_refuses_a_long_one_saying_what_to_give() {
    let spin = quick_with(&[
        "gates.quiescence_probe=\"spin\"",
        "gates.quiescence_window_ms=2",
    ])
    .unwrap();
    assert_eq!(spin.gates.quiescence_probe, GateProbe::Spin);
    // A 300 ms window would hold every watched CPU for 300 ms.
    let err = quick_with(&[
        "gates.quiescence_probe=\"spin\"",
        "gates.quiescence_window_ms=300",
    ])
    .unwrap_err();
    let err = format!("{err:#}");
    assert!(err.contains("gates.quiescence_window_ms = 300"), "{err}");
    assert!(err.contains("give 1 to 100"), "{err}");
    let err = quick_with(&["gates.quiescence_probe=\"jiffies\""]).unwrap_err();
    let err = format!("{err:#}");
    assert!(err.contains("quiescence_probe"), "{err}");
}

/// Issue 31, point 7: the markdown Design section and the calibration
/// printed a measure as `Transactions { warmup: 30, measured: 300 }`.
#[test]
fn a_measure_reads_as_words() {
    use super::measure::{Arrival, Measure};
    let t = Measure::Transactions {
        warmup: 30,
        measured: 300,
    };
    assert_eq!(
        t.to_string(),
        "300 measured transactions after 30 of warmup"
    );
    let w = Measure::Window {
        warmup_s: 0.1,
        measured_s: 0.5,
    };
    assert_eq!(
        w.to_string(),
        "0.5 s measured windows after 0.1 s of warmup"
    );
    let r = Measure::Rate {
        warmup_s: 0.5,
        measured_s: 1.0,
        rate_per_s: 200.0,
        arrival: Arrival::Poisson,
    };
    assert_eq!(
        r.to_string(),
        "1 s measured windows at 200/s (Poisson arrivals) after 0.5 s of warmup"
    );
}

/// Two arms on one embedded engine that differ in a transaction option
/// are two arms of the plan; an option the engine cannot honour is refused
/// naming the arm, before anything runs.
#[test]
fn arms_may_differ_in_transaction_options_the_target_honours() {
    let text = "name = \"p\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmeasured = 10\n[[workloads]]\nname = \"ryw\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\ntarget = { kind = \"embedded\", snapshot_ryw_disable = true }\n";
    let spec = PlanSpec::parse(text, &[]).unwrap();
    assert_ne!(spec.arms[0].target, spec.arms[1].target);
    assert_eq!(
        spec.arms[1].target.label(),
        "embedded (snapshot_ryw_disable)"
    );
    let err = PlanSpec::parse(
        &text.replace("snapshot_ryw_disable", "causal_read_risky"),
        &[],
    )
    .unwrap_err();
    let err = format!("{err:#}");
    assert!(
        err.contains("in arm `b`") && err.contains("`causal_read_risky` on an embedded target"),
        "{err}"
    );
}
