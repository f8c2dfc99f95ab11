//! Accepting connections with caps that `axum::serve` does not have: a
//! client gets [`Limits::header_timeout`] to send each request's head (also
//! the longest a kept-alive connection may sit idle between requests), and
//! at most [`Limits::connections`] connections are open at once. Before
//! these, 300 half-sent requests held 300 descriptors until their clients
//! gave up, and `/api/health` stopped answering (issue 32, item 4).

use std::sync::Arc;
use std::time::Duration;

/// How long a client may take to send a request's head, and how long a
/// kept-alive connection may wait for its next request. An `EventSource`
/// stream is a response being written, not a wait, so it is not cut.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(crate::limits::DAEMON_HEADER_TIMEOUT_S);

/// Most connections open at once (event streams included); more wait,
/// unaccepted, in the kernel's backlog, costing the daemon no descriptor.
pub const CONNECTIONS: usize = crate::limits::DAEMON_CONNECTIONS;

/// The caps one daemon serves with.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_timeout: Duration,
    pub connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: HEADER_TIMEOUT,
            connections: CONNECTIONS,
        }
    }
}

/// Pause after a failed accept (out of descriptors, say): the failure is
/// the machine's, and retrying at once would spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` over HTTP/1.1 within `limits`, until the
/// task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, router: axum::Router, limits: Limits) {
    let open = Arc::new(tokio::sync::Semaphore::new(limits.connections));
    loop {
        // The semaphore is never closed, so this always gets a permit.
        let Ok(permit) = open.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("blocklab serve: cannot accept a connection: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_timeout);
            // A connection that ends badly (a timeout, a reset) is the
            // client's business; the daemon goes on.
            let _ = builder
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}
