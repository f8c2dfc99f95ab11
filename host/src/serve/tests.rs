//! The router without a socket (`oneshot`), and once over a real socket.

use super::*;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;
use std::time::{Duration, Instant};
use tower::ServiceExt;

const TOKEN: &str = "test-token-0123";

/// A plan that needs no plugin file: builtin workloads, 2 arms, 2 blocks.
const PLAN: &str = r#"
name = "unit"
seed = 3
blocks = 2
plugin = "builtin"
[measure]
warmup = 10
measured = 100
[[workloads]]
name = "get100"
[[arms]]
name = "a"
baseline = true
[[arms]]
name = "b"
"#;

fn state(dir: &std::path::Path) -> AppState {
    let store = Store::open(&dir.join("store")).unwrap();
    AppState::new(store, TOKEN.into(), dir.join("token"), None)
}

async fn call(state: &AppState, request: Request<Body>) -> (StatusCode, Value) {
    let response = app(state.clone()).oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, body)
}

fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).unwrap()
}

fn post(
    uri: &str,
    token: Option<&str>,
    content_type: &str,
    body: impl Into<Body>,
) -> Request<Body> {
    let mut r = Request::post(uri).header(header::CONTENT_TYPE, content_type);
    if let Some(t) = token {
        r = r.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    r.body(body.into()).unwrap()
}

/// What a refused request must leave as it was.
fn snapshot(state: &AppState) -> (Vec<blocklab_store::CampaignMeta>, Vec<CampaignId>) {
    (
        state.store().campaigns().unwrap(),
        state.store().queue().unwrap(),
    )
}

#[tokio::test]
async fn bad_requests_get_their_status_and_leave_the_store_alone() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let before = snapshot(&s);

    // No token, and a wrong one: 401 naming the token file.
    for token in [None, Some("wrong")] {
        let (status, body) =
            call(&s, post("/api/campaigns", token, "application/toml", PLAN)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let message = body["error"].as_str().unwrap();
        assert!(
            message.contains(&dir.path().join("token").display().to_string()),
            "{message}"
        );
        assert!(message.contains("Authorization: Bearer"), "{message}");
    }

    // Malformed TOML: 400 with the parser's message and location.
    let broken = "name = \"x\"\nseed = 1\nblocks = = 2\n";
    let (status, body) = call(
        &s,
        post("/api/campaigns", Some(TOKEN), "application/toml", broken),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        (body["line"].as_u64(), body["column"].as_u64()),
        (Some(3), Some(10)),
        "{body}"
    );
    assert!(
        body["error"].as_str().unwrap().contains("TOML parse error"),
        "{body}"
    );

    // A plan that parses but does not validate: the validator's message.
    let no_baseline = PLAN.replace("baseline = true", "");
    let (status, body) = call(
        &s,
        post("/api/campaigns", Some(TOKEN), "text/plain", no_baseline),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("no arm is the baseline"),
        "{body}"
    );

    // A profile selection that selects nothing: 400 saying what is accepted.
    let (status, body) = call(
        &s,
        post(
            "/api/campaigns?profile=blocks=1",
            Some(TOKEN),
            "application/toml",
            PLAN,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"].as_str().unwrap().contains("`block=N`"),
        "{body}"
    );

    // Malformed JSON: 400 with serde's line and column.
    let (status, body) = call(
        &s,
        post(
            "/api/campaigns",
            Some(TOKEN),
            "application/json",
            "{\n \"name\": }",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["line"].as_u64(), Some(2), "{body}");

    // Oversized: 413.
    let huge = format!("# {}\n{PLAN}", "x".repeat(BODY_LIMIT));
    let (status, body) = call(
        &s,
        post("/api/campaigns", Some(TOKEN), "application/toml", huge),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert!(body["error"].as_str().unwrap().contains("limit"), "{body}");

    // Unknown ids: 404 on every per-campaign route; cancel needs the token first.
    for uri in [
        "/api/campaigns/7",
        "/api/campaigns/7/report",
        "/api/campaigns/7/runs",
        "/api/campaigns/7/latency?workload=get100",
        "/api/campaigns/seven",
    ] {
        let (status, body) = call(&s, get(uri)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}: {body}");
        assert!(body["error"].is_string(), "{uri}: {body}");
    }
    let (status, _) = call(&s, post("/api/campaigns/7/cancel", None, "text/plain", "")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = call(
        &s,
        post("/api/campaigns/7/cancel", Some(TOKEN), "text/plain", ""),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("campaign `7` not found"),
        "{body}"
    );

    assert_eq!(snapshot(&s), before);
}

#[tokio::test]
async fn a_posted_plan_is_sealed_stored_queued_and_can_be_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let mut events = s.0.events.subscribe();

    let (status, created) = call(
        &s,
        post("/api/campaigns", Some(TOKEN), "application/toml", PLAN),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["id"], 1);
    assert_eq!(created["total_runs"], 4); // 1 workload × 2 arms × 2 blocks
    assert_eq!(created["status"]["state"], "queued");
    assert_eq!(s.store().queue().unwrap(), vec![1]);
    match events.try_recv().unwrap() {
        Event::CampaignQueued {
            campaign, total, ..
        } => assert_eq!((campaign, total), (1, 4)),
        other => panic!("unexpected event {other:?}"),
    }

    // The same plan as JSON is a second campaign with the same schedule.
    let spec: crate::plan::spec::PlanSpec = toml::from_str(PLAN).unwrap();
    let json = serde_json::to_string(&spec).unwrap();
    let (status, second) = call(
        &s,
        post("/api/campaigns", Some(TOKEN), "application/json", json),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    assert_eq!(s.store().queue().unwrap(), vec![1, 2]);

    let (_, list) = call(&s, get("/api/campaigns")).await;
    assert_eq!(list[0]["arms"], serde_json::json!(["a", "b"]));
    assert_eq!(list[0]["baseline"], "a");
    assert_eq!(list[0]["workloads"], serde_json::json!(["get100"]));

    let (status, detail) = call(&s, get("/api/campaigns/2")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(detail["queue_position"], 1);
    assert_eq!(detail["sealed"]["schedule"].as_array().unwrap().len(), 4);
    assert_eq!(detail["sealed"]["source"], "api");
    assert_eq!(
        detail["sealed"]["schedule"],
        serde_json::to_value(
            &s.store()
                .sealed_plan::<SealedPlanAlias>(1)
                .unwrap()
                .schedule
        )
        .unwrap()
    );

    // A report of a campaign with no runs yet is served, with nothing in it.
    let (status, report) = call(&s, get("/api/campaigns/1/report")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(report["gates"]["unfinished_slots"], 4);
    let response = app(s.clone())
        .oneshot(get("/api/campaigns/1/report?format=csv"))
        .await
        .unwrap();
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/csv; charset=utf-8"
    );

    // Cancel the queued campaign: out of the queue, status cancelled; a
    // second cancel has nothing to do.
    let (status, body) = call(
        &s,
        post("/api/campaigns/1/cancel", Some(TOKEN), "text/plain", ""),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "cancelled");
    assert_eq!(s.store().queue().unwrap(), vec![2]);
    assert_eq!(
        s.store().campaign(1).unwrap().status,
        blocklab_store::CampaignStatus::Cancelled
    );
    let (status, body) = call(
        &s,
        post("/api/campaigns/1/cancel", Some(TOKEN), "text/plain", ""),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
}

type SealedPlanAlias = crate::plan::seal::SealedPlan;

#[tokio::test]
async fn events_stream_as_server_sent_events() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let response = app(s.clone()).oneshot(get("/api/events")).await.unwrap();
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/event-stream"
    );
    s.publish(Event::CampaignStarted { campaign: 5 });
    let mut body = response.into_body();
    let frame = body.frame().await.unwrap().unwrap();
    let text = String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap();
    assert_eq!(
        text,
        "event: campaign-started\ndata: {\"event\":\"campaign-started\",\"campaign\":5}\n\n"
    );
}

#[tokio::test]
async fn the_ui_and_the_api_description_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let response = app(s.clone()).oneshot(get("/")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let html = response.into_body().collect().await.unwrap().to_bytes();
    let html = String::from_utf8_lossy(&html);
    // Every script and stylesheet comes from this daemon.
    for asset in [
        "/assets/app.js",
        "/assets/uPlot.iife.min.js",
        "/assets/style.css",
    ] {
        assert!(html.contains(asset), "{asset}");
        let (status, _) = call(&s, get(asset)).await;
        assert_eq!(status, StatusCode::OK, "{asset}");
    }
    assert!(!html.contains("http://") && !html.contains("https://"));

    let (status, health) = call(&s, get("/api/health")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(health["status"], "ok");
    assert_eq!(health["queue"], serde_json::json!([]));
}

/// /api/openapi.json is generated from the routes: every documented
/// (path, method) reaches a handler (neither the fallback's "no route" nor
/// 405), and every other method on a documented path is 405, so the router
/// serves no call the description leaves out. Only status and error bodies
/// are read: `GET /api/events` never ends.
#[tokio::test]
async fn the_api_description_and_the_routes_served_agree() {
    use axum::http::Method;
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let (status, doc) = call(&s, get("/api/openapi.json")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["info"]["title"], "blocklab daemon API");
    assert_eq!(
        doc["components"]["securitySchemes"]["token"]["scheme"],
        "bearer"
    );
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 10, "{paths:?}");
    for (path, item) in paths {
        let concrete = path.replace("{id}", "1").replace("{slot}", "0");
        for method in [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ] {
            let documented = item.get(method.as_str().to_lowercase()).is_some();
            let request = Request::builder()
                .method(method.clone())
                .uri(&concrete)
                .body(Body::empty())
                .unwrap();
            let response = app(s.clone()).oneshot(request).await.unwrap();
            let status = response.status();
            let what = format!("{method} {path} answered {status}");
            if !documented {
                assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{what}");
                continue;
            }
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{what}");
            if status == StatusCode::NOT_FOUND {
                let bytes = response.into_body().collect().await.unwrap().to_bytes();
                let body = String::from_utf8_lossy(&bytes);
                assert!(!body.contains("no route"), "{what}: {body}");
            }
            let op = &item[method.as_str().to_lowercase()];
            assert!(
                op["responses"].as_object().is_some_and(|r| !r.is_empty()),
                "{what}"
            );
            if method == Method::POST {
                assert_eq!(op["security"][0]["token"], serde_json::json!([]), "{path}");
            }
        }
    }
    // A path the description lacks reaches the fallback.
    assert!(!paths.contains_key("/api/campaigns/{id}/nothing"));
    let (status, body) = call(&s, get("/api/campaigns/1/nothing")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["error"].as_str().unwrap().contains("no route"));
}

/// The same router over a real loopback socket, with a hand-written request.
#[tokio::test]
async fn the_router_answers_on_a_real_socket() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(conn::serve(listener, app(s), conn::Limits::default()));
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(response.contains("\"status\":\"ok\""), "{response}");
    server.abort();
}

/// Reads `stream` until the server closes it, at most `limit`: `None` if it
/// is still open then.
async fn until_closed(stream: &mut tokio::net::TcpStream, limit: Duration) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    match tokio::time::timeout(limit, stream.read_to_end(&mut got)).await {
        Ok(_) => Some(String::from_utf8_lossy(&got).into_owned()),
        Err(_) => None,
    }
}

/// Issue 32, item 4: with 256 descriptors, 300 half-sent requests stopped
/// `/api/health` until they closed. Over a real socket, with a short
/// header timeout and a cap of 3: a half-sent head and an idle kept-alive
/// connection are closed once the timeout passes, an event stream is not,
/// and a client past the cap waits unaccepted until a place frees.
#[tokio::test]
async fn slow_clients_are_cut_off_and_connections_past_the_cap_wait() {
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpStream;
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let limits = conn::Limits {
        header_timeout: Duration::from_millis(300),
        connections: 3,
    };
    let server = tokio::spawn(conn::serve(listener, app(state(dir.path())), limits));
    // Everything below the server does by itself well within this.
    let bound = Duration::from_secs(30);
    const HEALTH: &[u8] = b"GET /api/health HTTP/1.1\r\nHost: localhost\r\n\r\n";

    let start = Instant::now();
    let mut half = TcpStream::connect(addr).await.unwrap();
    half.write_all(&HEALTH[..30]).await.unwrap();
    let said = until_closed(&mut half, bound).await;
    assert!(
        said.is_some(),
        "a half-sent head is still open after {bound:?}"
    );
    assert!(!said.unwrap().contains("200 OK"));
    assert!(start.elapsed() >= limits.header_timeout);

    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(HEALTH).await.unwrap();
    let said = until_closed(&mut idle, bound).await;
    let said = said.unwrap_or_else(|| panic!("an idle connection is still open after {bound:?}"));
    assert!(said.starts_with("HTTP/1.1 200 OK"), "{said}");

    // An event stream outlives the timeout several times over.
    let mut events = TcpStream::connect(addr).await.unwrap();
    events
        .write_all(b"GET /api/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(
        until_closed(&mut events, 3 * limits.header_timeout).await,
        None
    );

    // The cap: the event stream and two silent clients hold the 3 places;
    // a fourth is answered only once the silent ones are cut off.
    let start = Instant::now();
    let mut silent = Vec::new();
    for _ in 0..2 {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }
    let mut fourth = TcpStream::connect(addr).await.unwrap();
    fourth
        .write_all(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let said = until_closed(&mut fourth, bound)
        .await
        .expect("the fourth client is answered");
    assert!(said.starts_with("HTTP/1.1 200 OK"), "{said}");
    assert!(
        start.elapsed() >= limits.header_timeout,
        "answered past the cap after {:?}",
        start.elapsed()
    );
    for mut s in silent {
        assert!(until_closed(&mut s, bound).await.is_some());
    }
    server.abort();
}

/// Issue 32, item 6: the answers hyper writes itself to a request it cannot
/// parse (414 for a 100 KB URI, 431 for 5,000 headers, 400 for a control
/// character in `Idempotency-Key`) had empty bodies; every error is JSON.
#[tokio::test]
async fn requests_hyper_cannot_parse_get_json_errors() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(conn::serve(
        listener,
        app(state(dir.path())),
        conn::Limits::default(),
    ));
    let long_uri = format!(
        "GET /api/health?{} HTTP/1.1\r\nHost: localhost\r\n\r\n",
        "a".repeat(100_000)
    );
    let many: String = (0..5000).map(|i| format!("X-{i}: a\r\n")).collect();
    let many_headers = format!("GET /api/health HTTP/1.1\r\nHost: localhost\r\n{many}\r\n");
    let control = "POST /api/campaigns HTTP/1.1\r\nHost: localhost\r\nIdempotency-Key: a\u{1}b\r\nContent-Length: 0\r\n\r\n".to_owned();
    for (request, status, words) in [
        (long_uri, "414", "URI is longer"),
        (many_headers, "431", "more headers"),
        (control, "400", "not valid HTTP/1.1"),
    ] {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        // The server may answer and close before it has read all of it.
        let _ = stream.write_all(request.as_bytes()).await;
        let said = until_closed(&mut stream, Duration::from_secs(30))
            .await
            .expect("answered");
        let (head, body) = said
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("{said}"));
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        let body: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert!(body["error"].as_str().unwrap().contains(words), "{body}");
    }
    server.abort();
}

/// Run events reach SSE subscribers as the supervisor reports them, with the
/// `event` field the UI dispatches on.
#[test]
fn run_events_keep_their_event_name_and_fields() {
    let e = Event::Run(crate::run::supervisor::Event::RunFinished {
        campaign: 3,
        slot: 4,
        total: 8,
        finished_runs: 5,
        status: crate::record::RunStatus::Ok,
        reason: None,
    });
    assert_eq!(e.name(), "run-finished");
    let json = serde_json::to_value(&e).unwrap();
    assert_eq!(json["event"], "run-finished");
    assert_eq!(json["finished_runs"], 5);
    assert_eq!(json["status"], "ok");
    let queued = serde_json::to_value(Event::CampaignQueued {
        campaign: 1,
        name: "x".into(),
        total: 2,
    })
    .unwrap();
    assert_eq!(queued["event"], "campaign-queued");
}

/// Issue 12: a wrong method is 405 with the `Allow` header and a JSON error,
/// before any token check; axum's own rejections of a path or query that
/// does not parse are the documented JSON too.
#[tokio::test]
async fn every_error_is_json_and_wrong_methods_get_405() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let before = snapshot(&s);
    for (method, uri, allow) in [
        ("DELETE", "/api/campaigns", "GET,HEAD,POST"),
        ("PUT", "/api/campaigns/1", "GET,HEAD"),
        ("GET", "/api/campaigns/1/cancel", "POST"),
        ("POST", "/api/health", "GET,HEAD"),
        ("POST", "/", "GET,HEAD"),
    ] {
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .unwrap();
        let response = app(s.clone()).oneshot(request).await.unwrap();
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {uri}"
        );
        assert_eq!(response.headers()[header::ALLOW], allow, "{method} {uri}");
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&bytes).expect("a JSON body");
        let message = body["error"].as_str().unwrap();
        assert!(message.contains(&format!("`{method} {uri}`")), "{message}");
    }
    for uri in [
        "/api/campaigns/1/latency",
        "/api/campaigns/1/runs/x/profile",
        "/api/campaigns/1/runs/0/profile?attempt=x",
    ] {
        let response = app(s.clone()).oneshot(get(uri)).await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "application/json",
            "{uri}"
        );
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&bytes).expect("a JSON body");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains(uri.split('?').next().unwrap())
        );
    }
    assert_eq!(snapshot(&s), before);
}

/// Issue 12: the `Bearer` scheme is matched case-insensitively (RFC 9110);
/// another scheme with the right token is still refused.
#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    for (i, scheme) in ["bearer", "BEARER", "Bearer"].into_iter().enumerate() {
        let request = Request::post("/api/campaigns")
            .header(header::CONTENT_TYPE, "application/toml")
            .header(header::AUTHORIZATION, format!("{scheme}  {TOKEN}"))
            .body(Body::from(PLAN))
            .unwrap();
        let response = app(s.clone()).oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::CREATED, "{scheme}");
        assert_eq!(s.store().queue().unwrap().len(), i + 1);
    }
    let request = Request::post("/api/campaigns")
        .header(header::AUTHORIZATION, format!("Basic {TOKEN}"))
        .body(Body::from(PLAN))
        .unwrap();
    let (status, body) = {
        let response = app(s.clone()).oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice::<Value>(&bytes).unwrap())
    };
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(s.store().queue().unwrap().len(), 3);
}

/// Issue 12: event streams past the cap get 503 with a JSON error naming
/// the flag; a stream that ends gives its place back.
#[tokio::test]
async fn event_streams_past_the_cap_get_503() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("store")).unwrap();
    let s =
        AppState::with_max_event_streams(store, TOKEN.into(), dir.path().join("token"), None, 2);
    let first = app(s.clone()).oneshot(get("/api/events")).await.unwrap();
    let second = app(s.clone()).oneshot(get("/api/events")).await.unwrap();
    assert_eq!(
        (first.status(), second.status()),
        (StatusCode::OK, StatusCode::OK)
    );
    let (status, body) = call(&s, get("/api/events")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let message = body["error"].as_str().unwrap();
    assert!(message.contains("--max-event-streams"), "{message}");
    assert!(message.starts_with("2 event streams are open"), "{message}");
    drop(first);
    let third = app(s.clone()).oneshot(get("/api/events")).await.unwrap();
    assert_eq!(third.status(), StatusCode::OK);
}

/// Issue 32, item 3: ten slow posts once held all the blocking threads, so
/// reads timed out. With every seal place taken, a post gets 503 JSON and
/// stores nothing, reads still answer, and a freed place seals again.
#[tokio::test]
async fn posts_past_the_seal_cap_get_503_and_reads_still_answer() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let held =
        s.0.seals
            .clone()
            .acquire_many_owned(SEALS as u32)
            .await
            .unwrap();
    let before = snapshot(&s);
    for request in [
        post("/api/campaigns", Some(TOKEN), "application/toml", PLAN),
        post("/api/plugins", Some(TOKEN), "application/wasm", "\0asm"),
    ] {
        let (status, body) = call(&s, request).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        let message = body["error"].as_str().unwrap();
        assert!(
            message.starts_with(&format!(
                "{SEALS} plans or plugin uploads are being checked"
            )),
            "{message}"
        );
    }
    assert_eq!(snapshot(&s), before);
    let (status, _) = call(&s, get("/api/campaigns")).await;
    assert_eq!(status, StatusCode::OK);
    drop(held);
    let (status, body) = call(
        &s,
        post("/api/campaigns", Some(TOKEN), "application/toml", PLAN),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// Issue 12: a NaN once sealed fine and was stored as JSON `null`; from then
/// on the whole list answered 500, also after a restart. Now the plan is
/// refused when posted, and a stored entry that does not decode is listed
/// as unreadable beside the others.
#[tokio::test]
async fn a_non_finite_plan_is_refused_and_an_undecodable_one_does_not_hide_the_list() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let nan = PLAN.replace(
        "[[workloads]]",
        "[gates]\nwait_timeout_s = nan\n[[workloads]]",
    );
    let (status, body) = call(
        &s,
        post("/api/campaigns", Some(TOKEN), "application/toml", nan),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["error"],
        "`gates.wait_timeout_s = NaN` is not a finite number; give a number (`nan` and `inf` are not accepted)"
    );

    let (status, _) = call(
        &s,
        post("/api/campaigns", Some(TOKEN), "application/toml", PLAN),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    // What such a plan left in a store: `null` where a number belongs.
    let mut poisoned: Value = s.store().sealed_plan(1).unwrap();
    poisoned["plan"]["gates"]["wait_timeout_s"] = Value::Null;
    s.store()
        .create_campaign("poisoned", "abc", 4, &poisoned)
        .unwrap();

    let (status, list) = call(&s, get("/api/campaigns")).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list[0]["arms"], serde_json::json!(["a", "b"]));
    assert!(list[0].get("unreadable").is_none(), "{list}");
    assert_eq!(list[1]["name"], "poisoned");
    assert_eq!(list[1]["arms"], serde_json::json!([]));
    assert_eq!(
        list[1]["unreadable"],
        "the sealed plan of campaign `2` in the store cannot be decoded (the store is damaged or was written by an incompatible blocklab build)"
    );
}

#[tokio::test]
async fn a_posted_process_arm_is_refused_unless_the_daemon_allows_them() {
    let dir = tempfile::tempdir().unwrap();
    let plan = r#"
name = "native"
seed = 1
blocks = 2
plugin = "builtin"
[measure]
measured = 10
[[workloads]]
name = "unary"
[[arms]]
name = "builtin"
baseline = true
target = { kind = "grpc", endpoint = "local:grpc-ingest" }
[[arms]]
name = "native"
client = { kind = "process", command = ["/bin/true"] }
target = { kind = "grpc", endpoint = "local:grpc-ingest" }
"#;
    let s = state(dir.path());
    let before = snapshot(&s);
    let (status, body) = call(
        &s,
        post("/api/campaigns", Some(TOKEN), "application/toml", plan),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let message = body["error"].as_str().unwrap();
    assert!(
        message.contains("arm `native` is a process arm"),
        "{message}"
    );
    assert!(message.contains("--allow-process-arms"), "{message}");
    assert_eq!(snapshot(&s), before);

    let allowed = state(&dir.path().join("allowed")).allowing_process_arms();
    let (status, body) = call(
        &allowed,
        post("/api/campaigns", Some(TOKEN), "application/toml", plan),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

fn keyed(uri: &str, key: &str, body: &str) -> Request<Body> {
    let mut r = post(uri, Some(TOKEN), "application/toml", body.to_owned());
    r.headers_mut()
        .insert("idempotency-key", key.parse().unwrap());
    r
}

#[tokio::test]
async fn a_repeated_idempotency_key_answers_the_same_campaign_and_queues_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());

    // A double-click: both posts in flight at once, one campaign queued.
    let (a, b) = tokio::join!(
        call(&s, keyed("/api/campaigns", "click-1", PLAN)),
        call(&s, keyed("/api/campaigns", "click-1", PLAN)),
    );
    assert_eq!(a.0, StatusCode::CREATED, "{}", a.1);
    assert_eq!(b.0, StatusCode::CREATED, "{}", b.1);
    assert_eq!(a.1["id"], b.1["id"]);
    assert_eq!(a.1, b.1, "the repeat gets the first answer");
    assert_eq!(s.store().queue().unwrap(), vec![1]);
    assert_eq!(s.store().campaigns().unwrap().len(), 1);

    // Later, the same key again: still that campaign.
    let (status, again) = call(&s, keyed("/api/campaigns", "click-1", PLAN)).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(again["id"], 1);

    // The same key with another plan (or another ?profile=): 409, nothing stored.
    let before = snapshot(&s);
    for uri in ["/api/campaigns", "/api/campaigns?profile=block=1"] {
        let other = if uri.contains('?') {
            PLAN.to_owned()
        } else {
            PLAN.replace("seed = 3", "seed = 4")
        };
        let (status, body) = call(&s, keyed(uri, "click-1", &other)).await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        let message = body["error"].as_str().unwrap();
        assert!(
            message.contains("`Idempotency-Key: click-1` was already used"),
            "{message}"
        );
        assert!(message.contains("campaign 1"), "{message}");
    }
    // A key that is not visible ASCII: 400 saying what a key is.
    let (status, body) = call(&s, keyed("/api/campaigns", &"k".repeat(300), PLAN)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("`Idempotency-Key` header must be"),
        "{body}"
    );
    assert_eq!(snapshot(&s), before);

    // A new key (a new form fill) and no key both queue new campaigns.
    let (_, second) = call(&s, keyed("/api/campaigns", "click-2", PLAN)).await;
    let (_, third) = call(
        &s,
        post("/api/campaigns", Some(TOKEN), "application/toml", PLAN),
    )
    .await;
    assert_eq!(
        (second["id"].as_u64(), third["id"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(s.store().queue().unwrap(), vec![1, 2, 3]);
}

#[tokio::test]
async fn a_profile_selection_matching_no_run_is_refused_naming_the_campaign_s_blocks_and_arms() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let before = snapshot(&s);
    for (selection, query) in [
        ("block=3", "block%3D3"),
        ("arm=c", "arm%3Dc"),
        ("slot=4", "slot%3D4"),
    ] {
        let (status, body) = call(
            &s,
            post(
                &format!("/api/campaigns?profile={query}"),
                Some(TOKEN),
                "application/toml",
                PLAN,
            ),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let message = body["error"].as_str().unwrap();
        assert!(
            message.contains(&format!("`--profile {selection}` matches no run")),
            "{message}"
        );
        assert!(message.contains("blocks 1..=2"), "{message}");
        assert!(message.contains("arms `a`, `b`"), "{message}");
    }
    assert_eq!(snapshot(&s), before, "nothing stored or queued");
    // A selection that matches: queued, its selection stored.
    let (status, body) = call(
        &s,
        post(
            "/api/campaigns?profile=block%3D2",
            Some(TOKEN),
            "application/toml",
            PLAN,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(s.store().queue().unwrap(), vec![1]);
}

/// A finished campaign in the store with real stored runs: three arms over
/// six blocks, `b` 20% faster than the baseline `a` and `c` 50% slower, each
/// run with a histogram of `samples` latencies. Returns its id.
pub(super) fn finished_campaign(state: &AppState, samples: u64) -> CampaignId {
    use crate::record::{RunRecord, RunResult};
    let text = "name = \"three\"\nseed = 5\nblocks = 6\nplugin = \"builtin\"\n[measure]\nmeasured = 100\n[[workloads]]\nname = \"get100\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n[[arms]]\nname = \"c\"\n";
    let spec = crate::plan::spec::PlanSpec::parse(text, &[]).unwrap();
    let plan = crate::plan::seal::seal(spec, vec![], "three.toml", text.as_bytes(), None).unwrap();
    let store = state.store();
    let meta = plan.create_campaign(store).unwrap();
    for slot in plan.schedule.clone() {
        let factor = match slot.arm.as_str() {
            "b" => 0.8,
            "c" => 1.5,
            _ => 1.0,
        };
        // Block-to-block drift that the pairing removes.
        let mean = factor
            * (100.0 + 3.0 * f64::from(slot.block))
            * (1.0 + 0.01 * f64::from(slot.position));
        let mut h = crate::record::result::new_histogram().unwrap();
        for i in 0..samples {
            h.record((mean * 1_000.0) as u64 + i % 97).unwrap();
        }
        let mut bytes = Vec::new();
        {
            use hdrhistogram::serialization::Serializer as _;
            hdrhistogram::serialization::V2DeflateSerializer::new()
                .serialize(&h, &mut bytes)
                .unwrap();
        }
        let result = RunResult {
            workload: slot.workload.clone(),
            arm: slot.arm.clone(),
            measured: samples,
            measured_s: 0.5,
            latency_us: crate::record::result::Latency {
                mean,
                p50: mean,
                p99: mean * 1.5,
                ..Default::default()
            },
            throughput_per_s: 1e6 / mean,
            cpu: crate::record::result::Cpu {
                measured_us_per_txn: mean * 0.5,
                process_us_per_txn: mean * 0.6,
                involuntary_switches: 0,
            },
            ..Default::default()
        };
        let record = RunRecord::finished(&slot, result);
        let key = blocklab_store::RunKey {
            campaign: meta.id,
            slot: slot.slot,
            attempt: 0,
        };
        store.put_run(key, &record, Some(&bytes), true).unwrap();
    }
    store
        .set_status(meta.id, blocklab_store::CampaignStatus::Finished)
        .unwrap();
    meta.id
}

/// Each verdict's arm, baseline and direction.
fn verdict_pairs(verdicts: &[Value]) -> Vec<(&str, &str, &str)> {
    verdicts
        .iter()
        .map(|v| {
            (
                v["arm"].as_str().unwrap(),
                v["baseline"].as_str().unwrap(),
                v["direction"].as_str().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_report_is_recomputed_against_any_arm_and_an_unknown_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let id = finished_campaign(&s, 200);

    let (status, report) = call(&s, get(&format!("/api/campaigns/{id}/report"))).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["provisional"], false);
    let verdicts = report["verdicts"].as_array().unwrap();
    assert_eq!(
        verdict_pairs(verdicts),
        [("b", "a", "faster"), ("c", "a", "slower")]
    );
    assert!(report.get("sealed_baseline").is_none());

    let (status, against_c) =
        call(&s, get(&format!("/api/campaigns/{id}/report?baseline=c"))).await;
    assert_eq!(status, StatusCode::OK, "{against_c}");
    assert_eq!(against_c["sealed_baseline"], "a");
    let verdicts = against_c["verdicts"].as_array().unwrap();
    assert_eq!(
        verdict_pairs(verdicts),
        [("a", "c", "faster"), ("b", "c", "faster")]
    );
    // a against c is the inverse of c against a, from the same runs.
    let c_vs_a = report["verdicts"][1]["ratio"].as_f64().unwrap();
    let a_vs_c = verdicts[0]["ratio"].as_f64().unwrap();
    assert!((c_vs_a * a_vs_c - 1.0).abs() < 1e-9, "{c_vs_a} {a_vs_c}");
    let text = verdicts[1]["text"].as_str().unwrap();
    assert!(text.starts_with("b is 1.88× faster than c ["), "{text}");
    assert!(text.ends_with("], 6 of 6 blocks"), "{text}");
    let (_, md) = call(
        &s,
        get(&format!("/api/campaigns/{id}/report?baseline=c&format=md")),
    )
    .await;
    assert!(
        md.as_str().unwrap().contains("Every effect is against `c`"),
        "{md}"
    );
    // One cached report per (campaign, baseline).
    assert_eq!(lock(&s.0.reports).len(), 2);

    let (status, body) = call(&s, get(&format!("/api/campaigns/{id}/report?baseline=zzz"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["error"],
        format!(
            "`baseline=zzz`: campaign {id} has no arm `zzz`; its arms are a, b, c: pass one of them as the baseline"
        )
    );
}

fn get_with_host(uri: &str, host: &str) -> Request<Body> {
    Request::get(uri)
        .header(header::HOST, host)
        .body(Body::empty())
        .unwrap()
}

/// Clickjacking: no answer may be framed by another page, and none is
/// sniffed into another type; the UI itself has no inline script, so the
/// policy's `script-src 'self'` leaves it working.
#[tokio::test]
async fn every_answer_forbids_framing_and_sniffing() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    for request in [
        get("/"),
        get("/assets/app.js"),
        get("/api/health"),
        get("/api/campaigns"),
        get("/api/openapi.json"),
        get("/api/campaigns/9/report"),
        get("/nowhere"),
        Request::delete("/api/campaigns")
            .body(Body::empty())
            .unwrap(),
        post("/api/campaigns", None, "application/toml", PLAN),
    ] {
        let what = format!("{} {}", request.method(), request.uri());
        let response = app(s.clone()).oneshot(request).await.unwrap();
        let headers = response.headers();
        let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
        assert!(csp.contains("default-src 'self'"), "{what}: {csp}");
        assert!(csp.contains("script-src 'self';"), "{what}: {csp}");
        assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY", "{what}");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{what}");
    }
    let response = app(s.clone()).oneshot(get("/")).await.unwrap();
    let html = response.into_body().collect().await.unwrap().to_bytes();
    let html = String::from_utf8_lossy(&html);
    assert_eq!(
        html.matches("<script").count(),
        html.matches("<script src=\"/assets/").count(),
        "every script is a file of the daemon's: {html}"
    );
}

/// Issue 32, item 6: `Host: localhost:80@evil.example`, a second `Host`
/// and an absolute target naming another host were all answered.
#[tokio::test]
async fn a_disguised_second_or_absolute_foreign_host_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let (status, body) = call(
        &s,
        get_with_host("/api/health", "localhost:80@evil.example"),
    )
    .await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("localhost:80@evil.example")
    );
    let two = Request::get("/api/health")
        .header(header::HOST, "localhost")
        .header(header::HOST, "evil.example")
        .body(Body::empty())
        .unwrap();
    let (status, body) = call(&s, two).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("more than one `Host`"),
        "{body}"
    );
    let absolute = get_with_host("http://evil.example/api/health", "localhost");
    let (status, body) = call(&s, absolute).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("`evil.example`"),
        "{body}"
    );
    let ours = get_with_host("http://localhost:7878/api/health", "localhost:7878");
    assert_eq!(call(&s, ours).await.0, StatusCode::OK);
}

/// DNS rebinding: a request naming another host is refused before any
/// handler runs, with a message that says how to allow a name of ours.
#[tokio::test]
async fn a_foreign_host_is_refused_and_an_allowed_one_served() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let before = snapshot(&s);
    for host in [
        "evil.example",
        "evil.example:7878",
        "localhost.evil.example",
    ] {
        let (status, body) = call(&s, get_with_host("/api/health", host)).await;
        assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{host}");
        let message = body["error"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("this daemon does not answer to host `{host}`")),
            "{message}"
        );
        assert!(message.contains("--allow-host"), "{message}");
    }
    // Not even a POST with the token gets through.
    let mut request = post("/api/campaigns", Some(TOKEN), "application/toml", PLAN);
    request
        .headers_mut()
        .insert(header::HOST, "evil.example".parse().unwrap());
    let response = app(s.clone()).oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::MISDIRECTED_REQUEST);
    assert!(
        response.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    assert_eq!(snapshot(&s), before);
    for host in [
        "localhost:7878",
        "127.0.0.1:7878",
        "[::1]:7878",
        "LOCALHOST",
    ] {
        let (status, _) = call(&s, get_with_host("/api/health", host)).await;
        assert_eq!(status, StatusCode::OK, "{host}");
    }
    let (status, _) = call(&s, get_with_host("/", "bench.local:7878")).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
    let allowed = state(tempfile::tempdir().unwrap().path())
        .allowing_hosts(AllowedHosts::new(None, &["bench.local".to_owned()]));
    let (status, _) = call(&allowed, get_with_host("/", "bench.local:7878")).await;
    assert_eq!(status, StatusCode::OK);
}

/// A stored flamegraph is served sandboxed: its script cannot run with the
/// UI's origin, and only the UI's own pages may frame it.
#[tokio::test]
async fn a_flamegraph_is_served_in_a_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let id = finished_campaign(&s, 10);
    let key = blocklab_store::RunKey {
        campaign: id,
        slot: 0,
        attempt: 0,
    };
    s.store()
        .put_profile(key, b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(document.domain)</script></svg>")
        .unwrap();
    let response = app(s.clone())
        .oneshot(get(&format!("/api/campaigns/{id}/runs/0/profile")))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers();
    assert_eq!(headers[header::CONTENT_TYPE], "image/svg+xml");
    let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(csp.starts_with("sandbox;"), "{csp}");
    assert!(!csp.contains("allow-scripts"), "{csp}");
    assert!(csp.contains("frame-ancestors 'self'"), "{csp}");
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
}

/// The latency distribution marks the percentiles its runs cannot support,
/// and a settled campaign's answers are built once and then shared.
#[tokio::test]
async fn latency_marks_unsupported_percentiles_and_settled_answers_are_cached() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let id = finished_campaign(&s, 200);
    let uri = format!("/api/campaigns/{id}/latency?workload=get100");
    let (status, latency) = call(&s, get(&uri)).await;
    assert_eq!(status, StatusCode::OK, "{latency}");
    let arms = latency["arms"].as_array().unwrap();
    assert_eq!(arms.len(), 3);
    let point = |p: f64| {
        arms[0]["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["percentile"] == p)
            .unwrap()
            .clone()
    };
    assert_eq!(point(99.0)["supported"], true);
    assert_eq!(point(99.5)["supported"], true);
    assert_eq!(point(99.9)["supported"], false);
    assert!(
        point(99.9)["reason"]
            .as_str()
            .unwrap()
            .contains("at least 1000 samples per run, the smallest run has 200"),
        "{}",
        point(99.9)
    );
    assert_eq!(point(100.0)["supported"], false);

    // Built once: the second answer is the cached body, byte for byte.
    let (_, again) = call(&s, get(&uri)).await;
    assert_eq!(again, latency);
    // A client that takes gzip gets the same answer gzipped.
    let request = Request::get(&uri)
        .header(header::ACCEPT_ENCODING, "br, gzip")
        .body(Body::empty())
        .unwrap();
    let response = app(s.clone()).oneshot(request).await.unwrap();
    assert_eq!(response.headers()[header::CONTENT_ENCODING], "gzip");
    assert_eq!(response.headers()[header::VARY], "accept-encoding");
    let gz = response.into_body().collect().await.unwrap().to_bytes();
    let mut plain = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut plain).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&plain).unwrap(), latency);
    let (status, _) = call(&s, get(&format!("/api/campaigns/{id}/report"))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(
        &s,
        get(&format!("/api/campaigns/{id}/latency?workload=nope")),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let mut keys: Vec<String> = lock(&s.0.bodies).keys().map(|(_, k)| k.clone()).collect();
    keys.sort();
    assert_eq!(
        keys,
        ["latency?workload=get100", "report?format=json&baseline="]
    );
    // A campaign that can change again is answered afresh, never from the
    // cache (here: marked running, so the report becomes provisional).
    s.store()
        .set_status(id, blocklab_store::CampaignStatus::Running)
        .unwrap();
    let (_, report) = call(&s, get(&format!("/api/campaigns/{id}/report"))).await;
    assert_eq!(report["provisional"], true);
}

/// `/api/compare` of two settled campaigns is built once and gzipped like
/// a report; while either can still change it is built afresh.
#[tokio::test]
async fn a_settled_comparison_is_built_once_and_gzipped() {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path());
    let (a, b) = (finished_campaign(&s, 200), finished_campaign(&s, 200));
    let uri = format!("/api/compare?a={a}&b={b}");
    let (status, first) = call(&s, get(&uri)).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert!(
        first["summary"]["text"]
            .as_str()
            .unwrap()
            .contains("rows changed"),
        "{first}"
    );
    let kept = |s: &AppState| -> Vec<String> {
        lock(&s.0.bodies)
            .keys()
            .filter(|(id, what)| *id == b && what.starts_with(&format!("compare?a={a}&")))
            .map(|(_, what)| what.clone())
            .collect()
    };
    assert_eq!(kept(&s).len(), 1);
    let request = Request::get(&uri)
        .header(header::ACCEPT_ENCODING, "gzip")
        .body(Body::empty())
        .unwrap();
    let response = app(s.clone()).oneshot(request).await.unwrap();
    assert_eq!(response.headers()[header::CONTENT_ENCODING], "gzip");
    assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    let gz = response.into_body().collect().await.unwrap().to_bytes();
    let mut plain = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut plain).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&plain).unwrap(), first);
    // Another campaign finishing may join the drift's reference: the
    // comparison is built again, not served from before.
    let before = kept(&s);
    finished_campaign(&s, 200);
    let (status, _) = call(&s, get(&uri)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(kept(&s).len(), 2, "{:?}", kept(&s));
    assert!(kept(&s).iter().any(|k| !before.contains(k)));
    // A running A: the cached comparison is not served, and none is kept.
    lock(&s.0.bodies).clear();
    s.store()
        .set_status(a, blocklab_store::CampaignStatus::Running)
        .unwrap();
    let (status, _) = call(&s, get(&uri)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(lock(&s.0.bodies).is_empty());
}

#[test]
fn the_submit_client_reads_the_daemons_events_back_into_the_daemons_types() {
    let events = [
        super::Event::CampaignStarted { campaign: 3 },
        super::Event::CampaignFinished {
            campaign: 3,
            status: super::Ending::Failed,
            reason: Some("slot 1 failed".into()),
        },
        super::Event::Run(crate::run::supervisor::Event::RunFinished {
            campaign: 3,
            slot: 1,
            total: 4,
            finished_runs: 2,
            status: crate::record::RunStatus::Ok,
            reason: None,
        }),
    ];
    for event in events {
        let text = serde_json::to_string(&event).unwrap();
        let back: super::Event = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        assert_eq!(back.name(), event.name());
    }
}
