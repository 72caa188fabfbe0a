// An executable graph may move to another thread but never be shared between threads: the
// driver does not synchronise calls on one CUgraphExec.
use streamgraph::{pipeline, DeviceBuffer, GraphExec, Kernel};

pipeline! {
    pipeline Scale(x: &mut DeviceBuffer<f32>, k: &Kernel, n: u32) {
        stream main;
        main: launch k<<<1, 256>>>(&mut x, 2.0f32, n);
    }
}

fn shared<T: Sync>() {}

fn main() {
    shared::<GraphExec<Scale<'static>>>();
}
