//! A duet's start barrier (docs/method.md, "Duets"): the runs of one block
//! each load their plugin (or a process arm's program sets up) in their own
//! time, then wait on one Unix socket until every partner has, and all
//! start their warmup and window at once. The executor holds the barrier
//! ([`Barrier`]); a worker [`arrive`]s at it, and a process arm's program
//! does the same in its own language (docs/process-arms.md, "Duets"). A
//! partner that fails before it arrives breaks the barrier: the others
//! read end-of-file and fail, so no run measures alone what was meant to
//! be measured beside another.

use anyhow::{Context, bail};
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long an arrived worker waits for the release at most: the
/// executor's own deadline is the run timeout, so this only bounds a
/// worker whose executor died without closing the socket.
const WAIT: Duration = Duration::from_secs(600);

/// The executor's side: a listening socket in the temp directory, removed
/// on drop.
pub struct Barrier {
    path: PathBuf,
    listener: UnixListener,
    parties: usize,
}

impl Barrier {
    /// A barrier for `parties` runs.
    pub fn bind(parties: usize) -> anyhow::Result<Barrier> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "blocklab-duet-{}-{}.sock",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // A socket file left by a killed supervisor of the same pid.
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)
            .with_context(|| format!("cannot open the duet's start barrier {}", path.display()))?;
        listener.set_nonblocking(true)?;
        Ok(Barrier {
            path,
            listener,
            parties,
        })
    }

    /// Where workers [`arrive`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits until every party arrived, then releases them together and
    /// returns how long the release took (the start skew between the first
    /// and the last). Gives up, releasing none, once `gave_up` says a party
    /// ended before arriving, or at `deadline`; either way the socket is
    /// closed on return, so a party arriving later reads end-of-file.
    pub fn hold(self, deadline: Instant, gave_up: &dyn Fn() -> bool) -> anyhow::Result<Duration> {
        let mut arrived: Vec<UnixStream> = Vec::with_capacity(self.parties);
        while arrived.len() < self.parties {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(false)?;
                    arrived.push(stream);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if gave_up() {
                        bail!(
                            "a partner run ended before the duet's start barrier ({} of {} arrived)",
                            arrived.len(),
                            self.parties
                        );
                    }
                    if Instant::now() >= deadline {
                        bail!(
                            "the duet's runs did not all reach the start barrier in time ({} of {} arrived)",
                            arrived.len(),
                            self.parties
                        );
                    }
                    // Plugins load in tens of milliseconds: a millisecond's
                    // poll costs nothing measurable and no busy core.
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e).context("the duet's start barrier failed"),
            }
        }
        let t0 = Instant::now();
        for stream in &mut arrived {
            stream
                .write_all(&[1])
                .context("cannot release a run from the duet's start barrier")?;
        }
        Ok(t0.elapsed())
    }
}

impl Drop for Barrier {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The worker's side: blocks until the executor releases every partner.
pub fn arrive(path: &Path) -> anyhow::Result<()> {
    let mut stream = UnixStream::connect(path)
        .with_context(|| format!("cannot reach the duet's start barrier {}", path.display()))?;
    stream.set_read_timeout(Some(WAIT))?;
    let mut byte = [0u8];
    match stream.read(&mut byte) {
        Ok(1) => Ok(()),
        Ok(_) => bail!(
            "the duet's start barrier was broken: a partner run failed before it could start, so this one did not measure alone (the partner's error says why)"
        ),
        Err(e) => Err(e).context("waiting at the duet's start barrier"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_party_is_released_once_all_arrived() {
        let barrier = Barrier::bind(2).unwrap();
        let path = barrier.path().to_owned();
        std::thread::scope(|scope| {
            let runs: Vec<_> = (0..2).map(|_| scope.spawn(|| arrive(&path))).collect();
            let deadline = Instant::now() + Duration::from_secs(60);
            barrier.hold(deadline, &|| false).unwrap();
            for run in runs {
                run.join().unwrap().unwrap();
            }
        });
    }

    #[test]
    fn a_partner_that_never_arrives_breaks_the_barrier_for_the_others() {
        let barrier = Barrier::bind(2).unwrap();
        let path = barrier.path().to_owned();
        std::thread::scope(|scope| {
            let run = scope.spawn(|| arrive(&path));
            let deadline = Instant::now() + Duration::from_secs(60);
            // The second party has ended before arriving.
            let err = barrier.hold(deadline, &|| true).unwrap_err();
            assert!(err.to_string().contains("ended before"), "{err}");
            let err = run.join().unwrap().unwrap_err();
            assert!(err.to_string().contains("barrier"), "{err:#}");
        });
    }
}
