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

/// A ratio as every rendering writes it (tables, verdicts, the web UI's
/// `fmtRatio`): three decimals, fewer above 100, and two significant
/// digits below 0.01, so a bound is never "0.000" in one place and "4.6e-8"
/// in another.
pub fn ratio(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 || !x.is_finite() {
        format!("{x}")
    } else if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 0.01 {
        format!("{x:.3}")
    } else {
        format!("{x:.1e}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_ratio_is_never_written_as_zero_unless_it_is() {
        let r = super::ratio;
        assert_eq!(
            [r(1.0), r(0.979), r(168.07), r(16062.4), r(4.6e-8), r(0.0)],
            ["1.000", "0.979", "168.1", "16062", "4.6e-8", "0"]
        );
    }
}
