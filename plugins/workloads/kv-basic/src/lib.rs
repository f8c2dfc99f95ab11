//! kv-basic: the eleven workloads of FoundationDB's client benchmark (grv,
//! point reads, range reads, writes, read-your-writes, batches) as a
//! blocklab workload plugin.
//!
//! What each workload does is data in the `blocklab-catalog` crate, shared
//! with the host's builtin copy of these workloads, and so is how a
//! transaction picks its keys; this file only performs it through the SDK's
//! kv client.

use blocklab_catalog::kv_basic::{self as catalog, Keys, Kind, Settings, Spec};
use blocklab_sdk::{Info, Params, Plugin, Workload, env, kv};

struct KvBasic;

impl Plugin for KvBasic {
    fn workloads() -> Vec<Info> {
        catalog::WORKLOADS
            .iter()
            .map(|spec| {
                Info::new(spec.name, spec.description)
                    .params(spec.params)
                    .uses("kv")
            })
            .collect()
    }

    fn setup(name: &str, params: &Params) -> Result<Box<dyn Workload>, String> {
        let spec = catalog::find(name).ok_or_else(|| format!("unknown workload `{name}`"))?;
        let settings = spec.settings(|param| params.u64(param))?;
        write_fixture(spec, &settings)?;
        Ok(Box::new(KvWorkload {
            keys: Keys::new(spec, settings),
        }))
    }
}

blocklab_sdk::export_plugin!(KvBasic);

/// Clears the workload's keys, then writes its fixture rows in transactions
/// of at most `FIXTURE_TRANSACTION_BYTES`.
fn write_fixture(spec: &Spec, settings: &Settings) -> Result<(), String> {
    if !spec.clears_on_setup() {
        return Ok(());
    }
    let prefix = spec.prefix();
    let end = spec.prefix_end();
    kv::transact(|tr| {
        tr.clear_range(&prefix, &end);
        Ok(())
    })?;
    if !spec.has_fixture() {
        return Ok(());
    }
    let value = catalog::value(settings.value_bytes);
    let mut key = prefix.clone();
    for rows in catalog::fixture_transactions(prefix.len(), settings) {
        kv::transact(|tr| {
            for index in rows.clone() {
                catalog::key_into(&mut key, prefix.len(), index);
                tr.set(&key, &value);
            }
            Ok(())
        })?;
    }
    env::count("fixture-rows", settings.keys as i64);
    Ok(())
}

/// One set-up kv-basic workload with its keys, reused across transactions.
struct KvWorkload {
    keys: Keys,
}

impl Workload for KvWorkload {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        let keys = &mut self.keys;
        match keys.spec.kind {
            Kind::ReadVersion => {
                let (_, retries) = kv::read_transact(|tr| tr.read_version())?;
                Ok(retries)
            }
            Kind::Get { commit } => {
                let (key, _) = keys.point(env::random_u64());
                let (value, retries) = if commit {
                    kv::transact(|tr| tr.get(key))?
                } else {
                    kv::read_transact(|tr| tr.get(key))?
                };
                keys.check_value(keys.key(), value.as_deref())?;
                Ok(retries)
            }
            Kind::Range { rows } => {
                let (begin, end) = keys.range(env::random_u64());
                let (found, retries) = kv::transact(|tr| tr.get_range(begin, end, rows))?;
                if found.len() != rows as usize {
                    return Err(catalog::wrong_rows(keys.key(), found.len(), rows));
                }
                for row in &found {
                    keys.check_value(row.key, Some(row.value))?;
                }
                Ok(retries)
            }
            Kind::Set { .. } => {
                let (batch, value) = keys.batch(env::random_u64);
                let ((), retries) = kv::transact(|tr| {
                    for key in batch {
                        tr.set(key, value);
                    }
                    Ok(())
                })?;
                Ok(retries)
            }
            Kind::ReadYourWrites => {
                let (key, value) = keys.point(env::random_u64());
                let (read, retries) = kv::read_transact(|tr| {
                    tr.set(key, value);
                    let read = tr.get(key)?;
                    tr.cancel();
                    Ok(read)
                })?;
                keys.check_value(keys.key(), read.as_deref())?;
                Ok(retries)
            }
        }
    }
}
