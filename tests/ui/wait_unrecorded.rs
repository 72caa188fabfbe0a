use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel, flag: bool) {
        stream main;
        stream side;
        event ready;
        side: wait ready;
        main: launch k<<<1, 32>>>(&mut x);
        main: record ready;
    }
}

fn main() {}
