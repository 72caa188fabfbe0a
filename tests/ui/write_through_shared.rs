use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &DeviceBuffer<f32>, k: &Kernel) {
        stream main;
        main: launch k<<<1, 32>>>(&mut x);
        main: fill x = 0.0f32;
    }
}

fn main() {}
