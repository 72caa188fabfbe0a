use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, a: &mut DeviceFlag, b: &mut DeviceFlag, k: &Kernel) {
        stream main;
        main: if a {
            main: launch k<<<1, 1>>>(&mut x);
        } else if b {
            main: launch k<<<1, 1>>>(&mut x);
        }
    }
}

fn main() {}
