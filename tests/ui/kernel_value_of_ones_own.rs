// `KernelValue` is sealed: a value type of one's own cannot pass a buffer it points at by
// value, past the race check (a by-value argument names no memory).
use streamgraph::{DeviceBuffer, KernelArg, KernelValue};

#[derive(Clone, Copy)]
pub struct Hidden<'a>(pub &'a &'a mut DeviceBuffer<f32>);

impl KernelValue for Hidden<'_> {
    fn kernel_arg(&self) -> KernelArg<'_> {
        KernelArg::write_through(self.0)
    }
}

fn main() {}
