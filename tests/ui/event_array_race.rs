use streamgraph::{DeviceBuffer, Kernel};

streamgraph::pipeline! {
    pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel) {
        stream main;
        stream side;
        event ready[2];
        main: record ready[1];
        main: launch k<<<1, 1>>>(&mut x);
        main: record ready[0];
        side: wait ready[1];
        side: launch k<<<1, 1>>>(&x);
    }
}

// Whichever element `i` picks, it was recorded before the write: a race certain at any index.
streamgraph::pipeline! {
    pipeline Q(x: &mut DeviceBuffer<f32>, k: &Kernel, i: usize) {
        stream main;
        stream side;
        event ready[2];
        main: record ready[0];
        main: record ready[1];
        main: launch k<<<1, 1>>>(&mut x);
        side: wait ready[i];
        side: launch k<<<1, 1>>>(&x);
    }
}

fn main() {}
