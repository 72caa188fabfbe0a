use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel) {
        stream main;
        stream side;
        event ready;
        main: launch k<<<1, 32>>>(&mut x);
        main: record ready;
        side.wait_event(ready);
    }
}

fn main() {}
