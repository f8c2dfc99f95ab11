//! Plans: the campaign spec, its balanced schedule of arm orders, sealing,
//! and a campaign's identity (tags, testbed, plan family, series key).

pub mod design;
pub mod duet;
pub mod identity;
pub mod inputs;
pub mod seal;
pub mod spec;

use std::fmt::Write as _;

/// The sealed plan as `blocklab plan` prints it: seed, hash, inputs, and
/// per workload the arm order of every block.
pub fn describe(sealed: &seal::SealedPlan) -> String {
    let spec = &sealed.spec;
    let mut s = String::new();
    let _ = writeln!(s, "plan `{}` sealed: {}", spec.name, sealed.hash);
    let _ = writeln!(
        s,
        "seed {}, {} blocks × {} arms × {} workloads = {} runs; baseline `{}`",
        spec.seed,
        spec.blocks,
        spec.arms.len(),
        spec.workloads.len(),
        sealed.schedule.len(),
        spec.arms[spec.baseline()].name
    );
    for o in &sealed.overrides {
        let _ = writeln!(s, "override: {o}");
    }
    let _ = writeln!(s, "inputs:");
    for (name, hash) in &sealed.inputs {
        let _ = writeln!(s, "  {hash}  {name}");
    }
    // The schedule runs workload by workload, block by block: one pass
    // (a filter per block would be quadratic in the runs).
    let mut workload: Option<&str> = None;
    for block in sealed
        .schedule
        .chunk_by(|a, b| a.workload == b.workload && a.block == b.block)
    {
        let first = &block[0];
        if workload != Some(first.workload.as_str()) {
            workload = Some(first.workload.as_str());
            let _ = writeln!(s, "{}:", first.workload);
        }
        let order: Vec<&str> = block.iter().map(|x| x.arm.as_str()).collect();
        let _ = writeln!(s, "  block {:>2}: {}", first.block + 1, order.join(" → "));
    }
    s
}
