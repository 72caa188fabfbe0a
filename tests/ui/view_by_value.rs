use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel, n: usize) {
        stream main;
        main: launch k<<<1, 32>>>(x.slice(0..n), n);
    }
}

fn main() {}
