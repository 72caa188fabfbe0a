use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, name: String) {
        stream main;
        main: fill x = 0.0f32;
    }
}

fn main() {}
