//! When the static race check gives up, the pipeline still compiles, with a warning (allowed
//! here, so that the suite's output shows no warning: `race_check_incomplete_denied.rs`
//! compares its text).
#![allow(deprecated)]
use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    /// Thirteen optional joins before a read: 8,192 distinct orderings of the write and the
    /// read, more than the static check follows.
    pipeline Joins(x: &mut DeviceBuffer<f32>, k: &Kernel, f: [bool; 13]) {
        stream s0; stream s1; stream s2; stream s3; stream s4; stream s5; stream s6;
        stream s7; stream s8; stream s9; stream s10; stream s11; stream s12; stream s13;
        stream last;
        s0: fill x = 1.0f32;
        if f[0] { s1: wait_stream s0; }
        if f[1] { s2: wait_stream s0; }
        if f[2] { s3: wait_stream s0; }
        if f[3] { s4: wait_stream s0; }
        if f[4] { s5: wait_stream s0; }
        if f[5] { s6: wait_stream s0; }
        if f[6] { s7: wait_stream s0; }
        if f[7] { s8: wait_stream s0; }
        if f[8] { s9: wait_stream s0; }
        if f[9] { s10: wait_stream s0; }
        if f[10] { s11: wait_stream s0; }
        if f[11] { s12: wait_stream s0; }
        if f[12] { s13: wait_stream s0; }
        last: wait_stream s1; last: wait_stream s2; last: wait_stream s3; last: wait_stream s4;
        last: wait_stream s5; last: wait_stream s6; last: wait_stream s7; last: wait_stream s8;
        last: wait_stream s9; last: wait_stream s10; last: wait_stream s11; last: wait_stream s12;
        last: wait_stream s13;
        last: launch k<<<1, 32>>>(&x);
        s0: wait_stream last;
    }
}

/// The case's program.
pub fn main() {
    let _ = Joins::PROGRAM;
}
