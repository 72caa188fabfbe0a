use streamgraph::{DeviceBuffer, PinnedBuffer};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, h: &PinnedBuffer<u32>, count: &u32) {
        stream main;
        main: copy x <- h;
        main: copy x <- count;
    }
}

fn main() {}
