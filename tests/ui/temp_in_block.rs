use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(y: &mut DeviceBuffer<f32>, n: usize) {
        stream main;
        for _i in 0..2 {
            temp h: f32[n];
            main: fill y = 0.0f32;
        }
    }
}

fn main() {}
