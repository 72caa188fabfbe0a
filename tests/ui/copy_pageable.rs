use streamgraph::DeviceBuffer;

// Pageable host memory under another name is pageable host memory.
type Samples = [f32];

streamgraph::pipeline! {
    pipeline P(
        d: &mut DeviceBuffer<f32>,
        h: &[f32],
        v: &mut Vec<f32>,
        s: &Samples,
        vs: &[Vec<f32>],
        n: usize,
    ) {
        stream main;
        main: copy d <- h;
        main: copy v <- d;
        main: copy d.slice_mut(0..n) <- s;
        main: copy d <- vs[n];
    }
}

fn main() {}
