use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel) {
        stream main;
        stream side;
        side: launch k<<<1, 32>>>(&mut x);
        main.wait_stream(side);
    }
}

fn main() {}
