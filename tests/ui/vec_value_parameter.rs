use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, data: Vec<f32>, k: &Kernel) {
        stream main;
        main: launch k<<<1, 32>>>(&mut x);
    }
}

fn main() {}
