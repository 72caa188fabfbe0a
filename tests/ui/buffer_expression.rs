use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(d: &mut DeviceBuffer<f32>, h: &DeviceBuffer<f32>) {
        stream main;
        main: copy d <- (h + 1);
    }
}

fn main() {}
