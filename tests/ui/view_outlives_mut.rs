// A read-only view taken from a writable view is borrowed from it: neither it nor a slice of it
// can be used while the writable view is borrowed exclusively.
use streamgraph::{DeviceBuffer, DeviceView, DeviceViewMut, PinnedBuffer, PinnedView, PinnedViewMut};

fn device(_: &mut DeviceViewMut<'_, f32>, _: &DeviceView<'_, f32>) {}
fn pinned(_: &mut PinnedViewMut<'_, f32>, _: &PinnedView<'_, f32>) {}

fn alias(x: &mut DeviceBuffer<f32>, h: &mut PinnedBuffer<f32>) {
    let mut out = x.slice_mut(..);
    let shared = out.as_view().slice(..);
    device(&mut out, &shared);
    let mut out = h.slice_mut(..);
    let shared = out.as_view().slice(..);
    pinned(&mut out, &shared);
}

fn main() {
    let _ = alias;
}
