use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, count: &mut u32) {
        stream main;
        main: fill x = 0.0f32;
        main: fill count = 0u32;
    }
}

fn main() {}
