//! placeholder until the builtin workloads land
use super::env::Env;
use crate::target::kv::SharedDatabase;
pub struct Builtin { env: Env }
impl Builtin { pub fn new(_db: SharedDatabase, env: Env) -> Self { Builtin { env } } }
impl super::Instance for Builtin {
    fn list(&mut self) -> anyhow::Result<Vec<super::WorkloadInfo>> { Ok(vec![]) }
    fn setup(&mut self, _: &str, _: &[(String, String)]) -> anyhow::Result<()> { anyhow::bail!("placeholder") }
    fn run(&mut self, _: u64) -> anyhow::Result<u32> { anyhow::bail!("placeholder") }
    fn env(&self) -> &Env { &self.env }
}
