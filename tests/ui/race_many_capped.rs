//! Ten writes alternating between two streams: 25 data races, of which the first 20 are
//! listed and one more error counts the other 5.
use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>) {
        stream a;
        stream b;
        a: fill x = 0.0f32;
        b: fill x = 1.0f32;
        a: fill x = 2.0f32;
        b: fill x = 3.0f32;
        a: fill x = 4.0f32;
        b: fill x = 5.0f32;
        a: fill x = 6.0f32;
        b: fill x = 7.0f32;
        a: fill x = 8.0f32;
        b: fill x = 9.0f32;
    }
}

fn main() {}
