//! The daemon's limits over real sockets (issue 12 item 9): a cap on open
//! event streams, and requests that queue for the few blocking threads
//! instead of growing the process by a thread each.

use crate::daemon_support::{Daemon, builtin_plan};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Opens `GET /api/events` and returns the stream with its status line and
/// the rest of what the first read returned.
fn open_events(daemon: &Daemon) -> (TcpStream, u16, String) {
    let mut stream = TcpStream::connect(daemon.addr).unwrap();
    stream
        .write_all(b"GET /api/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = vec![0; 4096];
    let n = stream.read(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    (stream, status, text)
}

#[test]
fn event_streams_past_the_cap_get_503_and_a_closed_one_frees_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(&dir.path().join("data"), &["--max-event-streams", "2"]);
    let (first, a, _) = open_events(&daemon);
    let (_second, b, _) = open_events(&daemon);
    assert_eq!((a, b), (200, 200));
    let (_, status, text) = open_events(&daemon);
    assert_eq!(status, 503, "{text}");
    let body: serde_json::Value =
        serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
    let message = body["error"].as_str().unwrap();
    assert!(
        message.contains("`blocklab serve --max-event-streams`"),
        "{message}"
    );
    // Reads are not streams: the API still answers.
    assert_eq!(daemon.get("/api/health").0, 200);
    drop(first);
    // The daemon notices the closed connection when it next polls it.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_stream, status, text) = open_events(&daemon);
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a closed stream never gave its place back: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count()
}

/// 200 concurrent reads grew the daemon by a thread each (tokio's blocking
/// pool allows 512); now they wait for one of 8.
#[test]
fn concurrent_requests_do_not_grow_a_thread_each() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, builtin_plan("threads", 2, 50)).unwrap();
    let r = crate::support::campaign(&data, &plan, &[]);
    assert!(r.ok, "{}", r.stderr);
    let daemon = Daemon::start(&data);
    let before = threads(daemon.pid());
    let mut streams: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut s = TcpStream::connect(daemon.addr).unwrap();
            s.write_all(
                b"GET /api/campaigns/1/runs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            )
            .unwrap();
            s
        })
        .collect();
    let mut most = before;
    for s in &mut streams {
        most = most.max(threads(daemon.pid()));
        let mut response = String::new();
        s.read_to_string(&mut response).unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    }
    most = most.max(threads(daemon.pid()));
    assert!(
        most <= before + 8,
        "the daemon grew from {before} to {most} threads for 100 requests"
    );
}
