use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, flag: &mut DeviceBuffer<u32>, k: &Kernel) {
        stream main;
        main: while flag {
            main: launch k<<<1, 1>>>(&mut x, &mut flag);
        }
    }
}

fn main() {}
