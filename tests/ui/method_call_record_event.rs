use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel) {
        stream main;
        event ready;
        main: launch k<<<1, 32>>>(&mut x);
        main.record_event(ready);
    }
}

fn main() {}
