//! The machine's network for a campaign whose target runs in a network
//! namespace of its own (docs/network.md): the namespace and the veth pair
//! joining it to the client's namespace, the addresses on both ends, the
//! shaped link (tc `tbf`, and `netem` where the kernel has it), the link's
//! counters, what the kernel's traffic control offers, and the removal of
//! namespaces left by a supervisor that was killed.
//!
//! Everything is done by running `ip` and `tc` (iproute2), and the exact
//! argv of every command that changed the machine is kept for provenance.
//! Names carry the owner's PID (`blk-<pid>-<n>`), so a later blocklab can
//! tell leftovers of a dead process from another campaign's live ones.

mod counters;
#[cfg(test)]
mod tests;

pub use counters::{EndCounters, LinkCounters, QdiscCounters};
use counters::{end_counters, qdiscs};

use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// What every namespace and host-side veth blocklab creates is named with.
pub const PREFIX: &str = "blk-";
/// The namespace side of the veth pair (names are per namespace).
pub const PEER: &str = "blk-peer";
/// Where `ip netns` keeps its namespaces.
const NETNS_DIR: &str = "/run/netns";
/// The /16 the /30 subnets of the links are taken from (RFC 1918 space,
/// checked against the machine's addresses and routes before use).
const SUBNET_BASE: [u8; 2] = [10, 213];
/// Serialises the choice of a subnet between blocklab processes.
const LOCK_FILE: &str = "/run/lock/blocklab-netns.lock";
/// tbf's queue when the link sets none: packets wait at most this long.
const DEFAULT_QUEUE_MS: u32 = 50;

/// Failures of the machine's network; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error(
        "`ip` (iproute2) is not installed, and a target in its own network namespace needs it: install iproute2 (`apt-get install iproute2`), or set `network.placement = \"loopback\"`"
    )]
    IpMissing,
    #[error(
        "`{command}` was refused ({message}): a target in its own network namespace needs root or CAP_NET_ADMIN; run blocklab as root (or give it CAP_NET_ADMIN), or set `network.placement = \"loopback\"`"
    )]
    NotPermitted { command: String, message: String },
    #[error("`{command}` failed: {message}")]
    Command { command: String, message: String },
    #[error(
        "the link asks for {what}, which needs tc's `netem` qdisc, and this kernel does not have it (`{command}` said: {message}); build the kernel with CONFIG_NET_SCH_NETEM (or load the sch_netem module), or remove {keys} from the link"
    )]
    NetemMissing {
        what: String,
        keys: String,
        command: String,
        message: String,
    },
    #[error(
        "no free /30 is left in {}.{}.0.0/16 for the link (every one overlaps an address or route of this machine); remove stale `{PREFIX}*` links with `ip link del`",
        SUBNET_BASE[0],
        SUBNET_BASE[1]
    )]
    NoSubnet,
}

/// One command line, as run.
pub type Argv = Vec<String>;

fn argv(parts: &[&str]) -> Argv {
    parts.iter().map(|s| (*s).to_owned()).collect()
}

fn shown(argv: &[String]) -> String {
    argv.join(" ")
}

/// Runs `argv`, returning its stdout; a refusal for lack of privilege is
/// [`NetError::NotPermitted`].
fn run(argv: &[String]) -> Result<String, NetError> {
    let output = match Command::new(&argv[0]).args(&argv[1..]).output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(NetError::IpMissing),
        Err(e) => {
            return Err(NetError::Command {
                command: shown(argv),
                message: e.to_string(),
            });
        }
    };
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let message = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    let message = if message.is_empty() {
        format!("exit {}", output.status)
    } else {
        message
    };
    let lower = message.to_lowercase();
    if lower.contains("operation not permitted") || lower.contains("permission denied") {
        return Err(NetError::NotPermitted {
            command: shown(argv),
            message,
        });
    }
    Err(NetError::Command {
        command: shown(argv),
        message,
    })
}

/// Where a campaign's local targets run (`network.placement`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetPlacement {
    /// In the client's namespace, reached over 127.0.0.1.
    #[default]
    Loopback,
    /// In a namespace of their own, reached over a veth pair.
    Netns,
}

/// A link's shape (`link = { ... }`): unset keys leave that part unshaped.
/// Both directions get the same shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Rate limit, Mbit/s (tc `tbf`); none: as fast as the veth goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_mbit: Option<f64>,
    /// tbf's bucket, KiB (default: 64, or 4 ms at the rate if larger).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_kib: Option<u32>,
    /// The longest a packet waits in tbf's queue before it is dropped, ms
    /// (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_ms: Option<u32>,
    /// One-way delay, ms (tc `netem`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: f64,
    /// Delay jitter, ms (tc `netem`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub jitter_ms: f64,
    /// Random loss, percent (tc `netem`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub loss_pct: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Prints a number for tc: no exponent, no trailing zeros.
fn num(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_owned()
}

impl LinkSpec {
    /// Whether the link needs `netem` (delay, jitter or loss).
    pub fn needs_netem(&self) -> bool {
        self.delay_ms > 0.0 || self.jitter_ms > 0.0 || self.loss_pct > 0.0
    }

    /// The netem keys set, for messages: "`delay_ms`, `loss_pct`".
    fn netem_keys(&self) -> (String, String) {
        let mut what = Vec::new();
        let mut keys = Vec::new();
        if self.delay_ms > 0.0 {
            what.push(format!("{} ms of delay", num(self.delay_ms)));
            keys.push("`delay_ms`");
        }
        if self.jitter_ms > 0.0 {
            what.push(format!("{} ms of jitter", num(self.jitter_ms)));
            keys.push("`jitter_ms`");
        }
        if self.loss_pct > 0.0 {
            what.push(format!("{}% loss", num(self.loss_pct)));
            keys.push("`loss_pct`");
        }
        (what.join(", "), keys.join(", "))
    }

    /// Range checks, naming `key` (e.g. `arms.link`) and the caps in
    /// [`crate::limits`].
    pub fn validate(&self, key: &str) -> anyhow::Result<()> {
        use crate::limits::{self, LINK_BURST_KIB, LINK_DELAY_MS, LINK_QUEUE_MS, LINK_RATE_MBIT};
        if let Some(rate) = self.rate_mbit
            && !(rate.is_finite() && (0.01..=LINK_RATE_MBIT).contains(&rate))
        {
            anyhow::bail!(
                "`{key}.rate_mbit = {}` is out of range: give 0.01 to {LINK_RATE_MBIT} Mbit/s, or leave it out for an unshaped rate (docs/limits.md)",
                limits::show(rate)
            );
        }
        if let Some(burst) = self.burst_kib {
            if self.rate_mbit.is_none() {
                anyhow::bail!(
                    "`{key}.burst_kib` sizes the rate limiter's bucket, but the link sets no `rate_mbit`; add `rate_mbit` or drop `burst_kib`"
                );
            }
            limits::count(
                &format!("{key}.burst_kib"),
                u64::from(burst),
                LINK_BURST_KIB,
            )?;
        }
        if let Some(queue) = self.queue_ms {
            if self.rate_mbit.is_none() {
                anyhow::bail!(
                    "`{key}.queue_ms` sizes the rate limiter's queue, but the link sets no `rate_mbit`; add `rate_mbit` or drop `queue_ms`"
                );
            }
            limits::count(&format!("{key}.queue_ms"), u64::from(queue), LINK_QUEUE_MS)?;
        }
        for (name, value, cap) in [
            ("delay_ms", self.delay_ms, LINK_DELAY_MS),
            ("jitter_ms", self.jitter_ms, LINK_DELAY_MS),
            ("loss_pct", self.loss_pct, 100.0),
        ] {
            if !(value.is_finite() && (0.0..=cap).contains(&value)) {
                anyhow::bail!(
                    "`{key}.{name} = {}` is out of range: give 0 to {cap} (docs/limits.md)",
                    limits::show(value)
                );
            }
        }
        if self.jitter_ms > self.delay_ms {
            anyhow::bail!(
                "`{key}.jitter_ms = {}` is larger than `delay_ms = {}`: netem would need negative delays; give a jitter of at most the delay",
                num(self.jitter_ms),
                num(self.delay_ms)
            );
        }
        Ok(())
    }

    /// A short description: "100 Mbit/s, 5 ms ± 1 ms, 0.1% loss", or
    /// "unshaped".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(rate) = self.rate_mbit {
            parts.push(format!("{} Mbit/s", num(rate)));
        }
        if self.delay_ms > 0.0 || self.jitter_ms > 0.0 {
            if self.jitter_ms > 0.0 {
                parts.push(format!(
                    "{} ms ± {} ms",
                    num(self.delay_ms),
                    num(self.jitter_ms)
                ));
            } else {
                parts.push(format!("{} ms", num(self.delay_ms)));
            }
        }
        if self.loss_pct > 0.0 {
            parts.push(format!("{}% loss", num(self.loss_pct)));
        }
        if parts.is_empty() {
            "unshaped".into()
        } else {
            parts.join(", ")
        }
    }

    /// tbf's bucket, bytes: `burst_kib`, else 64 KiB or 4 ms at the rate,
    /// whichever is larger (a bucket below the rate's per-tick share caps
    /// the rate below what was asked).
    fn burst_bytes(&self, rate_mbit: f64) -> u64 {
        match self.burst_kib {
            Some(k) => u64::from(k) << 10,
            None => ((rate_mbit * 1e6 / 8.0 * 0.004) as u64).max(64 << 10),
        }
    }

    /// The tc commands that give device `dev` this shape, as argv lists
    /// (`tc` with `-n NS` when the device is inside namespace `ns`). The
    /// first replaces whatever root qdisc the device had.
    fn tc_commands(&self, ns: Option<&str>, dev: &str) -> Vec<Argv> {
        let tc = |rest: &[&str]| -> Argv {
            let mut a = argv(&["tc"]);
            if let Some(ns) = ns {
                a.extend(argv(&["-n", ns]));
            }
            a.extend(argv(rest));
            a
        };
        let mut out = Vec::new();
        let mut tbf_parent = argv(&["root"]);
        if self.needs_netem() {
            let mut netem = tc(&[
                "qdisc", "replace", "dev", dev, "root", "handle", "1:", "netem",
            ]);
            if self.delay_ms > 0.0 || self.jitter_ms > 0.0 {
                netem.extend(["delay".into(), format!("{}ms", num(self.delay_ms))]);
                if self.jitter_ms > 0.0 {
                    netem.push(format!("{}ms", num(self.jitter_ms)));
                }
            }
            if self.loss_pct > 0.0 {
                netem.extend(["loss".into(), format!("{}%", num(self.loss_pct))]);
            }
            out.push(netem);
            tbf_parent = argv(&["parent", "1:", "handle", "2:"]);
        }
        if let Some(rate) = self.rate_mbit {
            let mut tbf = tc(&["qdisc", "replace", "dev", dev]);
            tbf.extend(tbf_parent);
            tbf.extend([
                "tbf".into(),
                "rate".into(),
                format!("{}mbit", num(rate)),
                "burst".into(),
                self.burst_bytes(rate).to_string(),
                "latency".into(),
                format!("{}ms", self.queue_ms.unwrap_or(DEFAULT_QUEUE_MS)),
            ]);
            out.push(tbf);
        }
        out
    }
}

/// What the kernel's traffic control offers, found by adding each qdisc to
/// the loopback device of a scratch namespace (stored in the campaign's
/// environment).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QdiscSupport {
    pub tbf: bool,
    pub htb: bool,
    pub netem: bool,
    /// Each probe's command and, when it failed, what tc said.
    pub probes: Vec<ProbeResult>,
}

/// One qdisc probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Process-wide counter of the namespaces this process created.
static NEXT: AtomicU32 = AtomicU32::new(0);

fn next_name(tag: &str) -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed) % 1000;
    // IFNAMSIZ: a link name has at most 15 characters. "blk-" + a PID of at
    // most 7 digits (pid_max ≤ 4,194,304) + "-" + 3 digits fits.
    format!("{PREFIX}{}-{tag}{n}", std::process::id())
}

/// Probes tbf, htb and netem in a scratch namespace (removed again). Fails
/// only when namespaces cannot be made at all (no `ip`, no privilege).
pub fn probe_qdiscs() -> Result<QdiscSupport, NetError> {
    remove_leftovers();
    let name = next_name("p");
    let guard = Scratch::add(&name)?;
    run(&argv(&["ip", "-n", &name, "link", "set", "lo", "up"]))?;
    let mut support = QdiscSupport::default();
    for (kind, args) in [
        (
            "tbf",
            &["tbf", "rate", "10mbit", "burst", "32kb", "latency", "50ms"][..],
        ),
        ("htb", &["htb", "default", "1"][..]),
        ("netem", &["netem", "delay", "1ms"][..]),
    ] {
        let mut a = argv(&["tc", "-n", &name, "qdisc", "replace", "dev", "lo", "root"]);
        a.extend(argv(args));
        let error = run(&a).err().map(|e| match e {
            NetError::Command { message, .. } | NetError::NotPermitted { message, .. } => message,
            other => other.to_string(),
        });
        let ok = error.is_none();
        match kind {
            "tbf" => support.tbf = ok,
            "htb" => support.htb = ok,
            _ => support.netem = ok,
        }
        support.probes.push(ProbeResult {
            command: shown(&a),
            error,
        });
    }
    drop(guard);
    Ok(support)
}

/// Refuses `link` when it needs a qdisc `support` lacks, naming the kernel
/// option.
pub fn check_link(link: &LinkSpec, support: &QdiscSupport) -> Result<(), NetError> {
    let probe = |kind: &str| {
        support
            .probes
            .iter()
            .find(|p| p.command.contains(&format!(" {kind}")))
    };
    if link.needs_netem() && !support.netem {
        let (what, keys) = link.netem_keys();
        let p = probe("netem");
        return Err(NetError::NetemMissing {
            what,
            keys,
            command: p.map_or_else(|| "tc qdisc add ... netem".into(), |p| p.command.clone()),
            message: p
                .and_then(|p| p.error.clone())
                .unwrap_or_else(|| "not probed".into()),
        });
    }
    if link.rate_mbit.is_some() && !support.tbf {
        let p = probe("tbf");
        return Err(NetError::Command {
            command: p.map_or_else(|| "tc qdisc add ... tbf".into(), |p| p.command.clone()),
            message: format!(
                "{}; the rate limit needs tc's `tbf` qdisc: build the kernel with CONFIG_NET_SCH_TBF, or remove `rate_mbit` from the link",
                p.and_then(|p| p.error.clone())
                    .unwrap_or_else(|| "not probed".into())
            ),
        });
    }
    Ok(())
}

/// A namespace that is deleted when dropped.
struct Scratch(String);

impl Scratch {
    fn add(name: &str) -> Result<Scratch, NetError> {
        run(&argv(&["ip", "netns", "add", name]))?;
        Ok(Scratch(name.to_owned()))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = run(&argv(&["ip", "netns", "del", &self.0]));
    }
}

/// The owner PID in a name `blk-<pid>-<tag>`.
fn owner(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

fn alive(pid: u32) -> bool {
    pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
}

fn names_in(dir: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with(PREFIX))
                .collect()
        })
        .unwrap_or_default()
}

/// The namespaces and host-side links named `blk-<pid>-*` whose owner is
/// no longer running.
pub fn leftovers() -> (Vec<String>, Vec<String>) {
    let dead = |n: &String| owner(n).is_some_and(|pid| !alive(pid));
    let namespaces = names_in(NETNS_DIR).into_iter().filter(dead).collect();
    let links = names_in("/sys/class/net")
        .into_iter()
        .filter(dead)
        .collect();
    (namespaces, links)
}

/// SIGKILLs every process that still runs inside namespace `ns` (the
/// namespace is blocklab's: its servers, started for one campaign).
fn kill_inside(ns: &str) {
    if let Ok(pids) = run(&argv(&["ip", "netns", "pids", ns])) {
        for pid in pids
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            // SAFETY: kill(2) with a PID read from the namespace.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Removes what a killed blocklab left behind: the processes still inside
/// its namespaces, its host-side links, its namespaces. Returns what was
/// removed. A live owner's namespaces are left alone. Cheap when there is
/// nothing to remove (two directory reads, no command).
pub fn remove_leftovers() -> Vec<String> {
    let (namespaces, links) = leftovers();
    let mut removed = Vec::new();
    for ns in &namespaces {
        kill_inside(ns);
    }
    for link in &links {
        if run(&argv(&["ip", "link", "del", link])).is_ok() {
            removed.push(format!("link {link}"));
        }
    }
    for ns in &namespaces {
        if run(&argv(&["ip", "netns", "del", ns])).is_ok() {
            removed.push(format!("namespace {ns}"));
        }
    }
    removed
}

/// Takes the lock that serialises the choice of subnets; released on drop.
fn subnet_lock() -> Option<std::fs::File> {
    let _ = std::fs::create_dir_all("/run/lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(LOCK_FILE)
        .ok()?;
    file.lock().ok()?;
    Some(file)
}

/// IPv4 prefixes in use on this machine: addresses and routes of the
/// client's namespace (the default route excluded).
fn prefixes_in_use() -> Result<Vec<(u32, u32)>, NetError> {
    let mut out = Vec::new();
    let parse = |text: &str| -> Option<(u32, u32)> {
        let (addr, len) = text.split_once('/').unwrap_or((text, "32"));
        Some((u32::from(addr.parse::<Ipv4Addr>().ok()?), len.parse().ok()?))
    };
    let routes = run(&argv(&["ip", "-j", "-4", "route", "show", "table", "all"]))?;
    if let Ok(serde_json::Value::Array(routes)) = serde_json::from_str(&routes) {
        for r in routes {
            if let Some(p) = r["dst"].as_str().and_then(parse) {
                out.push(p);
            }
        }
    }
    let addrs = run(&argv(&["ip", "-j", "-4", "addr", "show"]))?;
    if let Ok(serde_json::Value::Array(links)) = serde_json::from_str(&addrs) {
        for l in links {
            for a in l["addr_info"].as_array().into_iter().flatten() {
                if let (Some(ip), Some(len)) = (a["local"].as_str(), a["prefixlen"].as_u64())
                    && let Ok(ip) = ip.parse::<Ipv4Addr>()
                {
                    out.push((u32::from(ip), len as u32));
                }
            }
        }
    }
    Ok(out)
}

/// Whether `a/alen` and `b/blen` share an address.
fn overlaps((a, alen): (u32, u32), (b, blen): (u32, u32)) -> bool {
    let len = alen.min(blen).min(32);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    a & mask == b & mask
}

/// The first free /30 of the blocklab /16, starting from `start`.
fn free_subnet(used: &[(u32, u32)], start: u32) -> Option<Ipv4Addr> {
    let base = u32::from(Ipv4Addr::new(SUBNET_BASE[0], SUBNET_BASE[1], 0, 0));
    (0..16384u32)
        .map(|k| base + 4 * ((start + k) % 16384))
        .find(|&net| {
            used.iter()
                .filter(|&&(_, len)| len > 0)
                .all(|&p| !overlaps((net, 30), p))
        })
        .map(Ipv4Addr::from)
}

/// The namespace, veth pair and addresses of one campaign execution, as
/// stored for provenance (blob `network`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetnsInfo {
    pub namespace: String,
    /// The client's end, in the client's namespace.
    pub host_veth: String,
    pub host_addr: Ipv4Addr,
    /// The target's end, inside the namespace.
    pub peer_veth: String,
    pub peer_addr: Ipv4Addr,
    /// Every `ip` command that built it, in order.
    pub setup: Vec<Argv>,
}

/// A network namespace with a veth pair to the client's namespace, removed
/// (links first, then the namespace) when dropped.
pub struct Netns {
    info: NetnsInfo,
}

impl Netns {
    /// Creates namespace `blk-<pid>-<n>`, a veth pair (`blk-<pid>-<n>` here,
    /// [`PEER`] inside), a free /30 on it and both ends up. Leftovers of
    /// dead blocklab processes are removed first.
    pub fn create() -> Result<Netns, NetError> {
        remove_leftovers();
        let name = next_name("");
        let mut info = NetnsInfo {
            namespace: name.clone(),
            host_veth: name.clone(),
            host_addr: Ipv4Addr::UNSPECIFIED,
            peer_veth: PEER.to_owned(),
            peer_addr: Ipv4Addr::UNSPECIFIED,
            setup: Vec::new(),
        };
        let step = |info: &mut NetnsInfo, a: Argv| -> Result<(), NetError> {
            run(&a)?;
            info.setup.push(a);
            Ok(())
        };
        step(&mut info, argv(&["ip", "netns", "add", &name]))?;
        // From here on, dropping `netns` removes what exists.
        let mut netns = Netns { info };
        let info = &mut netns.info;
        step(
            info,
            argv(&[
                "ip", "link", "add", &name, "type", "veth", "peer", "name", PEER, "netns", &name,
            ]),
        )?;
        // No IPv6 link-local addresses: their router solicitations and
        // duplicate-address probes would be traffic on the counted link.
        step(
            info,
            argv(&["ip", "link", "set", &name, "addrgenmode", "none"]),
        )?;
        step(
            info,
            argv(&[
                "ip",
                "-n",
                &name,
                "link",
                "set",
                PEER,
                "addrgenmode",
                "none",
            ]),
        )?;
        {
            let _lock = subnet_lock();
            let used = prefixes_in_use()?;
            let start = std::process::id()
                .wrapping_mul(7)
                .wrapping_add(NEXT.load(Ordering::Relaxed));
            let net = free_subnet(&used, start).ok_or(NetError::NoSubnet)?;
            let net = u32::from(net);
            info.host_addr = Ipv4Addr::from(net + 1);
            info.peer_addr = Ipv4Addr::from(net + 2);
            let host = format!("{}/30", info.host_addr);
            let peer = format!("{}/30", info.peer_addr);
            step(info, argv(&["ip", "addr", "add", &host, "dev", &name]))?;
            step(
                info,
                argv(&["ip", "-n", &name, "addr", "add", &peer, "dev", PEER]),
            )?;
        }
        step(info, argv(&["ip", "link", "set", &name, "up"]))?;
        step(info, argv(&["ip", "-n", &name, "link", "set", PEER, "up"]))?;
        step(info, argv(&["ip", "-n", &name, "link", "set", "lo", "up"]))?;
        Ok(netns)
    }

    pub fn info(&self) -> &NetnsInfo {
        &self.info
    }

    pub fn name(&self) -> &str {
        &self.info.namespace
    }

    /// The target's address, inside the namespace.
    pub fn peer_addr(&self) -> Ipv4Addr {
        self.info.peer_addr
    }

    /// A command that runs `program` inside the namespace (`ip netns exec
    /// NAME program`); `ip` executes it in place, so its PID is the
    /// child's, and CPU pinning and the parent-death signal set before exec
    /// carry over. What servers of any kind use to start in the namespace.
    pub fn command(&self, program: &Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.info.namespace]).arg(program);
        c
    }

    /// The commands [`Netns::shape`] runs for `link` after deleting the old
    /// root qdiscs: the client end's, then the target end's.
    pub fn shape_commands(&self, link: Option<&LinkSpec>) -> Vec<Argv> {
        let Some(link) = link else {
            return Vec::new();
        };
        let mut out = link.tc_commands(None, &self.info.host_veth);
        out.extend(link.tc_commands(Some(&self.info.namespace), &self.info.peer_veth));
        out
    }

    /// Gives both ends of the link `link`'s shape (unshaped when `None` or
    /// empty), replacing the previous shape, which also zeroes the qdisc
    /// counters. Returns the commands run.
    pub fn shape(&self, link: Option<&LinkSpec>) -> Result<Vec<Argv>, NetError> {
        let ns = self.info.namespace.as_str();
        let ends: [(Option<&str>, &str); 2] = [
            (None, &self.info.host_veth),
            (Some(ns), &self.info.peer_veth),
        ];
        let mut applied = Vec::new();
        for (inside, dev) in ends {
            let commands = link.map(|l| l.tc_commands(inside, dev)).unwrap_or_default();
            // The old shape goes first, so no child of an old netem root
            // lingers and every counter starts from zero.
            let has_root = !qdiscs(inside, dev)?.is_empty();
            if has_root {
                let mut del = argv(&["tc"]);
                if let Some(ns) = inside {
                    del.extend(argv(&["-n", ns]));
                }
                del.extend(argv(&["qdisc", "del", "dev", dev, "root"]));
                run(&del)?;
                applied.push(del);
            }
            for c in commands {
                if let Err(e) = run(&c) {
                    return Err(match (e, link) {
                        (NetError::Command { command, message }, Some(l))
                            if l.needs_netem() && command.contains(" netem") =>
                        {
                            let (what, keys) = l.netem_keys();
                            NetError::NetemMissing {
                                what,
                                keys,
                                command,
                                message,
                            }
                        }
                        (e, _) => e,
                    });
                }
                applied.push(c);
            }
        }
        Ok(applied)
    }

    /// The link's counters now: each end's qdiscs and veth statistics.
    pub fn counters(&self) -> Result<LinkCounters, NetError> {
        let ns = self.info.namespace.as_str();
        Ok(LinkCounters {
            client_end: end_counters(None, &self.info.host_veth)?,
            target_end: end_counters(Some(ns), &self.info.peer_veth)?,
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let ns = &self.info.namespace;
        // Whatever still runs inside was started by this process for the
        // campaign (servers are stopped first; this is the last resort).
        kill_inside(ns);
        // Deleting the host end removes both ends at once; deleting only the
        // namespace would leave the pair to the kernel's asynchronous
        // cleanup.
        let _ = run(&argv(&["ip", "link", "del", &self.info.host_veth]));
        let _ = run(&argv(&["ip", "netns", "del", ns]));
    }
}

/// Whether this process may create namespaces: root, or CAP_NET_ADMIN in
/// its effective set (read from /proc/self/status).
pub fn may_create() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        // CAP_NET_ADMIN is capability 12.
        .is_some_and(|caps| caps & (1 << 12) != 0)
}
