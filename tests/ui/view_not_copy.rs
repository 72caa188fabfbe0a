// A view handed to one pipeline is that pipeline's: views are not `Copy`.
use streamgraph::{DeviceBuffer, DeviceView};

fn take(_: DeviceView<'_, f32>) {}

fn twice(x: &DeviceBuffer<f32>) {
    let v = x.slice(0..4);
    take(v);
    take(v);
}

fn main() {
    let _ = twice;
}
