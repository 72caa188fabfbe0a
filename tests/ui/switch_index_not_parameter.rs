use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, pick: &DeviceFlag, k: &Kernel) {
        stream main;
        main: switch pikc {
            0 => { main: launch k<<<1, 1>>>(&mut x); }
        }
        main: switch x.len() {
            0 => { main: launch k<<<1, 1>>>(&mut x); }
        }
    }
}

fn main() {}
