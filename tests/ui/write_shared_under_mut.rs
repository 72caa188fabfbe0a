// A parameter declared `&mut` whose buffer is borrowed shared under it (`&mut &DeviceBuffer`,
// `&mut DeviceView`, `&mut &PinnedBuffer`, `&mut [&DeviceBuffer]`) gives no write permission:
// the `&mut` is exclusive for the reference only, others may be reading the memory.
use streamgraph::{DeviceBuffer, DeviceView, Kernel, PinnedBuffer};

streamgraph::pipeline! {
    pipeline P<'a>(
        x: &mut &'a DeviceBuffer<u32>,
        v: &mut DeviceView<'a, u32>,
        h: &mut &'a PinnedBuffer<u32>,
        xs: &mut [&'a DeviceBuffer<u32>],
        y: &mut DeviceBuffer<u32>,
        k: &Kernel,
    ) {
        stream main;
        main: launch k<<<1, 32>>>(&mut x);
        main: copy x <- y;
        main: fill x.slice(0..1) = 0u32;
        main: copy v.slice_mut(0..1) <- y.slice(0..1);
        main: copy h <- y;
        main: fill xs[0] = 1u32;
        main: launch k<<<1, 32>>>(&mut y, &x, &v);
    }
}

fn main() {}
