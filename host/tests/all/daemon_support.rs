//! A `blocklab serve` child process on a loopback port the OS picks, and a
//! minimal HTTP/1.1 client for talking to it (one request per connection).

use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

pub struct Daemon {
    child: Child,
    pub addr: SocketAddr,
    pub token: String,
    pub data: PathBuf,
}

impl Daemon {
    /// Starts a daemon on `data`; returns once it listens.
    pub fn start(data: &Path) -> Daemon {
        Daemon::start_with(data, &[])
    }

    /// [`Daemon::start`] with more `blocklab serve` flags.
    pub fn start_with(data: &Path, flags: &[&str]) -> Daemon {
        Daemon::start_with_env(data, flags, &[])
    }

    /// [`Daemon::start_with`] with more environment variables.
    pub fn start_with_env(data: &Path, flags: &[&str], env: &[(&str, &Path)]) -> Daemon {
        std::fs::create_dir_all(data).unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(data.join("daemon.log"))
            .unwrap();
        // A private copy of the binary, made once per data directory: the
        // daemon hashes itself into sealed plans, and a rebuild of the shared
        // target dir during the test must not change it under a restart.
        let exe = data.with_extension("blocklab-bin");
        if !exe.exists() {
            std::fs::copy(env!("CARGO_BIN_EXE_blocklab"), &exe).unwrap();
        }
        let mut command = std::process::Command::new(&exe);
        command.env(
            "BLOCKLAB_CACHE_DIR",
            std::env::temp_dir().join("blocklab-test-cache"),
        );
        command.envs(env.iter().copied());
        let (child, addr) = crate::support::spawn_listening(
            command
                .args(["serve", "--listen", "127.0.0.1:0", "--data"])
                .arg(data)
                .args(flags)
                .stderr(log),
            "blocklab serve: listening on http://",
        );
        let addr = addr
            .ok()
            .and_then(|rest| rest.strip_suffix('/').map(str::to_owned))
            .unwrap_or_else(|| {
                panic!(
                    "daemon did not report its address; log:\n{}",
                    std::fs::read_to_string(data.join("daemon.log")).unwrap_or_default()
                )
            })
            .parse()
            .unwrap();
        let token = std::fs::read_to_string(data.join("token"))
            .unwrap()
            .trim()
            .to_owned();
        Daemon {
            child,
            addr,
            token,
            data: data.to_path_buf(),
        }
    }

    /// The daemon's process id, to read its threads from /proc.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// SIGKILL: no chance to clean up, as in a crash or an OOM kill.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn get(&self, path: &str) -> (u16, Value) {
        self.request("GET", path, None, None)
    }

    pub fn post(&self, path: &str, content_type: &str, body: &str, token: bool) -> (u16, Value) {
        self.post_bytes(path, content_type, body.as_bytes(), token)
    }

    /// [`Daemon::post`] with a binary body.
    pub fn post_bytes(
        &self,
        path: &str,
        content_type: &str,
        body: &[u8],
        token: bool,
    ) -> (u16, Value) {
        let token = token.then_some(self.token.as_str());
        self.request("POST", path, Some((content_type, body)), token)
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, &[u8])>,
        token: Option<&str>,
    ) -> (u16, Value) {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        // A daemon that hangs fails the test instead of stalling it.
        stream
            .set_read_timeout(Some(Duration::from_secs(300)))
            .unwrap();
        let mut head =
            format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
        if let Some(t) = token {
            head += &format!("Authorization: Bearer {t}\r\n");
        }
        let (content_type, text) = body.unwrap_or(("text/plain", b""));
        head += &format!(
            "Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            text.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(text).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let value = serde_json::from_str(body).unwrap_or(Value::String(body.to_owned()));
        (status, value)
    }

    /// Polls the campaign until `done` holds, at most `limit`.
    pub fn wait_for(&self, id: u64, limit: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let (status, detail) = self.get(&format!("/api/campaigns/{id}"));
            assert_eq!(status, 200, "{detail}");
            if done(&detail) {
                return detail;
            }
            assert!(
                Instant::now() < deadline,
                "campaign {id} did not get there in {limit:?}: {detail}\nlog:\n{}",
                std::fs::read_to_string(self.data.join("daemon.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn state(detail: &Value) -> &str {
    detail["campaign"]["status"]["state"].as_str().unwrap_or("")
}

/// A plan of `get100` with builtin arms `a` (baseline) and `b`.
pub fn builtin_plan(name: &str, blocks: usize, measured: u64) -> String {
    format!(
        r#"
name = "{name}"
seed = 11
blocks = {blocks}
plugin = "builtin"
[measure]
warmup = 100
measured = {measured}
[bootstrap]
resamples = 2000
[gates]
quiescence_window_ms = 10
wait_timeout_s = 0.05
[[workloads]]
name = "get100"
[[arms]]
name = "a"
baseline = true
[[arms]]
name = "b"
"#
    )
}
