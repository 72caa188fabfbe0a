use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    pipeline P(left: &mut DeviceBuffer<u32>, go: &mut DeviceFlag, countdown: &Kernel) {
        stream main;
        main: while go, signalled, signalled {
            main: launch countdown<<<1, 1>>>(&mut left, &mut go);
        }
    }
}

fn main() {}
