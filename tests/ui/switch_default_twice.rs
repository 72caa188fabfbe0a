use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, pick: &DeviceFlag, k: &Kernel) {
        stream main;
        main: switch pick {
            1 => {}
            _ => { main: launch k<<<1, 1>>>(&mut x); }
            _ => {}
        }
    }
}

fn main() {}
