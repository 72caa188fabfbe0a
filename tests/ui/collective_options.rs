use streamgraph::{Communicator, DeviceBuffer};

streamgraph::pipeline! {
    pipeline P(
        a0: &mut DeviceBuffer<f32>,
        a1: &mut DeviceBuffer<f32>,
        g0: &mut DeviceBuffer<f32>,
        g1: &mut DeviceBuffer<f32>,
        comm: &Communicator,
    ) {
        stream s0;
        stream s1;
        stream s2;
        all_reduce(comm) { s0: &mut a0, s1: &mut a1 };
        all_reduce(comm, mean) { s0: &mut a0, s1: &mut a1 };
        all_gather(comm, sum) { s0: &a0 => &mut g0, s1: &a1 => &mut g1 };
        all_gather(comm) { s0: &mut g0, s1: &mut g1 };
        broadcast(comm) { s0: &mut a0, s1: &mut a1 };
        broadcast(comm, root = s2) { s0: &mut a0, s1: &mut a1 };
        reduce_scatter(comm, sum) {};
    }
}

fn main() {}
