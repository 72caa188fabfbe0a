use streamgraph::{Communicator, DeviceBuffer};

streamgraph::pipeline! {
    pipeline P(x0: &mut DeviceBuffer<f32>, x1: &mut DeviceBuffer<f32>, comm: &Communicator) {
        stream s0;
        stream s1;
        all_reduce(comm, sum) { s0: &mut x0, s0: &mut x1 };
        all_reduce(comm, sum) { s0: &mut x0, s2: &mut x1 };
    }
}

fn main() {}
