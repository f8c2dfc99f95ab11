//! The daemon's client side: `blocklab submit` (docs/daemon.md,
//! "Submitting from elsewhere"). It uploads the plugins a plan names
//! (`POST /api/plugins`), rewrites them to `sha256:` references, posts the
//! plan (`POST /api/campaigns`) and, with `--wait`, follows `GET
//! /api/events` until the campaign ends.
//!
//! HTTP/1.1 over a plain TCP connection, one request per connection: the
//! daemon listens on loopback, and a remote one is reached through an SSH
//! tunnel, so there is no TLS here.

use super::api::{Created, UploadedPlugin};
use super::{Ending, Event};
use crate::plugin::source::PluginRef;
use crate::run::supervisor::Event as RunEvent;
use anyhow::{Context, bail};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long connecting and each read may take before the daemon counts as
/// gone (a campaign's events come at least every keep-alive, 15 s).
const IO_TIMEOUT: Duration = Duration::from_secs(60);

/// `http://HOST:PORT` of a daemon.
#[derive(Debug, Clone)]
pub struct Daemon {
    /// `HOST:PORT`, also sent as `Host`.
    authority: String,
    token: Option<String>,
}

/// A response: status and body.
struct Response {
    status: u16,
    body: Vec<u8>,
}

impl Daemon {
    /// Parses `http://HOST[:PORT][/]`.
    pub fn new(url: &str, token: Option<String>) -> anyhow::Result<Daemon> {
        let Some(rest) = url.strip_prefix("http://") else {
            bail!(
                "`{url}` is not an http:// URL of a daemon; give `--daemon http://127.0.0.1:PORT` (reach a remote daemon through an SSH tunnel: `ssh -L PORT:127.0.0.1:PORT host`)"
            );
        };
        let authority = rest.trim_end_matches('/');
        if authority.is_empty() || authority.contains('/') {
            bail!(
                "`{url}` names a path; give only the daemon's address, e.g. `--daemon http://127.0.0.1:8080`"
            );
        }
        let authority = if authority
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        Ok(Daemon { authority, token })
    }

    fn connect(&self) -> anyhow::Result<TcpStream> {
        use std::net::ToSocketAddrs;
        let addrs: Vec<_> = self
            .authority
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve the daemon's address `{}`", self.authority))?
            .collect();
        let stream = addrs
            .iter()
            .find_map(|a| TcpStream::connect_timeout(a, IO_TIMEOUT).ok())
            .with_context(|| {
                format!(
                    "cannot connect to the daemon at `http://{}`; is `blocklab serve` running there (or the SSH tunnel to it open)?",
                    self.authority
                )
            })?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        Ok(stream)
    }

    /// Sends a request and reads its head; the reader is left at the body.
    fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, &[u8])>,
    ) -> anyhow::Result<(u16, bool, BufReader<TcpStream>)> {
        let mut stream = self.connect()?;
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: application/json, text/event-stream\r\n",
            self.authority
        );
        if let Some(token) = &self.token {
            head += &format!("Authorization: Bearer {token}\r\n");
        }
        let (content_type, bytes) = body.unwrap_or(("text/plain", b""));
        head += &format!(
            "Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            bytes.len()
        );
        stream.write_all(head.as_bytes())?;
        stream.write_all(bytes)?;
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| {
                format!(
                    "`http://{}` did not answer as an HTTP server; is it a blocklab daemon?",
                    self.authority
                )
            })?;
        let mut chunked = false;
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("transfer-encoding")
                && value.trim().eq_ignore_ascii_case("chunked")
            {
                chunked = true;
            }
        }
        Ok((status, chunked, reader))
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, &[u8])>,
    ) -> anyhow::Result<Response> {
        let (status, chunked, reader) = self.send(method, path, body)?;
        let mut body = Vec::new();
        if chunked {
            Chunked::new(reader).read_to_end(&mut body)?;
        } else {
            let mut reader = reader;
            reader.read_to_end(&mut body)?;
        }
        Ok(Response { status, body })
    }

    /// A JSON answer, or the daemon's `error` as this command's error.
    fn json(&self, method: &str, path: &str, body: Option<(&str, &[u8])>) -> anyhow::Result<Value> {
        let r = self.request(method, path, body)?;
        let value: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        if !(200..300).contains(&r.status) {
            let message = value["error"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| String::from_utf8_lossy(&r.body).into_owned());
            bail!(
                "the daemon refused `{method} {path}` ({}): {message}",
                r.status
            );
        }
        Ok(value)
    }

    /// The gate on finished campaign `id` (`GET /api/campaigns/{id}/gate`),
    /// as `question` asks it.
    pub fn gate(&self, id: u64, question: &GateQuestion) -> anyhow::Result<GateAnswer> {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("max_change", &question.max_change.to_string());
        if !question.statistics.is_empty() {
            query.append_pair("statistics", &question.statistics.join(","));
        }
        if let Some(baseline) = &question.baseline {
            query.append_pair("baseline", baseline);
        }
        let path = format!("/api/campaigns/{id}/gate?{}", query.finish());
        let answer = self.json("GET", &path, None)?;
        serde_json::from_value(answer)
            .with_context(|| format!("the daemon's answer to `GET {path}` is not a gate verdict"))
    }

    /// Uploads a component; returns its `sha256:` reference.
    pub fn upload_plugin(&self, path: &Path) -> anyhow::Result<String> {
        let bytes = crate::plugin::wasm::read_plugin(path)?;
        let answer = self
            .json("POST", "/api/plugins", Some(("application/wasm", &bytes)))
            .with_context(|| format!("cannot upload plugin `{}`", path.display()))?;
        let uploaded: UploadedPlugin = serde_json::from_value(answer)
            .context("the daemon's answer to `POST /api/plugins` is not an uploaded plugin")?;
        Ok(uploaded.reference)
    }
}

/// Reads a chunked body (RFC 9112 §7.1) as a plain stream.
struct Chunked<R> {
    inner: R,
    left: usize,
    done: bool,
}

impl<R: BufRead> Chunked<R> {
    fn new(inner: R) -> Self {
        Chunked {
            inner,
            left: 0,
            done: false,
        }
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut line = String::new();
            self.inner.read_line(&mut line)?;
            if line.trim().is_empty() {
                // The CRLF after the previous chunk's data.
                line.clear();
                self.inner.read_line(&mut line)?;
            }
            let size = line.trim().split(';').next().unwrap_or("");
            self.left = usize::from_str_radix(size, 16).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("bad chunk size `{}`", line.trim()),
                )
            })?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf.len().min(self.left);
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.left -= n;
        Ok(n)
    }
}

/// What `submit --gate-max-change` asks the daemon's gate.
#[derive(Debug, Clone)]
pub struct GateQuestion {
    /// A fraction (0.05 for `5%`).
    pub max_change: f64,
    pub statistics: Vec<String>,
    /// `ID` or `tag=KEY=VALUE`; none: the campaign's arms against its
    /// baseline arm.
    pub baseline: Option<String>,
}

/// The daemon's gate verdict, rendered.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct GateAnswer {
    pub failed: bool,
    pub markdown: String,
    pub junit: String,
    pub terminal: String,
}

/// What `blocklab submit` does.
#[derive(Debug)]
pub struct Submission {
    pub plan: PathBuf,
    /// Follow the campaign until it ends.
    pub wait: bool,
    /// `KEY=VALUE` labels of the campaign (`?tag=`).
    pub tags: Vec<String>,
    /// The testbed it counts for (`?testbed=`); the daemon's machine if none.
    pub testbed: Option<String>,
    /// The gate's threshold (`--gate-max-change`): a plan with
    /// `[sequential]` and no `max_change` of its own stops at it, so the
    /// campaign runs only as long as the gate needs (docs/ci.md).
    pub gate_max_change: Option<f64>,
}

/// How a submitted campaign ended (with `--wait`), or that it was queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Queued { id: u64 },
    Finished { id: u64 },
    Failed { id: u64, reason: String },
    Cancelled { id: u64 },
}

/// Calls `f` on each of the plan's plugin strings that names a file
/// (`plugin` at the top, on workloads and arms, and arms' `adapters`; not
/// `builtin` nor a `sha256:` reference).
fn each_plugin_file(
    plan: &mut toml::Table,
    f: &mut dyn FnMut(&mut String) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut visit = |value: Option<&mut toml::Value>| -> anyhow::Result<()> {
        match value {
            Some(toml::Value::String(s)) if matches!(PluginRef::parse(s), PluginRef::File(_)) => {
                f(s)
            }
            _ => Ok(()),
        }
    };
    visit(plan.get_mut("plugin"))?;
    for key in ["workloads", "arms"] {
        if let Some(toml::Value::Array(items)) = plan.get_mut(key) {
            for item in items.iter_mut() {
                if let toml::Value::Table(t) = item {
                    visit(t.get_mut("plugin"))?;
                    if let Some(toml::Value::Array(adapters)) = t.get_mut("adapters") {
                        for a in adapters.iter_mut() {
                            visit(Some(a))?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// Uploads the plan's plugins, posts it, and with `wait` follows it to its
/// end, calling `progress` with one line per event of this campaign.
pub fn submit(
    daemon: &Daemon,
    s: &Submission,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Outcome> {
    let mut plan = read_plan_table(&s.plan)?;
    if let Some(max_change) = s.gate_max_change {
        stop_at_the_gate(&mut plan, max_change, progress);
    }
    upload_plugins(daemon, &mut plan, progress)?;
    let body = toml::to_string(&plan).context("cannot write the rewritten plan as TOML")?;
    // Subscribed before posting, so no event of the campaign is missed.
    let mut events = if s.wait {
        Some(subscribe(daemon)?)
    } else {
        None
    };
    let created = post_plan(daemon, s, &body)?;
    let id = created.id;
    progress(&format!(
        "queued campaign {id} `{}` ({} runs)",
        created.name, created.total_runs
    ));
    match events.as_mut() {
        None => Ok(Outcome::Queued { id }),
        Some(events) => follow(events, id, progress),
    }
}

/// The plan file as a TOML table, so its plugin fields can be rewritten.
fn read_plan_table(path: &Path) -> anyhow::Result<toml::Table> {
    let bytes = crate::limits::read_plan(path)?;
    let text = String::from_utf8(bytes)
        .with_context(|| format!("plan `{}` is not UTF-8 text", path.display()))?;
    text.parse()
        .with_context(|| format!("plan `{}` is not valid TOML", path.display()))
}

/// Gives a sequential plan the gate's threshold as its `max_change`, saying
/// so; a plan that sets its own keeps it, and one without `[sequential]`
/// runs all its blocks (both said too, so a long CI job is not a surprise).
fn stop_at_the_gate(plan: &mut toml::Table, max_change: f64, progress: &mut dyn FnMut(&str)) {
    let percent = 100.0 * max_change;
    match plan
        .get_mut("sequential")
        .and_then(toml::Value::as_table_mut)
    {
        None => progress(&format!(
            "the plan has no [sequential] table, so it runs all its blocks; add `[sequential]` to stop once the gate at {percent}% is decided"
        )),
        Some(sequential) => match sequential.get("max_change") {
            Some(own) => progress(&format!(
                "the plan's `sequential.max_change = {own}` stays; the gate judges at {percent}%"
            )),
            None => {
                sequential.insert("max_change".to_owned(), toml::Value::Float(max_change));
                progress(&format!(
                    "[sequential] stops once every primary effect is decided at the gate's {percent}% (`sequential.max_change = {max_change}`)"
                ));
            }
        },
    }
}

/// Uploads each plugin file the plan names (once per path) and rewrites its
/// fields to the `sha256:` references the daemon answers.
fn upload_plugins(
    daemon: &Daemon,
    plan: &mut toml::Table,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let mut uploaded: Vec<(String, String)> = Vec::new();
    each_plugin_file(plan, &mut |field| {
        let reference = match uploaded.iter().find(|(path, _)| path == field) {
            Some((_, r)) => r.clone(),
            None => {
                let r = daemon.upload_plugin(Path::new(field.as_str()))?;
                progress(&format!("uploaded `{field}` as {r}"));
                uploaded.push((field.clone(), r.clone()));
                r
            }
        };
        *field = reference;
        Ok(())
    })
}

/// The daemon's event stream, opened.
fn subscribe(daemon: &Daemon) -> anyhow::Result<Box<dyn BufRead>> {
    let (status, chunked, reader) = daemon.send("GET", "/api/events", None)?;
    if status != 200 {
        bail!("the daemon refused `GET /api/events` ({status}); `--wait` needs its event stream");
    }
    Ok(if chunked {
        Box::new(BufReader::new(Chunked::new(reader)))
    } else {
        Box::new(reader)
    })
}

/// Posts the rewritten plan with the submission's tags and testbed.
fn post_plan(daemon: &Daemon, s: &Submission, body: &str) -> anyhow::Result<Created> {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for tag in &s.tags {
        query.append_pair("tag", tag);
    }
    if let Some(testbed) = &s.testbed {
        query.append_pair("testbed", testbed);
    }
    let path = format!("/api/campaigns?{}", query.finish());
    let created = daemon.json("POST", &path, Some(("application/toml", body.as_bytes())))?;
    serde_json::from_value(created)
        .context("the daemon's answer to `POST /api/campaigns` is not a created campaign")
}

/// Reads `events` until campaign `id` ends, reporting its progress.
fn follow(
    events: &mut dyn BufRead,
    id: u64,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Outcome> {
    let mut data = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        if events.read_line(&mut line)? == 0 {
            bail!(
                "the daemon closed its event stream before campaign {id} ended; `blocklab report {id}` on the daemon's machine, or GET /api/campaigns/{id}, says where it is"
            );
        }
        let l = line.trim_end_matches(['\r', '\n']);
        // The `event:` line repeats the data's own `event` field, which
        // the daemon's type reads.
        if let Some(v) = l.strip_prefix("data:") {
            data.push_str(v.trim_start());
        } else if l.is_empty() && !data.is_empty() {
            // An event this build does not know (a newer daemon) is skipped.
            let event = serde_json::from_str::<Event>(&data).ok();
            data.clear();
            if let Some(outcome) = event.and_then(|e| on_event(e, id, progress)) {
                return Ok(outcome);
            }
        }
    }
}

/// Reports one event of campaign `id`; its outcome when the event ends it.
fn on_event(event: Event, id: u64, progress: &mut dyn FnMut(&str)) -> Option<Outcome> {
    match event {
        Event::CampaignFinished {
            campaign,
            status,
            reason,
        } if campaign == id => {
            return Some(match status {
                Ending::Finished => Outcome::Finished { id },
                Ending::Cancelled => Outcome::Cancelled { id },
                Ending::Failed => Outcome::Failed {
                    id,
                    reason: reason.unwrap_or_else(|| "failed".into()),
                },
            });
        }
        Event::Run(RunEvent::RunFinished {
            campaign,
            finished_runs,
            total,
            ..
        }) if campaign == id => {
            progress(&format!("campaign {id}: {finished_runs} of {total} runs"))
        }
        Event::CampaignStarted { campaign } if campaign == id => {
            progress(&format!("campaign {id} started"))
        }
        _ => {}
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stopped(plan: &str, max_change: f64) -> (toml::Table, String) {
        let mut plan: toml::Table = plan.parse().unwrap();
        let mut said = String::new();
        stop_at_the_gate(&mut plan, max_change, &mut |line| said.push_str(line));
        (plan, said)
    }

    #[test]
    fn the_gate_s_threshold_stops_a_sequential_plan_that_has_none_of_its_own() {
        let (plan, said) = stopped("name = \"p\"\n[sequential]\ntarget = 0.02\n", 0.05);
        assert_eq!(plan["sequential"]["max_change"].as_float(), Some(0.05));
        assert!(said.contains("decided at the gate's 5%"), "{said}");

        let (plan, said) = stopped("[sequential]\nmax_change = 0.1\n", 0.05);
        assert_eq!(plan["sequential"]["max_change"].as_float(), Some(0.1));
        assert!(
            said.contains("`sequential.max_change = 0.1` stays"),
            "{said}"
        );

        let (plan, said) = stopped("name = \"p\"\n", 0.05);
        assert!(plan.get("sequential").is_none());
        assert!(said.contains("runs all its blocks"), "{said}");
    }
}
