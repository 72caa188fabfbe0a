//! A copy's source is evaluated once, where the copy takes it: a value moved into the source
//! expression (a range that is not `Copy`) is moved once, and the check that the source is
//! not pageable host memory takes nothing from it; planned without a GPU.
#![deny(warnings)]

use std::ops::Range;

use streamgraph::{DeviceBuffer, PinnedBuffer, Plan};

streamgraph::pipeline! {
    pipeline Chunks<'r>(x: &mut DeviceBuffer<u32>, h: &PinnedBuffer<u32>, ranges: &'r [Range<usize>]) {
        stream main;
        for r in ranges.iter().cloned() {
            main: copy x.slice_mut(0..2) <- h.slice(r);
        }
    }
}

/// The case's program.
pub fn main() -> streamgraph::Result<()> {
    let mut x = DeviceBuffer::<u32>::for_planning(8)?;
    let h = PinnedBuffer::<u32>::for_planning(8)?;
    let ranges = [0..2, 4..6];
    let plan = Plan::build(&Chunks::new(&mut x, &h, &ranges))?;
    assert_eq!(plan.len(), 2);
    Ok(())
}
