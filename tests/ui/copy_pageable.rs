use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(d: &mut DeviceBuffer<f32>, h: &[f32], v: &mut Vec<f32>) {
        stream main;
        main: copy d <- h;
        main: copy v <- d;
    }
}

fn main() {}
