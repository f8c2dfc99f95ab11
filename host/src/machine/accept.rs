//! Accepting TCP connections with a cap on how many are open at once, for
//! the servers blocklab runs (the daemon, the local ingest server): past
//! the cap a connection waits, unaccepted, in the kernel's backlog, costing
//! the server no descriptor.

use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Pause after a failed accept (out of descriptors, say): the failure is
/// the machine's, and retrying at once would spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// A listener that holds at most a number of its connections open.
pub struct CappedListener {
    listener: TcpListener,
    open: Arc<Semaphore>,
    /// Who is serving, for the message of a failed accept.
    server: &'static str,
}

impl CappedListener {
    /// `listener` with at most `connections` of its connections open;
    /// `server` names it in the message of a failed accept.
    pub fn new(listener: TcpListener, connections: usize, server: &'static str) -> Self {
        CappedListener {
            listener,
            open: Arc::new(Semaphore::new(connections)),
            server,
        }
    }

    /// The next connection (`TCP_NODELAY` set) with its place among the open
    /// ones, which it holds until the permit is dropped. A failed accept is
    /// said on stderr and retried after a pause. `None` only if the cap's
    /// semaphore were closed, which nothing does.
    pub async fn accept(&self) -> Option<(TcpStream, OwnedSemaphorePermit)> {
        loop {
            let permit = self.open.clone().acquire_owned().await.ok()?;
            match self.listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    return Some((stream, permit));
                }
                Err(e) => {
                    eprintln!("{}: cannot accept a connection: {e}", self.server);
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    }
}
