use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, y: &DeviceBuffer<f32>, k: &Kernel, n: u32) {
        stream main;
        main: launch k<<<1, 32>>>(x, y, n);
    }
}

fn main() {}
