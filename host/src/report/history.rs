//! A series' history as a terminal table (the history itself is
//! [`crate::analysis::history`]).

use crate::analysis::history::History;

/// The history as a table for the terminal.
pub fn render(h: &History) -> String {
    let mut out = format!(
        "series {}\n{:>8}  {:<24} {:>10}  {:<21} tags\n",
        h.series, "campaign", "created (UTC)", "ratio", "interval"
    );
    for (i, p) in h.points.iter().enumerate() {
        if let Some(c) = h.change_points.iter().find(|c| c.index == i) {
            out += &format!(
                "{:>8}  change point: {:.3} -> {:.3} (p = {:.3})\n",
                "---", c.ratio_before, c.ratio_after, c.p_value
            );
        }
        let tags: Vec<String> = p.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out += &format!(
            "{:>8}  {:<24} {:>10.4}  [{:.4}, {:.4}]     {}\n",
            p.campaign,
            utc_time(p.created_unix_ms),
            p.ratio,
            p.ci_low,
            p.ci_high,
            tags.join(" ")
        );
    }
    out += &format!(
        "{} change point(s); {}, alpha {}, {} permutations (docs/method.md)\n",
        h.change_points.len(),
        h.method,
        h.alpha,
        h.permutations
    );
    out
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) of a Unix time in ms (Hinnant's
/// days-to-civil algorithm).
fn utc_time(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn times_are_shown_in_utc() {
        assert_eq!(utc_time(0), "1970-01-01 00:00:00");
        // 2026-11-30 19:41:14 UTC.
        assert_eq!(utc_time(1_796_067_674_000), "2026-11-30 19:41:14");
    }
}
