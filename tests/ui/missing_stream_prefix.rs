// The statement names no stream; the parameter types stay used (no `unused import` warning).
use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel) {
        stream main;
        launch k<<<1, 32>>>(&mut x);
    }
}

fn main() {
    let _ = P::new;
}
