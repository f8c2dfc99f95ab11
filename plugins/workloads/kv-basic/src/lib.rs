//! kv-basic: the eleven workloads of FoundationDB's client benchmark (grv,
//! point reads, range reads, writes, read-your-writes, batches) as a
//! blocklab workload plugin.
//!
//! What each workload does is data in [`catalog`], shared with the host's
//! builtin copy of these workloads; this file only performs it through the
//! SDK's kv client.

mod catalog;

use blocklab_sdk::{Info, Params, Plugin, Workload, env, kv};
use catalog::{Kind, Settings, Spec};

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
        Ok(Box::new(KvWorkload::new(spec, settings)))
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
    let per_transaction = catalog::rows_per_fixture_transaction(prefix.len(), value.len());
    let mut key = prefix.clone();
    let mut start = 0;
    while start < settings.keys {
        let stop = settings.keys.min(start + per_transaction);
        kv::transact(|tr| {
            for index in start..stop {
                catalog::key_into(&mut key, prefix.len(), index);
                tr.set(&key, &value);
            }
            Ok(())
        })?;
        start = stop;
    }
    env::count("fixture-rows", settings.keys as i64);
    Ok(())
}

/// One set-up kv-basic workload with its buffers, reused across
/// transactions.
struct KvWorkload {
    spec: &'static Spec,
    settings: Settings,
    choices: u64,
    prefix_len: usize,
    /// The key a transaction reads or writes (a range read's first key).
    key: Vec<u8>,
    /// A range read's end key.
    end: Vec<u8>,
    /// The keys of a batch of writes.
    batch: Vec<Vec<u8>>,
    value: Vec<u8>,
}

impl KvWorkload {
    fn new(spec: &'static Spec, settings: Settings) -> KvWorkload {
        let prefix = spec.prefix();
        let writes = match spec.kind {
            Kind::Set { writes } => writes as usize,
            _ => 0,
        };
        KvWorkload {
            spec,
            choices: spec.choices(&settings),
            prefix_len: prefix.len(),
            key: prefix.clone(),
            end: prefix.clone(),
            batch: vec![prefix; writes],
            value: catalog::value(settings.value_bytes),
            settings,
        }
    }

    /// Picks a key index the way the builtin does.
    fn pick(&self) -> u64 {
        env::random_u64() % self.choices
    }

    fn check_value(&self, key: &[u8], value: Option<&[u8]>) -> Result<(), String> {
        match value {
            None => Err(catalog::missing(key)),
            Some(v) if v.len() != self.settings.value_bytes => Err(catalog::wrong_length(
                key,
                v.len(),
                self.settings.value_bytes,
            )),
            Some(_) => Ok(()),
        }
    }
}

impl Workload for KvWorkload {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        match self.spec.kind {
            Kind::ReadVersion => {
                let (_, retries) = kv::read_transact(|tr| tr.read_version())?;
                Ok(retries)
            }
            Kind::Get { commit } => {
                let index = self.pick();
                catalog::key_into(&mut self.key, self.prefix_len, index);
                let key = &self.key;
                let (value, retries) = if commit {
                    kv::transact(|tr| tr.get(key))?
                } else {
                    kv::read_transact(|tr| tr.get(key))?
                };
                self.check_value(key, value.as_deref())?;
                Ok(retries)
            }
            Kind::Range { rows } => {
                let index = self.pick();
                catalog::key_into(&mut self.key, self.prefix_len, index);
                catalog::key_into(&mut self.end, self.prefix_len, index + u64::from(rows));
                let (begin, end) = (&self.key, &self.end);
                let (found, retries) = kv::transact(|tr| tr.get_range(begin, end, rows))?;
                if found.len() != rows as usize {
                    return Err(catalog::wrong_rows(begin, found.len(), rows));
                }
                for row in &found {
                    self.check_value(&row.key, Some(&row.value))?;
                }
                Ok(retries)
            }
            Kind::Set { .. } => {
                for i in 0..self.batch.len() {
                    let index = self.pick();
                    catalog::key_into(&mut self.batch[i], self.prefix_len, index);
                }
                let (batch, value) = (&self.batch, &self.value);
                let ((), retries) = kv::transact(|tr| {
                    for key in batch {
                        tr.set(key, value);
                    }
                    Ok(())
                })?;
                Ok(retries)
            }
            Kind::ReadYourWrites => {
                let index = self.pick();
                catalog::key_into(&mut self.key, self.prefix_len, index);
                let (key, value) = (&self.key, &self.value);
                let (read, retries) = kv::read_transact(|tr| {
                    tr.set(key, value);
                    let read = tr.get(key)?;
                    tr.cancel();
                    Ok(read)
                })?;
                self.check_value(key, read.as_deref())?;
                Ok(retries)
            }
        }
    }
}
