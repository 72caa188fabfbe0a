// Every statement that does not parse is reported, each once, with no errors after them from
// the statements that do.
use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel, n: u32) {
        stream main;
        stream side;
        event ready;
        main: launch k<<<1, 32>>>(&mut x);
        main.record_event(ready);
        side wait ready;
        for _ in 0..n {
            side: lunch k<<<1, 32>>>(&mut x);
            side: fill x = 0.0f32;
        }
        main: launch k<<<1, 32(&mut x);
        main: wait_stream side;
    }
}

fn main() {
    let _ = P::new;
}
