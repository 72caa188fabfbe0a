use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline Outer(x: &mut DeviceBuffer<f32>, k: &Kernel) {
        stream main;
        main: launch k<<<1, 32>>>(&mut x);
        streamgraph::pipeline! {
            pipeline Inner(y: &mut DeviceBuffer<f32>) {
                stream side;
                side: fill y = 0.0f32;
            }
        }
    }
}

fn main() {}
