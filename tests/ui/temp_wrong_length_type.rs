use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(y: &mut DeviceBuffer<f32>, n: u32) {
        stream main;
        temp h: f32[n];
        main: fill h = 0.0f32;
        main: copy y <- h;
    }
}

fn main() {}
