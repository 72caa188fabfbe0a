//! Writes through `&mut` parameters: whole buffers, parts (`slice_mut`, and `slice` as a
//! write), elements of slices and `Vec`s of buffers, exclusive views; planned without a GPU,
//! each writing the range it names.
#![deny(warnings)]

use streamgraph::{DeviceBuffer, DeviceViewMut, Kernel, PinnedBuffer, Plan};

streamgraph::pipeline! {
    pipeline Parts<'v>(
        x: &mut DeviceBuffer<u32>,
        v: &mut DeviceViewMut<'v, u32>,
        h: &mut PinnedBuffer<u32>,
        xs: &mut [DeviceBuffer<u32>],
        hs: &mut Vec<PinnedBuffer<u32>>,
        k: &Kernel,
        n: usize,
    ) {
        stream main;
        main: copy x.slice_mut(0..n) <- xs[0].slice(0..n);
        main: copy x.slice(n..2 * n) <- h.slice(0..n);
        main: fill v.slice_mut(1..2) = 3u32;
        main: copy h.slice_mut(2..) <- x.slice(0..6);
        main: launch k<<<1, 32>>>(&mut xs[1].slice_mut(..n), &x);
        main: copy hs[1] <- xs[0];
        main: fill (xs[1]) = 0u32;
    }
}

/// The case's program.
pub fn main() -> streamgraph::Result<()> {
    let k = Kernel::for_planning("k");
    let mut x = DeviceBuffer::<u32>::for_planning(8)?;
    let mut w = DeviceBuffer::<u32>::for_planning(4)?;
    let mut v = w.slice_mut(..);
    let mut h = PinnedBuffer::<u32>::for_planning(8)?;
    let mut xs = vec![
        DeviceBuffer::for_planning(8)?,
        DeviceBuffer::for_planning(8)?,
    ];
    let mut hs = vec![
        PinnedBuffer::for_planning(8)?,
        PinnedBuffer::for_planning(8)?,
    ];
    let plan = Plan::build(&Parts::new(&mut x, &mut v, &mut h, &mut xs, &mut hs, &k, 2))?;
    let written: Vec<usize> = plan
        .ops()
        .iter()
        .map(|op| op.accesses[0].range.bytes)
        .collect();
    assert_eq!(written, [8, 8, 4, 24, 8, 32, 32]);
    Ok(())
}
