use streamgraph::{Communicator, DeviceBuffer, DeviceFlag};

streamgraph::pipeline! {
    pipeline P(
        x0: &mut DeviceBuffer<f32>,
        x1: &mut DeviceBuffer<f32>,
        flag: &DeviceFlag,
        comm: &Communicator,
    ) {
        stream s0;
        stream s1;
        s0: while flag, limit = 4 {
            all_reduce(comm, sum) { s0: &mut x0, s1: &mut x1 };
        }
    }
}

fn main() {}
