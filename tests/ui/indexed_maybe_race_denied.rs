//! The warning of a buffer picked by a run-time index that may race, denied into an error so
//! that its text is compared.
#![deny(deprecated)]
use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(bufs: &mut [DeviceBuffer<f32>], i: usize, k: &Kernel) {
        stream main;
        stream side;
        main: launch k<<<1, 1>>>(&mut bufs[i]);
        side: launch k<<<1, 1>>>(&bufs[1]);
    }
}

fn main() {
    let _ = P::PROGRAM;
}
