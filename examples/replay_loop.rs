//! 2D heat diffusion (Jacobi steps) on three streams, captured once and replayed 10,000 times.
//!
//! The grid is split into three horizontal bands, one per stream. A step reads the previous
//! grid and writes the next (double buffering: `a → b`, then `b → a`); a band needs its
//! neighbours' previous step (the halo rows it reads, and the rows it is about to overwrite
//! that they read), which the pipeline expresses with one event per band. One pipeline run is
//! two steps, so the grid ends up in `a` again.
//!
//! The same 10,000 steps run eagerly (5,000 runs) and as 5,000 replays of the captured graph;
//! the final grids must be **bitwise** equal. Both timings are printed (measured with events).
//! Without a GPU the example prints the pipeline's plan and its DOT picture instead.
//!
//! Run with `cargo run --release --example replay_loop`.

mod common;

use std::process::ExitCode;

use streamgraph::{
    pipeline, Capture, Device, DeviceBuffer, Dim3, Eager, Error, Event, Kernel, Module, Plan,
    Stream,
};

const SOURCE: &str = r#"
// One Jacobi step for rows [r0, r1) of a w×h grid with fixed (Dirichlet) borders.
// `dst` points at row r0 of the output grid, `src` at row src_r0 of the input grid.
extern "C" __global__ void jacobi(float* dst, const float* src, unsigned w, unsigned h,
                                  unsigned r0, unsigned r1, unsigned src_r0) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = r0 + blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= r1) return;
    const float* in = src - (size_t)src_r0 * w;
    float* out = dst + (size_t)(y - r0) * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
        *out = in[(size_t)y * w + x];
        return;
    }
    *out = 0.25f * (in[(size_t)(y - 1) * w + x] + in[(size_t)(y + 1) * w + x]
                  + in[(size_t)y * w + x - 1] + in[(size_t)y * w + x + 1]);
}
"#;

const W: u32 = 512;
const H: u32 = 384;
const STEPS: usize = 10_000;

/// The three bands' first rows and the end: `[0, B1)`, `[B1, B2)`, `[B2, H)`.
const B1: u32 = H / 3;
const B2: u32 = 2 * H / 3;

fn grid(rows: u32) -> Dim3 {
    Dim3::from((W.div_ceil(16), rows.div_ceil(16)))
}

fn block() -> Dim3 {
    Dim3::from((16, 16))
}

/// Elements `[r0·W, r1·W)`: rows `r0..r1`.
fn rows(r0: u32, r1: u32) -> std::ops::Range<usize> {
    (r0 * W) as usize..(r1 * W) as usize
}

pipeline! {
    /// Two Jacobi steps (`a → b → a`) on three bands, one stream each.
    pipeline HeatSteps(a: &mut DeviceBuffer<f32>, b: &mut DeviceBuffer<f32>, k: &Kernel) {
        stream top;
        stream middle;
        stream bottom;
        event top_done;
        event middle_done;
        event bottom_done;

        // Step 1: a → b. The run starts after the previous one (the fork), so the bands
        // need nothing from each other yet.
        top: launch k<<<grid(B1), block()>>>(&mut b.slice_mut(rows(0, B1)), &a.slice(rows(0, B1 + 1)), W, H, 0u32, B1, 0u32);
        middle: launch k<<<grid(B2 - B1), block()>>>(&mut b.slice_mut(rows(B1, B2)), &a.slice(rows(B1 - 1, B2 + 1)), W, H, B1, B2, B1 - 1);
        bottom: launch k<<<grid(H - B2), block()>>>(&mut b.slice_mut(rows(B2, H)), &a.slice(rows(B2 - 1, H)), W, H, B2, H, B2 - 1);
        top: record top_done;
        middle: record middle_done;
        bottom: record bottom_done;

        // Step 2: b → a. Each band first waits for its neighbours' step 1: the halo rows it
        // reads from `b`, and the rows of `a` it overwrites that they read.
        middle: wait top_done;
        middle: wait bottom_done;
        top: wait middle_done;
        bottom: wait middle_done;
        top: launch k<<<grid(B1), block()>>>(&mut a.slice_mut(rows(0, B1)), &b.slice(rows(0, B1 + 1)), W, H, 0u32, B1, 0u32);
        middle: launch k<<<grid(B2 - B1), block()>>>(&mut a.slice_mut(rows(B1, B2)), &b.slice(rows(B1 - 1, B2 + 1)), W, H, B1, B2, B1 - 1);
        bottom: launch k<<<grid(H - B2), block()>>>(&mut a.slice_mut(rows(B2, H)), &b.slice(rows(B2 - 1, H)), W, H, B2, H, B2 - 1);
        top: record top_done;
        middle: record middle_done;
        bottom: record bottom_done;
    }
}

/// A hot square in a cold plate with a warm top border.
fn initial() -> Vec<f32> {
    let mut g = vec![0.0f32; (W * H) as usize];
    for x in 0..W {
        g[x as usize] = 50.0;
    }
    for y in H / 2 - 20..H / 2 + 20 {
        for x in W / 2 - 20..W / 2 + 20 {
            g[(y * W + x) as usize] = 100.0;
        }
    }
    g
}

fn main() -> ExitCode {
    common::run_or(run, "no GPU here: the pipeline's plan instead", show_plan)
}

fn run() -> Result<(), Error> {
    let device = Device::new(None)?;
    let module = Module::from_cuda_source(&device, "replay_loop", SOURCE)?;
    // SAFETY: every launch passes (float*, const float*, unsigned × 5), the kernel's C
    // signature, with views large enough for the rows each launch touches.
    let k = unsafe { module.kernel("jacobi")? };
    let origin = Stream::new(&device, 0)?;
    let (start, end) = (Event::with_timing(&device)?, Event::with_timing(&device)?);
    let runs = STEPS / 2;

    // Eager: 5,000 runs of two steps.
    let mut a = DeviceBuffer::from_host(&device, &initial())?;
    let mut b = DeviceBuffer::from_host(&device, &initial())?;
    let mut eager = Eager::new(&origin);
    eager.check(false); // checked once below, not on each of the 5,000 runs
    Plan::build(&HeatSteps::new(&mut a, &mut b, &k))?.check_races()?;
    eager.run(&HeatSteps::new(&mut a, &mut b, &k))?; // warm-up: streams, events, module
    origin.synchronize()?;
    a.copy_from_host(&initial())?;
    b.copy_from_host(&initial())?;
    start.record(&origin)?;
    for _ in 0..runs {
        eager.run(&HeatSteps::new(&mut a, &mut b, &k))?;
    }
    end.record(&origin)?;
    let eager_ms = start.elapsed_time(&end)?;
    let eager_grid = a.to_vec()?;

    // Captured once, replayed 5,000 times.
    let mut ca = DeviceBuffer::from_host(&device, &initial())?;
    let mut cb = DeviceBuffer::from_host(&device, &initial())?;
    let graph = Capture::new(&origin)
        .check(true)
        .capture(HeatSteps::new(&mut ca, &mut cb, &k))?;
    let report = graph.verify()?;
    let exec = graph.instantiate()?;
    exec.upload(&origin)?;
    start.record(&origin)?;
    exec.replay(&origin, runs)?;
    end.record(&origin)?;
    let graph_ms = start.elapsed_time(&end)?;
    exec.into_pipeline();
    let graph_grid = ca.to_vec()?;

    let differing = eager_grid
        .iter()
        .zip(&graph_grid)
        .filter(|(x, y)| x.to_bits() != y.to_bits())
        .count();
    let per_step = |ms: f32| ms as f64 * 1000.0 / STEPS as f64;
    println!("device: {}", device.name()?);
    println!("heat diffusion on a {W}×{H} grid, 3 bands on 3 streams, {STEPS} Jacobi steps");
    println!(
        "captured graph: {} kernel nodes, {} edges, equal to the plan",
        report.operations, report.edges
    );
    println!(
        "eager:    {eager_ms:9.2} ms  ({:.2} µs per step)",
        per_step(eager_ms)
    );
    println!(
        "replayed: {graph_ms:9.2} ms  ({:.2} µs per step)",
        per_step(graph_ms)
    );
    let centre = graph_grid[(H / 2 * W + W / 2) as usize];
    println!("temperature at the centre after {STEPS} steps: {centre}");
    if differing > 0 {
        return Err(Error::InvalidArgument(format!(
            "{differing} of {} cells differ between the eager run and the replays",
            W * H
        )));
    }
    println!("eager and replayed grids are bitwise equal");
    Ok(())
}

fn show_plan() -> Result<(), Error> {
    let mut a = DeviceBuffer::<f32>::for_planning((W * H) as usize)?;
    let mut b = DeviceBuffer::<f32>::for_planning((W * H) as usize)?;
    let k = Kernel::for_planning("jacobi");
    let plan = Plan::build(&HeatSteps::new(&mut a, &mut b, &k))?;
    plan.check_races()?;
    println!(
        "`HeatSteps`: {} launches, {} dependency edges, no races",
        plan.len(),
        plan.edges().len()
    );
    for (i, op) in plan.ops().iter().enumerate() {
        println!(
            "  {i}: {} on stream {} after {:?}",
            op.label,
            plan.program().streams[op.stream].name,
            plan.predecessors(i)
        );
    }
    println!("\n{}", plan.to_dot());
    Ok(())
}
