use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, x: &DeviceBuffer<f32>) {
        stream main;
    }
}

fn main() {}
