//! A process arm's stdout: its events (hello, marks, result), read line by
//! line and checked in protocol order as they come, with the program's CPU
//! time at each (docs/process-arms.md, "Events").

use super::PROTOCOL;
use super::check::Reported;
use super::child::{kill_group, stat_fields};
use crate::limits;
use serde::Deserialize;
use std::io::{BufRead, BufReader, Read};
use std::time::Instant;

/// What a run asks of the program beyond the protocol's core, each
/// declared in its hello or the run fails before its warmup.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Needs {
    /// `measure.mode = "rate"`: `modes` lists `"rate"`.
    pub(super) rate: bool,
    /// `inject_loop_iterations`: `features` lists `"inject-loop"`.
    pub(super) inject_loop: bool,
    /// A duet's run: `features` lists `"start-barrier"`.
    pub(super) start_barrier: bool,
}

/// The optional parts of the protocol that a run may need and a hello's
/// `features` declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Feature {
    InjectLoop,
    StartBarrier,
}

impl Feature {
    fn name(self) -> &'static str {
        match self {
            Feature::InjectLoop => "inject-loop",
            Feature::StartBarrier => "start-barrier",
        }
    }

    /// Why a run that needs it cannot go on with a program whose
    /// `features` (`listed`) lack it, and what to do instead.
    fn refusal(self, listed: &str) -> String {
        let (asks, without, clients, section, instead) = match self {
            Feature::InjectLoop => (
                "the arm sets `inject_loop_iterations`",
                "it would run without the injected work",
                "peers/go-ingest, peers/py-ingest",
                "Injected work",
                "remove `inject_loop_iterations` from the arm",
            ),
            Feature::StartBarrier => (
                "the plan is a duet (`design = \"duet\"`), whose runs start together",
                "its window could not start with its partners'",
                "peers/go-ingest, peers/py-ingest, peers/examples",
                "Duets",
                "run the plan with `design = \"sequential\"`",
            ),
        };
        format!(
            "{asks}, but the program's `hello` declares no `\"{}\"` in `features` ({listed}), so {without}; use a client that implements it ({clients}; docs/process-arms.md, \"{section}\"), or {instead}",
            self.name()
        )
    }
}

/// One line of the program's stdout.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Event {
    Hello(Hello),
    Mark(Mark),
    Result(Box<Reported>),
}

#[derive(Debug, Deserialize)]
struct Hello {
    protocol: serde_json::Value,
    #[serde(default)]
    client: Option<String>,
    /// The measure modes the program runs; without it, `transactions` and
    /// `window` (docs/process-arms.md, "Rate mode"). JSON values, not
    /// [`crate::statistic::MeasureMode`]: a mode this blocklab does not know
    /// is no reason to refuse the program.
    #[serde(default)]
    modes: Option<Vec<serde_json::Value>>,
    /// Optional parts of the protocol the program implements, e.g.
    /// `"inject-loop"`; unknown ones are ignored, like unknown modes.
    #[serde(default)]
    features: Option<Vec<serde_json::Value>>,
}

/// `list` (a hello's `modes` or `features`) holds `name`.
fn lists(list: &Option<Vec<serde_json::Value>>, name: &str) -> bool {
    list.iter().flatten().any(|v| v.as_str() == Some(name))
}

impl Hello {
    /// Why it cannot run a request that `needs` something it does not
    /// declare.
    fn refusal(&self, needs: Needs) -> Option<String> {
        let listed = |list: &Option<Vec<serde_json::Value>>| match list {
            Some(l) => limits::clip(&serde_json::to_string(l).unwrap_or_default()).into_owned(),
            None => "it gives none".to_owned(),
        };
        if needs.rate && !lists(&self.modes, "rate") {
            return Some(format!(
                "its `hello` declares no `\"rate\"` in `modes` ({}), so it cannot keep the schedule of `measure.mode = \"rate\"`; use a client whose `hello` lists `\"rate\"` in `modes` (docs/process-arms.md, \"Rate mode\"), or run this arm with `measure.mode = \"window\"`",
                listed(&self.modes)
            ));
        }
        [
            (needs.inject_loop, Feature::InjectLoop),
            (needs.start_barrier, Feature::StartBarrier),
        ]
        .into_iter()
        .find(|&(needed, feature)| needed && !lists(&self.features, feature.name()))
        .map(|(_, feature)| feature.refusal(&listed(&self.features)))
    }
}

/// The points the program marks, in the order it must mark them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum Mark {
    Warmup,
    Measured,
    MeasuredEnd,
}

impl Mark {
    pub(super) const ORDER: [Mark; 3] = [Mark::Warmup, Mark::Measured, Mark::MeasuredEnd];

    pub(super) fn name(self) -> &'static str {
        match self {
            Mark::Warmup => "warmup",
            Mark::Measured => "measured",
            Mark::MeasuredEnd => "measured-end",
        }
    }
}

/// What the host saw at one mark: when, and the program's CPU time then.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    pub(super) at: Instant,
    /// `at` on the wall clock, µs since the epoch: a duet's partners run
    /// in other processes, and only the wall clock is common to them.
    pub(super) unix_us: u64,
    pub(super) cpu_us: u64,
}

/// What the stdout reader collected.
#[derive(Debug, Default)]
pub(super) struct Events {
    pub(super) client: Option<String>,
    pub(super) hello: Option<Instant>,
    pub(super) marks: Vec<Seen>,
    pub(super) result: Option<Reported>,
    /// What the `hello` must declare.
    pub(super) needs: Needs,
}

/// User plus system CPU time of every thread of `pid`, microseconds, from
/// /proc/PID/stat (clock-tick resolution).
pub(super) fn cpu_us(pid: i32) -> Option<u64> {
    // utime and stime are fields 14 and 15 (from 1).
    let fields = stat_fields(pid)?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf takes an integer name.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some((utime + stime) * 1_000_000 / hz)
}

/// Reads events until EOF, checking their order; the first violation kills
/// the program's group and is returned.
pub(super) fn read_events(
    stdout: std::process::ChildStdout,
    pid: i32,
    needs: Needs,
) -> Result<Events, String> {
    let outcome = collect_events(stdout, pid, needs);
    if outcome.is_err() {
        kill_group(pid);
    }
    outcome
}

/// The program's events up to EOF; the first violation of the protocol
/// (or of the cap on a line) is the error.
fn collect_events(
    stdout: std::process::ChildStdout,
    pid: i32,
    needs: Needs,
) -> Result<Events, String> {
    let mut events = Events {
        needs,
        ..Events::default()
    };
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    for number in 1.. {
        buf.clear();
        let n = (&mut reader)
            .take(limits::PROCESS_LINE_BYTES + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("cannot read its stdout: {e}"))?;
        if n == 0 {
            return Ok(events);
        }
        let at = Instant::now();
        let unix_us = crate::run::unix_us();
        // Read first: the CPU time is the one at the mark.
        let cpu = cpu_us(pid);
        if buf.len() as u64 > limits::PROCESS_LINE_BYTES {
            return Err(format!(
                "line {number} of its stdout is longer than {} bytes (the cap on one event, docs/limits.md)",
                limits::PROCESS_LINE_BYTES
            ));
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let event: Event = serde_json::from_str(text).map_err(|e| {
            format!(
                "line {number} of its stdout is not a protocol event (`{}`: {e}); stdout carries only JSON events, write anything else to stderr",
                limits::clip(text)
            )
        })?;
        events.accept(event, (at, unix_us), cpu, text)?;
    }
    Ok(events)
}

impl Events {
    /// Takes one event, read at `at` (and `unix_us` on the wall clock)
    /// with the program's CPU time `cpu` then, checking that it comes in
    /// protocol order. `text` is its line.
    fn accept(
        &mut self,
        event: Event,
        (at, unix_us): (Instant, u64),
        cpu: Option<u64>,
        text: &str,
    ) -> Result<(), String> {
        match event {
            Event::Hello(hello) => {
                if self.hello.is_some() {
                    return Err("it wrote `hello` twice".into());
                }
                if hello.protocol != serde_json::json!(PROTOCOL) {
                    return Err(format!(
                        "it speaks protocol version {}, this blocklab speaks version {PROTOCOL}; use a client built for protocol {PROTOCOL} (docs/process-arms.md)",
                        limits::clip(&hello.protocol.to_string())
                    ));
                }
                if let Some(refusal) = hello.refusal(self.needs) {
                    return Err(refusal);
                }
                self.hello = Some(at);
                self.client = hello.client.map(|c| limits::clip(&c).into_owned());
            }
            _ if self.hello.is_none() => {
                return Err(format!(
                    "its first event is not `hello` (`{}`); a client writes `{{\"hello\": {{\"protocol\": {PROTOCOL}, ...}}}}` first",
                    limits::clip(text)
                ));
            }
            Event::Mark(mark) => {
                let expected = Mark::ORDER.get(self.marks.len());
                if self.result.is_some() || expected != Some(&mark) {
                    return Err(format!(
                        "it marked `{}` out of order; the marks are warmup, measured, measured-end, each once, before the result",
                        mark.name()
                    ));
                }
                let cpu_us = cpu.ok_or("its CPU time could not be read at a mark")?;
                self.marks.push(Seen {
                    at,
                    unix_us,
                    cpu_us,
                });
            }
            Event::Result(result) => {
                if self.result.is_some() {
                    return Err("it wrote `result` twice".into());
                }
                if self.marks.len() < Mark::ORDER.len() {
                    return Err(format!(
                        "it wrote its result before marking `{}`",
                        Mark::ORDER[self.marks.len()].name()
                    ));
                }
                self.result = Some(*result);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(json: &str) -> Hello {
        serde_json::from_str(json).unwrap()
    }

    const DUET: Needs = Needs {
        rate: false,
        inject_loop: false,
        start_barrier: true,
    };

    #[test]
    fn a_duets_program_must_declare_the_start_barrier() {
        let none = hello(r#"{"protocol": 1}"#).refusal(DUET).unwrap();
        for words in [
            "`design = \"duet\"`",
            "declares no `\"start-barrier\"` in `features` (it gives none)",
            "could not start with its partners'",
            "`design = \"sequential\"`",
        ] {
            assert!(none.contains(words), "`{words}` not in: {none}");
        }
        let other = hello(r#"{"protocol": 1, "features": ["inject-loop", 7]}"#)
            .refusal(DUET)
            .unwrap();
        assert!(other.contains(r#"(["inject-loop",7])"#), "{other}");
        let listed = hello(r#"{"protocol": 1, "features": ["start-barrier", "later"]}"#);
        assert_eq!(listed.refusal(DUET), None);
        // Outside a duet the feature is not asked for.
        assert_eq!(hello(r#"{"protocol": 1}"#).refusal(Needs::default()), None);
    }

    #[test]
    fn each_needed_feature_is_checked_the_first_missing_named() {
        let both = Needs {
            inject_loop: true,
            ..DUET
        };
        let barrier_only = hello(r#"{"protocol": 1, "features": ["start-barrier"]}"#);
        let refusal = barrier_only.refusal(both).unwrap();
        assert!(refusal.contains("`inject_loop_iterations`"), "{refusal}");
        let loop_only = hello(r#"{"protocol": 1, "features": ["inject-loop"]}"#);
        let refusal = loop_only.refusal(both).unwrap();
        assert!(refusal.contains("`\"start-barrier\"`"), "{refusal}");
    }

    #[test]
    fn a_mark_keeps_the_wall_clock_time_it_was_read_at() {
        let mut events = Events::default();
        let line = |text: &str| serde_json::from_str::<Event>(text).unwrap();
        let now = Instant::now();
        events
            .accept(line(r#"{"hello": {"protocol": 1}}"#), (now, 5), Some(0), "")
            .unwrap();
        events
            .accept(line(r#"{"mark": "warmup"}"#), (now, 7), Some(1), "")
            .unwrap();
        assert_eq!((events.marks[0].unix_us, events.marks[0].cpu_us), (7, 1));
    }
}
