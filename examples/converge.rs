//! Jacobi iterations until convergence, as a loop on the device: `main: while go { … }`.
//!
//! Solves `-u'' = 1` on `(0, 1)` with `u(0) = u(1) = 0` on `N` interior points by Jacobi
//! sweeps. Each iteration of the loop runs two sweeps on stream `main` (`x → y → x`), then on
//! stream `check` resets and computes the residual's maximum norm and clears the flag `go`
//! once it is below the tolerance (counting iterations on the way). The loop is written once:
//!
//! - **eagerly**, the runtime reads `go` back after every iteration (a copy and a
//!   synchronize), as a host loop would;
//! - **captured**, the loop is one CUDA conditional (WHILE) node: one graph launch runs every
//!   iteration on the device, with no host round trip.
//!
//! Both must stop after the same number of iterations with bitwise-equal solutions; the
//! example prints both wall times. Without a GPU it prints the pipeline's plan instead.
//!
//! Run with `cargo run --release --example converge`.

mod common;

use std::process::ExitCode;
use std::time::Instant;

use streamgraph::{
    pipeline, Capture, Device, DeviceBuffer, DeviceFlag, Eager, Error, Kernel, Module, Plan, Stream,
};

const SOURCE: &str = r#"
// One Jacobi sweep of -u'' = f (h² f given as `hf`) on n interior points, zero boundaries.
extern "C" __global__ void jacobi(float* out, const float* in, const float* hf, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float left = i > 0 ? in[i - 1] : 0.0f;
    float right = i + 1 < n ? in[i + 1] : 0.0f;
    out[i] = 0.5f * (left + right + hf[i]);
}

// res[0] = max_i |h² f_i + x_{i-1} - 2 x_i + x_{i+1}|, as the bits of a non-negative float
// (so that an integer maximum orders them, and every run computes the same bits).
extern "C" __global__ void residual(unsigned* res, const float* x, const float* hf, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float left = i > 0 ? x[i - 1] : 0.0f;
    float right = i + 1 < n ? x[i + 1] : 0.0f;
    float r = fabsf(hf[i] + left - 2.0f * x[i] + right);
    atomicMax(res, __float_as_uint(r));
}

// One more iteration; go on while the residual is above the tolerance.
extern "C" __global__ void check(unsigned* go, unsigned* iterations, const unsigned* res, float tol) {
    iterations[0] += 1u;
    go[0] = __uint_as_float(res[0]) > tol ? 1u : 0u;
}
"#;

/// Interior points.
const N: u32 = 128;
/// Iterations at most (each two sweeps).
const LIMIT: u32 = 1_000_000;

/// The kernels.
struct Kernels {
    jacobi: Kernel,
    residual: Kernel,
    check: Kernel,
}

fn grid(n: u32) -> u32 {
    n.div_ceil(128)
}

pipeline! {
    /// Jacobi sweeps until the residual is below `tol` (at most `limit` iterations).
    pipeline Converge(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, hf: &DeviceBuffer<f32>,
                      res: &mut DeviceBuffer<u32>, iterations: &mut DeviceBuffer<u32>,
                      go: &mut DeviceFlag, k: &Kernels, n: u32, tol: f32, limit: u32) {
        stream main;
        stream check;
        event swept;

        main: fill x = 0.0f32;
        main: fill iterations = 0u32;
        main: fill go = 1u32;
        main: while go, limit = limit {
            main: launch k.jacobi<<<grid(n), 128>>>(&mut y, &x, &hf, n);
            main: launch k.jacobi<<<grid(n), 128>>>(&mut x, &y, &hf, n);
            main: record swept;
            check: fill res = 0u32;
            check: wait swept;
            check: launch k.residual<<<grid(n), 128>>>(&mut res, &x, &hf, n);
            check: launch k.check<<<1, 1>>>(&mut go, &mut iterations, &res, tol);
        }
    }
}

fn main() -> ExitCode {
    common::run_or(run, "no GPU here: the pipeline's plan instead", show_plan)
}

/// `h² f` for `f = 1`, and the tolerance: the initial residual (`h²`) reduced 1,000 times.
fn problem() -> (Vec<f32>, f32) {
    let h = 1.0 / (N as f32 + 1.0);
    (vec![h * h; N as usize], h * h * 1e-3)
}

fn run() -> Result<(), Error> {
    let device = Device::new(None)?;
    let module = Module::from_cuda_source(&device, "converge", SOURCE)?;
    // SAFETY: every launch below passes the C signatures above: (float*, const float*,
    // const float*, unsigned), (unsigned*, const float*, const float*, unsigned) and
    // (unsigned*, unsigned*, const unsigned*, float), with buffers of `N` elements.
    let k = unsafe {
        Kernels {
            jacobi: module.kernel("jacobi")?,
            residual: module.kernel("residual")?,
            check: module.kernel("check")?,
        }
    };
    let origin = Stream::new(&device, 0)?;
    let (hf_host, tol) = problem();
    let hf = DeviceBuffer::from_host(&device, &hf_host)?;
    let zeros = |n| DeviceBuffer::<f32>::zeros(&device, n);

    // Eager: the flag is read back after every iteration.
    let (mut x, mut y) = (zeros(N as usize)?, zeros(N as usize)?);
    let mut res = DeviceBuffer::<u32>::zeros(&device, 1)?;
    let mut iterations = DeviceBuffer::<u32>::zeros(&device, 1)?;
    let mut go = DeviceFlag::new(&device, 0)?;
    let pipeline = Converge::new(
        &mut x,
        &mut y,
        &hf,
        &mut res,
        &mut iterations,
        &mut go,
        &k,
        N,
        tol,
        LIMIT,
    );
    Plan::build(&pipeline)?.check_races()?;
    let mut eager = Eager::new(&origin);
    let started = Instant::now();
    eager.run(&pipeline)?;
    origin.synchronize()?;
    let eager_time = started.elapsed();
    let _ = pipeline; // the buffers' borrows end here
    let eager_x = x.to_vec()?;
    let eager_iterations = iterations.to_vec()?[0];

    // Captured: one graph launch runs the whole loop on the device.
    let (mut cx, mut cy) = (zeros(N as usize)?, zeros(N as usize)?);
    let mut cres = DeviceBuffer::<u32>::zeros(&device, 1)?;
    let mut citerations = DeviceBuffer::<u32>::zeros(&device, 1)?;
    let mut cgo = DeviceFlag::new(&device, 0)?;
    let graph = Capture::new(&origin).check(true).capture(Converge::new(
        &mut cx,
        &mut cy,
        &hf,
        &mut cres,
        &mut citerations,
        &mut cgo,
        &k,
        N,
        tol,
        LIMIT,
    ))?;
    let report = graph.verify()?;
    let exec = graph.instantiate()?;
    exec.upload(&origin)?;
    let started = Instant::now();
    exec.launch(&origin)?;
    origin.synchronize()?;
    let graph_time = started.elapsed();
    // A second launch starts over (the pipeline resets `x`, the count and the flag).
    exec.launch(&origin)?;
    origin.synchronize()?;
    drop(exec);
    let graph_x = cx.to_vec()?;
    let graph_iterations = citerations.to_vec()?[0];

    let differing = eager_x
        .iter()
        .zip(&graph_x)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    let per = |t: std::time::Duration, n: u32| t.as_secs_f64() * 1e6 / f64::from(n.max(1));
    println!("device: {}", device.name()?);
    println!(
        "Jacobi on {N} points until the residual is below {tol:e}: graph of {} operations, {} edges, equal to the plan",
        report.operations, report.edges
    );
    println!(
        "eager (flag read back each iteration): {eager_iterations} iterations, {:9.2} ms ({:.2} µs per iteration)",
        eager_time.as_secs_f64() * 1e3,
        per(eager_time, eager_iterations)
    );
    println!(
        "captured device loop (one launch):     {graph_iterations} iterations, {:9.2} ms ({:.2} µs per iteration)",
        graph_time.as_secs_f64() * 1e3,
        per(graph_time, graph_iterations)
    );
    let mid = graph_x[N as usize / 2];
    println!("u(1/2) = {mid} (exact: 0.125)");
    if eager_iterations != graph_iterations {
        return Err(Error::InvalidArgument(format!(
            "the eager loop ran {eager_iterations} iterations, the device loop {graph_iterations}"
        )));
    }
    if differing > 0 {
        return Err(Error::InvalidArgument(format!(
            "{differing} of {N} values differ between the eager and the device loop"
        )));
    }
    println!("eager and device loop: same iteration count, bitwise-equal solutions");
    Ok(())
}

fn show_plan() -> Result<(), Error> {
    let b = |n| DeviceBuffer::<f32>::for_planning(n);
    let (mut x, mut y, hf) = (b(N as usize)?, b(N as usize)?, b(N as usize)?);
    let mut res = DeviceBuffer::<u32>::for_planning(1)?;
    let mut iterations = DeviceBuffer::<u32>::for_planning(1)?;
    let mut go = DeviceFlag::for_planning()?;
    let k = Kernels {
        jacobi: Kernel::for_planning("jacobi"),
        residual: Kernel::for_planning("residual"),
        check: Kernel::for_planning("check"),
    };
    let (_, tol) = problem();
    let plan = Plan::build(&Converge::new(
        &mut x,
        &mut y,
        &hf,
        &mut res,
        &mut iterations,
        &mut go,
        &k,
        N,
        tol,
        LIMIT,
    ))?;
    plan.check_races()?;
    println!(
        "`Converge`: {} operations on the origin, the last one the device loop; no races",
        plan.len()
    );
    for (i, op) in plan.ops().iter().enumerate() {
        println!("  {i}: {}", op.label);
    }
    for body in plan.bodies() {
        println!(
            "  body of operation {} ({} operations, {} edges):",
            body.block,
            body.plan.len(),
            body.plan.edges().len()
        );
        for (i, op) in body.plan.ops().iter().enumerate() {
            println!(
                "    {i}: {} on stream {} after {:?}",
                op.label,
                op.stream,
                body.plan.predecessors(i)
            );
        }
    }
    println!("\n{}", plan.to_dot());
    Ok(())
}
