//! `scan`: one range read of `rows` rows per transaction in a chosen
//! streaming mode, batch after batch as FoundationDB's bindings iterate
//! (`get_range_all`), since how a client asks for a range decides how many
//! round trips it takes (seed 000's range100).

use blocklab_sdk::kv::{self, KeySelector, RangeLimits, StreamingMode};
use blocklab_sdk::{Params, Workload};

pub const PARAMS: &[(&str, &str, &str)] = &[
    (
        "rows",
        "100",
        "rows per scan, all of the fixture (1 to 100000)",
    ),
    (
        "mode",
        "iterator",
        "streaming mode: want_all, iterator, exact, small, medium, large or serial",
    ),
];

const PREFIX: &[u8] = b"kv-patterns/scan/";

pub struct Scan {
    rows: u32,
    limits: RangeLimits,
    end: Vec<u8>,
}

fn mode(name: &str) -> Result<StreamingMode, String> {
    Ok(match name {
        "want_all" => StreamingMode::WantAll,
        "iterator" => StreamingMode::Iterator,
        "exact" => StreamingMode::Exact,
        "small" => StreamingMode::Small,
        "medium" => StreamingMode::Medium,
        "large" => StreamingMode::Large,
        "serial" => StreamingMode::Serial,
        other => {
            return Err(format!(
                "param `mode` = {other}: give want_all, iterator, exact, small, medium, large or serial"
            ));
        }
    })
}

impl Scan {
    /// Writes `rows` rows of 100 bytes under the workload's prefix.
    pub fn setup(params: &Params) -> Result<Scan, String> {
        let rows = params.u64("rows")?;
        if !(1..=100_000).contains(&rows) {
            return Err(format!("param `rows` = {rows}: give 1 to 100000"));
        }
        let rows = rows as u32;
        let value = [b'v'; 100];
        for first in (0..rows).step_by(1000) {
            kv::transact(|tr| {
                for row in first..(first + 1000).min(rows) {
                    tr.set(format!("kv-patterns/scan/{row:06}").as_bytes(), &value);
                }
                Ok(())
            })?;
        }
        let end = kv::prefix_end(PREFIX);
        // Exact mode needs the row limit; the others are given it too, so
        // every mode reads the same rows.
        let limits = RangeLimits {
            limit: rows,
            mode: mode(params.str("mode")?)?,
            ..RangeLimits::default()
        };
        Ok(Scan { rows, limits, end })
    }
}

impl Workload for Scan {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        let (found, retries) = kv::read_transact(|tr| {
            tr.get_range_all(
                &KeySelector::first_greater_or_equal(PREFIX),
                &KeySelector::first_greater_or_equal(&self.end),
                &self.limits,
            )
        })?;
        if found.len() != self.rows as usize {
            return Err(format!(
                "the scan read {} rows, not {}",
                found.len(),
                self.rows
            ));
        }
        Ok(retries)
    }
}
