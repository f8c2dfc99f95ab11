//! The `fdb` target: a real FoundationDB 7.3 cluster through the
//! `foundationdb` crate (libfdb_c), behind the cargo feature `fdb`.
//!
//! It owns the process's client network thread ([`shutdown`] stops it), the
//! mapping of the crate's consuming transaction API onto the synchronous
//! [`Transaction`] trait, and the cluster health read ([`cluster_health`]).
//!
//! Every call blocks the calling thread on the crate's future, which
//! libfdb_c's network thread completes; no async runtime is involved, as in
//! the C API's own blocking use (`fdb_future_block_until_ready`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use foundationdb::api::{FdbApiBuilder, NetworkAutoStop};
use foundationdb::options::{DatabaseOption, StreamingMode, TransactionOption};
use foundationdb::{FdbError, RangeOption, TransactionCommitError, TransactionCommitted};
use futures::executor::block_on;

use super::fdb_more;
use super::fdb_status::{StatusError, parse_status};
use super::{
    ConflictKind, Database, KeyRange, KeySelector, KeyValue, KvError, MutationType, RangeLimits,
    RangeOptions, RangeResult, SelectorRange, Transaction, TransactionOption as KvOption,
    Versionstamp,
};

pub use super::fdb_settings::{DEFAULT_CLUSTER_FILE, FdbSettings};
pub use super::fdb_status::ClusterHealth;

/// The special key whose value is the cluster's status document.
const STATUS_KEY: &[u8] = b"\xff\xff/status/json";

/// Long enough for the client to ask the coordinators and the cluster
/// controller, short enough that a dead cluster fails the gate instead of
/// hanging the campaign.
const STATUS_TIMEOUT_MS: i32 = 10_000;

/// Why the `fdb` target could not start or answer.
#[derive(Debug, thiserror::Error)]
pub enum FdbTargetError {
    #[error(
        "cluster file `{}` does not exist (set `cluster_file` in the arm's target or \
         FDB_CLUSTER_FILE to the cluster file of a FoundationDB 7.3 cluster)",
        .0.display()
    )]
    ClusterFileMissing(PathBuf),
    #[error(
        "cluster file path `{}` is not valid UTF-8 without NUL bytes (move the file to a plain path)",
        .0.display()
    )]
    ClusterFilePath(PathBuf),
    #[error(
        "cannot start the FoundationDB client network: {0} (install libfdb_c 7.3, \
         the foundationdb-clients package, on this machine)"
    )]
    Network(KvError),
    #[error(
        "the FoundationDB client network was already stopped in this process (open every \
         `fdb` target before `fdb::shutdown`; a process can start the network only once)"
    )]
    NetworkStopped,
    #[error("cannot open the database of cluster file `{}`: {source} (check the cluster file)", .path.display())]
    Open { path: PathBuf, source: KvError },
    #[error("`{name}` = {value} is larger than FoundationDB accepts (use at most 2147483647)")]
    SettingRange { name: &'static str, value: u32 },
    #[error(
        "FoundationDB refused `{name}`: {source} (check the value against the 7.3 option docs)"
    )]
    Setting { name: &'static str, source: KvError },
    #[error(
        "cannot read the cluster status: {0} (check that the cluster is up: `fdbcli --exec status`)"
    )]
    Status(KvError),
    #[error(
        "the cluster returned no status document (check the cluster with `fdbcli --exec status`)"
    )]
    StatusEmpty,
    #[error(transparent)]
    StatusDocument(#[from] StatusError),
}

/// The process's client network: started by the first [`Fdb::open`], stopped
/// once by [`shutdown`].
enum Network {
    NotStarted,
    /// Dropping the guard stops the network and joins its thread.
    Running {
        _guard: NetworkAutoStop,
    },
    /// Selecting the API version or setting up the network failed; libfdb_c
    /// allows one attempt per process.
    Failed(KvError),
    Stopped,
}

static NETWORK: Mutex<Network> = Mutex::new(Network::NotStarted);

fn network_state() -> MutexGuard<'static, Network> {
    // The state is a plain enum: a panic while holding the lock cannot leave
    // it half-updated, so a poisoned lock is still sound to use.
    NETWORK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn start_network() -> Result<(), FdbTargetError> {
    let mut network = network_state();
    match *network {
        Network::Running { .. } => Ok(()),
        Network::Stopped => Err(FdbTargetError::NetworkStopped),
        Network::Failed(ref error) => Err(FdbTargetError::Network(error.clone())),
        Network::NotStarted => {
            // SAFETY: the crate requires the returned guard to be dropped
            // before the process exits. It lives in `NETWORK` until
            // `shutdown` drops it, and the worker calls `shutdown` before it
            // exits (inside its E−A CPU scope); see `shutdown`.
            let booted = FdbApiBuilder::default()
                .build()
                .and_then(|builder| unsafe { builder.boot() });
            match booted {
                Ok(guard) => {
                    *network = Network::Running { _guard: guard };
                    Ok(())
                }
                Err(e) => {
                    *network = Network::Failed(kv_error(e));
                    Err(FdbTargetError::Network(kv_error(e)))
                }
            }
        }
    }
}

/// Stops the client network and joins its thread; later [`Fdb::open`] calls
/// fail. Call it once, after every [`Fdb`] and transaction is dropped and
/// before the process exits: the worker does so inside its E−A CPU scope,
/// so the network's shutdown work is charged to the run. Calling it again, or
/// without a started network, only keeps the network from starting.
pub fn shutdown() {
    let previous = std::mem::replace(&mut *network_state(), Network::Stopped);
    drop(previous);
}

/// A FoundationDB cluster as a kv [`Database`].
pub struct Fdb {
    db: Arc<foundationdb::Database>,
    description: String,
    /// The arm's options that no database option sets
    /// ([`TransactionDefaults::per_transaction`](super::defaults::TransactionDefaults::per_transaction)).
    per_transaction: Arc<[KvOption]>,
}

impl Fdb {
    /// Starts the client network if this process has not yet, and opens the
    /// cluster named by `settings` with its transaction options as defaults.
    pub fn open(settings: &FdbSettings) -> Result<Fdb, FdbTargetError> {
        let cluster_file = settings.resolved_cluster_file();
        if !cluster_file.exists() {
            return Err(FdbTargetError::ClusterFileMissing(cluster_file));
        }
        let path = cluster_file
            .to_str()
            .filter(|path| !path.contains('\0'))
            .ok_or_else(|| FdbTargetError::ClusterFilePath(cluster_file.clone()))?;
        let options = database_options(settings)?;
        start_network()?;
        let db = foundationdb::Database::new(Some(path)).map_err(|e| FdbTargetError::Open {
            path: cluster_file.clone(),
            source: kv_error(e),
        })?;
        for (name, option) in options {
            db.set_option(option).map_err(|e| FdbTargetError::Setting {
                name,
                source: kv_error(e),
            })?;
        }
        Ok(Fdb {
            db: Arc::new(db),
            description: settings.describe(&cluster_file),
            per_transaction: settings.options.per_transaction().into(),
        })
    }
}

impl Database for Fdb {
    fn begin(&self) -> Box<dyn Transaction> {
        let state = match self.db.create_trx() {
            Ok(tr) => State::Open(tr),
            Err(e) => State::Failed(kv_error(e)),
        };
        let mut tx = FdbTransaction {
            db: Arc::clone(&self.db),
            per_transaction: Arc::clone(&self.per_transaction),
            state,
            used_during_commit: false,
            stamp_request: None,
            stamp: None,
            committed_version: None,
        };
        tx.set_per_transaction_options();
        Box::new(tx)
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}

/// Reads the cluster's status document and its health fields; the campaign
/// gates on [`ClusterHealth::gate`] before and after each run.
pub fn cluster_health(db: &Fdb) -> Result<ClusterHealth, FdbTargetError> {
    let status = |e: FdbError| FdbTargetError::Status(kv_error(e));
    let tr = db.db.create_trx().map_err(status)?;
    tr.set_option(TransactionOption::Timeout(STATUS_TIMEOUT_MS))
        .map_err(status)?;
    let document = block_on(tr.get(STATUS_KEY, false))
        .map_err(status)?
        .ok_or(FdbTargetError::StatusEmpty)?;
    Ok(parse_status(&document)?)
}

/// One transaction. The crate's `commit`, `on_error` and `cancel` consume
/// the transaction and hand it back in another type, so the handle moves
/// between the states below.
struct FdbTransaction {
    /// Kept to start a fresh transaction when creating one failed.
    db: Arc<foundationdb::Database>,
    per_transaction: Arc<[KvOption]>,
    state: State,
    /// A call was made after `commit`. libfdb_c then keeps
    /// `used_during_commit` as the transaction's error and `on_error`
    /// answers with it; the crate's commit consumes the transaction, so that
    /// call never reaches libfdb_c and the rule is kept here.
    used_during_commit: bool,
    /// libfdb_c's versionstamp future, asked for before commit.
    stamp_request: Option<StampFuture>,
    /// Its answer once the commit finished.
    stamp: Option<Result<Versionstamp, KvError>>,
    /// The version the last successful commit wrote at (none if read-only).
    committed_version: Option<u64>,
}

type StampFuture = Box<
    dyn std::future::Future<Output = foundationdb::FdbResult<foundationdb::future::FdbSlice>>
        + Send
        + Unpin,
>;

enum State {
    Open(foundationdb::Transaction),
    /// Committed; further use fails with `used_during_commit` until
    /// `on_error` resets it, as in FoundationDB.
    Committed(TransactionCommitted),
    /// Commit failed; FoundationDB keeps the error with the transaction so
    /// that its `on_error` backs off for it.
    CommitFailed(TransactionCommitError),
    /// Cancelled: every call fails with `cancelled`, as in FoundationDB.
    Cancelled,
    /// No usable transaction: creating it failed.
    Failed(KvError),
}

/// FoundationDB's `used_during_commit` (2017).
fn used_during_commit() -> KvError {
    kv_error(FdbError::from_code(2017))
}

impl FdbTransaction {
    fn live(&mut self) -> Result<&foundationdb::Transaction, KvError> {
        match &self.state {
            State::Open(tr) => Ok(tr),
            State::Committed(_) | State::CommitFailed(_) => {
                self.used_during_commit = true;
                Err(used_during_commit())
            }
            State::Cancelled => Err(KvError::Cancelled),
            State::Failed(error) => Err(error.clone()),
        }
    }

    /// Buffers a write; a transaction that cannot take it reports its state
    /// at the next call, as FoundationDB reports write errors.
    fn write(&mut self, op: impl FnOnce(&foundationdb::Transaction)) {
        match &self.state {
            State::Open(tr) => op(tr),
            State::Committed(_) | State::CommitFailed(_) => self.used_during_commit = true,
            State::Cancelled | State::Failed(_) => {}
        }
    }
}

impl Transaction for FdbTransaction {
    fn get_read_version(&mut self) -> Result<u64, KvError> {
        let version = block_on(self.live()?.get_read_version()).map_err(kv_error)?;
        Ok(version_u64(version))
    }

    fn get(&mut self, key: &[u8], snapshot: bool) -> Result<Option<Vec<u8>>, KvError> {
        let value = block_on(self.live()?.get(key, snapshot)).map_err(kv_error)?;
        Ok(value.map(|slice| slice.to_vec()))
    }

    fn get_range(
        &mut self,
        keys: KeyRange<'_>,
        options: RangeOptions,
    ) -> Result<Vec<KeyValue>, KvError> {
        let tr = self.live()?;
        let mut range = RangeOption::from((keys.begin, keys.end));
        range.limit = (options.limit > 0).then_some(options.limit as usize);
        range.reverse = options.reverse;
        // The caller takes the whole result at once, so ask for it at once:
        // WANT_ALL returns the most rows per round trip.
        range.mode = StreamingMode::WantAll;
        let mut rows = Vec::new();
        let mut iteration = 1;
        loop {
            let batch =
                block_on(tr.get_range(&range, iteration, options.snapshot)).map_err(kv_error)?;
            rows.extend(batch.iter().map(|kv| KeyValue {
                key: kv.key().to_vec(),
                value: kv.value().to_vec(),
            }));
            // `next_range` lowers the limit by the rows received and moves the
            // bound past the last key; `None` once the limit or the end is hit.
            match range.next_range(&batch) {
                Some(next) => range = next,
                None => return Ok(rows),
            }
            iteration += 1;
        }
    }

    fn set(&mut self, key: &[u8], value: &[u8]) {
        self.write(|tr| tr.set(key, value));
    }

    fn clear(&mut self, key: &[u8]) {
        self.write(|tr| tr.clear(key));
    }

    fn clear_range(&mut self, begin: &[u8], end: &[u8]) {
        self.write(|tr| tr.clear_range(begin, end));
    }

    fn commit(&mut self) -> Result<u64, KvError> {
        // `Cancelled` only holds the place: every path below sets the state.
        let tr = match std::mem::replace(&mut self.state, State::Cancelled) {
            State::Open(tr) => tr,
            other => {
                self.state = other;
                return Err(self.live().err().unwrap_or_else(used_during_commit));
            }
        };
        // A read-only commit has no version of its own (-1); the contract
        // returns the read version then. Asking for it before the commit
        // costs nothing extra: reads or the commit itself fetch it anyway,
        // and the transaction shares one read-version request.
        let read_version = tr.get_read_version();
        let result = block_on(tr.commit());
        // libfdb_c sets the versionstamp future once the commit finished.
        self.stamp = self.stamp_request.take().map(|f| {
            block_on(f)
                .map_err(kv_error)
                .and_then(|b| fdb_more::stamp(&b))
        });
        match result {
            Ok(committed) => {
                let version = committed.committed_version();
                self.state = State::Committed(committed);
                match version.map_err(kv_error)? {
                    version if version >= 0 => {
                        self.committed_version = Some(version_u64(version));
                        Ok(version_u64(version))
                    }
                    _ => Ok(version_u64(block_on(read_version).map_err(kv_error)?)),
                }
            }
            Err(failed) => {
                let error = kv_error(*failed);
                self.state = State::CommitFailed(failed);
                Err(error)
            }
        }
    }

    fn on_error(&mut self, error: KvError) -> Result<(), KvError> {
        let code = error.code();
        if self.used_during_commit {
            return Err(used_during_commit());
        }
        // `Cancelled` only holds the place: every path below sets the state.
        let retried = match std::mem::replace(&mut self.state, State::Cancelled) {
            State::Cancelled => {
                self.state = State::Cancelled;
                return Err(KvError::Cancelled);
            }
            // The usual path: the commit's own error, with the backoff
            // FoundationDB tracks for it.
            State::CommitFailed(failed) if failed.code() == code => block_on(failed.on_error()),
            State::CommitFailed(failed) => {
                block_on(failed.reset().on_error(FdbError::from_code(code)))
            }
            State::Committed(committed) => {
                block_on(committed.reset().on_error(FdbError::from_code(code)))
            }
            State::Open(tr) => block_on(tr.on_error(FdbError::from_code(code))),
            State::Failed(_) => match self.db.create_trx() {
                Ok(tr) => block_on(tr.on_error(FdbError::from_code(code))),
                Err(e) => Err(e),
            },
        };
        self.stamp_request = None;
        self.stamp = None;
        self.committed_version = None;
        match retried {
            Ok(tr) => {
                self.state = State::Open(tr);
                // A retried transaction has lost its non-persistent options;
                // the arm's are set again, as at the top of an attempt.
                self.set_per_transaction_options();
                Ok(())
            }
            Err(refused) => {
                // libfdb_c cancels a transaction whose `on_error` gave up
                // (`RYWImpl::onError`); the crate dropped it, so `Cancelled`
                // answers later calls as libfdb_c would. FoundationDB
                // returns the error it was given when it will not retry:
                // hand back the caller's value so its message survives.
                self.state = State::Cancelled;
                Err(if refused.code() == code {
                    error
                } else {
                    kv_error(refused)
                })
            }
        }
    }

    fn cancel(&mut self) {
        if let State::Open(tr) = std::mem::replace(&mut self.state, State::Cancelled) {
            // Dropping the cancelled handle destroys the transaction; nothing
            // can reset it through this interface.
            drop(tr.cancel());
        }
    }

    // WIT 0.3.0's calls, onto the crate in fdb_more.rs.

    fn get_key(&mut self, selector: &KeySelector, snapshot: bool) -> Result<Vec<u8>, KvError> {
        fdb_more::get_key(self.live()?, selector, snapshot)
    }

    fn get_range_selected(
        &mut self,
        range: SelectorRange<'_>,
        limits: RangeLimits,
    ) -> Result<RangeResult, KvError> {
        fdb_more::get_range(self.live()?, range, limits)
    }

    fn atomic_op(&mut self, op: MutationType, key: &[u8], operand: &[u8]) {
        self.write(|tr| tr.atomic_op(key, operand, fdb_more::mutation(op)));
    }

    fn set_versionstamped_key(&mut self, key: &[u8], offset: u32, value: &[u8]) {
        let key = fdb_more::with_offset(key, offset);
        let op = foundationdb::options::MutationType::SetVersionstampedKey;
        self.write(|tr| tr.atomic_op(&key, value, op));
    }

    fn set_versionstamped_value(&mut self, key: &[u8], value: &[u8], offset: u32) {
        let value = fdb_more::with_offset(value, offset);
        let op = foundationdb::options::MutationType::SetVersionstampedValue;
        self.write(|tr| tr.atomic_op(key, &value, op));
    }

    fn request_versionstamp(&mut self) -> Result<(), KvError> {
        let future = self.live()?.get_versionstamp();
        self.stamp_request = Some(Box::new(future));
        Ok(())
    }

    fn versionstamp(&mut self) -> Result<Versionstamp, KvError> {
        match &self.stamp {
            Some(answer) => answer.clone(),
            None => Err(KvError::from_fdb_code(2015, "future_not_set")),
        }
    }

    fn add_conflict_range(&mut self, kind: ConflictKind, begin: &[u8], end: &[u8]) {
        // libfdb_c answers at once; keep its error for the next call as
        // the contract defers write errors.
        let mut failed = None;
        self.write(|tr| {
            failed = tr
                .add_conflict_range(begin, end, fdb_more::conflict(kind))
                .err();
        });
        if let Some(e) = failed {
            self.state = State::Failed(kv_error(e));
        }
    }

    fn set_read_version(&mut self, version: u64) {
        let version = i64::try_from(version).unwrap_or(i64::MAX);
        self.write(|tr| tr.set_read_version(version));
    }

    fn get_committed_version(&self) -> Option<u64> {
        self.committed_version
    }

    fn get_approximate_size(&mut self) -> Result<u64, KvError> {
        fdb_more::approximate_size(self.live()?)
    }

    fn get_estimated_range_size_bytes(&mut self, begin: &[u8], end: &[u8]) -> Result<u64, KvError> {
        fdb_more::estimated_range_size(self.live()?, begin, end)
    }

    fn set_option(&mut self, option: KvOption) {
        let Some(option) = fdb_more::option(option) else {
            return;
        };
        let mut failed = None;
        self.write(|tr| failed = tr.set_option(option).err());
        if let Some(e) = failed {
            self.state = State::Failed(kv_error(e));
        }
    }

    fn watch(&mut self, key: &[u8]) -> Box<dyn super::Watch> {
        match self.live() {
            Ok(tr) => Box::new(fdb_more::FdbWatch::new(Box::new(tr.watch(key)))),
            Err(error) => Box::new(super::FailedWatch(error)),
        }
    }
}

impl FdbTransaction {
    /// The arm's per-transaction options, set when the transaction begins
    /// and again after each retry.
    fn set_per_transaction_options(&mut self) {
        for option in Arc::clone(&self.per_transaction).iter() {
            Transaction::set_option(self, *option);
        }
    }
}

/// A FoundationDB error as the WIT error variant.
pub(super) fn kv_error(error: FdbError) -> KvError {
    KvError::from_fdb_code(error.code(), error.message())
}

/// FoundationDB versions are non-negative once fetched.
fn version_u64(version: i64) -> u64 {
    u64::try_from(version).unwrap_or(0)
}

fn database_options(
    settings: &FdbSettings,
) -> Result<Vec<(&'static str, DatabaseOption)>, FdbTargetError> {
    let int = |name: &'static str, value: u32| {
        i32::try_from(value).map_err(|_| FdbTargetError::SettingRange { name, value })
    };
    let mut options = Vec::new();
    if let Some(ms) = settings.options.timeout_ms {
        options.push((
            "timeout_ms",
            DatabaseOption::TransactionTimeout(int("timeout_ms", ms)?),
        ));
    }
    if let Some(limit) = settings.options.retry_limit {
        let limit = int("retry_limit", limit)?;
        options.push(("retry_limit", DatabaseOption::TransactionRetryLimit(limit)));
    }
    if let Some(ms) = settings.options.max_retry_delay_ms {
        let ms = int("max_retry_delay_ms", ms)?;
        options.push((
            "max_retry_delay_ms",
            DatabaseOption::TransactionMaxRetryDelay(ms),
        ));
    }
    if let Some(bytes) = settings.options.size_limit {
        let bytes = int("size_limit", bytes)?;
        options.push(("size_limit", DatabaseOption::TransactionSizeLimit(bytes)));
    }
    if settings.options.causal_read_risky {
        options.push((
            "causal_read_risky",
            DatabaseOption::TransactionCausalReadRisky,
        ));
    }
    if settings.options.snapshot_ryw_disable {
        options.push(("snapshot_ryw_disable", DatabaseOption::SnapshotRywDisable));
    }
    if let Some(entries) = settings.location_cache_size {
        let entries = int("location_cache_size", entries)?;
        options.push((
            "location_cache_size",
            DatabaseOption::LocationCacheSize(entries),
        ));
    }
    Ok(options)
}
