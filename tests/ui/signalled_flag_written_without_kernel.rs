use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    pipeline P(left: &mut DeviceBuffer<u32>, go: &mut DeviceFlag, stop: &DeviceBuffer<u32>,
               step: &Kernel) {
        stream main;
        main: fill go = 1u32;
        main: while go, signalled {
            main: launch step<<<1, 1>>>(&mut left);
            main: fill go = 0u32;
            main: copy go <- stop;
        }
    }
}

fn main() {}
