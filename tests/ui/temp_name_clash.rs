use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(y: &mut DeviceBuffer<f32>, n: usize) {
        stream main;
        temp y: f32[n];
        temp h: f32[n];
        temp h: u32[n];
        main: fill h = 0.0f32;
    }
}

fn main() {}
