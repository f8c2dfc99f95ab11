//! Tests of names, subnets, links' argv and the counters' parsing.

use super::*;

#[test]
fn tc_commands_shape_rate_and_netem_under_one_root() {
    let rate = LinkSpec {
        rate_mbit: Some(100.0),
        ..Default::default()
    };
    assert_eq!(
        rate.tc_commands(None, "blk-1-0"),
        vec![argv(&[
            "tc", "qdisc", "replace", "dev", "blk-1-0", "root", "tbf", "rate", "100mbit", "burst",
            "65536", "latency", "50ms"
        ])]
    );
    let both = LinkSpec {
        rate_mbit: Some(1000.0),
        delay_ms: 5.0,
        jitter_ms: 0.5,
        loss_pct: 0.1,
        ..Default::default()
    };
    let c = both.tc_commands(Some("blk-1-0"), "blk-peer");
    assert_eq!(
        shown(&c[0]),
        "tc -n blk-1-0 qdisc replace dev blk-peer root handle 1: netem delay 5ms 0.5ms loss 0.1%"
    );
    // 4 ms at 1 Gbit/s is 500,000 bytes, more than 64 KiB.
    assert_eq!(
        shown(&c[1]),
        "tc -n blk-1-0 qdisc replace dev blk-peer parent 1: handle 2: tbf rate 1000mbit burst 500000 latency 50ms"
    );
    assert_eq!(both.describe(), "1000 Mbit/s, 5 ms ± 0.5 ms, 0.1% loss");
    assert_eq!(LinkSpec::default().describe(), "unshaped");
}

#[test]
fn links_out_of_range_are_refused_naming_the_key() {
    let bad = |l: LinkSpec| l.validate("arms.link").unwrap_err().to_string();
    let e = bad(LinkSpec {
        rate_mbit: Some(0.0),
        ..Default::default()
    });
    assert!(
        e.contains("`arms.link.rate_mbit = 0` is out of range"),
        "{e}"
    );
    let e = bad(LinkSpec {
        loss_pct: 120.0,
        ..Default::default()
    });
    assert!(e.contains("`arms.link.loss_pct = 120`"), "{e}");
    let e = bad(LinkSpec {
        delay_ms: 1.0,
        jitter_ms: 2.0,
        ..Default::default()
    });
    assert!(e.contains("jitter of at most the delay"), "{e}");
    let e = bad(LinkSpec {
        burst_kib: Some(64),
        ..Default::default()
    });
    assert!(e.contains("add `rate_mbit` or drop `burst_kib`"), "{e}");
}

#[test]
fn subnets_avoid_every_prefix_in_use() {
    let p = |a: [u8; 4], len| (u32::from(Ipv4Addr::from(a)), len);
    // The first two /30s are taken, and a /16 route covers another /16.
    let used = [
        p([10, 213, 0, 1], 30),
        p([10, 213, 0, 6], 32),
        p([192, 0, 2, 0], 24),
    ];
    assert_eq!(free_subnet(&used, 0), Some(Ipv4Addr::new(10, 213, 0, 8)));
    assert_eq!(free_subnet(&[p([10, 213, 0, 0], 16)], 0), None);
    // A default route (length 0) does not count as in use.
    assert_eq!(
        free_subnet(&[p([0, 0, 0, 0], 0)], 5),
        Some(Ipv4Addr::new(10, 213, 0, 20))
    );
}

#[test]
fn owners_are_read_from_names() {
    assert_eq!(owner("blk-1234-7"), Some(1234));
    assert_eq!(owner("blk-1234-p3"), Some(1234));
    assert_eq!(owner("blk-peer"), None);
    assert_eq!(owner("eth0"), None);
}
