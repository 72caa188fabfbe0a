use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(y: &mut DeviceBuffer<f32>, n: usize) {
        stream main;
        temp h: f32[n];
        main: fill y = 0.0f32;
    }
}

fn main() {}
