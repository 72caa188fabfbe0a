use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &Kernel, n: u32) {
        stream main;
        stream side;
        main: launch k<<<n, 256>>>(&mut x, n);
        side: launch k<<<n, 256>>>(&mut y, &x, n);
        main: wait_stream side;
    }
}

fn main() {}
