use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, flag: &mut DeviceFlag, k: &Kernel) {
        stream main;
        stream side;
        side: launch k<<<1, 1>>>(&mut x);
        main: while flag {
            main: launch k<<<1, 1>>>(&mut y, &x, &mut flag);
        }
        side: launch k<<<1, 1>>>(&y);
        main: wait_stream side;
    }
}

fn main() {}
