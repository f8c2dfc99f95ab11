//! Compiles host/proto/ingest.proto (ingest.v1) into Rust at build time with
//! protox, a protobuf compiler written in Rust, so a fresh machine needs no
//! `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/ingest.proto");
    let files = protox::compile(["proto/ingest.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(files)?;
    Ok(())
}
