use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel) {
        stream main;
        main: while done {
            main: launch k<<<1, 1>>>(&mut x);
        }
        main: if x.len() > 0 {
            main: launch k<<<1, 1>>>(&mut x);
        }
    }
}

fn main() {}
