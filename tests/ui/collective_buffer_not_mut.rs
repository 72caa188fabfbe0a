use streamgraph::{Communicator, DeviceBuffer};

streamgraph::pipeline! {
    pipeline P(
        x0: &mut DeviceBuffer<f32>,
        x1: &mut DeviceBuffer<f32>,
        y0: &DeviceBuffer<f32>,
        comm: &Communicator,
    ) {
        stream s0;
        stream s1;
        all_reduce(comm, sum) { s0: &x0, s1: x1 };
        all_gather(comm) { s0: &mut x0 => &mut x1, s1: &x1 => &mut x0 };
        all_gather(comm) { s0: &x0 => &mut x1, s1: &x1 => &mut y0 };
    }
}

fn main() {}
