#![deny(warnings)]

use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    /// Signalled loops: kernels on two streams in the body, one writing the flag; a plain loop
    /// and a branch on the same flag nested in it (they only read it); a signalled loop on
    /// another flag nested in it; a signalled loop nested in a plain loop on the same flag.
    pipeline P(left: &mut DeviceBuffer<u32>, x: &mut DeviceBuffer<f32>, go: &mut DeviceFlag,
               inner: &mut DeviceFlag, countdown: &Kernel, k: &Kernel, n: u32) {
        stream main;
        stream side;
        event e;
        main: fill go = 1u32;
        main: while go, signalled {
            main: record e;
            side: wait e;
            side: launch k<<<1, 1>>>(&mut x, n);
            main: launch countdown<<<1, 1>>>(&mut left, &mut go);
            main: wait_stream side;
            main: if go {
                main: launch k<<<1, 1>>>(&mut x, n);
            }
            main: fill inner = 1u32;
            main: while inner, signalled {
                main: launch countdown<<<1, 1>>>(&mut left, &mut inner);
            }
        }
        main: fill go = 1u32;
        main: while go, limit = n {
            main: launch k<<<1, 1>>>(&mut go, &x);
            main: while go, signalled {
                main: launch countdown<<<1, 1>>>(&mut left, &mut go);
            }
        }
    }
}

/// The case's program.
pub fn main() {}
