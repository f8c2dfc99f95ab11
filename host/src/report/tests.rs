//! The report's own tests: the statistics table, the shared formatting,
//! and a snapshot of every rendering of one fixed campaign (docs/reports.md
//! describes what they show). `BLOCKLAB_UPDATE_SNAPSHOTS=1 cargo test -p
//! blocklab --lib report::` rewrites the snapshots after a deliberate change;
//! review the diff before committing it.

use super::format::pct;
use super::*;
use crate::analysis::model::GateSummary;
use crate::analysis::{Report, analyse};
use crate::record::gates::{Environment, Telemetry};
use crate::record::{RunRecord, RunResult, RunStatus};
use crate::statistic::{Outcome, Statistic};
use blocklab_store::{CampaignMeta, CampaignStatus};

fn run(steal_ticks: u64, ticks: u64) -> Telemetry {
    Telemetry {
        steal_pct: 100.0 * steal_ticks as f64 / ticks as f64,
        steal_ticks,
        ticks,
        ..Default::default()
    }
}

#[test]
fn leaked_resources_are_named_in_the_gates_sentence_only_when_there_are_some() {
    let clean = GateSummary::default().sentence();
    assert!(!clean.contains("leaked"), "{clean}");
    let leaky = GateSummary {
        leaked_resources: 3,
        ..Default::default()
    }
    .sentence();
    assert!(
        leaky.contains(", 3 plugin resources leaked (transactions or streams never dropped"),
        "{leaky}"
    );
}

#[test]
fn percentages_print_as_many_decimals_as_they_need() {
    assert_eq!(pct(0.95), "95%");
    assert_eq!(pct(1.0 - 0.05 / 7.0), "99.2857%");
    assert_eq!(pct(0.999), "99.9%");
}

/// A finished two-arm campaign with fixed figures: arm `b, "fast"` is about
/// 20% faster than the baseline `a` on workload `grv`, and one of its runs
/// failed once and was rerun.
fn fixture() -> Report {
    fixture_with(CampaignStatus::Finished)
}

/// [`fixture`] with its campaign in `status`.
fn fixture_with(status: CampaignStatus) -> Report {
    let (campaign, plan, records, environment) = fixture_parts(status);
    analyse(campaign, plan, &records, Some(environment), None, vec![])
}

/// Where a fixture run's time went: a read version, and two reads whose
/// round trips were simulated.
fn fixture_operations(mean: f64) -> Vec<crate::record::operations::Operation> {
    use crate::record::operations::Operation;
    use crate::target::kv::ops::KvOp;
    let latency = |m: f64| crate::record::result::Latency {
        mean: m,
        p50: m * 0.9,
        p99: m * 1.5,
        ..Default::default()
    };
    vec![
        Operation {
            op: KvOp::Grv,
            calls: 1000,
            per_txn: 1.0,
            latency_us: latency(mean * 0.5),
            simulated: false,
        },
        Operation {
            op: KvOp::Get,
            calls: 2000,
            per_txn: 2.0,
            latency_us: latency(mean * 0.2),
            simulated: true,
        },
    ]
}

/// What [`fixture_with`] analyses, for a test to change first.
fn fixture_parts(
    status: CampaignStatus,
) -> (
    CampaignMeta,
    crate::plan::seal::SealedPlan,
    Vec<RunRecord>,
    Environment,
) {
    let text = "name = \"snap\"\nseed = 7\nblocks = 4\nplugin = \"builtin\"\n[measure]\nmeasured = 1000\n[[workloads]]\nname = \"grv\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b, \\\"fast\\\"\"\n";
    let spec = crate::plan::spec::PlanSpec::parse(text, &[]).unwrap();
    let mut plan =
        crate::plan::seal::seal(spec, vec![], "snap.toml", text.as_bytes(), None).unwrap();
    // What depends on the build that runs the test is fixed here.
    plan.inputs = [("blocklab".to_owned(), "0".repeat(64))].into();
    plan.hash = "f".repeat(64);
    plan.version = "0.0.0".into();
    let mut records = Vec::new();
    for slot in plan.schedule.clone() {
        let b = slot.arm != "a";
        let mean = if b { 80.0 } else { 100.0 } + f64::from(slot.block) * if b { 0.5 } else { 1.5 };
        let result = RunResult {
            measured: 1000,
            measured_s: mean * 1e-3,
            latency_us: crate::record::result::Latency {
                mean,
                p50: mean * 0.9,
                p99: mean * 2.0,
                ..Default::default()
            },
            throughput_per_s: 1e6 / mean,
            cpu: crate::record::result::Cpu {
                measured_us_per_txn: mean * 0.5,
                process_us_per_txn: mean * 0.6,
                involuntary_switches: 0,
            },
            operations: fixture_operations(mean),
            ..Default::default()
        };
        let record = |attempt: u32, status: RunStatus| RunRecord {
            attempt,
            status,
            reason: (status == RunStatus::Failed)
                .then(|| "worker exited with exit status: 1: boom".into()),
            rerun_reason: (attempt > 0).then(|| crate::record::result::RerunReason::Failed {
                attempt: 0,
                reason: "worker exited with exit status: 1: boom".into(),
            }),
            result: (status == RunStatus::Ok).then(|| result.clone()),
            ..RunRecord::finished(&slot, result.clone())
        };
        if b && slot.block == 1 {
            records.push(record(0, RunStatus::Failed));
            records.push(record(1, RunStatus::Ok));
        } else {
            records.push(record(0, RunStatus::Ok));
        }
    }
    let campaign = CampaignMeta {
        id: 3,
        name: "snap".into(),
        plan_hash: plan.hash.clone(),
        created_unix_ms: 0,
        status,
        total_runs: plan.schedule.len() as u32,
        finished_runs: plan.schedule.len() as u32,
        tags: [("commit".to_owned(), "abc123".to_owned())].into(),
        testbed: Some("snapbed".into()),
    };
    let environment = Environment {
        cpu_model: "Test CPU".into(),
        kernel: "6.1.0".into(),
        governor: "performance".into(),
        smt_layout: vec!["0".into(), "1".into()],
        online_cpus: 2,
        memory_gib: 24.0,
        hostname: "snap-host".into(),
        blocklab_version: "0.0.0".into(),
        toolchain: "rustc 0.0.0; wasmtime 0.0.0".into(),
        qdiscs: None,
        pmu: None,
    };
    (campaign, plan, records, environment)
}

/// Every rendering of `report`, one after another.
fn every_rendering(report: &Report) -> String {
    [
        terminal(report),
        markdown(report),
        csv(report),
        serde_json::to_string_pretty(report).unwrap(),
    ]
    .join("\n")
}

#[test]
fn steal_from_runs_of_a_few_ticks_is_not_a_percentage_anywhere() {
    // Runs of 0.14 ms see 3 ticks of 10 ms on the client CPUs; one of
    // them, a final run the verdict reads, caught a tick of steal (33.3% of
    // its own ticks, 3.70% of all).
    let (campaign, plan, mut records, environment) = fixture_parts(CampaignStatus::Finished);
    for (i, r) in records.iter_mut().enumerate() {
        r.telemetry = run(u64::from(i == 0), 3);
        if let Some(x) = r.result.as_mut() {
            x.measured_s = 0.14e-3;
        }
    }
    let report = analyse(campaign, plan, &records, Some(environment), None, vec![]);
    let all = every_rendering(&report);
    for said in ["33.3%", "33.33", "100%", "100.0%", "3.70%"] {
        assert!(!all.contains(said), "{said} in\n{all}");
    }
    let gates = report.gates.sentence();
    assert!(
        gates.contains("CPU steal not judged (1 steal ticks of 27 client-CPU ticks"),
        "{gates}"
    );
    // The verdicts agree: no steal warning where the gates judge none.
    for v in &report.verdicts {
        assert!(v.warnings.iter().all(|w| !w.contains("steal")), "{v:?}");
    }
    assert!(report.runs.iter().all(|r| r.steal_pct.is_none()));

    // Runs of 2 s (400 ticks on two CPUs), one with 5% steal: the gates and
    // the verdict give the same run's 5.00%.
    let (campaign, plan, mut records, environment) = fixture_parts(CampaignStatus::Finished);
    for (i, r) in records.iter_mut().enumerate() {
        r.telemetry = run(if i == 0 { 20 } else { 0 }, 400);
    }
    let report = analyse(campaign, plan, &records, Some(environment), None, vec![]);
    let gates = report.gates.sentence();
    assert!(
        gates.contains("(at most 5.00% in a run of 1 s or more)"),
        "{gates}"
    );
    assert!(
        report.verdicts.iter().any(|v| v
            .warnings
            .iter()
            .any(|w| w.contains("CPU steal of 5.0% at most"))),
        "{:?}",
        report.verdicts
    );
}

/// Compares `actual` with the committed snapshot `name` under
/// host/src/report/snapshots/, or rewrites it when
/// `BLOCKLAB_UPDATE_SNAPSHOTS` is set.
fn assert_snapshot(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/report/snapshots")
        .join(name);
    if std::env::var_os("BLOCKLAB_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "snapshot {} is unreadable ({e}); run with BLOCKLAB_UPDATE_SNAPSHOTS=1 to write it",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "{name} changed; if that is intended, run with BLOCKLAB_UPDATE_SNAPSHOTS=1 and review the diff\n--- expected\n{expected}\n--- actual\n{actual}"
    );
}

#[test]
fn the_terminal_tables_match_their_snapshot() {
    assert_snapshot("terminal.txt", &terminal(&fixture()));
}

#[test]
fn the_markdown_report_matches_its_snapshot() {
    assert_snapshot("markdown.md", &markdown(&fixture()));
}

#[test]
fn the_csv_matches_its_snapshot() {
    assert_snapshot("effects.csv", &csv(&fixture()));
}

#[test]
fn the_json_matches_its_snapshot() {
    let json = serde_json::to_string_pretty(&fixture()).unwrap();
    assert_snapshot("report.json", &json);
}

#[test]
fn an_arm_name_with_a_comma_and_quotes_stays_one_csv_field() {
    let text = csv(&fixture());
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let arms: Vec<String> = reader.records().map(|r| r.unwrap()[1].to_owned()).collect();
    assert!(!arms.is_empty());
    assert!(arms.iter().all(|a| a == "b, \"fast\""), "{arms:?}");
}

#[test]
fn every_run_carries_the_value_of_every_statistic_of_its_mode() {
    let report = fixture();
    let names: Vec<&str> = report.statistics.iter().map(|s| s.name.name()).collect();
    let ok = report
        .runs
        .iter()
        .find(|r| r.status == RunStatus::Ok)
        .unwrap();
    assert_eq!(ok.values.keys().map(String::as_str).collect::<Vec<_>>(), {
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted
    });
    assert_eq!(ok.values["mean_latency"], ok.result.latency_us.mean);
}

#[test]
fn the_fixture_has_one_weak_verdict_per_arm_qualified_by_its_rerun() {
    let report = fixture();
    assert!(!report.provisional);
    assert_eq!(report.verdicts.len(), 1);
    let v = &report.verdicts[0];
    assert_eq!(
        (v.workload.as_str(), v.arm.as_str()),
        ("grv", "b, \"fast\"")
    );
    assert_eq!(v.statistic, "mean_latency");
    assert_eq!(v.direction, Outcome::Better);
    assert_eq!((v.blocks, v.blocks_planned), (4, 4));
    // Four blocks are too few to trust the interval's width.
    assert!(v.weak);
    assert!(v.warnings.iter().any(|w| w.contains("rests on 4 blocks")));
    assert!(v.warnings.iter().any(|w| w.contains("1 runs were rerun")));
    // Verdicts come first in both renderings.
    let text = terminal(&report);
    let at = |needle: &str| text.find(needle).unwrap();
    assert!(at("verdicts") < at("mean_latency: ratio"), "{text}");
    let md = markdown(&report);
    assert!(md.find("## Verdicts").unwrap() < md.find("## Arms").unwrap());
}

#[test]
fn an_interim_report_is_provisional_and_says_so_in_every_verdict() {
    let report = fixture_with(CampaignStatus::Running);
    assert!(report.provisional);
    assert!(!fixture().provisional);
    let v = &report.verdicts[0];
    assert!(
        v.warnings
            .iter()
            .any(|w| w.starts_with("provisional: the campaign is running")),
        "{v:?}"
    );
    assert!(terminal(&report).contains("PROVISIONAL: the campaign is running"));
    assert!(markdown(&report).contains("**Provisional:** the campaign is running"));
}

#[test]
fn markdown_escapes_names_and_a_single_block_never_shows_an_interval() {
    let mut report = fixture();
    report.plan.spec.arms[1].name = "<img src=x onerror=alert(1)>|[x](javascript:y)".into();
    for e in &mut report.effects {
        e.arm = report.plan.spec.arms[1].name.clone();
    }
    report.effects[0].blocks = 1;
    let md = markdown(&report);
    // Every occurrence is escaped: no tag, no link, no extra table cell.
    assert_eq!(
        md.matches("<img").count(),
        md.matches("\\<img").count(),
        "{md}"
    );
    assert!(!md.contains("[x](javascript"), "{md}");
    assert!(md.contains("\\<img src=x onerror=alert(1)\\>\\|\\[x\\](javascript:y)"));
    assert!(md.contains("(one block: no interval)"), "{md}");
    assert!(terminal(&report).contains("(one block: no interval)"));
}

#[test]
fn an_arm_through_an_adapter_is_not_listed_as_the_same_plugin_without_one() {
    let mut report = fixture();
    report.plan.spec.arms[1].adapters = vec!["target/plugins/kv-passthrough.wasm".into()];
    let md = markdown(&report);
    let rows: Vec<&str> = md.lines().filter(|l| l.contains("| embedded |")).collect();
    assert_eq!(rows.len(), 2, "{md}");
    assert!(!rows[0].contains("through"), "{}", rows[0]);
    assert!(
        rows[1].contains("`builtin` through `target/plugins/kv-passthrough.wasm`"),
        "{}",
        rows[1]
    );
}

/// A finished rate sweep of `get100` at 1000, 2000 and 4000/s, arms `a`
/// (baseline) and `b`, 4 blocks, SLO p99 ≤ 2 ms. Arm a's p99 is 0.5, 0.9
/// and 3 ms (plus 10 µs per block); arm b's 1.5 and 2.5 ms, and at 4000/s
/// it achieves 3000/s only (short).
fn sweep_fixture() -> Report {
    let (campaign, plan, records) = sweep_parts();
    analyse(campaign, plan, &records, None, None, vec![])
}

/// What [`sweep_fixture`] analyses, for a test to change first.
fn sweep_parts() -> (CampaignMeta, crate::plan::seal::SealedPlan, Vec<RunRecord>) {
    let text = "name = \"sweep\"\nseed = 7\nblocks = 4\nplugin = \"builtin\"\n[measure]\nmode = \"rate\"\nmeasured_s = 0.2\nrates = [1000, 2000, 4000]\nslo = { statistic = \"p99_latency\", max_ms = 2.0 }\n[[workloads]]\nname = \"get100\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n";
    let spec = crate::plan::spec::PlanSpec::parse(text, &[]).unwrap();
    let plan = crate::plan::seal::seal(spec, vec![], "sweep.toml", text.as_bytes(), None).unwrap();
    let records: Vec<RunRecord> = plan
        .schedule
        .iter()
        .map(|slot| {
            let rate: f64 = slot.workload["get100@".len()..].parse().unwrap();
            let p99_ms = match (slot.arm.as_str(), rate as u32) {
                ("a", 1000) => 0.5,
                ("a", 2000) => 0.9,
                ("a", _) => 3.0,
                (_, 1000) => 1.5,
                _ => 2.5,
            };
            let p99 = p99_ms * 1e3 + 10.0 * f64::from(slot.block);
            let short = slot.arm == "b" && rate == 4000.0;
            let achieved = if short { 3000.0 } else { rate };
            let open_loop = crate::record::result::OpenLoop {
                offered_per_s: rate,
                achieved_per_s: achieved,
                arrival: crate::plan::spec::Arrival::Constant,
                scheduled: (rate * 0.2) as u64,
                late: if short { (rate * 0.1) as u64 } else { 0 },
                start_lag_us: Default::default(),
                service_us: crate::record::result::Latency {
                    mean: p99 / 4.0,
                    p99: p99 / 2.0,
                    ..Default::default()
                },
                short,
            };
            let result = RunResult {
                measured: (achieved * 0.2) as u64,
                measured_s: 0.2,
                latency_us: crate::record::result::Latency {
                    mean: p99 / 3.0,
                    p50: p99 / 5.0,
                    p99,
                    ..Default::default()
                },
                throughput_per_s: achieved,
                open_loop: Some(open_loop),
                ..Default::default()
            };
            RunRecord::finished(slot, result)
        })
        .collect();
    let campaign = CampaignMeta {
        id: 4,
        name: "sweep".into(),
        plan_hash: plan.hash.clone(),
        created_unix_ms: 0,
        status: CampaignStatus::Finished,
        total_runs: plan.schedule.len() as u32,
        finished_runs: plan.schedule.len() as u32,
        tags: Default::default(),
        testbed: None,
    };
    (campaign, plan, records)
}

#[test]
fn the_slo_search_does_not_judge_a_p99_from_too_few_samples() {
    // 55 transactions per run at 1000/s: too few for a p99.
    let (campaign, plan, mut records) = sweep_parts();
    for r in &mut records {
        if let Some(x) = r.result.as_mut().filter(|x| x.throughput_per_s == 1000.0) {
            x.measured = 55;
        }
    }
    let report = analyse(campaign, plan, &records, None, None, vec![]);
    for row in &report.slo {
        assert!(
            !row.text.contains(" met ") && !row.text.contains("sustains"),
            "{}",
            row.text
        );
        assert!(
            row.text
                .contains("cannot be judged at the lowest swept rate, 1000/s")
                && row.text.contains("p99 needs at least 100"),
            "{}",
            row.text
        );
        assert_eq!((row.sustained_per_s, row.failed_per_s), (None, None));
        assert!(!row.support.supported);
    }
    assert!(terminal(&report).contains(&format!("slo: {}", report.slo[0].text)));
}

#[test]
fn a_rate_sweep_has_a_curve_per_arm_with_intervals_and_the_paired_ratio_at_each_rate() {
    let report = sweep_fixture();
    let names: Vec<&str> = report.statistics.iter().map(|s| s.name.name()).collect();
    assert!(names.contains(&"service_p99_latency") && names.contains(&"achieved_rate"));
    assert_eq!(report.curves.len(), 2);
    let (a, b) = (&report.curves[0], &report.curves[1]);
    assert_eq!((a.workload.as_str(), a.arm.as_str()), ("get100", "a"));
    assert_eq!(b.arm, "b");
    let offered: Vec<f64> = b.points.iter().map(|p| p.offered_per_s).collect();
    assert_eq!(offered, [1000.0, 2000.0, 4000.0]);
    // Blocks add 0, 10, 20, 30 µs: the median is 15 µs above the base,
    // and the interval lies within the blocks' range around it.
    let p = &a.points[1];
    assert_eq!(p.workload, "get100@2000");
    assert_eq!(p.p99_latency_us.median, 915.0);
    assert!(
        p.p99_latency_us.lo >= 900.0 && p.p99_latency_us.lo <= 915.0,
        "{p:?}"
    );
    assert!(
        p.p99_latency_us.hi >= 915.0 && p.p99_latency_us.hi <= 930.0,
        "{p:?}"
    );
    assert_eq!(p.p50_latency_us.median, 183.0);
    assert_eq!((p.runs, p.short_runs, p.achieved_per_s), (4, 0, 2000.0));
    // Four blocks: the point's interval is weak by the effects' rule, and
    // every rendering says so beside it.
    assert!(
        p.p99_latency_us.weak && p.p99_latency_us.blocks == 4,
        "{p:?}"
    );
    let row = |text: &str| {
        text.lines()
            .find(|l| l.contains("2000") && l.contains("915.0 ["))
            .map(str::to_owned)
    };
    for text in [terminal(&report), markdown(&report)] {
        let line = row(&text).expect("the point's row");
        assert!(line.contains("] weak"), "{line}");
    }
    // The baseline has no ratio; b's is the workload's paired effect.
    assert!(a.points.iter().all(|p| p.p99_ratio.is_none()));
    let r = b.points[0].p99_ratio.as_ref().unwrap();
    assert_eq!(
        (r.workload.as_str(), r.statistic.name()),
        ("get100@1000", "p99_latency")
    );
    assert!((r.ratio - 1515.0 / 515.0).abs() < 0.01, "{r:?}");
    assert_eq!(
        (b.points[2].short_runs, b.points[2].achieved_per_s),
        (4, 3000.0)
    );
    // The headline verdict in rate mode is p99, warned about the short runs.
    let v = report
        .verdicts
        .iter()
        .find(|v| v.workload == "get100@4000")
        .unwrap();
    assert_eq!(v.statistic, "p99_latency");
    assert!(
        v.warnings.iter().any(|w| w
            .starts_with("4 of 8 runs fell short of the offered rate (worst: 3000/s of 4000/s")),
        "{v:?}"
    );
    assert!(
        v.warnings.iter().any(|w| w
            .contains("started more than 1% of their transactions over 1 ms late (at most 50.0%)")),
        "{v:?}"
    );
    let ok = report
        .verdicts
        .iter()
        .find(|v| v.workload == "get100@1000")
        .unwrap();
    assert!(
        !ok.warnings
            .iter()
            .any(|w| w.contains("short") || w.contains("late")),
        "{ok:?}"
    );
}

#[test]
fn the_slo_search_gives_each_arm_its_highest_sustained_rate_and_the_next_that_failed() {
    let report = sweep_fixture();
    assert_eq!(report.slo.len(), 2);
    let (a, b) = (&report.slo[0], &report.slo[1]);
    assert_eq!(
        (a.arm.as_str(), a.statistic.as_str(), a.max_ms),
        ("a", "p99_latency", 2.0)
    );
    assert_eq!(
        (a.sustained_per_s, a.failed_per_s),
        (Some(2000.0), Some(4000.0))
    );
    assert!(a.sustained_upper_ms.unwrap() <= 0.93, "{a:?}");
    assert!(
        a.failed_reason.as_deref().unwrap().contains("reaches 3.0"),
        "{a:?}"
    );
    assert_eq!(
        (b.sustained_per_s, b.failed_per_s),
        (Some(1000.0), Some(2000.0))
    );
    assert!(
        b.text.starts_with(
            "b sustains 1000/s on get100 within `p99_latency` ≤ 2 ms (upper bound 1.5"
        ),
        "{}",
        b.text
    );
    // Monotone: a rate that fails stops the search, whatever lies above it.
    let md = markdown(&report);
    assert!(md.contains("## Latency–throughput curves"), "{md}");
    assert!(md.contains("| b | 4000 | 3000 |"), "{md}");
    assert!(md.contains("### SLO search"), "{md}");
    assert!(
        md.contains(&format!("- {}", a.text.replace('`', "\\`")))
            || md.contains("- a sustains 2000/s"),
        "{md}"
    );
    let text = terminal(&report);
    assert!(text.contains("latency–throughput curves"), "{text}");
    assert!(text.contains(&format!("slo: {}", b.text)), "{text}");
    // A closed-loop report has neither, and its JSON no such keys.
    let json = serde_json::to_value(fixture()).unwrap();
    assert!(json.get("curves").is_none() && json.get("slo").is_none());
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["curves"][1]["points"][2]["short_runs"], 4);
    assert_eq!(json["slo"][0]["sustained_per_s"], 2000.0);
}

#[test]
fn a_figure_the_sample_does_not_support_is_marked_in_every_row_that_shows_it() {
    // 55 transactions per run: too few for a p99 (it needs 100).
    let (campaign, plan, mut records, environment) = fixture_parts(CampaignStatus::Finished);
    for x in records.iter_mut().filter_map(|r| r.result.as_mut()) {
        x.measured = 55;
    }
    let report = analyse(campaign, plan, &records, Some(environment), None, vec![]);
    let p99 = |s: Statistic| s.name() == "p99_latency";
    assert!(report.effects.iter().any(|e| p99(e.statistic)));
    for e in &report.effects {
        assert_eq!(e.support.supported, !p99(e.statistic), "{e:?}");
    }
    for a in &report.absolutes {
        assert_eq!(a.support.supported, !p99(a.statistic), "{a:?}");
    }
    let json: serde_json::Value = serde_json::to_value(&report).unwrap();
    let row = json["effects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["statistic"] == "p99_latency")
        .unwrap();
    assert_eq!(row["supported"], false, "{row}");
    assert!(
        row["reason"]
            .as_str()
            .unwrap()
            .contains("needs at least 100 samples")
    );

    let term = terminal(&report);
    let medians = term
        .split("medians of run-level statistics")
        .nth(1)
        .unwrap();
    // Each arm's p99 median, the second column, carries the mark.
    for line in medians.lines().filter(|l| l.starts_with("grv")) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let marked = cells.iter().filter(|c| c.ends_with('*')).count();
        assert_eq!(marked, 1, "{line}");
    }
    assert!(
        medians.contains("* p99_latency not supported by this sample"),
        "{medians}"
    );

    let md = markdown(&report);
    let unsupported = md
        .lines()
        .filter(|l| l.starts_with("| p99_latency (not supported: p99 needs at least 100"))
        .count();
    // The effect's row and the medians' row.
    assert_eq!(unsupported, 2, "{md}");

    let csv = csv(&report);
    let line = csv.lines().find(|l| l.contains(",p99_latency,")).unwrap();
    assert!(
        line.contains(",false,\"p99 needs at least 100 samples"),
        "{line}"
    );
    assert!(
        csv.lines()
            .filter(|l| l.contains(",mean_latency,"))
            .all(|l| l.ends_with(",true,"))
    );
}

#[test]
fn every_rendering_breaks_the_transaction_down_per_operation() {
    let report = fixture();
    let t = terminal(&report);
    assert!(
        t.contains("where the time goes") && t.contains("get (simulated)"),
        "{t}"
    );
    assert!(
        t.contains("simulated round trips"),
        "the simulation is named"
    );
    let md = markdown(&report);
    assert!(md.contains("Where the time goes"), "{md}");
    assert!(md.contains("| a | grv | 1.00 |"), "{md}");
    let csv = csv(&report);
    assert!(
        csv.lines()
            .any(|l| l.starts_with("grv,\"b, \"\"fast\"\"\",a,op_grv_mean_latency,")),
        "{csv}"
    );
    let json = serde_json::to_value(&report).unwrap();
    let ops = json["operations"].as_array().unwrap();
    // Two operations of each of the two arms; the baseline's have no effect.
    assert_eq!(ops.len(), 4);
    let b_grv = ops
        .iter()
        .find(|o| o["arm"] != "a" && o["op"] == "grv")
        .unwrap();
    let ratio = b_grv["effect"]["ratio"].as_f64().unwrap();
    assert!(
        (0.7..0.9).contains(&ratio),
        "b's read versions are faster: {ratio}"
    );
    assert_eq!(b_grv["effect"]["blocks"], 4);
    assert!(
        ops.iter()
            .filter(|o| o["arm"] == "a")
            .all(|o| o["effect"].is_null())
    );
}

#[test]
fn runs_without_operations_render_no_breakdown() {
    let (campaign, plan, mut records, environment) = fixture_parts(CampaignStatus::Finished);
    for r in &mut records {
        if let Some(result) = &mut r.result {
            result.operations.clear();
        }
    }
    let report = analyse(campaign, plan, &records, Some(environment), None, vec![]);
    assert!(!terminal(&report).contains("where the time goes"));
    assert!(!markdown(&report).contains("Where the time goes"));
    assert!(!csv(&report).contains("op_"));
    let json = serde_json::to_value(&report).unwrap();
    assert!(
        json.get("operations").is_none(),
        "older reports read as before"
    );
}
