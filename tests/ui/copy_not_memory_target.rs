// A copy into something that is not memory is reported on the destination alone.
use streamgraph::DeviceBuffer;

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<u32>, count: &mut u32, n: usize) {
        stream main;
        main: copy count <- x.slice(0..1);
        main: copy x.slice_mut(0..n) <- count;
    }
}

fn main() {}
