// A graph set may move to another thread but never be shared between threads: its launches
// take `&mut self` so that no two of its graphs run at once, and the driver does not
// synchronise calls on one CUgraphExec.
use streamgraph::GraphSet;

fn shared<T: Sync>() {}
fn sent<T: Send>() {}

fn main() {
    sent::<GraphSet<usize>>();
    shared::<GraphSet<usize>>();
}
