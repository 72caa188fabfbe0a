use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, pick: &DeviceFlag, k: &Kernel) {
        stream main;
        main: switch pick {
            0 => { main: launch k<<<1, 1>>>(&mut x); }
            2 => {}
            0x2 => { main: launch k<<<1, 1>>>(&mut x); }
        }
    }
}

fn main() {}
