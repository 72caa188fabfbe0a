// Writing device memory through the safe launch API needs an exclusive borrow.
use streamgraph::{DeviceBuffer, Kernel, KernelArg, LaunchConfig, Stream};

fn launch(k: &Kernel, s: &Stream, config: LaunchConfig, x: &DeviceBuffer<f32>) -> streamgraph::Result<()> {
    k.launch_on(s, config, &[KernelArg::write(x)])
}

fn main() {
    let _ = launch;
}
