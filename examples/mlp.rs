//! One step of a two-layer MLP on two streams: `y = relu(x·W1 + b1)·W2 + b2` for a batch of 64
//! rows of 1,024 features (1,024 → 1,024 → 1,024, `f32`), through cuBLAS GEMMs in `call`
//! statements (`streamgraph::ops::Gemm`) and a bias + ReLU kernel of its own (NVRTC).
//!
//! The batch is split in two halves of 32 rows: `main` runs the first half's four operations,
//! `side` the second's, so the two halves overlap on the GPU. Each stream has its own `Gemm`
//! (an op's workspace serves one call at a time); both read the same weights. The hidden
//! activations are temporaries, one per half (`temp h0`, `temp h1`): allocated on each
//! half's stream before its first GEMM and freed after its second, from the device's memory
//! pool when run eagerly and, captured, in memory the graph owns (`Capture::own_temp_memory`:
//! at the offsets the plan lays out, in 2 MiB steps rather than graph memory's 32 MiB
//! granules) — the pipeline's caller allocates only its input and output.
//!
//! The step runs eagerly, is captured into a CUDA graph (verified against its plan) and
//! replayed 1,000 times. The result is compared with a CPU reference (f64 sums, a tolerance of
//! the rounding of 1,024-term `f32` sums, see `layer`), and the replay's output with the eager run's,
//! bitwise. Prints the median device time of a step (CUDA events around each step, after
//! warm-up) for eager runs and for replays, and the time per step of 1,000 replays back to back.
//! Without a GPU, or without `libcublas`, it says why and prints the pipeline's plan instead.
//!
//! Run with `cargo run --release --example mlp`.

mod common;

use std::process::ExitCode;

use streamgraph::ops::{Gemm, GemmConfig};
use streamgraph::{
    pipeline, CallStream, Capture, Device, DeviceBuffer, Eager, Error, Event, In, Kernel, Module,
    Out, Plan, Stream, StreamOp,
};

const SOURCE: &str = r#"
// y[i] = y[i] + b[i % cols], then max(·, 0) when `relu` is set: the bias of a row-major
// [rows × cols] result, one element per column (output feature).
extern "C" __global__ void bias_act(float* y, const float* b, unsigned n, unsigned cols,
                                    unsigned relu) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = y[i] + b[i % cols];
    y[i] = relu ? fmaxf(v, 0.0f) : v;
}
"#;

/// Rows of the batch.
const BATCH: usize = 64;
/// Features in, hidden and out.
const WIDTH: usize = 1024;
/// Rows per stream.
const HALF: usize = BATCH / 2;
const WARMUP: usize = 20;
const EAGER_STEPS: usize = 200;
const REPLAYS: usize = 1_000;

/// Elements of rows `r0..r1` of a `[BATCH × WIDTH]` matrix.
fn rows(r0: usize, r1: usize) -> std::ops::Range<usize> {
    r0 * WIDTH..r1 * WIDTH
}

fn blocks(n: u32) -> u32 {
    n.div_ceil(256)
}

pipeline! {
    /// One MLP step, rows `0..half` on `main` and `half..2·half` on `side`: per half a GEMM
    /// into `h`, bias + ReLU on `h`, a GEMM into `y`, bias on `y`. `G` is the GEMM op
    /// (`Gemm<f32>` of a `half × width × width` row-major shape; a plan-only stand-in without
    /// a GPU).
    pipeline MlpStep<'o, G>(
        x: &DeviceBuffer<f32>,
        y: &mut DeviceBuffer<f32>,
        w1: &DeviceBuffer<f32>,
        b1: &DeviceBuffer<f32>,
        w2: &DeviceBuffer<f32>,
        b2: &DeviceBuffer<f32>,
        gemm_main: &'o G,
        gemm_side: &'o G,
        bias_act: &Kernel,
        half: usize,
        width: u32,
    ) where G: for<'a> StreamOp<Operands<'a> = (Out<'a, f32>, In<'a, f32>, In<'a, f32>)> {
        stream main;
        stream side;
        temp h0: f32[half * width as usize];
        temp h1: f32[half * width as usize];
        main: call gemm_main(&mut h0, &x.slice(rows(0, half)), &w1);
        main: launch bias_act<<<blocks(half as u32 * width), 256>>>(&mut h0, &b1, half as u32 * width, width, 1u32);
        main: call gemm_main(&mut y.slice_mut(rows(0, half)), &h0, &w2);
        main: launch bias_act<<<blocks(half as u32 * width), 256>>>(&mut y.slice_mut(rows(0, half)), &b2, half as u32 * width, width, 0u32);

        side: call gemm_side(&mut h1, &x.slice(rows(half, 2 * half)), &w1);
        side: launch bias_act<<<blocks(half as u32 * width), 256>>>(&mut h1, &b1, half as u32 * width, width, 1u32);
        side: call gemm_side(&mut y.slice_mut(rows(half, 2 * half)), &h1, &w2);
        side: launch bias_act<<<blocks(half as u32 * width), 256>>>(&mut y.slice_mut(rows(half, 2 * half)), &b2, half as u32 * width, width, 0u32);
    }
}

/// A GEMM's place in the plan without a GPU: the operands of `Gemm<f32>`, no work.
struct PlannedGemm;

// SAFETY: `issue` issues nothing and touches no memory (it only refuses to run).
unsafe impl StreamOp for PlannedGemm {
    type Operands<'a> = (Out<'a, f32>, In<'a, f32>, In<'a, f32>);

    fn issue(&self, _: &CallStream<'_>, _: &mut Self::Operands<'_>) -> streamgraph::Result<()> {
        Err(Error::InvalidArgument(
            "a plan-only GEMM cannot be issued".into(),
        ))
    }
}

fn main() -> ExitCode {
    common::run_or(
        run,
        "without a GPU and cuBLAS: the step's plan instead",
        || {
            let plan = plan()?;
            print!("{plan}");
            Ok(())
        },
    )
}

/// The step's plan on plan-only buffers, kernel and GEMMs (no GPU needed).
fn plan() -> Result<Plan, Error> {
    let d = |n| DeviceBuffer::<f32>::for_planning(n);
    let (x, mut y) = (d(BATCH * WIDTH)?, d(BATCH * WIDTH)?);
    let (w1, b1, w2, b2) = (d(WIDTH * WIDTH)?, d(WIDTH)?, d(WIDTH * WIDTH)?, d(WIDTH)?);
    let k = Kernel::for_planning("bias_act");
    let plan = Plan::build(&MlpStep::new(
        &x,
        &mut y,
        &w1,
        &b1,
        &w2,
        &b2,
        &PlannedGemm,
        &PlannedGemm,
        &k,
        HALF,
        WIDTH as u32,
    ))?;
    plan.check_races()?;
    Ok(plan)
}

/// One layer on the CPU, `act(a·w + b)` for `a` `[BATCH × WIDTH]`, in f64, with each
/// element's tolerance for the GPU's `f32` result: the rounding of a 1,024-term `f32` sum,
/// `4·√1024·2⁻²⁴` of the sum of the terms' magnitudes (the `√n·u` rule for sums whose roundings
/// are independent, with a margin of 4), plus the input's tolerances (`a_err`) carried through
/// `w`, added in quadrature.
fn layer(a: &[f64], a_err: &[f64], w: &[f32], b: &[f32], relu: bool) -> (Vec<f64>, Vec<f64>) {
    let unit = 4.0 * (WIDTH as f64).sqrt() * f64::powi(2.0, -24);
    let mut out = vec![0.0; BATCH * WIDTH];
    let mut err = vec![0.0; BATCH * WIDTH];
    for r in 0..BATCH {
        for c in 0..WIDTH {
            let (mut sum, mut magnitude, mut carried) =
                (f64::from(b[c]), f64::from(b[c].abs()), 0.0);
            for k in 0..WIDTH {
                let (ak, wk) = (a[r * WIDTH + k], f64::from(w[k * WIDTH + c]));
                sum += ak * wk;
                magnitude += (ak * wk).abs();
                carried += (a_err[r * WIDTH + k] * wk).powi(2);
            }
            out[r * WIDTH + c] = if relu { sum.max(0.0) } else { sum };
            err[r * WIDTH + c] = unit * magnitude + carried.sqrt() + 1e-7;
        }
    }
    (out, err)
}

/// Median of the samples.
fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// µs of device time of `step` on `origin`, between two events: `WARMUP` untimed steps, then
/// the median of `count`.
fn time_steps(
    origin: &Stream,
    count: usize,
    mut step: impl FnMut() -> Result<(), Error>,
) -> Result<f32, Error> {
    let device = origin.device();
    let (start, end) = (Event::with_timing(&device)?, Event::with_timing(&device)?);
    for _ in 0..WARMUP {
        step()?;
    }
    origin.synchronize()?;
    let mut us = Vec::with_capacity(count);
    for _ in 0..count {
        start.record(origin)?;
        step()?;
        end.record(origin)?;
        end.synchronize()?;
        us.push(start.elapsed_time(&end)? * 1e3);
    }
    Ok(median(us))
}

fn run() -> Result<(), Error> {
    let device = Device::new(None)?;
    let config = GemmConfig::<f32>::row_major(HALF, WIDTH, WIDTH);
    // Without libcublas this is `Error::NoLibrary`, which `run_or` reports like a missing GPU.
    let (gemm_main, gemm_side) = (Gemm::new(&device, config)?, Gemm::new(&device, config)?);
    let module = Module::from_cuda_source(&device, "mlp", SOURCE)?;
    // SAFETY: every launch passes (float*, const float*, unsigned, unsigned, unsigned), the
    // kernel's C signature, with `y` holding the `n` elements it touches and `b` `cols`.
    let bias_act = unsafe { module.kernel("bias_act")? };
    let origin = Stream::new(&device, 0)?;
    println!(
        "{}: batch {BATCH}, {WIDTH} → {WIDTH} → {WIDTH}, f32, two halves of {HALF} rows on two streams",
        device.name()?
    );

    // Inputs in [-1, 1); weights scaled by 1/√width so that activations stay near 1.
    let scale = 1.0 / (WIDTH as f32).sqrt();
    let host_x = common::values(BATCH * WIDTH, 1, 1.0);
    let (host_w1, host_b1) = (
        common::values(WIDTH * WIDTH, 2, scale),
        common::values(WIDTH, 3, 0.1),
    );
    let (host_w2, host_b2) = (
        common::values(WIDTH * WIDTH, 4, scale),
        common::values(WIDTH, 5, 0.1),
    );
    let up = |v: &[f32]| DeviceBuffer::from_host(&device, v);
    let (x, w1, b1, w2, b2) = (
        up(&host_x)?,
        up(&host_w1)?,
        up(&host_b1)?,
        up(&host_w2)?,
        up(&host_b2)?,
    );
    let mut y = DeviceBuffer::<f32>::zeros(&device, BATCH * WIDTH)?;
    let width = WIDTH as u32;

    // Eagerly: one step, checked against the CPU, then timed.
    let mut eager = Eager::new(&origin);
    // The pool keeps the temporaries' memory between steps instead of returning it to the
    // driver at each synchronization.
    device.set_temp_release_threshold(u64::MAX)?;
    let mut step = |y: &mut DeviceBuffer<f32>| {
        let step = MlpStep::new(
            &x, y, &w1, &b1, &w2, &b2, &gemm_main, &gemm_side, &bias_act, HALF, width,
        );
        eager.run(&step)
    };
    step(&mut y)?;
    let eager_y = y.to_vec_on(&origin)?;
    let eager_us = time_steps(&origin, EAGER_STEPS, || step(&mut y))?;

    let x64: Vec<f64> = host_x.iter().map(|&v| f64::from(v)).collect();
    let (href, herr) = layer(&x64, &vec![0.0; x64.len()], &host_w1, &host_b1, true);
    let (yref, yerr) = layer(&href, &herr, &host_w2, &host_b2, false);
    let (mut worst, mut at) = (0.0f64, 0);
    for (i, (&got, (&want, &tol))) in eager_y.iter().zip(yref.iter().zip(&yerr)).enumerate() {
        let off = (f64::from(got) - want).abs();
        if off > tol {
            return Err(Error::InvalidArgument(format!(
                "y[{i}] = {got}, the CPU says {want} (off by {off:e}, tolerance {tol:e})"
            )));
        }
        if off / tol > worst {
            (worst, at) = (off / tol, i);
        }
    }
    println!(
        "eager step matches the CPU reference: worst element y[{}] off by {:.2} of its tolerance",
        at, worst
    );

    // Captured and replayed: a fresh output, so the replays must produce the bits themselves.
    let mut replay_y = DeviceBuffer::<f32>::zeros(&device, BATCH * WIDTH)?;
    let graph = Capture::new(&origin)
        .check(false)
        .own_temp_memory(true)
        .capture(MlpStep::new(
            &x,
            &mut replay_y,
            &w1,
            &b1,
            &w2,
            &b2,
            &gemm_main,
            &gemm_side,
            &bias_act,
            HALF,
            width,
        ))?;
    graph.verify()?; // its edges are the plan's
    let exec = graph.instantiate()?;
    let replay_us = time_steps(&origin, REPLAYS, || exec.launch(&origin))?;
    let (start, end) = (Event::with_timing(&device)?, Event::with_timing(&device)?);
    start.record(&origin)?;
    exec.replay(&origin, REPLAYS)?;
    end.record(&origin)?;
    end.synchronize()?;
    let back_to_back_us = start.elapsed_time(&end)? * 1e3 / REPLAYS as f32;
    origin.synchronize()?;
    let held = exec.temp_memory();
    let replayed = exec.pipeline().y.to_vec_on(&origin)?;
    drop(exec);

    if let Some(i) = (0..eager_y.len()).find(|&i| replayed[i].to_bits() != eager_y[i].to_bits()) {
        return Err(Error::InvalidArgument(format!(
            "the replay's y[{i}] = {} differs from the eager run's {}",
            replayed[i], eager_y[i]
        )));
    }
    println!(
        "replayed step == eager step, bitwise ({} elements)",
        eager_y.len()
    );
    println!("device µs per step (median after {WARMUP} warm-up steps, CUDA events):");
    println!("  eager : {eager_us:8.2}  (median of {EAGER_STEPS})");
    println!("  replay: {replay_us:8.2}  (median of {REPLAYS})");
    println!("  {REPLAYS} replays back to back: {back_to_back_us:.2} per step");
    println!(
        "temporaries: {} KiB at most at once (the plan), {} KiB of the graph's own memory \
         (2 MiB steps)",
        plan()?.temp_peak_bytes() / 1024,
        held / 1024
    );
    Ok(())
}
