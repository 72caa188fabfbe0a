use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, flag: &mut DeviceFlag, k: &Kernel) {
        stream main;
        stream side;
        event ready;
        main: launch k<<<1, 1>>>(&mut x);
        main: record ready;
        main: while flag {
            side: wait ready;
            side: launch k<<<1, 1>>>(&mut x, &mut flag);
        }
    }
}

fn main() {}
