//! YCSB's core workloads A to F (Cooper et al., SoCC 2010; the
//! `workloads/workload[a-f]` files of the YCSB repository give the mixes),
//! one operation per transaction, over `records` records of `value_bytes`
//! each (YCSB's record is 10 fields of 100 bytes; here it is one value of
//! that size, and an update rewrites all of it).
//!
//! | workload | operations | key chooser |
//! |---|---|---|
//! | a | 50% read, 50% update | zipfian |
//! | b | 95% read, 5% update | zipfian |
//! | c | 100% read | zipfian |
//! | d | 95% read, 5% insert | latest (the newest records the hottest) |
//! | e | 95% scan of 1 to `scan_max` rows, 5% insert | zipfian scan start |
//! | f | 50% read, 50% read-modify-write | zipfian |
//!
//! Zipfian choices are scrambled over the key space (YCSB's default). A
//! worker's inserts take the next record numbers after the ones it knows
//! of; several workers' inserts may therefore write the same new records.
//! Every read checks it found a record of the right size.

use blocklab_sdk::keys::{Zipfian, draw, scramble};
use blocklab_sdk::{Params, Workload, kv};

pub const PARAMS: &[(&str, &str, &str)] = &[
    (
        "records",
        "1000",
        "records loaded before the run (1 to 10000000)",
    ),
    ("value_bytes", "1000", "bytes per record (1 to 100000)"),
    ("theta", "0.99", "the zipfian exponent, above 0 and below 1"),
    (
        "scan_max",
        "100",
        "workload e: the longest scan, rows (1 to 10000)",
    ),
];

const PREFIX: &str = "kv-patterns/ycsb/";

/// The workloads' names and what each does, for `workloads()`.
pub const WORKLOADS: &[(&str, &str)] = &[
    ("ycsb-a", "YCSB A: 50% read, 50% update, zipfian"),
    ("ycsb-b", "YCSB B: 95% read, 5% update, zipfian"),
    ("ycsb-c", "YCSB C: read only, zipfian"),
    (
        "ycsb-d",
        "YCSB D: 95% read, 5% insert, the latest records hottest",
    ),
    ("ycsb-e", "YCSB E: 95% short scans, 5% insert, zipfian"),
    ("ycsb-f", "YCSB F: 50% read, 50% read-modify-write, zipfian"),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

pub struct Ycsb {
    /// Cumulative shares of the operations, in [0, 1].
    mix: Vec<(f64, Op)>,
    /// Chooses among the records this worker knows of (the loaded ones
    /// and its own inserts).
    chooser: Zipfian,
    /// `d`: the newest record is rank 0.
    latest: bool,
    records: u64,
    value_bytes: usize,
    scan_max: u64,
    /// The end of the records' key range, where scans stop.
    end: Vec<u8>,
}

fn key(record: u64) -> Vec<u8> {
    format!("{PREFIX}{record:010}").into_bytes()
}

fn bounded(params: &Params, name: &str, max: u64) -> Result<u64, String> {
    let n = params.u64(name)?;
    if !(1..=max).contains(&n) {
        return Err(format!("param `{name}` = {n}: give 1 to {max}"));
    }
    Ok(n)
}

impl Ycsb {
    /// Loads `records` records (in transactions of 100; sets only, so
    /// workers loading at once agree), then chooses as workload `letter`
    /// does.
    pub fn setup(letter: char, params: &Params) -> Result<Ycsb, String> {
        use Op::*;
        let mix: &[(f64, Op)] = match letter {
            'a' => &[(0.5, Read), (1.0, Update)],
            'b' => &[(0.95, Read), (1.0, Update)],
            'c' => &[(1.0, Read)],
            'd' => &[(0.95, Read), (1.0, Insert)],
            'e' => &[(0.95, Scan), (1.0, Insert)],
            'f' => &[(0.5, Read), (1.0, ReadModifyWrite)],
            other => return Err(format!("there is no YCSB workload `{other}`: give a to f")),
        };
        let records = bounded(params, "records", 10_000_000)?;
        let value_bytes = bounded(params, "value_bytes", 100_000)? as usize;
        let scan_max = bounded(params, "scan_max", 10_000)?;
        let chooser = Zipfian::new(records, params.f64("theta")?)?;
        let value = vec![b'v'; value_bytes];
        for first in (0..records).step_by(100) {
            kv::transact(|tr| {
                for record in first..(first + 100).min(records) {
                    tr.set(&key(record), &value);
                }
                Ok(())
            })?;
        }
        Ok(Ycsb {
            mix: mix.to_vec(),
            chooser,
            latest: letter == 'd',
            records,
            value_bytes,
            scan_max,
            end: kv::prefix_end(PREFIX.as_bytes()),
        })
    }

    fn choose_record(&self) -> u64 {
        let known = self.chooser.len();
        let rank = self.chooser.rank(draw());
        if self.latest {
            known - 1 - rank
        } else {
            scramble(rank, known)
        }
    }

    fn check(&self, record: u64, value: Option<Vec<u8>>) -> Result<Vec<u8>, String> {
        match value {
            Some(v) if v.len() == self.value_bytes => Ok(v),
            Some(v) => Err(format!(
                "record {record} has {} bytes, not the {} written",
                v.len(),
                self.value_bytes
            )),
            None => Err(format!("record {record} is missing")),
        }
    }
}

/// The value an operation writes: the iteration in its first bytes, so
/// successive writes differ.
fn stamped(iteration: u64, len: usize) -> Vec<u8> {
    let mut value = vec![b'v'; len];
    let stamp = iteration.to_le_bytes();
    let n = stamp.len().min(len);
    value[..n].copy_from_slice(&stamp[..n]);
    value
}

impl Workload for Ycsb {
    fn run(&mut self, iteration: u64) -> Result<u32, String> {
        let u = draw();
        let op = self
            .mix
            .iter()
            .find(|(upto, _)| u < *upto)
            .map_or(self.mix[self.mix.len() - 1].1, |(_, op)| *op);
        let retries = match op {
            Op::Read => {
                let record = self.choose_record();
                let (value, retries) = kv::read_transact(|tr| tr.get(&key(record)))?;
                self.check(record, value)?;
                retries
            }
            Op::Update => {
                let record = self.choose_record();
                let value = stamped(iteration, self.value_bytes);
                kv::transact(|tr| {
                    tr.set(&key(record), &value);
                    Ok(())
                })?
                .1
            }
            Op::ReadModifyWrite => {
                let record = self.choose_record();
                let (read, retries) = kv::transact(|tr| {
                    let read = tr.get(&key(record))?;
                    tr.set(&key(record), &stamped(iteration, self.value_bytes));
                    Ok(read)
                })?;
                self.check(record, read)?;
                retries
            }
            Op::Insert => {
                let record = self.chooser.len();
                let value = stamped(iteration, self.value_bytes);
                let ((), retries) = kv::transact(|tr| {
                    tr.set(&key(record), &value);
                    Ok(())
                })?;
                self.chooser.grow(record + 1);
                retries
            }
            Op::Scan => {
                let start = scramble(self.chooser.rank(draw()), self.records);
                let rows = 1 + (draw() * self.scan_max as f64) as u64;
                let (found, retries) =
                    kv::read_transact(|tr| tr.get_range(&key(start), &self.end, rows as u32))?;
                if found.is_empty() || found.len() as u64 > rows {
                    return Err(format!(
                        "a scan of {rows} rows from record {start} returned {}",
                        found.len()
                    ));
                }
                retries
            }
        };
        Ok(retries)
    }
}
