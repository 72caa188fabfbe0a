use streamgraph::{DeviceBuffer, PinnedBuffer};

streamgraph::pipeline! {
    pipeline P(
        x0: &mut DeviceBuffer<f32>,
        x1: &mut DeviceBuffer<u16>,
        h: &mut PinnedBuffer<f32>,
        comm: &u32,
    ) {
        stream s0;
        stream s1;
        all_reduce(comm, sum) { s0: &mut x0, s1: &mut x1 };
        broadcast(comm, root = s0) { s0: &mut x0, s1: &mut h };
    }
}

fn main() {}
