//! Only the runtime binds calls: code outside it cannot implement `BoundCall` (it could list
//! other accesses than its work makes, and a graph would not keep what the work touches).
use std::any::Any;
use std::sync::Arc;

use streamgraph::{BoundCall, CallAccess, CallStream};

struct Liar;

impl BoundCall for Liar {
    fn accesses(&self) -> &[CallAccess<'_>] {
        &[]
    }
    fn issue(&mut self, _: &CallStream<'_>) -> streamgraph::Result<()> {
        Ok(())
    }
    fn keep(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        None
    }
    fn name(&self) -> &str {
        "liar"
    }
    fn fixed_work(&self, _: &mut Vec<u8>) -> bool {
        true
    }
}

fn main() {}
