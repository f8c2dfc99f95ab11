//! Numbers as the report's sentences and tables write them; the analysis
//! writes sentences (verdicts, limits, the SLO search) with them and the
//! renderings re-use them, so a figure reads the same everywhere.

/// A share as a percentage with as many decimals as it needs (95%, 99.94%).
pub fn pct(x: f64) -> String {
    let p = 100.0 * x;
    let mut s = format!("{p:.4}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    s + "%"
}

/// A value with as many decimals as its size needs.
pub fn fmt_value(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() >= 1000.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}
