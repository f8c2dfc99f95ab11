//! Window mode's time slices through a worker's real loop: what the
//! workload counts as acknowledged lands in exactly one slice.

use super::*;
use crate::plugin::WorkloadInfo;
use crate::plugin::env::Env;

/// An ingest stand-in: each transaction counts 0–6 records as acknowledged
/// (and 100 bytes each), the way the ingest workload counts acks inside its
/// `run`, and takes about 50 µs, so the slices close mid-stream.
struct Acks(Env);

impl Instance for Acks {
    fn list(&mut self) -> anyhow::Result<Vec<WorkloadInfo>> {
        Ok(Vec::new())
    }
    fn setup(&mut self, _: &str, _: &[(String, String)]) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&mut self, iteration: u64) -> anyhow::Result<u32> {
        let records = (iteration * 7 % 11) as i64 % 7;
        self.0.count("acked_records", records);
        self.0.count("acked_bytes", 100 * records);
        std::thread::sleep(Duration::from_micros(50));
        Ok(0)
    }
    fn env(&self) -> &Env {
        &self.0
    }
}

/// One worker's outcome of `measure` over [`Acks`], and what the workload
/// counted in the measured window.
fn outcome(measure: Measure) -> (WorkerOutcome, BTreeMap<String, i64>) {
    let barriers = Barriers::new(1);
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let mut instance = Acks(Env::new("acks", 0, 0));
            let share = Share::of(measure, 1, 0);
            let evidence = Evidence::Scheduler;
            let inject = Inject::default();
            let out = drive(
                &mut instance,
                measure,
                share,
                inject,
                evidence,
                None,
                &barriers,
            )?;
            let window = out.before.since(instance.env())?.into_counters();
            anyhow::Ok((out, window))
        });
        barriers.warmed.wait();
        barriers.start.wait();
        worker.join().unwrap().unwrap()
    })
}

#[test]
fn a_windows_slices_add_up_to_the_records_it_acknowledged() {
    let (out, counted) = outcome(Measure::Window {
        warmup_s: 0.01,
        measured_s: 0.05,
    });
    let b = &out.batches;
    assert!(b.has_records(), "{b:?}");
    assert_eq!(b.records.len(), b.count.len());
    let window = |name: &str| counted[name] as u64;
    assert!(window("acked_records") > 0);
    // The warmup's acks are in no slice, the window's in exactly one.
    assert_eq!(b.records.iter().sum::<u64>(), window("acked_records"));
    assert_eq!(b.bytes.iter().sum::<u64>(), window("acked_bytes"));
    assert!(b.slice_median_records_per_s(1).unwrap() > 0.0);
}

#[test]
fn a_transaction_runs_batches_count_no_records() {
    let (out, _) = outcome(Measure::Transactions {
        warmup: 5,
        measured: 100,
    });
    assert_eq!(out.batches.count.len(), 64);
    assert!(out.batches.records.is_empty(), "{:?}", out.batches);
}
