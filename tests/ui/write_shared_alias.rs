// A buffer borrowed shared under a `&mut` behind a type alias, which the macro cannot see
// through, still cannot be written: the type system refuses the write, on the user's tokens.
use streamgraph::{DeviceBuffer, Kernel};

type Shared<'a> = &'a DeviceBuffer<u32>;

streamgraph::pipeline! {
    pipeline P<'a>(x: &mut Shared<'a>, y: &mut DeviceBuffer<u32>, k: &Kernel) {
        stream main;
        main: launch k<<<1, 32>>>(&mut x);
        main: copy x.slice_mut(0..1) <- y.slice(0..1);
        main: fill x = 0u32;
    }
}

fn main() {}
