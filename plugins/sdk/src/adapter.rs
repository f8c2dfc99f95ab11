//! kv adapters: components of world `kv-adapter` that sit between a
//! workload and the target, export the kv client and call the next one down
//! the chain (another adapter, or the host).
//!
//! An adapter is a struct holding the next transaction plus an
//! implementation of [`KvAdapter`]; every method forwards by default, so an
//! adapter overrides only what it changes:
//!
//! ```ignore
//! use blocklab_sdk::adapter::KvAdapter;
//! use blocklab_sdk::kv;
//!
//! struct Passthrough(kv::Transaction);
//!
//! impl KvAdapter for Passthrough {
//!     fn begin() -> Self {
//!         Passthrough(kv::Transaction::new())
//!     }
//!     fn next(&self) -> &kv::Transaction {
//!         &self.0
//!     }
//! }
//!
//! blocklab_sdk::export_kv_adapter!(Passthrough);
//! ```
//!
//! The host composes adapters with the workload at load time (`adapters =
//! [...]` on an arm, `blocklab run --adapter`); calls between them never
//! leave wasm.

use crate::kv::{
    self, ConflictKind, Error, Future, KeySelector, MutationType, RangeBatch, RangeLimits,
    RangeOptions, Rows, TransactionOption, Versionstamp,
};

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "kv-adapter",
        path: "../../wit/v0.3.0",
        pub_export_macro: true,
        default_bindings_module: "blocklab_sdk::adapter::bindings",
        // The imported kv and env are the workload world's: one set of
        // import glue, and `kv::Transaction` is the adapter's next hop.
        with: {
            "blocklab:bench/kv@0.3.0": crate::bindings::blocklab::bench0_3_0::kv,
            "blocklab:bench/env@0.3.0": crate::bindings::blocklab::bench0_3_0::env,
        },
    });
}

/// One transaction of a kv adapter. Keys and values arrive owned, so an
/// adapter can rewrite them without copying.
pub trait KvAdapter: Sized + 'static {
    /// Starts a transaction; usually opens the next one with
    /// `kv::Transaction::new()`.
    fn begin() -> Self;

    /// The next transaction down the chain, where the defaults forward.
    fn next(&self) -> &kv::Transaction;

    fn read_version(&self) -> Result<u64, Error> {
        self.next().read_version()
    }

    fn get(&self, key: Vec<u8>, snapshot: bool) -> Result<Option<Vec<u8>>, Error> {
        if snapshot {
            self.next().snapshot_get(&key)
        } else {
            self.next().get(&key)
        }
    }

    fn get_range(
        &self,
        begin: Vec<u8>,
        end: Vec<u8>,
        options: RangeOptions,
    ) -> Result<Rows, Error> {
        self.next().get_range_with(&begin, &end, options)
    }

    fn set(&self, key: Vec<u8>, value: Vec<u8>) {
        self.next().set(&key, &value);
    }

    fn clear(&self, key: Vec<u8>) {
        self.next().clear(&key);
    }

    fn clear_range(&self, begin: Vec<u8>, end: Vec<u8>) {
        self.next().clear_range(&begin, &end);
    }

    fn commit(&self) -> Result<u64, Error> {
        self.next().commit()
    }

    fn on_error(&self, error: Error) -> Result<(), Error> {
        self.next().on_error(error)
    }

    fn cancel(&self) {
        self.next().cancel();
    }

    /// Makes the transaction fresh for reuse (the workload's SDK calls it
    /// instead of dropping one); an adapter with per-transaction state
    /// clears it here too.
    fn reset(&self) {
        self.next().reset();
    }

    // WIT 0.3.0's calls. An adapter that rewrites keys must override every
    // one that carries a key (kv-subspace shows how); the defaults forward.

    fn start_read_version(&self) -> Future<u64> {
        self.next().start_read_version()
    }

    fn start_get(&self, key: Vec<u8>, snapshot: bool) -> Future<Option<Vec<u8>>> {
        match snapshot {
            true => self.next().start_snapshot_get(&key),
            false => self.next().start_get(&key),
        }
    }

    fn start_get_key(&self, selector: KeySelector, snapshot: bool) -> Future<Vec<u8>> {
        self.next().start_get_key(&selector, snapshot)
    }

    fn start_get_range(
        &self,
        begin: KeySelector,
        end: KeySelector,
        limits: RangeLimits,
    ) -> Future<RangeBatch> {
        self.next().start_get_range(&begin, &end, &limits)
    }

    fn start_commit(&self) -> Future<u64> {
        self.next().start_commit()
    }

    fn start_estimated_range_size(&self, begin: Vec<u8>, end: Vec<u8>) -> Future<u64> {
        self.next().start_estimated_range_size(&begin, &end)
    }

    fn versionstamp(&self) -> Future<Versionstamp> {
        self.next().versionstamp()
    }

    fn atomic_op(&self, op: MutationType, key: Vec<u8>, operand: Vec<u8>) {
        self.next().atomic_op(op, &key, &operand);
    }

    fn set_versionstamped_key(&self, key: Vec<u8>, offset: u32, value: Vec<u8>) {
        self.next().set_versionstamped_key(&key, offset, &value);
    }

    fn set_versionstamped_value(&self, key: Vec<u8>, value: Vec<u8>, offset: u32) {
        self.next().set_versionstamped_value(&key, &value, offset);
    }

    fn add_conflict_range(&self, kind: ConflictKind, begin: Vec<u8>, end: Vec<u8>) {
        match kind {
            ConflictKind::Read => self.next().add_read_conflict_range(&begin, &end),
            ConflictKind::Write => self.next().add_write_conflict_range(&begin, &end),
        }
    }

    fn set_read_version(&self, version: u64) {
        self.next().set_read_version(version);
    }

    fn committed_version(&self) -> Option<u64> {
        self.next().committed_version()
    }

    fn approximate_size(&self) -> Result<u64, Error> {
        self.next().approximate_size()
    }

    fn set_option(&self, option: TransactionOption) {
        self.next().set_option(option);
    }

    fn watch(&self, key: Vec<u8>) -> kv::Watch {
        self.next().watch(&key)
    }
}

/// Exports a [`KvAdapter`] as the component's `kv` interface. Use it once,
/// at the top level of the adapter crate.
#[macro_export]
macro_rules! export_kv_adapter {
    ($adapter:ty) => {
        const _: () = {
            type BlocklabKvAdapter = $crate::adapter::__private::Export<$adapter>;
            $crate::adapter::__private::export!(
                BlocklabKvAdapter with_types_in $crate::adapter::bindings
            );
        };
    };
}

#[doc(hidden)]
pub mod __private {
    //! What `export_kv_adapter!` expands to; not part of the SDK's API.

    use super::KvAdapter;
    use crate::kv::{Error, RangeOptions, Rows};
    use std::marker::PhantomData;

    pub use super::bindings::export;
    use super::bindings::exports::blocklab::bench::kv as wit;
    use crate::bindings::blocklab::bench0_3_0::kv as raw;
    use crate::kv::{Future, KeySelector, RangeLimits};

    /// The `kv` export of adapter `A`.
    pub struct Export<A>(PhantomData<A>);

    /// One exported transaction: the adapter's state.
    pub struct Adapted<A>(A);

    impl<A: KvAdapter> wit::Guest for Export<A> {
        type Transaction = Adapted<A>;
        type Future = AdaptedFuture;
        type Watch = AdaptedWatch;

        fn wait_all(futures: Vec<wit::FutureBorrow<'_>>) {
            let held: Vec<&AdaptedFuture> = futures.iter().map(|f| f.get()).collect();
            let any: Vec<&dyn kv::AnyFuture> =
                held.iter().map(|f| &f.0 as &dyn kv::AnyFuture).collect();
            kv::wait_all(&any);
        }

        fn wait_any(futures: Vec<wit::FutureBorrow<'_>>) -> u32 {
            let held: Vec<&AdaptedFuture> = futures.iter().map(|f| f.get()).collect();
            let any: Vec<&dyn kv::AnyFuture> =
                held.iter().map(|f| &f.0 as &dyn kv::AnyFuture).collect();
            kv::wait_any(&any) as u32
        }
    }

    /// One exported future: the next hop's, answering as it crossed.
    pub struct AdaptedFuture(Future<raw::Answer>);

    fn export<T: kv::FromAnswer>(f: Future<T>) -> wit::Future {
        wit::Future::new(AdaptedFuture(f.erase()))
    }

    impl wit::GuestFuture for AdaptedFuture {
        fn is_ready(&self) -> bool {
            self.0.is_ready()
        }

        fn wait(&self) -> Result<wit::Answer, wit::Error> {
            self.0.wait_raw().map(answer).map_err(to_wit)
        }
    }

    /// One exported watch: the next hop's.
    pub struct AdaptedWatch(kv::Watch);

    impl wit::GuestWatch for AdaptedWatch {
        fn is_ready(&self) -> bool {
            self.0.is_ready()
        }

        fn wait(&self) -> Result<(), wit::Error> {
            self.0.wait().map_err(to_wit)
        }

        fn wait_for(&self, timeout_ms: u32) -> Result<bool, wit::Error> {
            let timeout = std::time::Duration::from_millis(timeout_ms.into());
            self.0.wait_for(timeout).map_err(to_wit)
        }
    }

    fn answer(a: raw::Answer) -> wit::Answer {
        match a {
            raw::Answer::Version(v) => wit::Answer::Version(v),
            raw::Answer::Value(v) => wit::Answer::Value(v),
            raw::Answer::Key(k) => wit::Answer::Key(k),
            raw::Answer::Range(r) => wit::Answer::Range(wit::RangeResult {
                rows: r.rows,
                more: r.more,
            }),
            raw::Answer::Versionstamp(s) => wit::Answer::Versionstamp(s),
            raw::Answer::Size(n) => wit::Answer::Size(n),
        }
    }

    fn to_wit(error: Error) -> wit::Error {
        match error {
            Error::NotCommitted => wit::Error::NotCommitted,
            Error::TransactionTooOld => wit::Error::TransactionTooOld,
            Error::FutureVersion => wit::Error::FutureVersion,
            Error::KeyTooLarge => wit::Error::KeyTooLarge,
            Error::ValueTooLarge => wit::Error::ValueTooLarge,
            Error::TransactionTooLarge => wit::Error::TransactionTooLarge,
            Error::TimedOut => wit::Error::TimedOut,
            Error::Cancelled => wit::Error::Cancelled,
            Error::Other { code, message } => wit::Error::Other(wit::ErrorDetail { code, message }),
        }
    }

    fn from_wit(error: wit::Error) -> Error {
        match error {
            wit::Error::NotCommitted => Error::NotCommitted,
            wit::Error::TransactionTooOld => Error::TransactionTooOld,
            wit::Error::FutureVersion => Error::FutureVersion,
            wit::Error::KeyTooLarge => Error::KeyTooLarge,
            wit::Error::ValueTooLarge => Error::ValueTooLarge,
            wit::Error::TransactionTooLarge => Error::TransactionTooLarge,
            wit::Error::TimedOut => Error::TimedOut,
            wit::Error::Cancelled => Error::Cancelled,
            wit::Error::Other(d) => Error::Other {
                code: d.code,
                message: d.message,
            },
        }
    }

    impl<A: KvAdapter> wit::GuestTransaction for Adapted<A> {
        fn new() -> Self {
            Adapted(A::begin())
        }

        fn get_read_version(&self) -> Result<u64, wit::Error> {
            self.0.read_version().map_err(to_wit)
        }

        fn get(&self, key: Vec<u8>, snapshot: bool) -> Result<Option<Vec<u8>>, wit::Error> {
            self.0.get(key, snapshot).map_err(to_wit)
        }

        fn get_range(
            &self,
            begin: Vec<u8>,
            end: Vec<u8>,
            limit: u32,
            reverse: bool,
            snapshot: bool,
        ) -> Result<Vec<u8>, wit::Error> {
            let options = RangeOptions {
                limit,
                reverse,
                snapshot,
            };
            self.0
                .get_range(begin, end, options)
                .map(Rows::into_packed)
                .map_err(to_wit)
        }

        fn set(&self, key: Vec<u8>, value: Vec<u8>) {
            self.0.set(key, value);
        }

        fn clear(&self, key: Vec<u8>) {
            self.0.clear(key);
        }

        fn clear_range(&self, begin: Vec<u8>, end: Vec<u8>) {
            self.0.clear_range(begin, end);
        }

        fn commit(&self) -> Result<u64, wit::Error> {
            self.0.commit().map_err(to_wit)
        }

        fn on_error(&self, e: wit::Error) -> Result<(), wit::Error> {
            self.0.on_error(from_wit(e)).map_err(to_wit)
        }

        fn cancel(&self) {
            self.0.cancel();
        }

        fn reset(&self) {
            self.0.reset();
        }

        fn start_get_read_version(&self) -> wit::Future {
            export(self.0.start_read_version())
        }

        fn start_get(&self, key: Vec<u8>, snapshot: bool) -> wit::Future {
            export(self.0.start_get(key, snapshot))
        }

        fn start_get_key(&self, s: wit::KeySelector, snapshot: bool) -> wit::Future {
            export(self.0.start_get_key(selector(s), snapshot))
        }

        fn start_get_range(
            &self,
            begin: wit::KeySelector,
            end: wit::KeySelector,
            options: wit::RangeOptions,
        ) -> wit::Future {
            export(
                self.0
                    .start_get_range(selector(begin), selector(end), limits(options)),
            )
        }

        fn start_commit(&self) -> wit::Future {
            export(self.0.start_commit())
        }

        fn start_get_estimated_range_size_bytes(
            &self,
            begin: Vec<u8>,
            end: Vec<u8>,
        ) -> wit::Future {
            export(self.0.start_estimated_range_size(begin, end))
        }

        fn atomic_op(&self, op: wit::MutationType, key: Vec<u8>, operand: Vec<u8>) {
            self.0.atomic_op(wit_convert::mutation(op), key, operand);
        }

        fn set_versionstamped_key(&self, key: Vec<u8>, offset: u32, value: Vec<u8>) {
            self.0.set_versionstamped_key(key, offset, value);
        }

        fn set_versionstamped_value(&self, key: Vec<u8>, value: Vec<u8>, offset: u32) {
            self.0.set_versionstamped_value(key, value, offset);
        }

        fn get_versionstamp(&self) -> wit::Future {
            export(self.0.versionstamp())
        }

        fn add_conflict_range(&self, kind: wit::ConflictKind, begin: Vec<u8>, end: Vec<u8>) {
            let kind = match kind {
                wit::ConflictKind::Read => kv::ConflictKind::Read,
                wit::ConflictKind::Write => kv::ConflictKind::Write,
            };
            self.0.add_conflict_range(kind, begin, end);
        }

        fn set_read_version(&self, version: u64) {
            self.0.set_read_version(version);
        }

        fn get_committed_version(&self) -> Option<u64> {
            self.0.committed_version()
        }

        fn get_approximate_size(&self) -> Result<u64, wit::Error> {
            self.0.approximate_size().map_err(to_wit)
        }

        fn set_option(&self, opt: wit::TransactionOption) {
            self.0.set_option(wit_convert::option(opt));
        }

        fn watch(&self, key: Vec<u8>) -> wit::Watch {
            wit::Watch::new(AdaptedWatch(self.0.watch(key)))
        }
    }

    fn selector(s: wit::KeySelector) -> KeySelector {
        KeySelector {
            key: s.key,
            or_equal: s.or_equal,
            offset: s.offset,
        }
    }

    fn limits(o: wit::RangeOptions) -> RangeLimits {
        RangeLimits {
            limit: o.limit,
            target_bytes: o.target_bytes,
            mode: wit_convert::mode(o.mode),
            iteration: o.iteration,
            reverse: o.reverse,
            snapshot: o.snapshot,
        }
    }

    use super::wit_convert;
    use crate::kv;
}

/// The exported kv interface's enums as the SDK's (the adapter world's
/// export has its own copies of the WIT types).
mod wit_convert {
    use super::bindings::exports::blocklab::bench::kv as wit;
    use crate::kv::{MutationType, Priority, StreamingMode, TransactionOption};

    pub(super) fn mutation(op: wit::MutationType) -> MutationType {
        match op {
            wit::MutationType::Add => MutationType::Add,
            wit::MutationType::BitAnd => MutationType::BitAnd,
            wit::MutationType::BitOr => MutationType::BitOr,
            wit::MutationType::BitXor => MutationType::BitXor,
            wit::MutationType::Max => MutationType::Max,
            wit::MutationType::Min => MutationType::Min,
            wit::MutationType::ByteMax => MutationType::ByteMax,
            wit::MutationType::ByteMin => MutationType::ByteMin,
            wit::MutationType::CompareAndClear => MutationType::CompareAndClear,
            wit::MutationType::AppendIfFits => MutationType::AppendIfFits,
        }
    }

    pub(super) fn mode(m: wit::StreamingMode) -> StreamingMode {
        match m {
            wit::StreamingMode::WantAll => StreamingMode::WantAll,
            wit::StreamingMode::Iterator => StreamingMode::Iterator,
            wit::StreamingMode::Exact => StreamingMode::Exact,
            wit::StreamingMode::Small => StreamingMode::Small,
            wit::StreamingMode::Medium => StreamingMode::Medium,
            wit::StreamingMode::Large => StreamingMode::Large,
            wit::StreamingMode::Serial => StreamingMode::Serial,
        }
    }

    pub(super) fn option(o: wit::TransactionOption) -> TransactionOption {
        use wit::TransactionOption as W;
        match o {
            W::Timeout(ms) => TransactionOption::Timeout(ms),
            W::RetryLimit(n) => TransactionOption::RetryLimit(n),
            W::MaxRetryDelay(ms) => TransactionOption::MaxRetryDelay(ms),
            W::SizeLimit(n) => TransactionOption::SizeLimit(n),
            W::Priority(p) => TransactionOption::Priority(match p {
                wit::Priority::Default => Priority::Default,
                wit::Priority::Batch => Priority::Batch,
                wit::Priority::SystemImmediate => Priority::SystemImmediate,
            }),
            W::ReadYourWritesDisable => TransactionOption::ReadYourWritesDisable,
            W::SnapshotRywEnable => TransactionOption::SnapshotRywEnable,
            W::SnapshotRywDisable => TransactionOption::SnapshotRywDisable,
            W::CausalReadRisky => TransactionOption::CausalReadRisky,
            W::LockAware => TransactionOption::LockAware,
        }
    }
}

/// gRPC adapters: components of world `grpc-adapter` (wit/v0.5.0, the
/// grpc client the SDK's workloads import), which export the grpc client
/// and call the next one down the chain.
///
/// An adapter implements [`GrpcAdapter`] (calls without a stream) and names
/// its stream type, a struct holding the next stream that implements
/// [`GrpcStreamAdapter`]; every method forwards by default, a call's
/// options ([`grpc::Call`]) included.
pub mod grpc {
    use crate::grpc::{self, Call, Metadata, Reply, Status};

    #[doc(hidden)]
    pub mod bindings {
        wit_bindgen::generate!({
            world: "grpc-adapter",
            path: "../../wit/v0.5.0",
            pub_export_macro: true,
            default_bindings_module: "blocklab_sdk::adapter::grpc::bindings",
            with: {
                "blocklab:bench/grpc@0.5.0": crate::bindings::blocklab::bench0_5_0::grpc,
                "blocklab:bench/env@0.3.0": crate::bindings::blocklab::bench0_3_0::env,
            },
        });
    }

    /// The calls of a grpc adapter that are not on a stream.
    pub trait GrpcAdapter: 'static {
        /// This adapter's streams.
        type Stream: GrpcStreamAdapter;

        fn unary(method: String, request: Vec<u8>, call: Call) -> Result<Reply, Status> {
            call.unary(&method, &request)
        }

        /// Opens a stream; usually wraps `call.open_stream(&method)?`.
        fn open_stream(method: String, call: Call) -> Result<Self::Stream, Status>;
    }

    /// One stream of a grpc adapter.
    pub trait GrpcStreamAdapter: 'static {
        /// The next stream down the chain, where the defaults forward.
        fn next(&self) -> &grpc::Stream;

        fn send(&self, message: Vec<u8>) -> Result<(), Status> {
            self.next().send(&message)
        }

        fn recv(&self) -> Result<Option<Vec<u8>>, Status> {
            self.next().recv()
        }

        fn close_send(&self) {
            self.next().close_send();
        }

        fn headers(&self) -> Result<Metadata, Status> {
            self.next().headers()
        }

        fn trailers(&self) -> Option<Metadata> {
            self.next().trailers()
        }
    }

    #[doc(hidden)]
    pub mod __private {
        //! What `export_grpc_adapter!` expands to; not part of the SDK's API.

        use super::{GrpcAdapter, GrpcStreamAdapter};
        use crate::grpc::{Call, Metadata, Status};
        use std::marker::PhantomData;

        pub use super::bindings::export;
        use super::bindings::exports::blocklab::bench0_5_0::grpc as wit;

        /// The `grpc` export of adapter `A`.
        pub struct Export<A>(PhantomData<A>);

        /// One exported stream.
        pub struct Adapted<S>(S);

        fn entries(metadata: Metadata) -> Vec<wit::Entry> {
            metadata
                .0
                .into_iter()
                .map(|(key, value)| wit::Entry { key, value })
                .collect()
        }

        fn to_wit(status: Status) -> wit::Status {
            wit::Status {
                code: status.code,
                message: status.message,
                metadata: entries(status.metadata),
            }
        }

        /// The options a workload gave, as the SDK's [`Call`].
        fn call(options: wit::CallOptions) -> Call {
            let mut call = options
                .metadata
                .into_iter()
                .fold(Call::new(), |c, e| c.metadata(e.key, e.value));
            if let Some(ms) = options.deadline_ms {
                call = call.deadline_ms(ms);
            }
            if matches!(options.compression, wit::Compression::Gzip) {
                call = call.gzip();
            }
            call
        }

        impl<A: GrpcAdapter> wit::Guest for Export<A> {
            type Stream = Adapted<A::Stream>;

            fn unary(
                method: String,
                request: Vec<u8>,
                options: wit::CallOptions,
            ) -> Result<wit::Reply, wit::Status> {
                A::unary(method, request, call(options))
                    .map(|r| wit::Reply {
                        message: r.message,
                        headers: entries(r.headers),
                        trailers: entries(r.trailers),
                    })
                    .map_err(to_wit)
            }

            fn open_stream(
                method: String,
                options: wit::CallOptions,
            ) -> Result<wit::Stream, wit::Status> {
                A::open_stream(method, call(options))
                    .map(|s| wit::Stream::new(Adapted(s)))
                    .map_err(to_wit)
            }
        }

        impl<S: GrpcStreamAdapter> wit::GuestStream for Adapted<S> {
            fn send(&self, message: Vec<u8>) -> Result<(), wit::Status> {
                self.0.send(message).map_err(to_wit)
            }

            fn recv(&self) -> Result<Option<Vec<u8>>, wit::Status> {
                self.0.recv().map_err(to_wit)
            }

            fn close_send(&self) {
                self.0.close_send();
            }

            fn headers(&self) -> Result<Vec<wit::Entry>, wit::Status> {
                self.0.headers().map(entries).map_err(to_wit)
            }

            fn trailers(&self) -> Option<Vec<wit::Entry>> {
                self.0.trailers().map(entries)
            }
        }
    }
}

/// Exports a [`grpc::GrpcAdapter`] as the component's `grpc` interface. Use
/// it once, at the top level of the adapter crate.
#[macro_export]
macro_rules! export_grpc_adapter {
    ($adapter:ty) => {
        const _: () = {
            type BlocklabGrpcAdapter = $crate::adapter::grpc::__private::Export<$adapter>;
            $crate::adapter::grpc::__private::export!(
                BlocklabGrpcAdapter with_types_in $crate::adapter::grpc::bindings
            );
        };
    };
}
