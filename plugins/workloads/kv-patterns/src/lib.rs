//! kv-patterns: workloads written as FoundationDB users write them, on WIT
//! 0.3.0's calls (issue 30, points 7 and 9).
//!
//! - `get1`: one point read per transaction, the unit the fan-outs compare
//!   against.
//! - `fanout-futures`: `keys` point reads issued together as futures and
//!   waited for with one `join_all`: against a cluster (or an embedded
//!   target with `read_us`) their round trips overlap.
//! - `fanout-sequential`: the same reads one after another.
//! - `counter`: an atomic add to one key; any number of workers add to the
//!   same counter without conflicts (no read conflict range).
//! - `queue`: pushes an item under a versionstamped key, then pops the
//!   oldest item (a range read of one row and a clear). Poppers of several
//!   workers conflict on the head, and retry.
//! - `scan`: a range read in a chosen streaming mode (scan.rs).
//! - `ycsb-a` to `ycsb-f`: YCSB's core workloads with a zipfian key
//!   chooser (ycsb.rs).
//!
//! Every run checks what it read, so a wrong answer fails the run instead
//! of going unnoticed.

mod scan;
mod ycsb;

use blocklab_sdk::kv::{self, KeySelector, RangeLimits, StreamingMode};
use blocklab_sdk::{Info, Params, Plugin, Workload, export_plugin};

const FANOUT_KEYS: &[(&str, &str, &str)] = &[(
    "keys",
    "10",
    "how many keys each transaction reads (1 to 1000)",
)];

struct Patterns;

impl Plugin for Patterns {
    fn workloads() -> Vec<Info> {
        let mut infos = vec![
            Info::new("get1", "one point read per transaction").uses("kv"),
            Info::new(
                "fanout-futures",
                "`keys` point reads issued together as futures, waited for at once",
            )
            .params(FANOUT_KEYS)
            .uses("kv"),
            Info::new(
                "fanout-sequential",
                "`keys` point reads one after another (the same reads as fanout-futures)",
            )
            .params(FANOUT_KEYS)
            .uses("kv"),
            Info::new(
                "counter",
                "adds 1 to one counter with an atomic add (no read conflict)",
            )
            .uses("kv"),
            Info::new(
                "queue",
                "pushes under a versionstamped key, then pops the oldest item",
            )
            .uses("kv"),
            Info::new(
                "scan",
                "one range read of `rows` rows in streaming mode `mode`",
            )
            .params(scan::PARAMS)
            .uses("kv"),
        ];
        infos.extend(
            ycsb::WORKLOADS
                .iter()
                .map(|(name, what)| Info::new(*name, *what).params(ycsb::PARAMS).uses("kv")),
        );
        infos
    }

    fn setup(name: &str, params: &Params) -> Result<Box<dyn Workload>, String> {
        Ok(match name {
            "get1" => Box::new(Fanout::setup(1, Style::Sequential)?),
            "fanout-futures" => Box::new(Fanout::setup(keys(params)?, Style::Futures)?),
            "fanout-sequential" => Box::new(Fanout::setup(keys(params)?, Style::Sequential)?),
            "counter" => Box::new(Counter),
            "queue" => Box::new(Queue::setup()?),
            "scan" => Box::new(scan::Scan::setup(params)?),
            name if name.starts_with("ycsb-") && name.len() == 6 => Box::new(ycsb::Ycsb::setup(
                name.chars().last().unwrap_or('?'),
                params,
            )?),
            other => return Err(format!("kv-patterns has no workload `{other}`")),
        })
    }
}

fn keys(params: &Params) -> Result<usize, String> {
    let n = params.usize("keys")?;
    if !(1..=1000).contains(&n) {
        return Err(format!("param `keys` = {n}: give 1 to 1000"));
    }
    Ok(n)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Futures,
    Sequential,
}

struct Fanout {
    keys: Vec<Vec<u8>>,
    style: Style,
}

impl Fanout {
    /// Writes the keys' fixture (their values are their own keys).
    fn setup(n: usize, style: Style) -> Result<Fanout, String> {
        let keys: Vec<Vec<u8>> = (0..n)
            .map(|i| format!("kv-patterns/fanout/{i:04}").into_bytes())
            .collect();
        kv::transact(|tr| {
            for k in &keys {
                tr.set(k, k);
            }
            Ok(())
        })?;
        Ok(Fanout { keys, style })
    }
}

impl Workload for Fanout {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        let (values, retries) = kv::read_transact(|tr| match self.style {
            Style::Futures => kv::join_all(self.keys.iter().map(|k| tr.start_get(k)).collect()),
            Style::Sequential => self.keys.iter().map(|k| tr.get(k)).collect(),
        })?;
        for (k, v) in self.keys.iter().zip(&values) {
            if v.as_deref() != Some(k.as_slice()) {
                return Err(format!(
                    "key {} read {v:?}, not its fixture value",
                    String::from_utf8_lossy(k)
                ));
            }
        }
        Ok(retries)
    }
}

const COUNTER: &[u8] = b"kv-patterns/counter";

struct Counter;

impl Workload for Counter {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        let ((), retries) = kv::transact(|tr| {
            tr.add(COUNTER, 1);
            Ok(())
        })?;
        Ok(retries)
    }
}

const QUEUE: &[u8] = b"kv-patterns/queue/";

struct Queue {
    template: Vec<u8>,
}

impl Queue {
    /// Starts from an empty queue.
    fn setup() -> Result<Queue, String> {
        let end = kv::prefix_end(QUEUE);
        kv::transact(|tr| {
            tr.clear_range(QUEUE, &end);
            Ok(())
        })?;
        let mut template = QUEUE.to_vec();
        template.extend_from_slice(&[0; 10]);
        Ok(Queue { template })
    }
}

impl Workload for Queue {
    fn run(&mut self, iteration: u64) -> Result<u32, String> {
        let offset = QUEUE.len() as u32;
        let item = iteration.to_le_bytes();
        let ((), pushed) = kv::transact(|tr| {
            tr.set_versionstamped_key(&self.template, offset, &item);
            Ok(())
        })?;
        let end = kv::prefix_end(QUEUE);
        let limits = RangeLimits {
            limit: 1,
            mode: StreamingMode::Exact,
            ..RangeLimits::default()
        };
        let (popped, popped_retries) = kv::transact(|tr| {
            let batch = tr
                .start_get_range(
                    &KeySelector::first_greater_or_equal(QUEUE),
                    &KeySelector::first_greater_or_equal(&end),
                    &limits,
                )
                .wait()?;
            let Some(row) = batch.rows.iter().next() else {
                return Ok(None);
            };
            tr.clear(row.key);
            Ok(Some(row.value.to_vec()))
        })?;
        // With one worker the oldest item is this push; with several it
        // may be another's, but the queue cannot be empty after a push.
        if popped.is_none() {
            return Err("the queue was empty right after a push".to_owned());
        }
        Ok(pushed + popped_retries)
    }
}

export_plugin!(Patterns);
