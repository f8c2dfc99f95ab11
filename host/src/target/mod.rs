//! Targets: what a run's client calls talk to. `kv` holds the transaction
//! surface and its implementations (`embedded`, and `fdb` behind the cargo
//! feature of that name).

pub mod kv;
