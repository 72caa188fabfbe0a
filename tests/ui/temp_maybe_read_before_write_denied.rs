//! The warning of a temporary that a run may read before writing it, made an error to
//! compare its text.
#![deny(deprecated)]

use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(y: &mut DeviceBuffer<f32>, k: &Kernel, n: usize, rounds: usize) {
        stream main;
        temp h: f32[n];
        for _r in 0..rounds {
            main: fill h = 1.0f32;
        }
        main: launch k<<<1, 1>>>(&mut y, &h);
    }
}

fn main() {}
