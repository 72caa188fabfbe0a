use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(input: &mut DeviceBuffer<f32>, k: &Kernel) {
        stream main;
        main: launch k<<<1, 32>>>(&mut inptu);
    }
}

fn main() {}
