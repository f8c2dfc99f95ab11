//! A link's counters: the veth ends' and their qdiscs' bytes, packets,
//! drops and overlimits, read with `tc -s` and `ip -s` before and after a run.

use serde::{Deserialize, Serialize};

use super::*;

/// A qdisc's counters (`tc -s qdisc`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QdiscCounters {
    pub kind: String,
    pub bytes: u64,
    pub packets: u64,
    pub drops: u64,
    pub overlimits: u64,
    pub requeues: u64,
}

/// One end of the link: what its qdiscs sent (its egress) and the veth's
/// own statistics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndCounters {
    /// The end's qdiscs, root first; empty when unshaped (veth's `noqueue`).
    pub qdiscs: Vec<QdiscCounters>,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_dropped: u64,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_dropped: u64,
}

/// Both ends of the link. The client end's egress is client → target (an
/// ingest stream's records); the target end's is target → client (acks).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkCounters {
    pub client_end: EndCounters,
    pub target_end: EndCounters,
}

impl LinkCounters {
    /// `after − self`, counter by counter (a qdisc missing before counts
    /// from zero).
    pub fn delta(&self, after: &LinkCounters) -> LinkCounters {
        fn end(a: &EndCounters, b: &EndCounters) -> EndCounters {
            EndCounters {
                qdiscs: b
                    .qdiscs
                    .iter()
                    .enumerate()
                    .map(|(i, q)| {
                        let z = QdiscCounters::default();
                        let p = a.qdiscs.get(i).filter(|p| p.kind == q.kind).unwrap_or(&z);
                        QdiscCounters {
                            kind: q.kind.clone(),
                            bytes: q.bytes.saturating_sub(p.bytes),
                            packets: q.packets.saturating_sub(p.packets),
                            drops: q.drops.saturating_sub(p.drops),
                            overlimits: q.overlimits.saturating_sub(p.overlimits),
                            requeues: q.requeues.saturating_sub(p.requeues),
                        }
                    })
                    .collect(),
                tx_bytes: b.tx_bytes.saturating_sub(a.tx_bytes),
                tx_packets: b.tx_packets.saturating_sub(a.tx_packets),
                tx_dropped: b.tx_dropped.saturating_sub(a.tx_dropped),
                rx_bytes: b.rx_bytes.saturating_sub(a.rx_bytes),
                rx_packets: b.rx_packets.saturating_sub(a.rx_packets),
                rx_dropped: b.rx_dropped.saturating_sub(a.rx_dropped),
            }
        }
        LinkCounters {
            client_end: end(&self.client_end, &after.client_end),
            target_end: end(&self.target_end, &after.target_end),
        }
    }

    /// Drops and overlimits summed over both ends' qdiscs.
    pub fn drops_and_overlimits(&self) -> (u64, u64) {
        self.client_end
            .qdiscs
            .iter()
            .chain(&self.target_end.qdiscs)
            .fold((0, 0), |(d, o), q| (d + q.drops, o + q.overlimits))
    }
}

/// What `TOOL [-n NS] -s -j OBJECT show dev DEV` prints: `tc` and `ip`
/// take the namespace and the statistics flags alike. Output that is not a
/// JSON list reads as an empty one: no counters, rather than a failed run.
fn shown(
    tool: &str,
    ns: Option<&str>,
    object: &str,
    dev: &str,
) -> Result<Vec<serde_json::Value>, NetError> {
    let mut a = argv(&[tool]);
    if let Some(ns) = ns {
        a.extend(argv(&["-n", ns]));
    }
    a.extend(argv(&["-s", "-j", object, "show", "dev", dev]));
    Ok(serde_json::from_str(&run(&a)?).unwrap_or_default())
}

/// `dev`'s qdiscs other than veth's default `noqueue`, from `tc -s -j`.
pub(super) fn qdiscs(ns: Option<&str>, dev: &str) -> Result<Vec<QdiscCounters>, NetError> {
    let list = shown("tc", ns, "qdisc", dev)?;
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or(0);
    Ok(list
        .iter()
        .filter(|q| q["kind"] != "noqueue")
        .map(|q| QdiscCounters {
            kind: q["kind"].as_str().unwrap_or("").to_owned(),
            bytes: n(q, "bytes"),
            packets: n(q, "packets"),
            drops: n(q, "drops"),
            overlimits: n(q, "overlimits"),
            requeues: n(q, "requeues"),
        })
        .collect())
}

pub(super) fn end_counters(ns: Option<&str>, dev: &str) -> Result<EndCounters, NetError> {
    let list = shown("ip", ns, "link", dev)?;
    let stats = list
        .first()
        .map(|l| l["stats64"].clone())
        .unwrap_or_default();
    let n = |dir: &str, k: &str| stats[dir][k].as_u64().unwrap_or(0);
    Ok(EndCounters {
        qdiscs: qdiscs(ns, dev)?,
        tx_bytes: n("tx", "bytes"),
        tx_packets: n("tx", "packets"),
        tx_dropped: n("tx", "dropped"),
        rx_bytes: n("rx", "bytes"),
        rx_packets: n("rx", "packets"),
        rx_dropped: n("rx", "dropped"),
    })
}
