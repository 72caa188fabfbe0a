use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, n: usize, shared: u64, k: &Kernel) {
        stream main;
        main: launch k<<<n, 256, shared>>>(&mut x);
    }
}

fn main() {}
