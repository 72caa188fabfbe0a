//! The testing pattern to copy into your own tests, in one call of `streamgraph::testing::compare`
//! (the `testing` feature): run one pipeline eagerly and captured, `verify()` that the captured
//! graph's dependencies are exactly the pipeline's happens-before plan, replay the graph
//! several times, and compare the results **bitwise** with as many eager runs. A difference
//! is an `Error::OutputMismatch` naming the output and the first differing index.
//!
//! The pipeline: `main` scales `x`; `side` waits for it and accumulates `x` into `acc`;
//! `main` waits for `side` and squares `x`. Running it `RUNS` times accumulates, so a replay
//! count that differs from the eager run count — or a missing dependency — changes the bits.
//!
//! Without a GPU the example prints the plan and its DOT picture instead.
//!
//! Run with `cargo run --example eager_vs_captured` (in your own crate, enable streamgraph's
//! `testing` feature in `[dev-dependencies]`).

mod common;

use std::process::ExitCode;

use streamgraph::{pipeline, testing, Device, DeviceBuffer, Error, Kernel, Module, Plan, Stream};

const SOURCE: &str = r#"
extern "C" __global__ void scale(float* x, float k, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * k + 1.0f;
}

extern "C" __global__ void accumulate(float* acc, const float* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc[i] = acc[i] * 0.5f + x[i];
}

extern "C" __global__ void square(float* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * x[i] * 0.001f;
}
"#;

/// The pipeline's kernels.
struct Kernels {
    scale: Kernel,
    accumulate: Kernel,
    square: Kernel,
}

fn blocks(n: u32) -> u32 {
    n.div_ceil(256)
}

pipeline! {
    /// Scale, accumulate on a side stream, square after the side stream is done.
    pipeline Accumulate(x: &mut DeviceBuffer<f32>, acc: &mut DeviceBuffer<f32>, k: &Kernels, factor: f32, n: u32) {
        stream main;
        stream side;
        event scaled;

        main: launch k.scale<<<blocks(n), 256>>>(&mut x, factor, n);
        main: record scaled;
        side: wait scaled;
        side: launch k.accumulate<<<blocks(n), 256>>>(&mut acc, &x, n);
        main: wait_stream side;
        main: launch k.square<<<blocks(n), 256>>>(&mut x, n);
    }
}

const N: u32 = 1 << 16;
const RUNS: usize = 5;

fn main() -> ExitCode {
    common::run_or(run, "no GPU here: the pipeline's plan instead", || {
        let plan = plan()?;
        print!("{plan}");
        println!("\n{}", plan.to_dot());
        Ok(())
    })
}

/// The pipeline's plan, built on plan-only kernels and buffers (no GPU needed).
fn plan() -> Result<Plan, Error> {
    let k = Kernels {
        scale: Kernel::for_planning("scale"),
        accumulate: Kernel::for_planning("accumulate"),
        square: Kernel::for_planning("square"),
    };
    let mut x = DeviceBuffer::for_planning(N as usize)?;
    let mut acc = DeviceBuffer::for_planning(N as usize)?;
    Plan::build(&Accumulate::new(&mut x, &mut acc, &k, 1.5, N))
}

fn run() -> Result<(), Error> {
    let device = Device::new(None)?;
    let module = Module::from_cuda_source(&device, "eager_vs_captured", SOURCE)?;
    // SAFETY: the pipeline launches scale(float*, float, unsigned),
    // accumulate(float*, const float*, unsigned) and square(float*, unsigned) with those types.
    let k = unsafe {
        Kernels {
            scale: module.kernel("scale")?,
            accumulate: module.kernel("accumulate")?,
            square: module.kernel("square")?,
        }
    };
    let origin = Stream::new(&device, 0)?;
    let input: Vec<f32> = (0..N).map(|i| (i % 97) as f32 * 0.25).collect();

    /// What the pipeline borrows: the comparison builds a pipeline from it for each run and
    /// reads the outputs from it between runs.
    struct State {
        x: DeviceBuffer<f32>,
        acc: DeviceBuffer<f32>,
    }
    let mut state = State {
        x: DeviceBuffer::from_host(&device, &input)?,
        acc: DeviceBuffer::zeros(&device, N as usize)?,
    };

    // RUNS eager runs against RUNS replays of one verified graph (and one against one), each
    // side from the same initial state; `x` and `acc` compared bitwise.
    let report = testing::compare(&origin, &mut state, |s, run| {
        run.pipeline(Accumulate::new(&mut s.x, &mut s.acc, &k, 1.5, N))
    })
    .reset(|s| {
        s.x.copy_from_host(&input)?;
        s.acc.copy_from_host(&vec![0.0; N as usize])
    })
    .output("x", |s| s.x.to_vec())
    .output("acc", |s| s.acc.to_vec())
    .replays(RUNS)
    .run()?;
    println!("{report}");

    // The captured graph beside its plan, for the curious.
    let graph = streamgraph::capture(
        &origin,
        Accumulate::new(&mut state.x, &mut state.acc, &k, 1.5, N),
    )?;
    println!("{}", graph.to_dot_beside_plan()?);
    Ok(())
}
