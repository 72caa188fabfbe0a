use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, flag: &mut DeviceFlag, k: &Kernel) {
        stream main;
        stream side;
        event done;
        main: if flag {
            main: launch k<<<1, 1>>>(&mut x);
            main: record done;
        }
        side: wait done;
        side: launch k<<<1, 1>>>(&mut y, &x);
        main: wait_stream side;
    }
}

fn main() {}
