use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel, flag: bool) {
        stream main;
        stream side;
        stream third;
        side: fill x = 0.0f32;
        if flag {
            main: wait_stream third;
        } else {
            third: wait_stream side;
        }
        main: launch k<<<1, 32>>>(&mut x);
    }
}

fn main() {}
