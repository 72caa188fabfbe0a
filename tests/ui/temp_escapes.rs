//! A temporary cannot leave the run that allocated it: not into a host function, which the
//! graph keeps past every run.
use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(y: &mut DeviceBuffer<f32>, n: usize) {
        stream main;
        temp h: f32[n];
        main: fill h = 0.0f32;
        main: host move || { let _ = h.len(); };
        main: copy y <- h;
    }
}

fn main() {}
