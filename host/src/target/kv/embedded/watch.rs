//! Watches on `embedded`: FoundationDB 7.3's `watch` as its client and
//! storage servers give it (tag 7.3.79: `ReadYourWritesTransaction::watch`,
//! `RYWImpl::watch` and `triggerWatches` in fdbclient/ReadYourWrites.actor.cpp;
//! `Transaction::watch`, `setupWatches`, `cancelWatches` and
//! `commitAndWatch` in fdbclient/NativeAPI.actor.cpp).
//!
//! A watch keeps the value its transaction saw when it was set (read with a
//! read conflict, own writes included). Until the transaction commits, only
//! the transaction's own later writes can fire it: a different value, a
//! clear of a present value, or an atomic operation (whose result
//! FoundationDB does not work out, so it fires). Once the commit succeeded
//! it waits in the store's registry and fires at the first commit that
//! leaves the key with a different value. A commit that fails fails it with
//! the commit's error; a reset, retry, cancel or drop of the transaction
//! before commit fails it with `transaction_cancelled`. At most
//! [`limits::MAX_WATCHES`] are outstanding per database.
//!
//! Where this differs from a cluster: every commit's value is compared, so
//! a change that is changed back before anyone looks still fires (a
//! storage server may miss it); and a cluster's watch may also fail with
//! `watch_cancelled` (1029) under its storage servers' own watch limit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::tx::{Tx, check_legal};
use super::{Shared, Store, limits};
use crate::target::kv::{FailedWatch, KvError, Transaction, Watch};

/// One watch's state, shared by its handle, its transaction until commit,
/// and the store's registry after.
pub(super) struct Cell {
    key: Vec<u8>,
    /// The value the transaction saw when it set the watch.
    seen: Option<Vec<u8>>,
    /// `None` while waiting.
    outcome: Mutex<Option<Result<(), KvError>>>,
    settled: Condvar,
}

/// What a write left at a watched key, as its transaction knows it.
#[derive(Clone, Copy)]
pub(super) enum Written<'a> {
    Value(Option<&'a [u8]>),
    /// An atomic operation or a versionstamped value: not worked out.
    Unknown,
}

impl Cell {
    /// Ends a waiting watch with `outcome`; false (and no change) if it had
    /// already ended, so each watch leaves the outstanding count once.
    fn settle(&self, outcome: Result<(), KvError>, outstanding: &AtomicUsize) -> bool {
        let mut slot = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_some() {
            return false;
        }
        *slot = Some(outcome);
        outstanding.fetch_sub(1, Ordering::SeqCst);
        self.settled.notify_all();
        true
    }

    fn waiting(&self) -> bool {
        self.outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Fires if the key's value `now` differs from the one seen. True when
    /// the watch has ended (fired now or earlier).
    fn fire_if_changed(&self, now: Written<'_>, outstanding: &AtomicUsize) -> bool {
        let changed = match now {
            Written::Value(value) => value != self.seen.as_deref(),
            Written::Unknown => true,
        };
        if changed {
            self.settle(Ok(()), outstanding);
        }
        changed || !self.waiting()
    }
}

/// The handle a workload holds.
struct Handle {
    cell: Arc<Cell>,
    shared: Arc<Shared>,
}

impl Watch for Handle {
    fn is_ready(&mut self) -> bool {
        !self.cell.waiting()
    }

    fn wait(&mut self, timeout: Option<Duration>) -> Result<bool, KvError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut slot = self
            .cell
            .outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(outcome) = &*slot {
                return outcome.clone().map(|()| true);
            }
            slot = match deadline {
                None => self
                    .cell
                    .settled
                    .wait(slot)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(false);
                    }
                    self.cell
                        .settled
                        .wait_timeout(slot, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }
}

impl Drop for Handle {
    /// Dropping a watch cancels it (the future's actor is cancelled and
    /// `decreaseWatchCounter` runs): it stops counting and leaves the
    /// registry.
    fn drop(&mut self) {
        if self
            .cell
            .settle(Err(KvError::Cancelled), &self.shared.watches)
        {
            self.shared.write().unregister(&self.cell);
        }
    }
}

impl Tx {
    /// `ReadYourWritesTransaction::watch`'s checks in its order, the read
    /// of the value to compare with, then `increaseWatchCounter`.
    pub(super) fn set_watch(&mut self, key: &[u8]) -> Box<dyn Watch> {
        let seen = match self.watched_value(key) {
            Ok(seen) => seen,
            Err(error) => return Box::new(FailedWatch(error)),
        };
        let counted = self
            .shared
            .watches
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < limits::MAX_WATCHES).then_some(n + 1)
            });
        if counted.is_err() {
            return Box::new(FailedWatch(KvError::Other {
                code: 1032,
                message: format!(
                    "too_many_watches: {} watches are outstanding on this database; wait for or drop some before setting more",
                    limits::MAX_WATCHES
                ),
            }));
        }
        let cell = Arc::new(Cell {
            key: key.to_vec(),
            seen,
            outcome: Mutex::new(None),
            settled: Condvar::new(),
        });
        self.watches.push(Arc::clone(&cell));
        Box::new(Handle {
            cell,
            shared: Arc::clone(&self.shared),
        })
    }

    fn watched_value(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        self.check_commit_started()?;
        self.check_ended()?;
        if !self.extra.sees_own_writes(false) {
            return Err(KvError::Other {
                code: 1034,
                message: "watches_disabled: a transaction with read_your_writes_disable cannot set watches".to_owned(),
            });
        }
        check_legal(key)?;
        if key.len() > limits::KEY_BYTES {
            return Err(KvError::KeyTooLarge);
        }
        self.get(key, false)
    }

    /// `triggerWatches` for this transaction's own write to `key`, called
    /// once the write is buffered (a refused or dropped one never gets
    /// here).
    pub(super) fn wrote(&mut self, key: &[u8], now: Written<'_>) {
        if self.watches.is_empty() {
            return;
        }
        let outstanding = &self.shared.watches;
        self.watches
            .retain(|cell| cell.key != key || !cell.fire_if_changed(now, outstanding));
    }

    /// `triggerWatches` for a clear of [begin, end).
    pub(super) fn cleared_range(&mut self, begin: &[u8], end: &[u8]) {
        if self.watches.is_empty() {
            return;
        }
        let outstanding = &self.shared.watches;
        self.watches.retain(|cell| {
            let inside = begin <= cell.key.as_slice() && cell.key.as_slice() < end;
            !inside || !cell.fire_if_changed(Written::Value(None), outstanding)
        });
    }

    /// After `commit` (which was started): `setupWatches` on success, so
    /// the watches wait on the store; `cancelWatches(e)` on failure.
    pub(super) fn commit_watches(&mut self, result: &Result<u64, KvError>) {
        if self.watches.is_empty() {
            return;
        }
        let cells = std::mem::take(&mut self.watches);
        match result {
            Ok(_) => self.shared.write().register(cells, &self.shared.watches),
            Err(error) => {
                for cell in cells {
                    cell.settle(Err(error.clone()), &self.shared.watches);
                }
            }
        }
    }

    /// `cancelWatches()`: the transaction was reset, retried, cancelled or
    /// dropped before its commit.
    pub(super) fn cancel_watches(&mut self) {
        for cell in std::mem::take(&mut self.watches) {
            cell.settle(Err(KvError::Cancelled), &self.shared.watches);
        }
    }
}

/// The store's registry of committed watches, by key.
pub(super) type Registry = std::collections::BTreeMap<Vec<u8>, Vec<Arc<Cell>>>;

impl Store {
    /// The newest value of `key`.
    fn latest(&self, key: &[u8]) -> Option<&[u8]> {
        self.keys
            .get(key)
            .and_then(|h| h.last())
            .and_then(|(_, v)| v.as_deref())
    }

    /// Watches whose transaction committed: each fires at once if the key
    /// changed since it was read (possible only for a read-only commit,
    /// which a conflict cannot fail), else waits here.
    fn register(&mut self, cells: Vec<Arc<Cell>>, outstanding: &AtomicUsize) {
        for cell in cells {
            if cell.waiting()
                && !cell.fire_if_changed(Written::Value(self.latest(&cell.key)), outstanding)
            {
                self.watches.entry(cell.key.clone()).or_default().push(cell);
            }
        }
    }

    fn unregister(&mut self, cell: &Arc<Cell>) {
        if let Some(cells) = self.watches.get_mut(&cell.key) {
            cells.retain(|c| !Arc::ptr_eq(c, cell));
            if cells.is_empty() {
                self.watches.remove(&cell.key);
            }
        }
    }

    /// Fires the watches on what the newest commit wrote (its keys and
    /// ranges) whose value now differs; called with the commit applied.
    pub(super) fn fire_watches(&mut self, outstanding: &AtomicUsize) {
        if self.watches.is_empty() {
            return;
        }
        let Some(commit) = self.log.back() else {
            return;
        };
        let mut touched: Vec<Vec<u8>> = commit
            .keys
            .iter()
            .filter(|k| self.watches.contains_key(*k))
            .cloned()
            .collect();
        for (begin, end) in &commit.ranges {
            touched.extend(
                self.watches
                    .range::<[u8], _>((
                        std::ops::Bound::Included(begin.as_slice()),
                        std::ops::Bound::Excluded(end.as_slice()),
                    ))
                    .map(|(k, _)| k.clone()),
            );
        }
        for key in touched {
            let Some(mut cells) = self.watches.remove(&key) else {
                continue;
            };
            let now = self.latest(&key).map(<[u8]>::to_vec);
            cells.retain(|cell| !cell.fire_if_changed(Written::Value(now.as_deref()), outstanding));
            if !cells.is_empty() {
                self.watches.insert(key, cells);
            }
        }
    }
}
