//! kv-passthrough: a kv adapter that forwards every call unchanged. An arm
//! with it measures the adapter boundary itself: one more component between
//! the workload and the host, and nothing else.

use blocklab_sdk::adapter::KvAdapter;
use blocklab_sdk::kv;

struct Passthrough(kv::Transaction);

impl KvAdapter for Passthrough {
    fn begin() -> Self {
        Passthrough(kv::Transaction::new())
    }

    fn next(&self) -> &kv::Transaction {
        &self.0
    }
}

blocklab_sdk::export_kv_adapter!(Passthrough);
