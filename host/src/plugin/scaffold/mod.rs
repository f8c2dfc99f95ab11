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
const SCRIPT_WIT: &str = "../../wit/v0.5.0";

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
    if !succeeds(&node, &["--version"]) {
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
    if !succeeds(&python, &["-c", "import componentize_py"]) {
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

/// Whether `program args` runs and exits 0, its output discarded: the
/// check that a build's interpreter (and what it needs) is there.
fn succeeds(program: &std::ffi::OsStr, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
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

// The templates, as the files they become (`{name}` and `{sdk}` filled in):
// kept as files so an editor and a reviewer read them as code.
const CARGO_TOML: &str = include_str!("templates/Cargo.toml.in");
const WORKLOAD_RS: &str = include_str!("templates/workload.rs");
const WORKLOAD_JS: &str = include_str!("templates/app.js");
const WORKLOAD_PY: &str = include_str!("templates/app.py");
const KV_ADAPTER_RS: &str = include_str!("templates/kv_adapter.rs");
const GRPC_ADAPTER_RS: &str = include_str!("templates/grpc_adapter.rs");
