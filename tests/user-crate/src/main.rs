//! A cudarc program that hands its slices, stream and kernel to a streamgraph pipeline.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice};
use streamgraph::{pipeline, Device, Eager, Kernel, Module, Stream};

pipeline! {
    /// `y = 2 x` on the cudarc program's own buffers.
    pub pipeline Double(y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, k: &Kernel, n: u32) {
        stream main;
        main: launch k<<<n.div_ceil(256), 256>>>(&mut y, &x, n);
    }
}

const SOURCE: &str = r#"
extern "C" __global__ void twice(float* y, const float* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if !Device::driver_available() {
        println!("no CUDA driver: nothing to run (the crate builds, which is what it checks)");
        return Ok(());
    }
    let ctx: Arc<CudaContext> = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let ptx = cudarc::nvrtc::compile_ptx(SOURCE)?;
    let module = ctx.load_module(ptx)?;
    let x = stream.clone_htod(&[1.0f32, 2.0, 3.0])?;
    let mut y = stream.alloc_zeros::<f32>(3)?;

    // SAFETY: every launch of `twice` passes (float*, const float*, unsigned).
    let twice =
        unsafe { Module::from_cudarc(&Device::from_cudarc(ctx.clone()), module).kernel("twice")? };
    Eager::new(&Stream::from_cudarc(stream.clone())).run(&Double::new(&mut y, &x, &twice, 3))?;
    assert_eq!(stream.clone_dtoh(&y)?, [2.0, 4.0, 6.0]);
    println!("ok");
    Ok(())
}
