// A write names the parameter, an element of it or one part of either: the pipeline writes
// through its `&mut` borrow of the parameter, which other expressions do not keep.
use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<u32>, k: &Kernel) {
        stream main;
        main: fill x.slice_mut(0..4).slice_mut(0..2) = 0u32;
        main: launch k<<<1, 32>>>(&mut x.as_view());
    }
}

fn main() {}
