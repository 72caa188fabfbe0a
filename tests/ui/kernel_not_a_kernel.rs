use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel, n: u32) {
        stream main;
        main: launch x<<<1, 32>>>(&mut x, n);
        main: launch n<<<1, 32>>>(&mut x, n);
        main: launch k.name()<<<1, 32>>>(&mut x, n);
    }
}

fn main() {}
