// An unknown stream is the only error: no data race is reported from its placeholder, and the
// imports stay used.
use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel, n: u32) {
        stream main;
        stream side;
        event ready;
        main: launch k<<<n, 256>>>(&mut x, n);
        main: record ready;
        sied: wait ready;
        side: launch k<<<n, 256>>>(&x, n);
    }
}

fn main() {}
