#![deny(warnings)]

use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    /// Every form of device `switch`: non-contiguous arms, an empty arm, `_`, arms on several
    /// streams with events of their own, a `switch` nested in a loop and blocks nested in arms,
    /// arms that write one buffer (they are alternatives), without `_`, trailing commas.
    pipeline P(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, go: &mut DeviceFlag,
               pick: &mut DeviceFlag, inner: &DeviceFlag, k: &Kernel, n: u32) {
        stream main;
        stream side;
        event e;
        main: launch k<<<1, 1>>>(&mut pick, n);
        main: switch pick {
            0 => {
                main: launch k<<<1, 1>>>(&mut x);
                main: record e;
                side: wait e;
                side: launch k<<<1, 1>>>(&mut y, &x);
            }
            5 => {}
            17 => {
                main: launch k<<<1, 1>>>(&mut x);
                main: while go, limit = n {
                    main: launch k<<<1, 1>>>(&mut go);
                }
            }
            _ => {
                side: launch k<<<1, 1>>>(&mut x);
                side: if inner {
                    side: launch k<<<1, 1>>>(&mut y);
                }
            }
        }
        main: fill go = 1u32;
        main: while go {
            main: switch pick {
                1 => { main: launch k<<<1, 1>>>(&mut go, &x); },
                2 => { side: launch k<<<1, 1>>>(&mut y); },
            }
        }
        side: wait_stream main;
        side: launch k<<<1, 1>>>(&mut x, &y);
        main: wait_stream side;
    }
}

/// The case's program.
pub fn main() {}
