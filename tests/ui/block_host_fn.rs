use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, flag: &mut DeviceFlag, k: &Kernel) {
        stream main;
        main: while flag, limit = 10 {
            main: launch k<<<1, 1>>>(&mut x, &mut flag);
            main: host || println!("iteration done");
        }
    }
}

fn main() {}
