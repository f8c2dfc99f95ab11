//! Capability grants: which imports a plugin may have beyond blocklab's own
//! interfaces and the WASI basics, and the linking that follows from them.
//!
//! Every plugin gets `blocklab:bench/{kv,grpc,env}` and WASI's cli, io,
//! clocks and random interfaces (its clock and randomness are seeded by the
//! host). Anything else must be granted by the arm (`grants = [...]`) or on
//! the command line (`--grant`); an interface that is not granted is not
//! linked, and a plugin importing it is refused at load with the grant it
//! lacks and the line that adds it.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use wasmtime::component::Linker;
use wasmtime_wasi::{WasiCtxBuilder, WasiView};

/// The capabilities a plan or `--grant` can give, with what each links.
pub const GRANTABLE: &[(&str, &str)] = &[
    (
        "wasi:sockets",
        "TCP and UDP sockets (wasi:sockets/*), limited to the `allow` addresses; no name lookup",
    ),
    (
        "wasi:filesystem",
        "the filesystem interfaces (wasi:filesystem/*) with no directory preopened: std's file APIs link but reach no file",
    ),
];

/// WASI interface families every plugin gets without a grant.
const BASICS: &[&str] = &["wasi:cli/", "wasi:io/", "wasi:clocks/", "wasi:random/"];
/// blocklab's own interfaces (their version is checked separately).
const BLOCKLAB: &[&str] = &[
    "blocklab:bench/kv@",
    "blocklab:bench/grpc@",
    "blocklab:bench/env@",
];

/// The capabilities one arm grants its plugins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grants {
    /// Granted capability names, from [`GRANTABLE`].
    #[serde(default)]
    pub grants: Vec<String>,
    /// `IP:PORT` addresses granted sockets may connect or bind to.
    #[serde(default)]
    pub allow: Vec<String>,
}

/// What an import needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Always provided.
    Provided,
    /// Provided when this capability is granted.
    Grant(&'static str),
    /// Never provided by this host.
    Unknown,
}

/// Classifies one import name such as `wasi:sockets/tcp@0.2.6`.
pub fn need(import: &str) -> Need {
    if BASICS.iter().chain(BLOCKLAB).any(|p| import.starts_with(p)) {
        return Need::Provided;
    }
    for (grant, _) in GRANTABLE {
        if import
            .strip_prefix(grant)
            .is_some_and(|rest| rest.starts_with('/'))
        {
            return Need::Grant(grant);
        }
    }
    Need::Unknown
}

/// A plugin that needs what it was not granted, or grants that make no sense.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// Every grant the plugin lacks, named at once.
    #[error(
        "plugin `{plugin}` imports {imports}, which {needs} {grants} that this arm does not give; {fix}"
    )]
    NotGranted {
        plugin: String,
        /// The first import needing each missing grant, backticked.
        imports: String,
        /// "needs the grant" or "need the grants".
        needs: &'static str,
        /// The missing grants, backticked.
        grants: String,
        /// The plan line and the `blocklab run` flags that give them.
        fix: String,
    },
    #[error(
        "plugin `{plugin}` imports `{import}`, which this host does not provide and no grant gives (plugins may import blocklab:bench/{{kv,grpc,env}}, WASI cli, io, clocks and random, and with a grant {grantable})"
    )]
    Unknown {
        plugin: String,
        import: String,
        grantable: String,
    },
    #[error("grant `{0}` is unknown; the host grants: {known}", known = grantable_names())]
    UnknownGrant(String),
    #[error(
        "`allow` lists addresses but `wasi:sockets` is not granted; add `grants = [\"wasi:sockets\"]` or remove `allow`"
    )]
    AllowWithoutSockets,
    #[error(
        "grant `wasi:sockets` needs the addresses it may reach; add `allow = [\"127.0.0.1:7000\"]` (IP:PORT each)"
    )]
    SocketsWithoutAllow,
    #[error("`allow` entry `{0}` is not an IP:PORT address, e.g. `127.0.0.1:7000` or `[::1]:7000`")]
    BadAddress(String),
}

fn grantable_names() -> String {
    GRANTABLE
        .iter()
        .map(|(n, _)| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Grants {
    /// Whether capability `name` is granted.
    pub fn has(&self, name: &str) -> bool {
        self.grants.iter().any(|g| g == name)
    }

    /// Checks names and addresses; returns the allowed addresses.
    pub fn validate(&self) -> Result<Vec<SocketAddr>, GrantError> {
        for g in &self.grants {
            if !GRANTABLE.iter().any(|(n, _)| n == g) {
                return Err(GrantError::UnknownGrant(g.clone()));
            }
        }
        let sockets = self.has("wasi:sockets");
        if !sockets && !self.allow.is_empty() {
            return Err(GrantError::AllowWithoutSockets);
        }
        if sockets && self.allow.is_empty() {
            return Err(GrantError::SocketsWithoutAllow);
        }
        self.allow
            .iter()
            .map(|a| a.parse().map_err(|_| GrantError::BadAddress(a.clone())))
            .collect()
    }

    /// Refuses `plugin` if one of its imports is never provided, or names
    /// every grant its imports need that this arm does not give.
    pub fn check_imports<'a>(
        &self,
        plugin: &str,
        imports: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), GrantError> {
        // (grant, first import that needs it), in import order.
        let mut missing: Vec<(&'static str, &str)> = Vec::new();
        for import in imports {
            match need(import) {
                Need::Provided => {}
                Need::Grant(grant) if self.has(grant) => {}
                Need::Grant(grant) => {
                    if !missing.iter().any(|(g, _)| *g == grant) {
                        missing.push((grant, import));
                    }
                }
                Need::Unknown => {
                    return Err(GrantError::Unknown {
                        plugin: plugin.to_owned(),
                        import: import.to_owned(),
                        grantable: grantable_names(),
                    });
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let join = |items: Vec<String>| match items.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => items.concat(),
        };
        let sockets = missing.iter().any(|(g, _)| *g == "wasi:sockets");
        let toml = missing
            .iter()
            .map(|(g, _)| format!("\"{g}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let allow = if sockets {
            " and `allow = [\"127.0.0.1:7000\"]` (the addresses it may reach)"
        } else {
            ""
        };
        let flags = missing
            .iter()
            .map(|(g, _)| match *g {
                "wasi:sockets" => format!("--grant {g} --allow 127.0.0.1:7000"),
                _ => format!("--grant {g}"),
            })
            .collect::<Vec<_>>()
            .join(" ");
        Err(GrantError::NotGranted {
            plugin: plugin.to_owned(),
            imports: join(missing.iter().map(|(_, i)| format!("`{i}`")).collect()),
            needs: if missing.len() == 1 {
                "needs the grant"
            } else {
                "need the grants"
            },
            grants: join(missing.iter().map(|(g, _)| format!("`{g}`")).collect()),
            fix: format!(
                "add `grants = [{toml}]`{allow} to the arm in the plan, or pass `{flags}` to `blocklab run`"
            ),
        })
    }

    /// Links the WASI interfaces every plugin gets, and those granted.
    pub fn add_to_linker<T: WasiView + 'static>(
        &self,
        linker: &mut Linker<T>,
    ) -> anyhow::Result<()> {
        use wasmtime_wasi::cli::{WasiCli, WasiCliView};
        use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
        use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
        use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, random, sockets, sync};
        use wasmtime_wasi::random::{WasiRandom, WasiRandomView};
        use wasmtime_wasi::sockets::{WasiSockets, WasiSocketsView};

        let l = linker;
        let e = anyhow::Error::from;
        sync::io::error::add_to_linker::<T, HasTable>(l, |t| t.ctx().table).map_err(e)?;
        sync::io::poll::add_to_linker::<T, HasTable>(l, |t| t.ctx().table).map_err(e)?;
        sync::io::streams::add_to_linker::<T, HasTable>(l, |t| t.ctx().table).map_err(e)?;
        clocks::wall_clock::add_to_linker::<T, WasiClocks>(l, T::clocks).map_err(e)?;
        clocks::monotonic_clock::add_to_linker::<T, WasiClocks>(l, T::clocks).map_err(e)?;
        random::random::add_to_linker::<T, WasiRandom>(l, T::random).map_err(e)?;
        random::insecure::add_to_linker::<T, WasiRandom>(l, T::random).map_err(e)?;
        random::insecure_seed::add_to_linker::<T, WasiRandom>(l, T::random).map_err(e)?;
        cli::exit::add_to_linker::<T, WasiCli>(l, T::cli).map_err(e)?;
        cli::environment::add_to_linker::<T, WasiCli>(l, T::cli).map_err(e)?;
        cli::stdin::add_to_linker::<T, WasiCli>(l, T::cli).map_err(e)?;
        cli::stdout::add_to_linker::<T, WasiCli>(l, T::cli).map_err(e)?;
        cli::stderr::add_to_linker::<T, WasiCli>(l, T::cli).map_err(e)?;
        cli::terminal_input::add_to_linker::<T, WasiCli>(l, T::cli).map_err(e)?;
        cli::terminal_output::add_to_linker::<T, WasiCli>(l, T::cli).map_err(e)?;
        cli::terminal_stdin::add_to_linker::<T, WasiCli>(l, T::cli).map_err(e)?;
        cli::terminal_stdout::add_to_linker::<T, WasiCli>(l, T::cli).map_err(e)?;
        cli::terminal_stderr::add_to_linker::<T, WasiCli>(l, T::cli).map_err(e)?;
        if self.has("wasi:filesystem") {
            filesystem::preopens::add_to_linker::<T, WasiFilesystem>(l, T::filesystem)
                .map_err(e)?;
            sync::filesystem::types::add_to_linker::<T, WasiFilesystem>(l, T::filesystem)
                .map_err(e)?;
        }
        if self.has("wasi:sockets") {
            sockets::tcp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)
                .map_err(e)?;
            sockets::instance_network::add_to_linker::<T, WasiSockets>(l, T::sockets).map_err(e)?;
            sockets::network::add_to_linker::<T, WasiSockets>(l, &Default::default(), T::sockets)
                .map_err(e)?;
            sockets::ip_name_lookup::add_to_linker::<T, WasiSockets>(l, T::sockets).map_err(e)?;
            sync::sockets::tcp::add_to_linker::<T, WasiSockets>(l, T::sockets).map_err(e)?;
            sync::sockets::udp::add_to_linker::<T, WasiSockets>(l, T::sockets).map_err(e)?;
            sync::sockets::udp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)
                .map_err(e)?;
        }
        Ok(())
    }

    /// Opens the granted sockets in an instance's WASI context: TCP and UDP
    /// to the allowed addresses only, never name lookup.
    pub fn configure(&self, builder: &mut WasiCtxBuilder) -> Result<(), GrantError> {
        let allowed = self.validate()?;
        let sockets = self.has("wasi:sockets");
        builder
            .allow_tcp(sockets)
            .allow_udp(sockets)
            .allow_ip_name_lookup(false);
        if sockets {
            builder.socket_addr_check(move |addr, _use| {
                // A connect first binds implicitly to an ephemeral local
                // port (0.0.0.0:0); that reaches nothing, so it is allowed.
                let ephemeral = addr.ip().is_unspecified() && addr.port() == 0;
                let ok = ephemeral || allowed.contains(&addr);
                Box::pin(async move { ok })
            });
        }
        Ok(())
    }
}

/// Projects the store's resource table for the wasi:io interfaces.
struct HasTable;

impl wasmtime::component::HasData for HasTable {
    type Data<'a> = &'a mut wasmtime::component::ResourceTable;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants(g: &[&str], allow: &[&str]) -> Grants {
        Grants {
            grants: g.iter().map(|s| (*s).to_owned()).collect(),
            allow: allow.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn imports_are_classified_by_interface_family() {
        assert_eq!(need("wasi:cli/stdout@0.2.6"), Need::Provided);
        assert_eq!(need("wasi:io/streams@0.2.0"), Need::Provided);
        assert_eq!(need("blocklab:bench/kv@0.1.0"), Need::Provided);
        assert_eq!(need("wasi:sockets/tcp@0.2.6"), Need::Grant("wasi:sockets"));
        assert_eq!(
            need("wasi:filesystem/preopens@0.2.0"),
            Need::Grant("wasi:filesystem")
        );
        assert_eq!(need("wasi:socketsx/tcp@0.2.6"), Need::Unknown);
        assert_eq!(need("wasi:http/outgoing-handler@0.2.0"), Need::Unknown);
        assert_eq!(need("blocklab:bench/workload@0.1.0"), Need::Unknown);
    }

    #[test]
    fn an_ungranted_import_names_the_grant_and_the_toml_line() {
        let error = Grants::default()
            .check_imports(
                "net.wasm",
                ["wasi:cli/exit@0.2.6", "wasi:sockets/tcp@0.2.6"],
            )
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "plugin `net.wasm` imports `wasi:sockets/tcp@0.2.6`, which needs the grant `wasi:sockets` that this arm does not give; add `grants = [\"wasi:sockets\"]` and `allow = [\"127.0.0.1:7000\"]` (the addresses it may reach) to the arm in the plan, or pass `--grant wasi:sockets --allow 127.0.0.1:7000` to `blocklab run`"
        );
        let both = Grants::default()
            .check_imports(
                "net.wasm",
                [
                    "wasi:sockets/tcp@0.2.6",
                    "wasi:filesystem/preopens@0.2.6",
                    "wasi:sockets/udp@0.2.6",
                ],
            )
            .unwrap_err()
            .to_string();
        assert_eq!(
            both,
            "plugin `net.wasm` imports `wasi:sockets/tcp@0.2.6` and `wasi:filesystem/preopens@0.2.6`, which need the grants `wasi:sockets` and `wasi:filesystem` that this arm does not give; add `grants = [\"wasi:sockets\", \"wasi:filesystem\"]` and `allow = [\"127.0.0.1:7000\"]` (the addresses it may reach) to the arm in the plan, or pass `--grant wasi:sockets --allow 127.0.0.1:7000 --grant wasi:filesystem` to `blocklab run`"
        );
        let granted = grants(&["wasi:sockets"], &["127.0.0.1:7000"]);
        assert!(
            granted
                .check_imports("net.wasm", ["wasi:sockets/tcp@0.2.6"])
                .is_ok()
        );
    }

    #[test]
    fn grants_are_validated() {
        assert_eq!(
            grants(&["wasi:sockets"], &["127.0.0.1:7000"])
                .validate()
                .unwrap(),
            vec!["127.0.0.1:7000".parse::<SocketAddr>().unwrap()]
        );
        assert!(matches!(
            grants(&["wasi:http"], &[]).validate(),
            Err(GrantError::UnknownGrant(_))
        ));
        assert!(matches!(
            grants(&[], &["127.0.0.1:1"]).validate(),
            Err(GrantError::AllowWithoutSockets)
        ));
        assert!(matches!(
            grants(&["wasi:sockets"], &[]).validate(),
            Err(GrantError::SocketsWithoutAllow)
        ));
        assert!(matches!(
            grants(&["wasi:sockets"], &["localhost:7000"]).validate(),
            Err(GrantError::BadAddress(_))
        ));
    }
}
