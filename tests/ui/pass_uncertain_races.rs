//! Conflicts the static check must not report: ordered, ordered on every branch, possibly
//! ordered (left to the run-time plan), or on sub-ranges.
#![deny(warnings)]

use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline Ordered(x: &mut DeviceBuffer<f32>, k: &Kernel, flag: bool, n: u32) {
        stream main;
        stream side;
        stream third;
        event ready;

        // Ordered through an event.
        main: launch k<<<1, 32>>>(&mut x);
        main: record ready;
        side: wait ready;
        side: launch k<<<1, 32>>>(&x);
        // Ordered through a chain of wait_streams.
        third: wait_stream side;
        main: wait_stream third;
        main: fill x = 1.0f32;
        // Ordered on every branch.
        if flag { side: wait_stream main; } else { main: record ready; side: wait ready; }
        side: fill x = 2.0f32;
        // Ordered on one branch only: the run-time plan decides.
        if flag { third: wait_stream side; }
        third: fill x = 3.0f32;
        main: wait_stream side;
        main: wait_stream third;
        main: record ready;
        // The loop body orders its next iteration through the back edge on `ready`.
        for i in 0..n {
            main: wait ready;
            main: fill x = 4.0f32;
            main: record ready;
            side: wait ready;
            side: launch k<<<1, 32>>>(&x, i);
            side: record ready;
        }
        // Sub-ranges: only the run-time plan knows whether they overlap.
        main: launch k<<<1, 32>>>(&mut x.slice(0..4));
        side: launch k<<<1, 32>>>(&mut x.slice(4..8));
        main: wait_stream side;
        main: wait_stream third;
    }
}

/// The case's program.
pub fn main() {}
