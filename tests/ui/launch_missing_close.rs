streamgraph::pipeline! {
    pipeline P(x: &mut streamgraph::DeviceBuffer<f32>, k: &streamgraph::Kernel, n: u32) {
        stream main;
        main: launch k<<<n, 32(&mut x, n);
    }
}

fn main() {}
