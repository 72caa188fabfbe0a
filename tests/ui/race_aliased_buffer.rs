// A buffer type under another name is a buffer like any other: the static race check reports
// the same race as in `race_write_read.rs`.
use streamgraph::DeviceBuffer as B;
use streamgraph::Kernel;

streamgraph::pipeline! {
    pipeline P(x: &mut B<f32>, y: &mut B<f32>, k: &Kernel, n: u32) {
        stream main;
        stream side;
        main: launch k<<<n, 256>>>(&mut x, n);
        side: launch k<<<n, 256>>>(&mut y, &x, n);
        main: wait_stream side;
    }
}

fn main() {}
