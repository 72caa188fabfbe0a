use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &Kernel, n: usize) {
        stream main;
        stream side;
        temp h: f32[n];
        main: copy h <- x;
        side: launch k<<<1, 1>>>(&mut y, &h);
        main: wait_stream side;
    }
}

fn main() {}
