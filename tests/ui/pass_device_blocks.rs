use streamgraph::{DeviceBuffer, DeviceFlag, Kernel};

streamgraph::pipeline! {
    /// Every form of device block: a loop with a limit, nesting, `if`/`else`, several streams
    /// and events inside a body, host control flow inside a body.
    pipeline P(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, go: &mut DeviceFlag,
               inner: &mut DeviceFlag, pick: &DeviceFlag, k: &Kernel, n: u32) {
        stream main;
        stream side;
        event e;
        main: fill go = 1u32;
        main: while go, limit = n * 2 {
            main: launch k<<<1, 1>>>(&mut x, &mut go);
            main: record e;
            side: wait e;
            side: launch k<<<1, 1>>>(&mut y, &x);
            main: wait_stream side;
            for _i in 0..n {
                main: launch k<<<1, 1>>>(&mut x);
            }
            main: fill inner = 1u32;
            main: while inner {
                main: launch k<<<1, 1>>>(&mut inner);
            }
        }
        side: wait_stream main;
        side: if pick {
            side: launch k<<<1, 1>>>(&mut y);
        } else {
            main: launch k<<<1, 1>>>(&mut x);
        }
        main: wait_stream side;
    }
}

/// The case's program.
pub fn main() {}
