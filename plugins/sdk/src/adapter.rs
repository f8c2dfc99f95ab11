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

use crate::kv::{self, Error, RangeOptions, Rows};

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "kv-adapter",
        path: "../../wit/v0.2.0",
        pub_export_macro: true,
        default_bindings_module: "blocklab_sdk::adapter::bindings",
        // The imported kv and env are the workload world's: one set of
        // import glue, and `kv::Transaction` is the adapter's next hop.
        with: {
            "blocklab:bench/kv@0.2.0": crate::bindings::blocklab::bench::kv,
            "blocklab:bench/env@0.2.0": crate::bindings::blocklab::bench::env,
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

    /// The `kv` export of adapter `A`.
    pub struct Export<A>(PhantomData<A>);

    /// One exported transaction: the adapter's state.
    pub struct Adapted<A>(A);

    impl<A: KvAdapter> wit::Guest for Export<A> {
        type Transaction = Adapted<A>;
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
    }
}

/// gRPC adapters: components of world `grpc-adapter`, which export the grpc
/// client and call the next one down the chain.
///
/// An adapter implements [`GrpcAdapter`] (calls without a stream) and names
/// its stream type, a struct holding the next stream that implements
/// [`GrpcStreamAdapter`]; every method forwards by default.
pub mod grpc {
    use crate::grpc::{self, Status};

    #[doc(hidden)]
    pub mod bindings {
        wit_bindgen::generate!({
            world: "grpc-adapter",
            path: "../../wit/v0.2.0",
            pub_export_macro: true,
            default_bindings_module: "blocklab_sdk::adapter::grpc::bindings",
            with: {
                "blocklab:bench/grpc@0.2.0": crate::bindings::blocklab::bench::grpc,
                "blocklab:bench/env@0.2.0": crate::bindings::blocklab::bench::env,
            },
        });
    }

    /// The calls of a grpc adapter that are not on a stream.
    pub trait GrpcAdapter: 'static {
        /// This adapter's streams.
        type Stream: GrpcStreamAdapter;

        fn unary(method: String, request: Vec<u8>) -> Result<Vec<u8>, Status> {
            grpc::unary(&method, &request)
        }

        /// Opens a stream; usually wraps `grpc::open_stream(&method)?`.
        fn open_stream(method: String) -> Result<Self::Stream, Status>;
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
    }

    #[doc(hidden)]
    pub mod __private {
        //! What `export_grpc_adapter!` expands to; not part of the SDK's API.

        use super::{GrpcAdapter, GrpcStreamAdapter};
        use crate::grpc::Status;
        use std::marker::PhantomData;

        pub use super::bindings::export;
        use super::bindings::exports::blocklab::bench::grpc as wit;

        /// The `grpc` export of adapter `A`.
        pub struct Export<A>(PhantomData<A>);

        /// One exported stream.
        pub struct Adapted<S>(S);

        fn to_wit(status: Status) -> wit::Status {
            wit::Status {
                code: status.code,
                message: status.message,
            }
        }

        impl<A: GrpcAdapter> wit::Guest for Export<A> {
            type Stream = Adapted<A::Stream>;

            fn unary(method: String, request: Vec<u8>) -> Result<Vec<u8>, wit::Status> {
                A::unary(method, request).map_err(to_wit)
            }

            fn open_stream(method: String) -> Result<wit::Stream, wit::Status> {
                A::open_stream(method)
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
