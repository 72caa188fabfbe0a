use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(y: &mut DeviceBuffer<f32>, k: &Kernel, n: usize) {
        stream main;
        temp h: f32[n];
        main: launch k<<<1, 1>>>(&mut y, &h);
        main: fill h = 0.0f32;
    }
}

fn main() {}
