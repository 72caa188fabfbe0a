use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, flag: &mut DeviceFlag, k: &Kernel) {
        stream main;
        stream side;
        main: while flag {
            main: launch k<<<1, 1>>>(&mut x, &mut flag);
            side: launch k<<<1, 1>>>(&x);
        }
    }
}

fn main() {}
