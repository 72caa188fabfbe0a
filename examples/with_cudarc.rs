//! An existing cudarc program adopts streamgraph: its context, stream, module (compiled with
//! cudarc's NVRTC) and `CudaSlice`s go into a pipeline, which runs eagerly on the borrowed
//! slices and captured into a CUDA graph on slices moved into `DeviceBuffer`s, and the two
//! results are compared bitwise.
//!
//! - Eagerly, `CudaSlice`s are pipeline parameters as they are. Work on them is ordered with
//!   the slices' own stream, so cudarc's reads (and its stream-ordered frees) come after it.
//! - A graph replays after the pipeline's borrows end, so capturing a borrowed `CudaSlice` is
//!   refused; `DeviceBuffer::from_cudarc` moves the slice into a buffer that graphs keep
//!   alive, and `into_cudarc` gives it back.
//!
//! Without a GPU it prints what it would do.
//!
//! Run with `cargo run --example with_cudarc`.

use std::process::ExitCode;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaModule, CudaSlice, CudaStream};
use streamgraph::{
    capture, pipeline, Device, DeviceBuffer, DeviceMemory, DeviceMemoryMut, Eager, Kernel, Module,
    Stream,
};

/// The cudarc program's kernels, as it compiles them.
const SOURCE: &str = r#"
extern "C" __global__ void scale(float* y, const float* x, float k, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = k * x[i];
}

extern "C" __global__ void axpy(float* y, const float* x, float a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

/// The pipeline's kernels.
#[derive(Debug)]
struct Kernels {
    scale: Kernel,
    axpy: Kernel,
}

pipeline! {
    /// `t = 3 x` on the origin; a side stream then computes `y = 0.5 t + y`, and the origin
    /// overwrites `t = 2 x` once the side stream has read it (`wait_stream`). Generic over the
    /// memory: cudarc slices eagerly, buffers in a graph.
    pipeline Blend<Y: DeviceMemoryMut<Elem = f32>, X: DeviceMemory<Elem = f32>, T: DeviceMemoryMut<Elem = f32>>(
        y: &mut Y,
        x: &X,
        t: &mut T,
        k: &Kernels,
        n: u32,
    ) {
        stream main;
        stream side;
        event scaled;

        main: launch k.scale<<<n.div_ceil(256), 256>>>(&mut t, &x, 3.0f32, n);
        main: record scaled;
        side: wait scaled;
        side: launch k.axpy<<<n.div_ceil(256), 256>>>(&mut y, &t, 0.5f32, n);
        main: wait_stream side;
        main: launch k.scale<<<n.div_ceil(256), 256>>>(&mut t, &x, 2.0f32, n);
    }
}

const N: usize = 1 << 20;
const RUNS: usize = 4;

fn main() -> ExitCode {
    if !Device::driver_available() {
        println!(
            "no CUDA driver here: this example takes a cudarc program's context, stream, module \
             and slices, runs the `Blend` pipeline on them eagerly ({RUNS} times) and captured \
             ({RUNS} replays), and compares the results bitwise; run it on a machine with a GPU"
        );
        return ExitCode::SUCCESS;
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What the cudarc program already has.
struct CudarcProgram {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    x: CudaSlice<f32>,
    y: CudaSlice<f32>,
    t: CudaSlice<f32>,
}

fn cudarc_program(input: &[f32]) -> Result<CudarcProgram, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.new_stream()?;
    let ptx = cudarc::nvrtc::compile_ptx(SOURCE)?;
    let module = ctx.load_module(ptx)?;
    let x = stream.clone_htod(input)?;
    let y = stream.clone_htod(&vec![1.0f32; input.len()])?;
    let t = stream.alloc_zeros::<f32>(input.len())?;
    Ok(CudarcProgram {
        ctx,
        stream,
        module,
        x,
        y,
        t,
    })
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let input: Vec<f32> = (0..N).map(|i| (i % 251) as f32 * 0.125).collect();
    let CudarcProgram {
        ctx,
        stream: cu_stream,
        module,
        x,
        mut y,
        mut t,
    } = cudarc_program(&input)?;

    // The bridge: the same device, stream and module, seen by streamgraph.
    let device = Device::from_cudarc(ctx.clone());
    let origin = Stream::from_cudarc(cu_stream.clone());
    let module = Module::from_cudarc(&device, module);
    // SAFETY: the pipeline launches scale(float*, const float*, float, unsigned) and
    // axpy(float*, const float*, float, unsigned) with those types.
    let k = unsafe {
        Kernels {
            scale: module.kernel("scale")?,
            axpy: module.kernel("axpy")?,
        }
    };
    let n = N as u32;

    // 1. Eagerly, on the cudarc program's own slices.
    let mut eager = Eager::new(&origin);
    for _ in 0..RUNS {
        eager.run(&Blend::new(&mut y, &x, &mut t, &k, n))?;
    }
    // cudarc reads on its stream, which the pipeline's work is ordered before.
    let eager_y = cu_stream.clone_dtoh(&y)?;
    let eager_t = cu_stream.clone_dtoh(&t)?;

    // Capturing the borrowed slices is refused: the graph would outlive the borrow.
    match capture(&origin, Blend::new(&mut y, &x, &mut t, &k, n)) {
        Err(e) if e.to_string().contains("DeviceBuffer::from_cudarc") => {
            println!("a capture of the borrowed slices is refused:\n  {e}")
        }
        Err(e) => return Err(e.into()),
        Ok(_) => return Err("a capture of borrowed cudarc slices was accepted".into()),
    }

    // 2. Captured, on fresh cudarc slices moved into buffers that the graph keeps alive.
    let CudarcProgram { x, y, t, .. } = cudarc_program(&input)?;
    let x = DeviceBuffer::from_cudarc(x)?;
    let mut y = DeviceBuffer::from_cudarc(y)?;
    let mut t = DeviceBuffer::from_cudarc(t)?;
    let graph = capture(&origin, Blend::new(&mut y, &x, &mut t, &k, n))?;
    let report = graph.verify()?;
    println!(
        "captured {} operations and {} edges, equal to the pipeline's plan",
        report.operations, report.edges
    );
    let exec = graph.instantiate()?;
    exec.replay(&origin, RUNS)?;
    exec.into_pipeline();

    // Back to cudarc, once no graph keeps them.
    let (Ok(y), Ok(t)) = (y.into_cudarc(), t.into_cudarc()) else {
        return Err("the buffers are still kept by a graph".into());
    };
    let graph_y = cu_stream.clone_dtoh(&y)?;
    let graph_t = cu_stream.clone_dtoh(&t)?;

    let differs = |a: &[f32], b: &[f32]| (0..a.len()).find(|&i| a[i].to_bits() != b[i].to_bits());
    match (differs(&eager_y, &graph_y), differs(&eager_t, &graph_t)) {
        (None, None) => {
            println!(
                "eager ({RUNS} runs) and graph ({RUNS} replays) agree bitwise on {N} elements; \
                 y[7] = {}, t[7] = {}",
                graph_y[7], graph_t[7]
            );
            Ok(())
        }
        (Some(i), _) => Err(format!("y differs at {i}: {} vs {}", eager_y[i], graph_y[i]).into()),
        (_, Some(i)) => Err(format!("t differs at {i}: {} vs {}", eager_t[i], graph_t[i]).into()),
    }
}
