#![deny(warnings)]

use streamgraph::{CallStream, DeviceBuffer, DeviceFlag, In, Kernel, Out, Plan, StreamOp};

/// Reads its input, writes its output; issues nothing.
struct Op;

// SAFETY: issues nothing.
unsafe impl StreamOp for Op {
    type Operands<'a> = (Out<'a, f32>, In<'a, f32>);
    fn issue(&self, _: &CallStream<'_>, _: &mut Self::Operands<'_>) -> streamgraph::Result<()> {
        Ok(())
    }
}

streamgraph::pipeline! {
    /// Temporaries in every place a buffer goes: launch arguments (whole, sliced, both
    /// modes in one launch), copies both ways, fills, `call` operands, a device block's body,
    /// host `for`/`if`, two streams; lengths from the parameters.
    pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, go: &mut DeviceFlag,
               k: &Kernel, op: &Op, n: usize, twice: bool) {
        stream main;
        stream side;
        event ready;
        temp a: f32[2 * n];
        temp b: f32[n];
        temp flags: u32[4];
        main: copy a.slice_mut(0..n) <- x;
        main: fill a.slice_mut(n..2 * n) = 1.0f32;
        main: launch k<<<1, 1>>>(&mut b, &a.slice(0..n), &a);
        main: record ready;
        side: wait ready;
        side: fill flags = 0u32;
        side: launch k<<<1, 1>>>(&mut flags, &b);
        for _i in 0..n {
            main: call op(&mut a.slice_mut(0..n), &b);
        }
        if twice {
            main: launch k<<<1, 1>>>(&mut a, n as u32);
        }
        main: fill go = 1u32;
        main: wait_stream side;
        main: while go, limit = 3u32 {
            main: launch k<<<1, 1>>>(&mut b, &mut go);
        }
        main: copy y <- b;
    }
}

/// The case's program: planned with plan-only buffers, free of races.
pub fn main() -> streamgraph::Result<()> {
    let x = DeviceBuffer::for_planning(16)?;
    let mut y = DeviceBuffer::for_planning(16)?;
    let mut go = DeviceFlag::for_planning()?;
    let k = Kernel::for_planning("k");
    let plan = Plan::build(&P::new(&x, &mut y, &mut go, &k, &Op, 16, true))?;
    plan.check_races()?;
    assert_eq!(plan.temporaries().len(), 3);
    assert!(plan.temp_peak_bytes() >= 128 + 64);
    Ok(())
}
