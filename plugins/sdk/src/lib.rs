//! blocklab's Rust guest SDK: write workload plugins without WIT
//! boilerplate.
//!
//! A plugin lists its workloads, sets one up per run and runs one
//! transaction per call:
//!
//! ```ignore
//! use blocklab_sdk::{kv, Info, Params, Plugin, Workload};
//!
//! struct Hello;
//!
//! impl Plugin for Hello {
//!     fn workloads() -> Vec<Info> {
//!         vec![Info::new("grv", "read version only").uses("kv")]
//!     }
//!     fn setup(_name: &str, _params: &Params) -> Result<Box<dyn Workload>, String> {
//!         Ok(Box::new(Grv))
//!     }
//! }
//!
//! struct Grv;
//!
//! impl Workload for Grv {
//!     fn run(&mut self, _iteration: u64) -> Result<u32, String> {
//!         let ((), retries) = kv::read_transact(|tr| tr.read_version().map(drop))?;
//!         Ok(retries)
//!     }
//! }
//!
//! blocklab_sdk::export_plugin!(Hello);
//! ```
//!
//! The WIT bindings (world `workload-plugin` of `wit/v0.5.0/`, package
//! `blocklab:bench@0.5.0`) are generated here
//! and stay private; [`kv`], [`grpc`] and [`env`] wrap the imports and
//! [`export_plugin!`] the export.

extern crate self as blocklab_sdk;

pub mod adapter;
pub mod env;
mod future;
pub mod grpc;
pub mod keys;
pub mod kv;
mod kv_more;
pub mod proto;
pub use blocklab_catalog::Params;

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "workload-plugin",
        path: "../../wit/v0.5.0",
        // 0.5.0's world imports its own grpc beside 0.3.0's kv and env and
        // exports 0.4.0's workload (wit/v0.5.0/deps).
        generate_all,
        pub_export_macro: true,
        default_bindings_module: "blocklab_sdk::bindings",
    });
}

/// One parameter a workload accepts, with its default as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub default: String,
    pub help: String,
}

/// What the host shows about a workload: its name, what it does, its params
/// and the client interfaces it calls (`"kv"`, `"grpc"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    pub name: String,
    pub description: String,
    pub params: Vec<Param>,
    pub uses: Vec<String>,
}

impl Info {
    /// A workload with no params that calls no client interface yet.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Info {
        Info {
            name: name.into(),
            description: description.into(),
            params: Vec::new(),
            uses: Vec::new(),
        }
    }

    /// Adds param `name` with its default value and one line of help.
    pub fn param(
        mut self,
        name: impl Into<String>,
        default: impl Into<String>,
        help: impl Into<String>,
    ) -> Info {
        self.params.push(Param {
            name: name.into(),
            default: default.into(),
            help: help.into(),
        });
        self
    }

    /// Adds every `(name, default, help)` of a static param table, as
    /// [`Info::param`] does one.
    pub fn params(self, table: &[(&str, &str, &str)]) -> Info {
        table.iter().fold(self, |info, (name, default, help)| {
            info.param(*name, *default, *help)
        })
    }

    /// Declares that the workload calls client interface `interface`.
    pub fn uses(mut self, interface: impl Into<String>) -> Info {
        self.uses.push(interface.into());
        self
    }
}

/// A workload plugin: the set of workloads one component exports.
pub trait Plugin {
    /// Every workload this plugin offers.
    fn workloads() -> Vec<Info>;

    /// Prepares workload `name` (one of [`Plugin::workloads`]) with `params`
    /// (already checked against its specs, defaults filled in) and writes
    /// its fixture. Called once per worker before warmup.
    fn setup(name: &str, params: &Params) -> Result<Box<dyn Workload>, String>;
}

/// A workload that has been set up.
pub trait Workload {
    /// Performs one transaction; `iteration` counts from 0 within the run.
    /// Returns how many times it was retried. Return `Err` for anything
    /// unexpected (a missing key, a short value): a panic traps the plugin
    /// and loses the run's remaining work.
    fn run(&mut self, iteration: u64) -> Result<u32, String>;

    /// Called once after the measured window, untimed (WIT 0.4.0): check
    /// the final state here (a contended counter lost no update) and return
    /// `Err` to fail the run. The workload is dropped right after, so what
    /// it holds (a stream, a transaction) is released, not leaked.
    fn teardown(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// Exports a [`Plugin`] as the component's `workload` interface. Use it once,
/// at the top level of the plugin crate.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        const _: () = {
            struct BlocklabGuest;

            impl $crate::__private::Guest for BlocklabGuest {
                fn list() -> ::std::vec::Vec<$crate::__private::WitInfo> {
                    $crate::__private::list::<$plugin>()
                }

                fn setup(
                    name: ::std::string::String,
                    params: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
                ) -> ::std::result::Result<(), ::std::string::String> {
                    $crate::__private::setup::<$plugin>(&name, &params)
                }

                fn run(iteration: u64) -> ::std::result::Result<u32, ::std::string::String> {
                    $crate::__private::run(iteration)
                }

                fn teardown() -> ::std::result::Result<(), ::std::string::String> {
                    $crate::__private::teardown()
                }
            }

    $crate::__private::export!(BlocklabGuest with_types_in $crate::bindings);
        };
    };
}

#[doc(hidden)]
pub mod __private {
    //! What `export_plugin!` expands to; not part of the SDK's API.

    use crate::{Info, Params, Plugin, Workload, env};
    use std::cell::RefCell;
    use std::sync::Once;

    pub use crate::bindings::export;
    pub use crate::bindings::exports::blocklab::bench0_4_0::workload::{
        Guest, Info as WitInfo, ParamSpec as WitParamSpec,
    };

    thread_local! {
        // The workload of the current run; components are single-threaded,
        // so one slot is the whole state.
        static CURRENT: RefCell<Option<Box<dyn Workload>>> = const { RefCell::new(None) };
    }

    static PANIC_HOOK: Once = Once::new();

    /// A panic traps the instance; sending its message to the run's log
    /// first tells the user why, not only where.
    fn install_panic_hook() {
        PANIC_HOOK.call_once(|| {
            std::panic::set_hook(Box::new(|info| {
                env::log(env::Level::Error, &format!("plugin panicked: {info}"));
            }));
        });
    }

    pub fn list<P: Plugin>() -> Vec<WitInfo> {
        install_panic_hook();
        P::workloads().into_iter().map(to_wit).collect()
    }

    fn to_wit(info: Info) -> WitInfo {
        WitInfo {
            name: info.name,
            description: info.description,
            params: info
                .params
                .into_iter()
                .map(|p| WitParamSpec {
                    name: p.name,
                    default: p.default,
                    help: p.help,
                })
                .collect(),
            uses: info.uses,
        }
    }

    pub fn setup<P: Plugin>(name: &str, given: &[(String, String)]) -> Result<(), String> {
        install_panic_hook();
        // Free the previous workload before the next one builds its state.
        CURRENT.with_borrow_mut(|current| *current = None);
        let workloads = P::workloads();
        let info = workloads
            .iter()
            .find(|info| info.name == name)
            .ok_or_else(|| {
                blocklab_catalog::params::unknown_workload(
                    name,
                    workloads.iter().map(|i| i.name.as_str()),
                )
            })?;
        let params = Params::resolve(
            name,
            info.params
                .iter()
                .map(|p| (p.name.as_str(), p.default.as_str())),
            given,
        )?;
        let workload = P::setup(name, &params)?;
        CURRENT.with_borrow_mut(|current| *current = Some(workload));
        Ok(())
    }

    /// The workload's teardown, then the workload dropped with all it holds.
    pub fn teardown() -> Result<(), String> {
        match CURRENT.with_borrow_mut(Option::take) {
            Some(mut workload) => workload.teardown(),
            None => Err(
                "`teardown` was called without a set-up workload (the host calls it once per setup)"
                    .to_owned(),
            ),
        }
    }

    pub fn run(iteration: u64) -> Result<u32, String> {
        CURRENT.with_borrow_mut(|current| match current {
            Some(workload) => workload.run(iteration),
            None => Err(
                "`run` was called before a successful `setup` (set a workload up first)".to_owned(),
            ),
        })
    }
}
