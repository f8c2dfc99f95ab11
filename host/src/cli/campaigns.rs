//! `blocklab campaigns`: the stored campaigns, one line each.

use super::{DataArgs, open_store_for_reading};
use clap::Args;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct CampaignsArgs {
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    data: DataArgs,
}

pub(super) fn main(args: CampaignsArgs) -> anyhow::Result<ExitCode> {
    let store = open_store_for_reading(&args.data)?;
    let entries = store.campaign_entries()?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let list: Vec<serde_json::Value> = entries
            .iter()
            .map(|(id, entry)| match entry {
                Ok(meta) => serde_json::to_value(meta),
                Err(e) => Ok(serde_json::json!({ "id": id, "unreadable": format!("{e:#}") })),
            })
            .collect::<Result<_, _>>()?;
        serde_json::to_writer_pretty(&mut out, &list)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    write!(out, "{}", campaign_table(&entries))?;
    Ok(ExitCode::SUCCESS)
}

/// `blocklab campaigns`' table: one line per campaign, an entry that does
/// not decode shown as unreadable in its place.
fn campaign_table(entries: &[blocklab_store::CampaignEntry]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>4}  {:<24} {:<10} {:>9}  {:<12}  {:<20}  tags",
        "id", "name", "status", "runs", "plan", "testbed"
    );
    for (id, entry) in entries {
        let c = match entry {
            Ok(c) => c,
            Err(e) => {
                let _ = writeln!(out, "{id:>4}  unreadable: {e}");
                continue;
            }
        };
        let tags: Vec<String> = c.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let line = format!(
            "{:>4}  {:<24} {:<10} {:>4}/{:<4}  {:<12}  {:<20}  {}",
            c.id,
            c.name,
            c.status.label(),
            c.finished_runs,
            c.total_runs,
            &c.plan_hash[..12.min(c.plan_hash.len())],
            c.testbed.as_deref().unwrap_or("-"),
            tags.join(" ")
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_campaign_is_listed_in_its_place_and_tags_and_testbed_are_shown() {
        let meta = |id| blocklab_store::CampaignMeta {
            id,
            name: "quick".into(),
            plan_hash: "abcdef0123456789".into(),
            created_unix_ms: 0,
            status: blocklab_store::CampaignStatus::Finished,
            total_runs: 2,
            finished_runs: 2,
            tags: if id == 3 {
                [("commit".to_owned(), "abc".to_owned())].into()
            } else {
                Default::default()
            },
            testbed: (id == 3).then(|| "ci-box".to_owned()),
        };
        let damaged = blocklab_store::StoreError::NotFound {
            what: "campaign `2` in the store cannot be decoded".into(),
        };
        let table = campaign_table(&[(1, Ok(meta(1))), (2, Err(damaged)), (3, Ok(meta(3)))]);
        assert_eq!(
            table,
            "  id  name                     status          runs  plan          testbed               tags\n   1  quick                    finished      2/2     abcdef012345  -\n   2  unreadable: campaign `2` in the store cannot be decoded\n   3  quick                    finished      2/2     abcdef012345  ci-box                commit=abc\n"
        );
    }
}
