//! Whether a finished run or campaign measured what it was asked to: runs
//! that failed, and measured transactions that returned an error, against
//! the `--max-error-rate` the user allows. The CLI turns a verdict with
//! problems into exit code 3 (docs/cli.md).

use crate::record::RunResult;
use crate::record::{RunRecord, RunStatus};
use blocklab_store::{CampaignId, Store};

/// Failed measured transactions over measured transactions.
fn rate(errors: u64, measured: u64) -> f64 {
    if errors == 0 {
        0.0
    } else {
        errors as f64 / measured.max(errors) as f64
    }
}

/// The most frequent error message of a run (ties: the first in order).
fn commonest(result: &RunResult) -> Option<&str> {
    result
        .errors_by_kind
        .iter()
        .rev()
        .max_by_key(|(_, n)| **n)
        .map(|(kind, _)| kind.as_str())
}

/// What is wrong with one run's result, if anything: `None` when its share
/// of failed transactions is at most `max_error_rate`.
pub fn of_run(result: &RunResult, max_error_rate: f64) -> Option<String> {
    let share = rate(result.errors, result.measured);
    (share > max_error_rate).then(|| {
        format!(
            "{} of {} measured transactions failed ({:.1}%, more than `--max-error-rate {}`); the commonest error: {}",
            result.errors,
            result.measured,
            share * 100.0,
            max_error_rate,
            commonest(result).unwrap_or("no message")
        )
    })
}

/// What is wrong with a campaign's final attempts, one line per problem
/// (empty when every run succeeded and failed transactions are within
/// `max_error_rate`). Runs of every execution count, resumed ones included.
pub fn of_campaign(
    store: &Store,
    id: CampaignId,
    max_error_rate: f64,
) -> anyhow::Result<Vec<String>> {
    let finals = store.final_attempts(id)?;
    let mut runs = 0u32;
    let mut failed: Vec<RunRecord> = Vec::new();
    let (mut measured, mut errors) = (0u64, 0u64);
    let mut first_error: Option<(u32, String)> = None;
    for (key, record) in store.runs::<RunRecord>(id)? {
        if finals.get(&key.slot) != Some(&key.attempt) {
            continue;
        }
        runs += 1;
        match (&record.status, &record.result) {
            (RunStatus::Failed, _) => failed.push(record),
            (RunStatus::Ok, Some(result)) => {
                measured += result.measured;
                errors += result.errors;
                if first_error.is_none()
                    && let Some(kind) = commonest(result)
                {
                    first_error = Some((key.slot, kind.to_owned()));
                }
            }
            (RunStatus::Ok, None) => {}
        }
    }
    let mut problems = Vec::new();
    if let Some(first) = failed.first() {
        problems.push(format!(
            "{} of {runs} runs failed; the first, slot {} ({} / {}): {}",
            failed.len(),
            first.slot.slot,
            first.slot.workload,
            first.slot.arm,
            first.reason.as_deref().unwrap_or("no reason given")
        ));
    }
    let share = rate(errors, measured);
    if share > max_error_rate {
        let (slot, kind) = first_error.unwrap_or_default();
        problems.push(format!(
            "{errors} of {measured} measured transactions failed ({:.1}%, more than `--max-error-rate {max_error_rate}`); the first run with errors, slot {slot}: {kind}",
            share * 100.0
        ));
    }
    Ok(problems)
}
