use streamgraph::{pipeline, Communicator, DeviceBuffer, Kernel};

pipeline! {
    pipeline CrossWrite(
        x0: &mut DeviceBuffer<f32>,
        x1: &mut DeviceBuffer<f32>,
        comm: &Communicator,
        k: &Kernel,
    ) {
        stream s0;
        stream s1;

        s1: launch k<<<1, 1>>>(&mut x0);
        all_reduce(comm, sum) { s0: &mut x0, s1: &mut x1 };
    }
}

fn main() {}
