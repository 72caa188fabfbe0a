use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    pipeline P(left: &mut DeviceBuffer<u32>, go: &mut DeviceFlag, odd: &mut DeviceFlag,
               parity: &Kernel, countdown: &Kernel) {
        stream main;
        main: fill go = 1u32;
        main: while go, signalled {
            main: launch parity<<<1, 1>>>(&mut odd, &left);
            main: if odd {
                main: launch countdown<<<1, 1>>>(&mut left, &mut go);
            }
        }
    }
}

fn main() {}
