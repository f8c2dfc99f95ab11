//! The host calls one `blocklab:bench` version forwards unchanged to
//! another's, as macros: each version's bindings are traits and types of
//! their own. Declared (`#[macro_use]`) before the version modules that
//! expand them.

/// One version's grpc host, forwarded to 0.1.0's (grpc_host.rs): the calls
/// are the same in every version, only the `status` record is each
/// version's own type. Expanded in a module with that version's bindings
/// imported as `wit_grpc`.
macro_rules! grpc_forwarding {
    () => {
        fn status(s: super::wit_grpc::Status) -> wit_grpc::Status {
            wit_grpc::Status {
                code: s.code,
                message: s.message,
            }
        }

        type GrpcResult<T> = anyhow::Result<Result<T, wit_grpc::Status>>;

        impl wit_grpc::Host for HostState {
            fn unary(&mut self, method: String, request: Vec<u8>) -> GrpcResult<Vec<u8>> {
                Ok(super::wit_grpc::Host::unary(self, method, request)?.map_err(status))
            }

            fn open_stream(&mut self, method: String) -> GrpcResult<Resource<StreamHandle>> {
                Ok(super::wit_grpc::Host::open_stream(self, method)?.map_err(status))
            }
        }

        impl wit_grpc::HostStream for HostState {
            fn send(&mut self, stream: Resource<StreamHandle>, message: Vec<u8>) -> GrpcResult<()> {
                Ok(super::wit_grpc::HostStream::send(self, stream, message)?.map_err(status))
            }

            fn recv(&mut self, stream: Resource<StreamHandle>) -> GrpcResult<Option<Vec<u8>>> {
                Ok(super::wit_grpc::HostStream::recv(self, stream)?.map_err(status))
            }

            fn close_send(&mut self, stream: Resource<StreamHandle>) -> anyhow::Result<()> {
                super::wit_grpc::HostStream::close_send(self, stream)
            }

            fn drop(&mut self, stream: Resource<StreamHandle>) -> anyhow::Result<()> {
                super::wit_grpc::HostStream::drop(self, stream)
            }
        }
    };
}

/// One version's env host, forwarded to the next version's, imported as
/// `$next` (`v2_env` in 0.1.0's module): the calls and their types are the
/// same in every version. Expanded in a module with that version's
/// bindings imported as `wit_env`.
macro_rules! env_forwarding {
    ($next:ident) => {
        impl wit_env::Host for HostState {
            fn now_ns(&mut self) -> anyhow::Result<u64> {
                $next::Host::now_ns(self)
            }

            fn random(&mut self, len: u32) -> anyhow::Result<Vec<u8>> {
                $next::Host::random(self, len)
            }

            fn count(&mut self, name: String, delta: i64) -> anyhow::Result<()> {
                $next::Host::count(self, name, delta)
            }

            fn log(&mut self, level: u8, message: String) -> anyhow::Result<()> {
                $next::Host::log(self, level, message)
            }
        }
    };
}
