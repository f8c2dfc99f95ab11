//! Caps on every size and duration that a plan, a flag or a request can ask
//! for, in one table. Each is checked before anything is allocated, spawned
//! or waited on, and a refusal names the key and its cap. docs/limits.md
//! lists them with their defaults (a test keeps the two in step).

use anyhow::{Context, bail};
use std::borrow::Cow;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// Largest plan file or posted plan, bytes.
pub const PLAN_BYTES: u64 = 1 << 20;
/// Most blocks per workload.
pub const BLOCKS: usize = 10_000;
/// Largest plugin or adapter component: a file a plan names, or one
/// uploaded to a daemon (`POST /api/plugins`).
pub const PLUGIN_BYTES: usize = 64 << 20;
/// An export file `blocklab import` reads: it is read and checked whole in
/// memory before anything is written, so this bounds the memory an import
/// takes.
pub const EXPORT_BYTES: u64 = 1 << 30;
/// Most arms in one plan (a Williams square holds arms² entries).
pub const ARMS: usize = 64;
/// Most workloads in one plan.
pub const WORKLOADS: usize = 1_000;
/// Most runs in one sealed schedule (blocks × arms × workloads).
pub const RUNS: usize = 100_000;
/// Most concurrent workers per run: the wasm engine's instance pool holds
/// this many component instances.
pub const WORKERS: u32 = 64;
/// Most reruns of one failed slot.
pub const RERUNS: u32 = 100;
/// Most bootstrap resamples per interval.
pub const RESAMPLES: u32 = 1_000_000;
/// Longest name (plan, workload, arm, param), characters.
pub const NAME_CHARS: usize = 200;
/// Longest piece of input echoed back in an error message, characters;
/// longer input is cut with an ellipsis.
pub const ECHO_CHARS: usize = 200;
/// Longest line of any input-derived error message, characters: the last
/// guard, above every message's own words.
pub const LINE_CHARS: usize = 1_000;
/// The default linear memory per plugin instance, MiB (`--memory-cap-mib`,
/// `limits.memory_mib`).
pub const DEFAULT_MEMORY_MIB: u64 = 256;
/// The default longest call into a plugin, milliseconds
/// (`--call-deadline-ms`, `limits.call_deadline_ms`).
pub const DEFAULT_CALL_DEADLINE_MS: u64 = 10_000;
/// Largest linear memory per plugin instance, MiB: a wasm32 memory
/// addresses 4 GiB.
pub const MEMORY_MIB: u64 = 4096;
/// Most characters of a plugin's `env.log` lines kept per call and shown
/// with a trap of that call (the newest lines are kept).
pub const TRAP_LOG_CHARS: usize = 4_000;
/// Longest call into a plugin, milliseconds (one hour).
pub const CALL_DEADLINE_MS: u64 = 3_600_000;
/// Longest run before it is killed, and longest wait for quiescence,
/// seconds (one day).
pub const TIMEOUT_S: f64 = 86_400.0;
/// Longest quiescence window, milliseconds (one minute).
pub const WINDOW_MS: u64 = 60_000;
/// The longest window a spinning quiescence gate holds the watched CPUs
/// for, ms (`gates.quiescence_probe = "spin"`).
pub const SPIN_WINDOW_MS: u64 = 100;
/// Longest line a process arm's program may write on stdout (one event)
/// or stderr, bytes: a result's latency pairs take a few KiB.
pub const PROCESS_LINE_BYTES: u64 = 4 << 20;
/// Lines of a process arm's stderr kept for the run's error.
pub const PROCESS_STDERR_LINES: usize = 20;
/// Longest warmup or measured window of window mode, seconds (one day).
pub const MEASURE_S: f64 = 86_400.0;
/// Highest offered rate of rate mode, transactions per second per run.
pub const RATE_PER_S: f64 = 10_000_000.0;
/// Most rates one sweep (`measure.rates`) lists.
pub const RATES: usize = 64;

/// Most transactions one run of transaction mode warms up or measures: a
/// billion is hours of the fastest workload; 2^63 only ran into
/// `run_timeout_s`.
pub const TRANSACTIONS: u64 = 1_000_000_000;
/// Highest `gates.quiescence_busy_pct`: a share of a CPU.
pub const BUSY_PCT: f64 = 100.0;
/// Highest `gates.quiescence_load_per_cpu`: far above any machine's load
/// that is still worth measuring on.
pub const LOAD_PER_CPU: f64 = 1000.0;
/// Most tags on one campaign (`--tag`, `?tag=`).
pub const TAGS: usize = 64;

/// How long a daemon's client may take to send a request's head, and how
/// long a kept-alive connection may wait for its next request, seconds.
pub const DAEMON_HEADER_TIMEOUT_S: u64 = 10;
/// Most connections a daemon keeps open at once (event streams included).
pub const DAEMON_CONNECTIONS: usize = 256;
/// Most plans a daemon seals (and plugin uploads it checks) at once.
pub const DAEMON_SEALS: usize = 2;
/// Most connections the local ingest server holds open at once; more
/// wait, unaccepted, in the kernel's backlog.
pub const INGEST_CONNECTIONS: usize = 1024;
/// Most concurrent streams on one connection to the local ingest server,
/// advertised as `SETTINGS_MAX_CONCURRENT_STREAMS` (about 12.5 KB each).
pub const INGEST_STREAMS_PER_CONNECTION: u32 = 1024;
/// The default and largest `idle_timeout_ms` of the local ingest server:
/// how long a connection may take to send the HTTP/2 preface, and to
/// answer a PING sent after that long without a frame.
pub const DEFAULT_INGEST_IDLE_MS: u64 = 20_000;
pub const INGEST_IDLE_MS: u64 = 3_600_000;

/// Fastest link rate a plan may ask for, Mbit/s (100 Gbit/s).
pub const LINK_RATE_MBIT: f64 = 100_000.0;
/// Largest rate limiter bucket, KiB (1 GiB).
pub const LINK_BURST_KIB: u64 = 1 << 20;
/// Longest a packet may wait in the rate limiter's queue, ms.
pub const LINK_QUEUE_MS: u64 = 10_000;
/// Longest one-way delay or jitter of a link, ms.
pub const LINK_DELAY_MS: f64 = 10_000.0;

/// One row of the table docs/limits.md shows: the key (or keys) a cap
/// applies to, the default, the cap.
pub struct Row {
    pub key: &'static str,
    pub default: &'static str,
    pub cap: String,
}

/// Every cap, as docs/limits.md lists them.
pub fn table() -> Vec<Row> {
    [sizes(), settings(), links()]
        .into_iter()
        .flatten()
        .collect()
}

/// The row of a cap: its key, default and cap.
fn row(key: &'static str, default: &'static str, cap: String) -> Row {
    Row { key, default, cap }
}

/// The caps on what a plan, upload or message may hold.
fn sizes() -> Vec<Row> {
    vec![
        row(
            "plan file / posted plan",
            "-",
            format!("{PLAN_BYTES} bytes"),
        ),
        row(
            "plugin or adapter file, uploaded plugin (`POST /api/plugins`)",
            "-",
            format!("{PLUGIN_BYTES} bytes"),
        ),
        row(
            "export file read by `blocklab import`",
            "-",
            format!("{EXPORT_BYTES} bytes"),
        ),
        row("`blocks`", "-", format!("1 to {BLOCKS}")),
        row("`[[arms]]`", "-", format!("1 to {ARMS}")),
        row("`[[workloads]]`", "-", format!("1 to {WORKLOADS}")),
        row("runs (blocks × arms × workloads)", "-", format!("{RUNS}")),
        row("`workers`, `--workers`", "1", format!("1 to {WORKERS}")),
        row("`gates.reruns`", "0", format!("0 to {RERUNS}")),
        row(
            "`bootstrap.resamples`",
            "20000",
            format!("1 to {RESAMPLES}"),
        ),
        row(
            "names (plan, workload, arm, param)",
            "-",
            format!("{NAME_CHARS} characters"),
        ),
        row(
            "input echoed in an error",
            "-",
            format!("{ECHO_CHARS} characters, then …"),
        ),
        row(
            "`limits.memory_mib`, `--memory-cap-mib`",
            "256",
            format!("1 to {MEMORY_MIB}"),
        ),
        row(
            "plugin log shown with a trap",
            "-",
            format!("{TRAP_LOG_CHARS} characters, newest lines"),
        ),
    ]
}

/// The caps on a plan's and a run's settings: deadlines, gates, windows, process arms, rates.
fn settings() -> Vec<Row> {
    vec![
        row(
            "`limits.call_deadline_ms`, `--call-deadline-ms`",
            "10000",
            format!("1 to {CALL_DEADLINE_MS}"),
        ),
        row(
            "`gates.run_timeout_s`",
            "600",
            format!("more than 0, at most {TIMEOUT_S}"),
        ),
        row("`gates.wait_timeout_s`", "30", format!("0 to {TIMEOUT_S}")),
        row(
            "`gates.quiescence_window_ms`",
            "300",
            format!(
                "1 to {WINDOW_MS}; 1 to {SPIN_WINDOW_MS} with `quiescence_probe = \"spin\"`, which holds the watched CPUs busy for it; with `\"ticks\"` a window under 10 ms is read as 10 ms"
            ),
        ),
        row(
            "`measure.warmup_s`, `--warmup-s`",
            "0 (plan), 0.5 (`run`)",
            format!("0 to {MEASURE_S}"),
        ),
        row(
            "one stdout event / stderr line of a process arm",
            "-",
            format!("{PROCESS_LINE_BYTES} bytes"),
        ),
        row(
            "stderr lines kept from a process arm",
            "-",
            format!("the last {PROCESS_STDERR_LINES}, each clipped"),
        ),
        row(
            "`measure.measured_s`, `--measured-s`",
            "-",
            format!("more than 0, at most {MEASURE_S}"),
        ),
        row(
            "`measure.rate`, `measure.rates`, a workload's `rate`",
            "-",
            format!("more than 0, at most {RATE_PER_S} per second; at most {RATES} rates"),
        ),
    ]
}

/// The caps on a shaped link (`link.*`, docs/network.md).
fn links() -> Vec<Row> {
    vec![
        row(
            "`link.rate_mbit`",
            "unshaped",
            format!("0.01 to {LINK_RATE_MBIT} Mbit/s"),
        ),
        row(
            "`link.burst_kib`",
            "64, or 4 ms at the rate",
            format!("1 to {LINK_BURST_KIB}"),
        ),
        row("`link.queue_ms`", "50", format!("1 to {LINK_QUEUE_MS}")),
        row(
            "`link.delay_ms`, `link.jitter_ms`",
            "0",
            format!("0 to {LINK_DELAY_MS}"),
        ),
        row("`link.loss_pct`", "0", "0 to 100".to_owned()),
        row(
            "`measure.measured`, `measure.warmup` (transaction mode)",
            "- (measured), 0 (warmup)",
            format!("1 to {TRANSACTIONS} (measured), 0 to {TRANSACTIONS} (warmup)"),
        ),
        row(
            "`gates.quiescence_busy_pct`",
            "10",
            format!("0 to {BUSY_PCT}"),
        ),
        row(
            "`gates.quiescence_load_per_cpu`",
            "0.5",
            format!("0 to {LOAD_PER_CPU}"),
        ),
        row(
            "tags on one campaign (`--tag`, `?tag=`)",
            "-",
            format!("{TAGS}"),
        ),
        row(
            "daemon: sending a request head; a kept-alive connection's wait for the next",
            "-",
            format!("{DAEMON_HEADER_TIMEOUT_S} s, then the connection is closed"),
        ),
        row(
            "daemon: open connections",
            "-",
            format!("{DAEMON_CONNECTIONS}; more wait in the kernel's backlog"),
        ),
        row(
            "daemon: plans sealed and plugin uploads checked at once",
            "-",
            format!("{DAEMON_SEALS}; more get 503"),
        ),
        row(
            "ingest server: open connections",
            "-",
            format!("{INGEST_CONNECTIONS}; more wait in the kernel's backlog"),
        ),
        row(
            "ingest server: streams per connection (`SETTINGS_MAX_CONCURRENT_STREAMS`)",
            "-",
            format!("{INGEST_STREAMS_PER_CONNECTION}"),
        ),
        row(
            "ingest server: `idle_timeout_ms` (the HTTP/2 preface; a PING's answer)",
            "20000",
            format!("1 to {INGEST_IDLE_MS}, then the connection is closed"),
        ),
    ]
}

/// `text` cut to [`ECHO_CHARS`] characters with an ellipsis, for echoing
/// input back in a message.
pub fn clip(text: &str) -> Cow<'_, str> {
    clip_to(text, ECHO_CHARS)
}

fn clip_to(text: &str, chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(chars) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!("{}…", &text[..end])),
    }
}

/// Every line of a parser's message cut to [`ECHO_CHARS`]: parsers quote
/// the offending line whole, and point at it with a line of spaces as long.
pub fn clip_lines(message: &str) -> String {
    message.lines().map(clip).collect::<Vec<_>>().join("\n")
}

/// An error whose every line is cut to [`LINE_CHARS`]: the last step
/// before input-derived errors reach a terminal or an HTTP body.
pub fn clipped(error: anyhow::Error) -> anyhow::Error {
    let message = format!("{error:#}");
    anyhow::anyhow!(
        message
            .lines()
            .map(|l| clip_to(l, LINE_CHARS))
            .collect::<Vec<_>>()
            .join("\n")
    )
}

/// A number as a message shows it: `1e300`, not 301 digits.
pub fn show(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-4..1e15).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Reads at most [`PLAN_BYTES`] of the file at `path` (a device such as
/// `/dev/zero` never ends); more is refused naming the cap. Unlike the
/// files a plan names ([`read_file`]), the plan itself may be a pipe
/// (`blocklab plan <(generate)`): the user chose to read it, and typed it.
pub fn read_plan(path: &Path) -> anyhow::Result<Vec<u8>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read plan `{}`", path.display()))?;
    match read_to_cap(file, PLAN_BYTES, "plan files") {
        Err(FileError::TooLarge { .. }) => bail!(
            "plan `{}` is larger than the cap of {PLAN_BYTES} bytes on plan files (plans are a few KiB; check that you passed the plan file)",
            path.display()
        ),
        read => read.with_context(|| format!("cannot read plan `{}`", path.display())),
    }
}

/// What a file a user named is, when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Directory,
    CharDevice,
    BlockDevice,
    Fifo,
    Socket,
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileKind::Directory => "a directory",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::Socket => "a socket",
        })
    }
}

/// Why a file a user named (a plugin, an adapter, a process arm's input)
/// was not read. The caller names the file: `cannot read plugin `…`: {this}`.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("it is {0}, not a regular file; name a file")]
    NotRegular(FileKind),
    #[error("it is larger than {cap} bytes, the cap on {what} (docs/limits.md)")]
    TooLarge { cap: u64, what: &'static str },
}

/// Opens a file a user named for reading, refusing anything but a regular
/// file. The open does not block (`O_NONBLOCK`: a FIFO without a writer
/// would wait forever) and the check is on the opened descriptor, not the
/// path, so a file swapped in between cannot slip through.
pub fn open_regular(path: &Path) -> Result<std::fs::File, FileError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    let special = if kind.is_file() {
        return Ok(file);
    } else if kind.is_dir() {
        FileKind::Directory
    } else if kind.is_char_device() {
        FileKind::CharDevice
    } else if kind.is_block_device() {
        FileKind::BlockDevice
    } else if kind.is_fifo() {
        FileKind::Fifo
    } else {
        FileKind::Socket
    };
    Err(FileError::NotRegular(special))
}

/// Reads the whole regular file a user named, at most `cap` bytes (`what`
/// names the cap in the refusal). Every plugin, adapter and upload is read
/// through this: a device, a FIFO or a directory is refused at once, and
/// no file costs more than its cap in memory.
pub fn read_file(path: &Path, cap: u64, what: &'static str) -> Result<Vec<u8>, FileError> {
    let file = open_regular(path)?;
    if file.metadata()?.len() > cap {
        return Err(FileError::TooLarge { cap, what });
    }
    // The size can still grow between the check and the read.
    read_to_cap(file, cap, what)
}

/// Reads `file` to its end, refusing it past `cap` bytes.
fn read_to_cap(file: std::fs::File, cap: u64, what: &'static str) -> Result<Vec<u8>, FileError> {
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(FileError::TooLarge { cap, what });
    }
    Ok(bytes)
}

/// Checks a count against `1..=cap`, naming `key`.
pub fn count(key: &str, value: u64, cap: u64) -> anyhow::Result<()> {
    if value == 0 || value > cap {
        bail!(
            "`{key} = {value}` is out of range: give 1 to {cap} (the cap on `{key}`, docs/limits.md)"
        );
    }
    Ok(())
}

/// Checks a duration in seconds: finite, at least 0 (more than 0 when
/// `positive`) and at most `cap`; returns it as a [`Duration`].
pub fn seconds(key: &str, value: f64, positive: bool, cap: f64) -> anyhow::Result<Duration> {
    let low_ok = if positive { value > 0.0 } else { value >= 0.0 };
    if !value.is_finite() || !low_ok || value > cap {
        let low = if positive { "more than 0" } else { "0" };
        bail!(
            "`{key} = {}` is out of range: give {low} to {cap} seconds (the cap on `{key}`, docs/limits.md)",
            show(value)
        );
    }
    Ok(Duration::from_secs_f64(value))
}

/// Checks an offered rate (transactions per second) given as `key`.
pub fn rate(key: &str, value: f64) -> anyhow::Result<()> {
    if !value.is_finite() || value <= 0.0 || value > RATE_PER_S {
        bail!(
            "`{key} = {}` is out of range: give more than 0 to {RATE_PER_S} transactions per second (the cap on `{key}`, docs/limits.md)",
            show(value)
        );
    }
    Ok(())
}

/// Checks a name's length, naming what it names.
pub fn name(what: &str, value: &str) -> anyhow::Result<()> {
    if value.is_empty() {
        bail!("{what} is empty; give it a short name");
    }
    let chars = value.chars().count();
    if chars > NAME_CHARS {
        bail!(
            "{what} `{}` is {chars} characters long; the cap is {NAME_CHARS} (docs/limits.md)",
            clip(value)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_that_never_ends_is_read_up_to_the_cap() {
        let err = read_plan(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "plan `/dev/zero` is larger than the cap of {PLAN_BYTES} bytes on plan files (plans are a few KiB; check that you passed the plan file)"
            )
        );
    }

    #[test]
    fn long_input_is_clipped_with_an_ellipsis() {
        let long = "é".repeat(ECHO_CHARS * 3);
        let c = clip(&long);
        assert_eq!(c.chars().count(), ECHO_CHARS + 1);
        assert!(c.ends_with('…'));
        assert_eq!(clip("short"), "short");
        let lines = clip_lines(&format!("head\n{}\ntail", " ".repeat(1 << 20)));
        assert!(lines.len() < 3 * ECHO_CHARS, "{}", lines.len());
        assert!(lines.starts_with("head\n") && lines.ends_with("…\ntail"));
    }

    /// docs/limits.md shows the table users read; it must be this one.
    #[test]
    fn the_documented_table_is_this_table() {
        let doc = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/limits.md"),
        )
        .unwrap();
        for row in table() {
            let line = format!("| {} | {} | {} |", row.key, row.default, row.cap);
            assert!(doc.contains(&line), "docs/limits.md lacks `{line}`");
        }
    }

    #[test]
    fn numbers_are_shown_short() {
        assert_eq!(show(1e300), "1e300");
        assert_eq!(show(-1.0), "-1");
        assert_eq!(show(0.05), "0.05");
        assert_eq!(show(4294967296.0), "4294967296");
    }

    #[test]
    fn durations_out_of_range_name_the_key_and_cap() {
        for bad in [-1.0, f64::NAN, f64::INFINITY, 1e300] {
            let err = seconds("gates.run_timeout_s", bad, true, TIMEOUT_S).unwrap_err();
            assert!(
                err.to_string()
                    .contains("give more than 0 to 86400 seconds"),
                "{err}"
            );
        }
        assert!(seconds("gates.run_timeout_s", 0.0, true, TIMEOUT_S).is_err());
        assert_eq!(
            seconds("gates.wait_timeout_s", 0.0, false, TIMEOUT_S).unwrap(),
            Duration::ZERO
        );
    }
}
