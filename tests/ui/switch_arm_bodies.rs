use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

fn tick() {}

streamgraph::pipeline! {
    /// An arm's body is a conditional node's body: device work only, its own events, its own
    /// races.
    pipeline P(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, pick: &DeviceFlag, k: &Kernel) {
        stream main;
        stream side;
        event ready;
        main: record ready;
        main: switch pick {
            0 => {
                main: host tick;
                side: wait ready;
            }
            1 => {
                main: record ready;
            }
            _ => {
                main: launch k<<<1, 1>>>(&mut x);
                side: launch k<<<1, 1>>>(&mut x, &y);
            }
        }
    }
}

fn main() {}
