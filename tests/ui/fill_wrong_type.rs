use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f64>) {
        stream main;
        main: fill x = 0.0f64;
    }
}

fn main() {}
