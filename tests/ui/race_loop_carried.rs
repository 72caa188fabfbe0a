use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &Kernel, n: u32) {
        stream main;
        stream side;
        event ready;
        for i in 0..n {
            main: fill x = 1.0f32;
            main: record ready;
            side: wait ready;
            side: launch k<<<n, 256>>>(&mut y, &x, i);
        }
        main: wait_stream side;
    }
}

fn main() {}
