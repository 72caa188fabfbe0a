//! A buffer picked by a run-time index may race with another stream's use of its parameter:
//! a warning, not an error (allowed here so that the suite's output shows no warning:
//! `indexed_maybe_race_denied.rs` compares its text).
#![allow(deprecated)]
use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(bufs: &mut [DeviceBuffer<f32>], i: usize, k: &Kernel) {
        stream main;
        stream side;
        main: launch k<<<1, 1>>>(&mut bufs[i]);
        side: launch k<<<1, 1>>>(&bufs[1]);
    }
}

/// The case's program.
pub fn main() {
    let _ = P::PROGRAM;
}
