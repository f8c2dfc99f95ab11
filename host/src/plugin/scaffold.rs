//! `blocklab plugin new` and `plugin build`: a plugin that builds out of the
//! box (a crate against the Rust SDK, or a JavaScript or Python module
//! against plugins/js/sdk or plugins/python/sdk), and the cargo,
//! ComponentizeJS or componentize-py call that builds one.

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What kind of plugin to scaffold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    Workload,
    KvAdapter,
    GrpcAdapter,
}

impl Kind {
    fn source(self) -> &'static str {
        match self {
            Kind::Workload => WORKLOAD_RS,
            Kind::KvAdapter => KV_ADAPTER_RS,
            Kind::GrpcAdapter => GRPC_ADAPTER_RS,
        }
    }
}

/// The language a plugin is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    #[value(name = "js", alias = "javascript")]
    JavaScript,
    #[value(name = "python", alias = "py")]
    Python,
}

impl Lang {
    fn name(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::JavaScript => "JavaScript",
            Lang::Python => "Python",
        }
    }
}

/// The SDK of the blocklab tree this binary was built from, when it is
/// still there; else the first `plugins/sdk` above the current directory.
pub fn find_sdk() -> Option<PathBuf> {
    find_in_tree("plugins/sdk", "Cargo.toml")
}

/// The JavaScript toolchain (plugins/js: build.mjs, the SDK and the pinned
/// ComponentizeJS) of the tree this binary was built from, when it is still
/// there; else the first `plugins/js` above the current directory.
pub fn find_js_toolchain() -> Option<PathBuf> {
    find_in_tree("plugins/js", "build.mjs")
}

/// The Python toolchain (plugins/python: build.py and the SDK), found as
/// [`find_js_toolchain`] finds JavaScript's.
pub fn find_py_toolchain() -> Option<PathBuf> {
    find_in_tree("plugins/python", "build.py")
}

/// The directory `dir` (relative to a blocklab tree's root) holding
/// `marker`: in the tree this binary was built from, else in the nearest
/// tree above the current directory; canonical.
fn find_in_tree(dir: &str, marker: &str) -> Option<PathBuf> {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir);
    let cwd = std::env::current_dir().ok();
    let mut candidates = vec![built];
    if let Some(cwd) = cwd {
        candidates.extend(cwd.ancestors().map(|d| d.join(dir)));
    }
    candidates
        .into_iter()
        .find(|d| d.join(marker).is_file())
        .and_then(|d| std::fs::canonicalize(d).ok())
}

fn check_name(name: &str) -> anyhow::Result<()> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && name.starts_with(|c: char| c.is_ascii_lowercase());
    if !valid {
        bail!(
            "plugin name `{name}` is not a crate name blocklab accepts; use lowercase letters, digits and `-`, starting with a letter (e.g. `my-workloads`)"
        );
    }
    Ok(())
}

/// A fresh directory `dir/name` for a new plugin.
fn create_root(name: &str, dir: &Path) -> anyhow::Result<PathBuf> {
    let root = dir.join(name);
    if root.exists() {
        bail!(
            "`{}` already exists; choose another name or `--dir`",
            root.display()
        );
    }
    std::fs::create_dir_all(&root)
        .with_context(|| format!("cannot create `{}`", root.display()))?;
    Ok(root)
}

/// Writes crate `name` of `kind` into `dir/name` and returns its path. The
/// crate is its own workspace, so it builds wherever it lies, and depends
/// on the SDK at `sdk` by path.
pub fn new_plugin(name: &str, kind: Kind, dir: &Path, sdk: &Path) -> anyhow::Result<PathBuf> {
    check_name(name)?;
    let sdk = std::fs::canonicalize(sdk).with_context(|| {
        format!(
            "the SDK `{}` does not exist; pass `--sdk PATH` pointing at blocklab's plugins/sdk",
            sdk.display()
        )
    })?;
    if !sdk.join("Cargo.toml").is_file() {
        bail!(
            "`{}` is not the blocklab SDK (no Cargo.toml); pass `--sdk PATH` pointing at blocklab's plugins/sdk",
            sdk.display()
        );
    }
    let root = create_root(name, dir)?;
    std::fs::create_dir_all(root.join("src"))
        .with_context(|| format!("cannot create `{}`", root.display()))?;
    let manifest = CARGO_TOML
        .replace("{name}", name)
        .replace("{sdk}", &sdk.display().to_string().replace('\\', "/"));
    std::fs::write(root.join("Cargo.toml"), manifest)?;
    std::fs::write(root.join("src/lib.rs"), kind.source())?;
    std::fs::write(root.join(".gitignore"), "/target\n")?;
    Ok(root)
}

/// Writes a workload plugin `name` in JavaScript (`app.js`) or Python
/// (`app.py`) into `dir/name` and returns its path. It imports the
/// language's SDK (`./blocklab.js`, `blocklab`), which the build puts
/// beside it or on its path.
pub fn new_script_plugin(
    name: &str,
    kind: Kind,
    lang: Lang,
    dir: &Path,
) -> anyhow::Result<PathBuf> {
    check_name(name)?;
    let (entry, source) = match lang {
        Lang::JavaScript => (JS_ENTRY, WORKLOAD_JS),
        Lang::Python => (PY_ENTRY, WORKLOAD_PY),
        Lang::Rust => bail!("a Rust plugin is a crate: scaffold it without `--lang`"),
    };
    if kind != Kind::Workload {
        bail!(
            "a {} plugin can only be a workload; use `--kind workload`, or `--lang rust` for an adapter",
            lang.name()
        );
    }
    let root = create_root(name, dir)?;
    std::fs::write(root.join(entry), source)?;
    std::fs::write(root.join(".gitignore"), "/target\n")?;
    Ok(root)
}

/// The module a JavaScript plugin directory is built from.
const JS_ENTRY: &str = "app.js";
/// The module a Python plugin directory is built from.
const PY_ENTRY: &str = "app.py";
/// The WIT a JavaScript or Python plugin is built against, from plugins/js
/// or plugins/python: the current version, which both SDKs import.
const SCRIPT_WIT: &str = "../../wit/v0.4.0";

/// Builds the plugin in `dir` and returns the component's path: a crate
/// (`Cargo.toml`) for wasm32-wasip2 in release mode, or a JavaScript module
/// (`app.js`) or Python module (`app.py`) with the toolchain in `toolchain`
/// (blocklab's plugins/js or plugins/python).
pub fn build(dir: &Path, toolchain: Option<&Path>) -> anyhow::Result<PathBuf> {
    if !dir.join("Cargo.toml").is_file() && dir.join(JS_ENTRY).is_file() {
        return build_js(dir, toolchain);
    }
    if !dir.join("Cargo.toml").is_file() && dir.join(PY_ENTRY).is_file() {
        return build_py(dir, toolchain);
    }
    let manifest = dir.join("Cargo.toml");
    // A manifest is a few KiB: the plan cap bounds a device named as one.
    let bytes = crate::limits::read_file(&manifest, crate::limits::PLAN_BYTES, "manifests")
        .with_context(|| {
            format!(
                "`{}` is not a plugin (no Cargo.toml, app.js or app.py); scaffold one with `blocklab plugin new`",
                dir.display()
            )
        })?;
    let text = String::from_utf8_lossy(&bytes);
    let name = package_name(&text)
        .with_context(|| format!("`{}` has no `[package] name`", manifest.display()))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(dir)
        .args(["build", "--target", "wasm32-wasip2", "--release"])
        .status()
        .context("cannot run `cargo` (install Rust with rustup)")?;
    if !status.success() {
        bail!(
            "`cargo build --target wasm32-wasip2 --release` failed in `{}` (see its output above; `rustup target add wasm32-wasip2` if the target is missing)",
            dir.display()
        );
    }
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => PathBuf::from(t),
        None => dir.join("target"),
    };
    let wasm = target
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", name.replace('-', "_")));
    if !wasm.is_file() {
        bail!(
            "cargo succeeded but `{}` is missing (is the crate a `cdylib`?)",
            wasm.display()
        );
    }
    Ok(wasm)
}

/// Componentizes `dir/app.js` into `dir/target/NAME.wasm` (NAME: the
/// directory's name) with plugins/js/build.mjs.
fn build_js(dir: &Path, toolchain: Option<&Path>) -> anyhow::Result<PathBuf> {
    let (toolchain, script, wit) = script_toolchain(toolchain, Lang::JavaScript)?;
    let node = std::env::var_os("BLOCKLAB_NODE").unwrap_or_else(|| "node".into());
    let found = Command::new(&node)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .status();
    if !found.is_ok_and(|s| s.success()) {
        bail!(
            "cannot run `{}` (JavaScript plugins are built with Node.js); install Node.js 18 or newer and npm (`apt-get install nodejs npm`), then run `make deps-js` in the blocklab tree",
            node.to_string_lossy()
        );
    }
    let package = toolchain.join("node_modules/@bytecodealliance/componentize-js/package.json");
    if !package.is_file() {
        bail!(
            "ComponentizeJS is not installed in `{}`; run `make deps-js` in the blocklab tree (npm ci of the versions pinned in plugins/js/package-lock.json)",
            toolchain.join("node_modules").display()
        );
    }
    let (dir, wasm) = script_output(dir)?;
    let entry = dir.join(JS_ENTRY);
    run_build(&node, &script, &entry, &wit, &wasm).with_context(|| {
        format!(
            "ComponentizeJS failed to build `{}` (see its output above: a syntax error, or an import other than `./blocklab.js` and blocklab:bench)",
            entry.display()
        )
    })
}

/// Componentizes `dir/app.py` into `dir/target/NAME.wasm` (NAME: the
/// directory's name) with plugins/python/build.py.
fn build_py(dir: &Path, toolchain: Option<&Path>) -> anyhow::Result<PathBuf> {
    let (_, script, wit) = script_toolchain(toolchain, Lang::Python)?;
    let python = std::env::var_os("BLOCKLAB_PYTHON").unwrap_or_else(|| "python3".into());
    let found = Command::new(&python)
        .args(["-c", "import componentize_py"])
        .stderr(std::process::Stdio::null())
        .status();
    if !found.is_ok_and(|s| s.success()) {
        bail!(
            "componentize-py is not installed for `{}`; run `make deps-python` in the blocklab tree (pip install of the pinned componentize-py)",
            python.to_string_lossy()
        );
    }
    let (dir, wasm) = script_output(dir)?;
    run_build(&python, &script, &dir, &wit, &wasm).with_context(|| {
        format!(
            "componentize-py failed to build `{}` (see its output above: a syntax error, or an import the component cannot hold)",
            dir.join(PY_ENTRY).display()
        )
    })
}

/// A script language's toolchain directory (blocklab's plugins/js or
/// plugins/python: `toolchain` if given, else the tree's), its build script
/// and the WIT it builds against.
fn script_toolchain(
    toolchain: Option<&Path>,
    lang: Lang,
) -> anyhow::Result<(PathBuf, PathBuf, PathBuf)> {
    let (dir, script, found) = match lang {
        Lang::JavaScript => ("plugins/js", "build.mjs", find_js_toolchain()),
        Lang::Python => ("plugins/python", "build.py", find_py_toolchain()),
        Lang::Rust => bail!("a Rust plugin is built with cargo, not a script"),
    };
    let Some(toolchain) = toolchain.map(Path::to_owned).or(found) else {
        bail!(
            "cannot find blocklab's {dir} (the {} toolchain); pass `--toolchain PATH` pointing at it",
            lang.name()
        );
    };
    let (script_path, wit) = (toolchain.join(script), toolchain.join(SCRIPT_WIT));
    if !script_path.is_file() || !wit.is_dir() {
        bail!(
            "`{}` is not blocklab's {dir} (no {script} beside {SCRIPT_WIT}); pass `--toolchain PATH` pointing at it",
            toolchain.display()
        );
    }
    Ok((toolchain, script_path, wit))
}

/// Runs `program SCRIPT INPUT WIT OUT` (both build scripts' arguments) and
/// returns OUT once it exists.
fn run_build(
    program: &std::ffi::OsStr,
    script: &Path,
    input: &Path,
    wit: &Path,
    wasm: &Path,
) -> anyhow::Result<PathBuf> {
    let status = Command::new(program)
        .arg(script)
        .arg(input)
        .arg(wit)
        .arg(wasm)
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("cannot run `{}`", program.to_string_lossy()))?;
    if !status.success() || !wasm.is_file() {
        bail!("the build exited with {status}");
    }
    Ok(wasm.to_owned())
}

/// A script plugin's directory, canonical, and where its component goes:
/// `dir/target/NAME.wasm`, NAME the directory's name.
fn script_output(dir: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = std::fs::canonicalize(dir)
        .with_context(|| format!("cannot read the plugin directory `{}`", dir.display()))?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plugin".to_owned());
    let wasm = dir.join("target").join(format!("{name}.wasm"));
    Ok((dir, wasm))
}

/// The `name` of `[package]` in a Cargo.toml.
fn package_name(manifest: &str) -> Option<String> {
    let table: toml::Table = toml::from_str(manifest).ok()?;
    Some(table.get("package")?.get("name")?.as_str()?.to_owned())
}

const CARGO_TOML: &str = r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
blocklab-sdk = { path = "{sdk}" }

[profile.release]
strip = "debuginfo" # keep function names: wasm backtraces show them

# Its own workspace: the crate builds wherever it lies.
[workspace]
"#;

const WORKLOAD_RS: &str = r#"//! A blocklab workload plugin. Build it with `blocklab plugin build .`, run
//! it with `blocklab run --plugin PATH.wasm --workload get`, or its gRPC
//! workload against your server with
//! `blocklab run --plugin PATH.wasm --workload unary --endpoint http://HOST:PORT`.

use blocklab_sdk::{Info, Params, Plugin, Workload, env, grpc, kv, proto};

struct Workloads;

impl Plugin for Workloads {
    fn workloads() -> Vec<Info> {
        vec![
            Info::new("get", "one point read of a fixture row, committed")
                .param("keys", "1000", "fixture rows")
                .param("value-bytes", "100", "bytes per value")
                .uses("kv"),
            // blocklab's own test server (`blocklab target grpc-ingest`)
            // answers this method; name your service's and encode its
            // request message with `proto::Message`.
            Info::new("unary", "one unary call of your service, its response checked")
                .param("method", "/ingest.v1.Echo/Echo", "the full method name, /package.Service/Method")
                .param("payload", "hello", "field 1 of the request (EchoRequest.payload)")
                .uses("grpc"),
        ]
    }

    fn setup(name: &str, params: &Params) -> Result<Box<dyn Workload>, String> {
        if name == "unary" {
            let request = proto::Message::new()
                .string(1, params.str("payload")?)
                .finish();
            return Ok(Box::new(Unary {
                method: params.str("method")?.to_owned(),
                request,
            }));
        }
        let keys = params.u64("keys")?;
        if keys == 0 {
            return Err("param `keys` must be at least 1".into());
        }
        let value_bytes = params.usize("value-bytes")?;
        let value = vec![b'x'; value_bytes];
        // The fixture, in transactions well under FoundationDB's 10 MB.
        let mut start = 0;
        while start < keys {
            let stop = keys.min(start + 1000);
            kv::transact(|tr| {
                for i in start..stop {
                    tr.set(&key(i), &value);
                }
                Ok(())
            })?;
            start = stop;
        }
        env::count("fixture-rows", keys as i64);
        Ok(Box::new(Get { keys, value_bytes }))
    }
}

struct Get {
    keys: u64,
    value_bytes: usize,
}

impl Workload for Get {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        // Keys come from env::random_u64: seeded by the plan, reproducible.
        let key = key(env::random_u64() % self.keys);
        let (value, retries) = kv::transact(|tr| tr.get(&key))?;
        match value {
            Some(v) if v.len() == self.value_bytes => Ok(retries),
            Some(v) => Err(format!(
                "key `{}` holds {} bytes, expected {}",
                String::from_utf8_lossy(&key),
                v.len(),
                self.value_bytes
            )),
            None => Err(format!("key `{}` is missing", String::from_utf8_lossy(&key))),
        }
    }
}

struct Unary {
    method: String,
    request: Vec<u8>,
}

impl Workload for Unary {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        // A failed call's error reads, e.g.,
        // `UNIMPLEMENTED (12) on /package.Service/Method: the server's message`.
        let response = grpc::unary(&self.method, &self.request)?;
        // EchoResponse { payload = 1 }: the payload comes back.
        let sent = proto::field(&self.request, 1)?.and_then(proto::Value::as_bytes);
        let got = proto::field(&response, 1)?.and_then(proto::Value::as_bytes);
        if got != sent {
            return Err(format!("the response's field 1 is {got:?}, expected {sent:?}"));
        }
        Ok(0)
    }
}

/// Row `i`'s key; 8 digits keep key order equal to row order.
fn key(i: u64) -> Vec<u8> {
    format!("example/get/{i:08}").into_bytes()
}

blocklab_sdk::export_plugin!(Workloads);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_in_row_order() {
        assert_eq!(key(42), b"example/get/00000042".to_vec());
        assert!(key(9) < key(10));
    }
}
"#;

const WORKLOAD_JS: &str = r#"// A blocklab workload plugin in JavaScript, on WIT 0.4.0. Build it with
// `blocklab plugin build .`, run it with
// `blocklab run --plugin target/NAME.wasm --workload get`, or its gRPC
// workload against your server with
// `blocklab run --plugin target/NAME.wasm --workload unary --endpoint http://HOST:PORT`.
//
// `./blocklab.js` is blocklab's JavaScript SDK (plugins/js/sdk/blocklab.js),
// put beside this file by the build. Importing it makes Math.random, crypto
// and Date draw from the run's seeded generator and clock, sends console.*
// to the run's log, and returns an exception thrown by setup or run to the
// host with its message and stack.
import { env, grpc, int, randomU64, transact, workloads } from './blocklab.js';

const encoder = new TextEncoder();

// Row `i`'s key; 8 digits keep key order equal to row order.
function key(i) {
  return encoder.encode(`example/get/${String(i).padStart(8, '0')}`);
}

export const workload = workloads({
  get: {
    description: 'one point read of a fixture row, committed',
    params: [
      ['keys', '1000', 'fixture rows'],
      ['value-bytes', '100', 'bytes per value'],
    ],
    uses: ['kv'],
    setup(params) {
      const keys = int(params, 'keys');
      if (keys === 0) throw 'param `keys` must be at least 1';
      const valueBytes = int(params, 'value-bytes');
      const value = new Uint8Array(valueBytes).fill(120);
      // The fixture, in transactions well under FoundationDB's 10 MB.
      // transact() retries, and keeps the transaction for the next call.
      for (let start = 0; start < keys; start += 1000) {
        const stop = Math.min(keys, start + 1000);
        transact((tr) => {
          for (let i = start; i < stop; i++) tr.set(key(i), value);
        });
      }
      env.count('fixture-rows', BigInt(keys));
      // The run function: one transaction, returns its retries.
      return () => {
        // Keys come from env.random: seeded by the plan, reproducible.
        const k = key(Number(randomU64() % BigInt(keys)));
        const { value: found, retries } = transact((tr) => tr.get(k, false));
        if (found === undefined || found === null) {
          throw new Error(`key \`${new TextDecoder().decode(k)}\` is missing`);
        }
        if (found.length !== valueBytes) {
          throw new Error(`key holds ${found.length} bytes, expected ${valueBytes}`);
        }
        return retries;
      };
    },
  },
  unary: {
    description: 'one unary call of your service: `method` with `request` (hex of the encoded protobuf message)',
    params: [
      // blocklab's own test server (`blocklab target grpc-ingest`) answers
      // this one; name your service's method and message instead.
      ['method', '/ingest.v1.Echo/Echo', 'the full method name, /package.Service/Method'],
      ['request', '0a0568656c6c6f', 'the encoded request, as hex (here EchoRequest { payload: "hello" })'],
    ],
    uses: ['grpc'],
    setup(params) {
      const hex = String(params.request);
      if (!/^([0-9a-fA-F]{2})*$/.test(hex)) {
        throw `param \`request\` = \`${hex}\` is not hex bytes (give pairs of hex digits, e.g. \`0a0568656c6c6f\`)`;
      }
      const request = new Uint8Array(hex.match(/../g)?.map((b) => parseInt(b, 16)) ?? []);
      // A failed call throws a GrpcError that reads, e.g.,
      // `UNIMPLEMENTED (12) on /package.Service/Method: the server's message`.
      return () => {
        grpc.unary(params.method, request);
        return 0;
      };
    },
  },
});
"#;

const WORKLOAD_PY: &str = r#""""A blocklab workload plugin in Python, on WIT 0.4.0. Build it with
`blocklab plugin build .`, run it with
`blocklab run --plugin target/NAME.wasm --workload get`, or its gRPC
workload against your server with
`blocklab run --plugin target/NAME.wasm --workload unary --endpoint http://HOST:PORT`.

`blocklab` is blocklab's Python SDK (plugins/python/sdk/blocklab.py), put
on the plugin's path by the build. Randomness comes from `random_u64()`
(the run's seeded generator); an exception raised by setup or run reaches
the host with its type, message and traceback.
"""

from blocklab import Err, env, param_int, random_u64, transact, unary, workloads


def key(i):
    # 8 digits keep key order equal to row order.
    return b"example/get/%08d" % i


def setup_get(params):
    keys, value_bytes = param_int(params, "keys"), param_int(params, "value-bytes")
    if keys == 0:
        raise Err("param `keys` must be at least 1")
    value = b"x" * value_bytes
    # The fixture, in transactions well under FoundationDB's 10 MB.
    # transact() retries, and keeps the transaction for the next call.
    for start in range(0, keys, 1000):
        transact(lambda tr, start=start: [tr.set(key(i), value) for i in range(start, min(keys, start + 1000))])
    env.count("fixture-rows", keys)

    # The run function: one transaction, returns its retries.
    def run(_iteration):
        k = key(random_u64() % keys)
        found, retries = transact(lambda tr: tr.get(k))
        if found is None:
            raise Err(f"key `{k.decode()}` is missing")
        if len(found) != value_bytes:
            raise Err(f"key holds {len(found)} bytes, expected {value_bytes}")
        return retries

    return run


def setup_unary(params):
    text = params["request"]
    try:
        request = bytes.fromhex(text)
    except ValueError:
        raise Err(f"param `request` = `{text}` is not hex bytes (give pairs of hex digits, e.g. `0a0568656c6c6f`)")
    method = params["method"]

    # A failed call raises a GrpcError that reads, e.g.,
    # `UNIMPLEMENTED (12) on /package.Service/Method: the server's message`.
    def run(_iteration):
        unary(method, request)
        return 0

    return run


Workload = workloads(
    {
        "get": {
            "description": "one point read of a fixture row, committed",
            "params": [("keys", "1000", "fixture rows"), ("value-bytes", "100", "bytes per value")],
            "uses": ["kv"],
            "setup": setup_get,
        },
        "unary": {
            "description": "one unary call of your service: `method` with `request` (hex of the encoded protobuf message)",
            "params": [
                # blocklab's own test server (`blocklab target grpc-ingest`)
                # answers this one; name your service's method and message.
                ("method", "/ingest.v1.Echo/Echo", "the full method name, /package.Service/Method"),
                ("request", "0a0568656c6c6f", 'the encoded request, as hex (here EchoRequest { payload: "hello" })'),
            ],
            "uses": ["grpc"],
            "setup": setup_unary,
        },
    }
)
"#;

const KV_ADAPTER_RS: &str = r#"//! A blocklab kv adapter: composed between a workload and the target with
//! `blocklab run --adapter PATH.wasm` or `adapters = [...]` on an arm. This
//! one puts every key under a fixed prefix; every method it does not
//! override forwards unchanged.

use blocklab_sdk::adapter::KvAdapter;
use blocklab_sdk::kv::{self, Error, RangeOptions, Rows};

const PREFIX: &[u8] = b"example/";

struct Prefixed(kv::Transaction);

impl KvAdapter for Prefixed {
    fn begin() -> Self {
        Prefixed(kv::Transaction::new())
    }

    fn next(&self) -> &kv::Transaction {
        &self.0
    }

    fn get(&self, key: Vec<u8>, snapshot: bool) -> Result<Option<Vec<u8>>, Error> {
        let key = prefixed(&key);
        if snapshot {
            self.0.snapshot_get(&key)
        } else {
            self.0.get(&key)
        }
    }

    fn get_range(
        &self,
        begin: Vec<u8>,
        end: Vec<u8>,
        options: RangeOptions,
    ) -> Result<Rows, Error> {
        let rows = self
            .0
            .get_range_with(&prefixed(&begin), &prefixed(&end), options)?;
        // Rows come packed in one buffer; build the answer the same way.
        let mut unprefixed_rows = Rows::new();
        for row in &rows {
            if let Some(key) = unprefixed(row.key) {
                unprefixed_rows.push(key, row.value);
            }
        }
        Ok(unprefixed_rows)
    }

    fn set(&self, key: Vec<u8>, value: Vec<u8>) {
        self.0.set(&prefixed(&key), &value);
    }

    fn clear(&self, key: Vec<u8>) {
        self.0.clear(&prefixed(&key));
    }

    fn clear_range(&self, begin: Vec<u8>, end: Vec<u8>) {
        self.0.clear_range(&prefixed(&begin), &prefixed(&end));
    }
}

fn prefixed(key: &[u8]) -> Vec<u8> {
    [PREFIX, key].concat()
}

fn unprefixed(key: &[u8]) -> Option<&[u8]> {
    key.strip_prefix(PREFIX)
}

blocklab_sdk::export_kv_adapter!(Prefixed);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_the_prefix() {
        assert_eq!(prefixed(b"k"), b"example/k".to_vec());
        assert_eq!(unprefixed(b"example/k"), Some(&b"k"[..]));
        assert_eq!(unprefixed(b"other/k"), None);
    }
}
"#;

const GRPC_ADAPTER_RS: &str = r#"//! A blocklab grpc adapter: composed between a workload and the grpc
//! target. This one counts the messages that pass through it per method
//! family and forwards everything unchanged.

use blocklab_sdk::adapter::grpc::{GrpcAdapter, GrpcStreamAdapter};
use blocklab_sdk::env;
use blocklab_sdk::grpc::{self, Status};

struct Counting;

impl GrpcAdapter for Counting {
    type Stream = CountingStream;

    fn unary(method: String, request: Vec<u8>) -> Result<Vec<u8>, Status> {
        env::count(&counter("unary", &method), 1);
        grpc::unary(&method, &request)
    }

    fn open_stream(method: String) -> Result<CountingStream, Status> {
        Ok(CountingStream {
            counter: counter("sent", &method),
            next: grpc::open_stream(&method)?,
        })
    }
}

struct CountingStream {
    counter: String,
    next: grpc::Stream,
}

impl GrpcStreamAdapter for CountingStream {
    fn next(&self) -> &grpc::Stream {
        &self.next
    }

    fn send(&self, message: Vec<u8>) -> Result<(), Status> {
        env::count(&self.counter, 1);
        self.next.send(&message)
    }
}

/// `sent:ingest.v1.Ingest` for `/ingest.v1.Ingest/Stream`: one counter per
/// service.
fn counter(what: &str, method: &str) -> String {
    let service = method.trim_start_matches('/').split('/').next().unwrap_or("");
    format!("{what}:{service}")
}

blocklab_sdk::export_grpc_adapter!(Counting);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_per_service() {
        assert_eq!(counter("sent", "/ingest.v1.Ingest/Stream"), "sent:ingest.v1.Ingest");
        assert_eq!(counter("unary", "bare"), "unary:bare");
    }
}
"#;
