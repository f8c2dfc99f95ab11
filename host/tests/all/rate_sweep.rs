//! Issue 20's acceptance, results side: examples/rate-sweep.toml run
//! reduced through `blocklab campaign` (real worker processes at fixed
//! arrival rates, the builtin client against the kv-basic wasm plugin), its
//! report's latency–throughput curves and SLO lines checked against the
//! runs and the stated procedure, and the campaign page drawing them in
//! headless Chromium (web/tests/curves.mjs).

use crate::support::{blocklab, campaign, plugin, report, run};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The swept rates of the reduced campaign: a span above 10×, so the UI's
/// x axis is logarithmic.
const RATES: [f64; 3] = [100.0, 400.0, 1600.0];

/// The example with its plugin path made absolute, run with 2 blocks of
/// 0.2 s windows at [`RATES`]; returns the data directory.
fn run_reduced(dir: &Path) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(repo.join("examples/rate-sweep.toml"))
        .unwrap()
        .replace(
            "\"target/plugins/kv-basic.wasm\"",
            &format!("\"{}\"", plugin("kv-basic").display()),
        );
    let plan = dir.join("rate-sweep.toml");
    std::fs::write(&plan, text).unwrap();
    let data = dir.join("data");
    let rates = format!(
        "measure.rates=[{}]",
        RATES.map(|r| r.to_string()).join(", ")
    );
    let r = campaign(
        &data,
        &plan,
        &[
            "--set",
            "blocks=2",
            "--set",
            "measure.warmup_s=0.05",
            "--set",
            "measure.measured_s=0.2",
            "--set",
            &rates,
            "--set",
            "bootstrap.resamples=200",
            "--set",
            "gates.quiescence_window_ms=10",
            "--set",
            "gates.wait_timeout_s=0.05",
        ],
    );
    assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
    // The terminal tables end the campaign with the curves and SLO lines.
    assert!(
        r.stdout.contains("latency–throughput curves") && r.stdout.contains("slo: "),
        "{}",
        r.stdout
    );
    data
}

/// The report's curve point of `arm` at `rate` on `workload`.
fn point<'a>(rep: &'a Value, workload: &str, arm: &str, rate: f64) -> Option<&'a Value> {
    rep["curves"]
        .as_array()?
        .iter()
        .find(|c| c["workload"] == workload && c["arm"] == arm)?["points"]
        .as_array()?
        .iter()
        .find(|p| p["offered_per_s"].as_f64() == Some(rate))
}

/// Whether one rate met the SLO by the stated procedure: runs there, none
/// short, and the interval's upper end within the bound.
fn meets(p: Option<&Value>, max_ms: f64) -> bool {
    p.is_some_and(|p| {
        p["runs"].as_u64() > Some(0)
            && p["short_runs"] == 0
            && p["p99_latency_us"]["hi"].as_f64().unwrap() <= max_ms * 1e3
    })
}

/// Whether a rate can be judged by the procedure: runs missing or short
/// miss it, else its runs need 100 samples each for a p99.
fn judged(rep: &Value, workload: &str, arm: &str, rate: f64) -> bool {
    let p = point(rep, workload, arm, rate);
    if !p.is_some_and(|p| p["runs"].as_u64() > Some(0) && p["short_runs"] == 0) {
        return true;
    }
    let at = format!("{workload}@{rate}");
    rep["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["workload"] == at.as_str() && r["arm"] == arm)
        .all(|r| r["measured"].as_u64().unwrap() >= 100)
}

/// The curves: one per workload × arm, a point per swept rate from that
/// rate's own runs, and the paired ratio at each rate the workload's effect.
fn check_curves(rep: &Value) {
    let curves = rep["curves"].as_array().expect("the report has curves");
    assert_eq!(curves.len(), 4, "get100 and grv × builtin and wasm");
    for c in curves {
        let points = c["points"].as_array().unwrap();
        let offered: Vec<f64> = points
            .iter()
            .map(|p| p["offered_per_s"].as_f64().unwrap())
            .collect();
        assert_eq!(offered, RATES, "{c}");
        for p in points {
            let name = p["workload"].as_str().unwrap();
            let runs: Vec<&Value> = rep["runs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["workload"] == name && r["arm"] == c["arm"] && r["status"] == "ok")
                .collect();
            assert_eq!(p["runs"].as_u64(), Some(runs.len() as u64), "{p}");
            let mut p99: Vec<f64> = runs
                .iter()
                .map(|r| r["latency_us"]["p99"].as_f64().unwrap())
                .collect();
            p99.sort_by(f64::total_cmp);
            let e = &p["p99_latency_us"];
            let (lo, median, hi) = (
                e["lo"].as_f64().unwrap(),
                e["median"].as_f64().unwrap(),
                e["hi"].as_f64().unwrap(),
            );
            assert!(
                p99[0] <= lo && lo <= median && median <= hi && hi <= p99[p99.len() - 1],
                "{p}: {p99:?}"
            );
            assert!(p["achieved_per_s"].as_f64().unwrap() > 0.0, "{p}");
            match c["arm"].as_str().unwrap() {
                "builtin" => assert!(p.get("p99_ratio").is_none(), "{p}"),
                _ => {
                    let e = rep["effects"].as_array().unwrap().iter().find(|e| {
                        e["workload"] == name
                            && e["arm"] == "wasm"
                            && e["statistic"] == "p99_latency"
                    });
                    assert_eq!(Some(&p["p99_ratio"]), e, "{p}");
                }
            }
        }
    }
}

/// The SLO lines: per workload × arm, the highest rate before the first
/// that failed, by the procedure, from the curves' own figures.
fn check_slo(rep: &Value) {
    let slo = rep["slo"].as_array().expect("the report has SLO lines");
    assert_eq!(slo.len(), 4);
    for row in slo {
        let (w, arm) = (
            row["workload"].as_str().unwrap(),
            row["arm"].as_str().unwrap(),
        );
        assert_eq!(
            (row["statistic"].as_str(), row["max_ms"].as_f64()),
            (Some("p99_latency"), Some(2.0))
        );
        let stop = RATES
            .iter()
            .position(|r| !judged(rep, w, arm, *r) || !meets(point(rep, w, arm, *r), 2.0));
        let sustained = match stop {
            Some(0) => None,
            Some(i) => Some(RATES[i - 1]),
            None => Some(RATES[RATES.len() - 1]),
        };
        // A rate whose runs cannot support a p99 stops the search unmissed.
        let unjudged = stop.filter(|i| !judged(rep, w, arm, RATES[*i]));
        assert_eq!(row["sustained_per_s"].as_f64(), sustained, "{row}");
        assert_eq!(
            row["failed_per_s"].as_f64(),
            stop.filter(|_| unjudged.is_none()).map(|i| RATES[i]),
            "{row}"
        );
        assert_eq!(row["supported"], unjudged.is_none(), "{row}");
        assert!(row["text"].as_str().unwrap().starts_with(arm), "{row}");
    }
}

#[test]
fn the_rate_sweep_example_reports_curves_and_slo_lines_and_the_ui_draws_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = run_reduced(dir.path());
    let rep = report(&data);
    let runs = rep["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * 2 * 2 * RATES.len());
    for r in runs {
        assert_eq!(r["status"], "ok", "{r}");
        let offered = r["open_loop"]["offered_per_s"].as_f64().unwrap();
        assert!(
            r["workload"]
                .as_str()
                .unwrap()
                .ends_with(&format!("@{offered}")),
            "{r}"
        );
    }
    check_curves(&rep);
    check_slo(&rep);
    let md = run(blocklab()
        .args(["report", "latest", "--format", "md", "--data"])
        .arg(&data));
    assert!(md.ok, "{}", md.stderr);
    assert!(
        md.stdout.contains("## Latency–throughput curves") && md.stdout.contains("### SLO search"),
        "{}",
        md.stdout
    );

    if !crate::web::browser_available() {
        return;
    }
    let d = crate::daemon_support::Daemon::start(&data);
    crate::web::browser_check(
        "curves.mjs",
        &d.url(),
        &[("BLOCKLAB_SWEEP", rep["campaign"]["id"].to_string())],
        2,
    );
}
