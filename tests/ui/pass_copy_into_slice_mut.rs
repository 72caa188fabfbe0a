//! A copy into part of a pinned buffer, written `slice_mut` (as it is written elsewhere).
use streamgraph::{DeviceBuffer, PinnedBuffer};

streamgraph::pipeline! {
    pipeline P(dst: &mut PinnedBuffer<f32>, out: &DeviceBuffer<f32>, a: usize, b: usize) {
        stream main;
        main: copy dst.slice_mut(a..b) <- out;
    }
}

/// The case's program.
pub fn main() {
    let _ = P::PROGRAM;
}
