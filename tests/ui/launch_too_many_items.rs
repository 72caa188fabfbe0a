use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel, n: u32) {
        stream main;
        main: launch k<<<n, 32, 0, 7>>>(&mut x, n);
    }
}

fn main() {}
