// A fill value of another type than the buffer's elements is a plain type mismatch on the
// value, pointing at the buffer.
use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, n: usize) {
        stream main;
        main: fill x = 0u32;
        main: fill x.slice_mut(0..n) = 1;
    }
}

fn main() {}
