//! Export and import of whole campaigns (`blocklab export`, `blocklab
//! import`; the format is docs/export.md): a versioned JSON Lines file with
//! every record of each campaign (metadata, sealed plan, final-attempt
//! index, every run attempt with its histogram and profile, blobs) and a
//! sha256 of everything before its last line.
//!
//! Stored JSON is carried verbatim (`RawValue`), so an imported campaign's
//! records are the same bytes and its report the same bytes. An import reads
//! and checks the whole file before it writes anything, and writes each
//! campaign in one transaction: a damaged, truncated or foreign file leaves
//! the store as it was.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use sled::Transactional;

use crate::error::malformed;
use crate::{
    CampaignId, CampaignMeta, CampaignStatus, NEXT_CAMPAIGN_KEY, RunKey, Store, StoreError,
    TxResult, abort, decode, encode, keys,
};

/// The `format` of an export's first line.
pub const EXPORT_FORMAT: &str = "blocklab-export";
/// The version of the export format this build writes and reads.
pub const EXPORT_VERSION: u32 = 1;

/// Why an export could not be written or read. Nothing was written to the
/// store when an import fails.
#[derive(thiserror::Error, Debug)]
pub enum ArchiveError {
    #[error(
        "{source_name} is not a blocklab export (its first line is not a `{EXPORT_FORMAT}` header); pass a file written by `blocklab export`"
    )]
    Foreign { source_name: String },
    #[error(
        "{source_name} is a blocklab export of format version {found}, but this blocklab reads version {EXPORT_VERSION}; import it with the blocklab release that wrote it or a newer one"
    )]
    NewerVersion { source_name: String, found: u32 },
    #[error(
        "{source_name} ends after line {lines} without its end record: the file was cut short; copy it again, or export again with `blocklab export`"
    )]
    Truncated { source_name: String, lines: usize },
    #[error(
        "{source_name} is damaged: line {line} {detail}; nothing was imported; copy the file again, or export again with `blocklab export`"
    )]
    Damaged {
        source_name: String,
        line: usize,
        detail: String,
    },
    #[error(
        "{source_name} is damaged: its checksum does not match its contents (sha256 {found}, its end record says {expected}); nothing was imported; copy the file again, or export again with `blocklab export`"
    )]
    Checksum {
        source_name: String,
        expected: String,
        found: String,
    },
    #[error(
        "campaign `{id}` is {status} and cannot be exported yet: export a campaign when it has finished, failed or was cancelled"
    )]
    Unfinished { id: CampaignId, status: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot read or write the export")]
    Io(#[from] std::io::Error),
}

impl From<sled::Error> for ArchiveError {
    fn from(e: sled::Error) -> Self {
        ArchiveError::Store(e.into())
    }
}

/// One line of an export.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Header(Header),
    Campaign(CampaignRecord),
    Run(RunRecord),
    Blob(BlobRecord),
    End(End),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    format: String,
    version: u32,
    /// The store schema the records were read from.
    store_schema: u32,
    campaigns: Vec<CampaignId>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CampaignRecord {
    meta: Box<RawValue>,
    plan: Box<RawValue>,
    /// Slot → its latest final attempt.
    finals: BTreeMap<u32, u32>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRecord {
    campaign: CampaignId,
    slot: u32,
    attempt: u32,
    payload: Box<RawValue>,
    /// HDR histogram bytes, base64.
    histogram: Option<String>,
    /// Flamegraph SVG bytes, base64.
    profile: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BlobRecord {
    campaign: CampaignId,
    name: String,
    value: Box<RawValue>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct End {
    /// Lines before this one.
    lines: usize,
    /// sha256 (hex) of every byte before this line.
    sha256: String,
}

/// What an import did with one campaign of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Imported {
    /// The campaign's id in the store it was exported from.
    pub from: CampaignId,
    /// Its id in this store.
    pub id: CampaignId,
    /// Whether this store already held it (same name, plan hash and creation
    /// time), so nothing was written.
    pub already_present: bool,
}

/// Writes lines and hashes them.
struct LineWriter<'a> {
    hash: Sha256,
    lines: usize,
    out: &'a mut dyn Write,
}

impl LineWriter<'_> {
    fn put(&mut self, line: &Line) -> Result<(), ArchiveError> {
        let mut bytes = serde_json::to_vec(line).map_err(|source| StoreError::Serde {
            what: "an export line".to_owned(),
            source,
        })?;
        bytes.push(b'\n');
        self.hash.update(&bytes);
        self.lines += 1;
        self.out.write_all(&bytes)?;
        Ok(())
    }
}

/// Slot, attempt, payload, histogram, profile of one run read from a file.
type PendingRun = (u32, u32, Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>);

/// A campaign read from a file, checked, not yet written.
struct Pending {
    meta: CampaignMeta,
    plan: Vec<u8>,
    finals: BTreeMap<u32, u32>,
    runs: Vec<PendingRun>,
    blobs: Vec<(String, Vec<u8>)>,
}

fn raw(bytes: &[u8], what: &str) -> Result<Box<RawValue>, StoreError> {
    let text = std::str::from_utf8(bytes).map_err(|e| crate::error::corrupt(what, e))?;
    RawValue::from_string(text.to_owned()).map_err(|e| crate::error::corrupt(what, e))
}

impl Store {
    /// Writes the campaigns `ids` to `out` in the export format. Campaigns
    /// still queued or running are refused.
    pub fn export(&self, ids: &[CampaignId], out: &mut dyn Write) -> Result<(), ArchiveError> {
        let mut seen = std::collections::BTreeSet::new();
        let ids: Vec<CampaignId> = ids.iter().copied().filter(|id| seen.insert(*id)).collect();
        let mut w = LineWriter {
            hash: Sha256::new(),
            lines: 0,
            out,
        };
        for &id in &ids {
            let meta = self.campaign(id)?;
            if matches!(
                meta.status,
                CampaignStatus::Queued | CampaignStatus::Running
            ) {
                return Err(ArchiveError::Unfinished {
                    id,
                    status: meta.status.label().to_owned(),
                });
            }
        }
        w.put(&Line::Header(Header {
            format: EXPORT_FORMAT.to_owned(),
            version: EXPORT_VERSION,
            store_schema: crate::SCHEMA_VERSION,
            campaigns: ids.clone(),
        }))?;
        for &id in &ids {
            let what = |w: &str| format!("{w} of campaign `{id}`");
            let key = keys::campaign(id);
            let meta = self
                .campaigns
                .get(key)?
                .ok_or_else(|| self.campaign_not_found(id))?;
            let plan = self
                .plans
                .get(key)?
                .ok_or_else(|| malformed(what("the sealed plan"), "missing"))?;
            w.put(&Line::Campaign(CampaignRecord {
                meta: raw(&meta, &what("the metadata"))?,
                plan: raw(&plan, &what("the sealed plan"))?,
                finals: self.final_attempts(id)?,
            }))?;
            for kv in self.runs.scan_prefix(key) {
                let (k, payload) = kv?;
                let run = keys::decode_run(&k)
                    .ok_or_else(|| malformed(what("a run key"), "not 16 bytes"))?;
                let histogram = self.histogram(run)?.map(|h| BASE64.encode(h));
                let profile = self.profile(run)?.map(|p| BASE64.encode(p));
                w.put(&Line::Run(RunRecord {
                    campaign: id,
                    slot: run.slot,
                    attempt: run.attempt,
                    payload: raw(&payload, &format!("run ({run})"))?,
                    histogram,
                    profile,
                }))?;
            }
            for kv in self.blobs.scan_prefix(key) {
                let (k, value) = kv?;
                let name = std::str::from_utf8(&k[8..])
                    .map_err(|e| crate::error::corrupt(what("a blob name"), e))?
                    .to_owned();
                let value = raw(&value, &what(&format!("blob `{name}`")))?;
                w.put(&Line::Blob(BlobRecord {
                    campaign: id,
                    name,
                    value,
                }))?;
            }
        }
        let sha256 = hex::encode(w.hash.finalize_reset());
        let lines = w.lines;
        w.put(&Line::End(End { lines, sha256 }))?;
        w.out.flush()?;
        Ok(())
    }

    /// Reads an export from `input` (called `source_name` in errors) and
    /// stores its campaigns. The whole file is read and checked first: the
    /// checksum, every line, each sealed plan decoding as `P` and each run
    /// as `R`, slots inside the schedule. A campaign this store already
    /// holds (same name, plan hash and creation time) is not written again.
    /// A campaign keeps its id when this store never used it; otherwise it
    /// gets the next id.
    pub fn import<P: DeserializeOwned, R: DeserializeOwned>(
        &self,
        input: &mut dyn BufRead,
        source_name: &str,
    ) -> Result<Vec<Imported>, ArchiveError> {
        self.writable()?;
        let pending = read_export::<P, R>(input, source_name)?;
        let present: Vec<CampaignMeta> = self.campaigns()?;
        let mut done = Vec::new();
        for campaign in pending {
            let from = campaign.meta.id;
            if let Some(same) = present.iter().find(|m| {
                m.name == campaign.meta.name
                    && m.plan_hash == campaign.meta.plan_hash
                    && m.created_unix_ms == campaign.meta.created_unix_ms
            }) {
                done.push(Imported {
                    from,
                    id: same.id,
                    already_present: true,
                });
                continue;
            }
            let id = self.store_imported(&campaign)?;
            done.push(Imported {
                from,
                id,
                already_present: false,
            });
        }
        self.flush()?;
        Ok(done)
    }

    /// Writes one checked campaign in one transaction; returns its id here.
    fn store_imported(&self, c: &Pending) -> Result<CampaignId, StoreError> {
        let trees = (
            &self.meta,
            &self.campaigns,
            &self.plans,
            &self.runs,
            &self.finals,
            &self.histograms,
            &self.profiles,
            &self.blobs,
        );
        let id = trees.transaction(
            |(meta, campaigns, plans, runs, finals, histograms, profiles, blobs)| -> TxResult<CampaignId> {
                let next = match meta.get(NEXT_CAMPAIGN_KEY)? {
                    None => 1,
                    Some(b) => match keys::decode_u64(&b) {
                        Some(id) => id,
                        None => return abort(malformed("the campaign id counter", "not 8 bytes")),
                    },
                };
                // Keep the id when this store never gave it out, so reports
                // (which name the id) read the same as before the export.
                let wanted = c.meta.id;
                let id = if wanted >= next && campaigns.get(keys::campaign(wanted))?.is_none() {
                    wanted
                } else {
                    next
                };
                let mut m = c.meta.clone();
                m.id = id;
                let bytes = encode(&format!("campaign `{id}`"), &m).or_else(abort)?;
                campaigns.insert(&keys::campaign(id), bytes)?;
                plans.insert(&keys::campaign(id), c.plan.as_slice())?;
                for (slot, attempt) in &c.finals {
                    finals.insert(&keys::slot(id, *slot), &attempt.to_be_bytes())?;
                }
                for (slot, attempt, payload, histogram, profile) in &c.runs {
                    let key = keys::run(RunKey { campaign: id, slot: *slot, attempt: *attempt });
                    runs.insert(&key, payload.as_slice())?;
                    if let Some(h) = histogram {
                        histograms.insert(&key, h.as_slice())?;
                    }
                    if let Some(p) = profile {
                        profiles.insert(&key, p.as_slice())?;
                    }
                }
                for (name, value) in &c.blobs {
                    blobs.insert(keys::blob(id, name), value.as_slice())?;
                }
                meta.insert(NEXT_CAMPAIGN_KEY, &(id.max(next - 1) + 1).to_be_bytes())?;
                Ok(id)
            },
        )?;
        Ok(id)
    }
}

/// Reads and checks a whole export.
fn read_export<P: DeserializeOwned, R: DeserializeOwned>(
    input: &mut dyn BufRead,
    source_name: &str,
) -> Result<Vec<Pending>, ArchiveError> {
    let damaged = |line: usize, detail: String| ArchiveError::Damaged {
        source_name: source_name.to_owned(),
        line,
        detail,
    };
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes)?;
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    check_envelope(&bytes, &lines, source_name)?;
    let mut campaigns: Vec<Pending> = Vec::new();
    let mut expected: Vec<CampaignId> = Vec::new();
    for (i, buf) in lines.iter().enumerate() {
        let n = i + 1;
        let line: Line =
            serde_json::from_slice(buf).map_err(|e| damaged(n, format!("does not parse ({e})")))?;
        match line {
            Line::Header(h) if n == 1 => expected = h.campaigns,
            Line::Header(_) => return Err(damaged(n, "is a second header".to_owned())),
            Line::End(_) if n == lines.len() => {
                let got: Vec<CampaignId> = campaigns.iter().map(|c| c.meta.id).collect();
                if got != expected {
                    return Err(damaged(
                        n,
                        format!(
                            "ends the file, but its header lists campaigns {expected:?} and the file holds {got:?}"
                        ),
                    ));
                }
                return Ok(campaigns);
            }
            Line::End(_) => return Err(damaged(n, "is an end record before the end".to_owned())),
            Line::Campaign(c) => {
                let pending = read_campaign::<P>(c, &campaigns).map_err(|d| damaged(n, d))?;
                campaigns.push(pending);
            }
            Line::Run(r) => read_run::<R>(r, &mut campaigns).map_err(|d| damaged(n, d))?,
            Line::Blob(b) => {
                let Some(c) = campaigns.last_mut().filter(|c| c.meta.id == b.campaign) else {
                    return Err(damaged(
                        n,
                        format!(
                            "is a blob of campaign `{}` outside that campaign's records",
                            b.campaign
                        ),
                    ));
                };
                c.blobs.push((b.name, b.value.get().as_bytes().to_vec()));
            }
        }
    }
    // The last line is the end record, checked above.
    Err(ArchiveError::Foreign {
        source_name: source_name.to_owned(),
    })
}

/// The header, the end record and the checksum, before any line's content
/// is believed: a foreign file is named as one, damage anywhere as damage.
fn check_envelope(bytes: &[u8], lines: &[&[u8]], source_name: &str) -> Result<(), ArchiveError> {
    let name = || source_name.to_owned();
    match lines.first().map(|l| serde_json::from_slice::<Line>(l)) {
        Some(Ok(Line::Header(h))) if h.format == EXPORT_FORMAT => {
            if h.version > EXPORT_VERSION {
                return Err(ArchiveError::NewerVersion {
                    source_name: name(),
                    found: h.version,
                });
            }
        }
        _ => {
            return Err(ArchiveError::Foreign {
                source_name: name(),
            });
        }
    }
    let last = lines.last().copied().unwrap_or_default();
    let end = match serde_json::from_slice::<Line>(last) {
        Ok(Line::End(end)) if last.ends_with(b"\n") => end,
        _ => {
            return Err(ArchiveError::Truncated {
                source_name: name(),
                lines: lines.len(),
            });
        }
    };
    let found = hex::encode(Sha256::digest(&bytes[..bytes.len() - last.len()]));
    if found != end.sha256 || end.lines != lines.len() - 1 {
        return Err(ArchiveError::Checksum {
            source_name: name(),
            expected: end.sha256,
            found,
        });
    }
    Ok(())
}

/// A campaign line, checked against the campaigns read before it; the
/// error is what is wrong with the line.
fn read_campaign<P: DeserializeOwned>(
    c: CampaignRecord,
    campaigns: &[Pending],
) -> Result<Pending, String> {
    let meta: CampaignMeta = decode("the campaign metadata", c.meta.get().as_bytes())
        .map_err(|e| format!("has campaign metadata that does not decode ({})", chain(&e)))?;
    decode::<P>(
        &format!("the sealed plan of campaign `{}`", meta.id),
        c.plan.get().as_bytes(),
    )
    .map_err(|e| {
        format!(
            "has a sealed plan this blocklab cannot read ({})",
            chain(&e)
        )
    })?;
    if let Some((slot, _)) = c.finals.iter().find(|(s, _)| **s >= meta.total_runs) {
        return Err(format!(
            "marks slot {slot} final, outside the {} slots of campaign `{}`",
            meta.total_runs, meta.id
        ));
    }
    if campaigns.iter().any(|p| p.meta.id == meta.id) {
        return Err(format!("repeats campaign `{}`", meta.id));
    }
    Ok(Pending {
        meta,
        plan: c.plan.get().as_bytes().to_vec(),
        finals: c.finals,
        runs: Vec::new(),
        blobs: Vec::new(),
    })
}

/// A run line, added to its campaign (the last one read); the error is
/// what is wrong with the line.
fn read_run<R: DeserializeOwned>(r: RunRecord, campaigns: &mut [Pending]) -> Result<(), String> {
    let Some(c) = campaigns.last_mut().filter(|c| c.meta.id == r.campaign) else {
        return Err(format!(
            "is a run of campaign `{}` outside that campaign's records",
            r.campaign
        ));
    };
    if r.slot >= c.meta.total_runs {
        return Err(format!(
            "is a run of slot {}, outside the {} slots of campaign `{}`",
            r.slot, c.meta.total_runs, r.campaign
        ));
    }
    decode::<R>("a run", r.payload.get().as_bytes())
        .map_err(|e| format!("has a run this blocklab cannot read ({})", chain(&e)))?;
    let bytes = |b: Option<String>, what: &str| {
        b.map(|b| {
            BASE64
                .decode(b)
                .map_err(|e| format!("has a {what} that is not base64 ({e})"))
        })
        .transpose()
    };
    if c.runs
        .iter()
        .any(|(s, a, ..)| (*s, *a) == (r.slot, r.attempt))
    {
        return Err(format!(
            "repeats slot {} attempt {} of campaign `{}`",
            r.slot, r.attempt, r.campaign
        ));
    }
    let histogram = bytes(r.histogram, "histogram")?;
    let profile = bytes(r.profile, "profile")?;
    c.runs.push((
        r.slot,
        r.attempt,
        r.payload.get().as_bytes().to_vec(),
        histogram,
        profile,
    ));
    Ok(())
}

/// An error and its causes on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
