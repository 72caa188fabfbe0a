use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, scale: &f32, k: &Kernel) {
        stream main;
        main: launch k<<<1, 32>>>(&mut x, &scale);
    }
}

fn main() {}
