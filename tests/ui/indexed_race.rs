use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(bufs: &mut [DeviceBuffer<f32>], k: &Kernel) {
        stream main;
        stream side;
        main: launch k<<<1, 1>>>(&mut bufs[0]);
        side: launch k<<<1, 1>>>(&bufs[1]);
        side: launch k<<<1, 1>>>(&bufs[0]);
    }
}

fn main() {}
