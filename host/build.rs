//! Compiles host/proto/ingest.proto (ingest.v1) into Rust at build time with
//! protox, a protobuf compiler written in Rust, so a fresh machine needs no
//! `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/ingest.proto");
    toolchain();
    let files = protox::compile(["proto/ingest.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(files)?;
    Ok(())
}

/// The compiler and the wasmtime this build uses, for the environment a
/// report states (BLOCKLAB_RUSTC, BLOCKLAB_WASMTIME): wasmtime's version is
/// the one Cargo.lock resolved, not a copy of the manifest's pin.
fn toolchain() {
    println!("cargo:rerun-if-changed=../Cargo.lock");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "unknown".into(), |v| v.trim().to_owned());
    println!("cargo:rustc-env=BLOCKLAB_RUSTC={version}");
    let lock = std::fs::read_to_string("../Cargo.lock").unwrap_or_default();
    let wasmtime = lock
        .split("[[package]]")
        .find(|p| p.contains("\nname = \"wasmtime\"\n"))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map_or("unknown", |v| v.trim_end_matches('"'));
    println!("cargo:rustc-env=BLOCKLAB_WASMTIME={wasmtime}");
}
