use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, pick: &DeviceBuffer<u32>, k: &Kernel) {
        stream main;
        main: switch pick {
            0 => { main: launch k<<<1, 1>>>(&mut x); }
        }
    }
}

fn main() {}
