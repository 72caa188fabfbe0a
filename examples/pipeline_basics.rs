//! A three-stream pipeline: two producers on side streams feed a consumer on the origin.
//!
//! - `left` uploads the input from page-locked host memory and squares it into `a`;
//! - `right` fills `b` with a ramp (it needs nothing from `left`);
//! - `main` waits for both through events, computes `out = a + scale * b`, copies the result
//!   back to the host and then runs a host function that counts finished runs.
//!
//! With a GPU the pipeline runs eagerly three times and the result is checked against the same
//! computation on the host. Without one it builds the pipeline's plan (the happens-before
//! model, with its race check on real address ranges) and prints it, with its DOT picture.
//!
//! Run with `cargo run --example pipeline_basics`.

mod common;

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use streamgraph::{
    pipeline, Device, DeviceBuffer, Eager, Error, Kernel, Module, PinnedBuffer, Plan, Stream,
};

const SOURCE: &str = r#"
extern "C" __global__ void square(float* a, const float* input, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = input[i] * input[i];
}

extern "C" __global__ void ramp(float* b, float step, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = step * (float)i;
}

extern "C" __global__ void combine(float* out, const float* a, const float* b, float scale, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + scale * b[i];
}
"#;

/// The pipeline's kernels.
struct Kernels {
    square: Kernel,
    ramp: Kernel,
    combine: Kernel,
}

impl Kernels {
    fn load(device: &Device) -> Result<Kernels, Error> {
        let module = Module::from_cuda_source(device, "pipeline_basics", SOURCE)?;
        // SAFETY: the pipeline below launches each kernel with the arguments of its C
        // signature: (float*, const float*, unsigned), (float*, float, unsigned) and
        // (float*, const float*, const float*, float, unsigned).
        unsafe {
            Ok(Kernels {
                square: module.kernel("square")?,
                ramp: module.kernel("ramp")?,
                combine: module.kernel("combine")?,
            })
        }
    }

    fn for_planning() -> Kernels {
        Kernels {
            square: Kernel::for_planning("square"),
            ramp: Kernel::for_planning("ramp"),
            combine: Kernel::for_planning("combine"),
        }
    }
}

fn blocks(n: u32) -> u32 {
    n.div_ceil(256)
}

pipeline! {
    /// Two producers on side streams feed a consumer on the origin stream.
    pipeline ProduceConsume(
        host_in: &PinnedBuffer<f32>,
        input: &mut DeviceBuffer<f32>,
        a: &mut DeviceBuffer<f32>,
        b: &mut DeviceBuffer<f32>,
        out: &mut DeviceBuffer<f32>,
        host_out: &mut PinnedBuffer<f32>,
        k: &Kernels,
        scale: f32,
        n: u32,
        runs: &Arc<AtomicUsize>,
    ) {
        stream main;
        stream left;
        stream right(priority = -1);
        event a_ready;
        event b_ready;

        left: copy input <- host_in;
        left: launch k.square<<<blocks(n), 256>>>(&mut a, &input, n);
        left: record a_ready;

        right: launch k.ramp<<<blocks(n), 256>>>(&mut b, 0.5f32, n);
        right: record b_ready;

        main: wait a_ready;
        main: wait b_ready;
        main: launch k.combine<<<blocks(n), 256>>>(&mut out, &a, &b, scale, n);
        main: copy host_out <- out;
        main: host {
            let runs = Arc::clone(runs);
            move || {
                runs.fetch_add(1, Ordering::SeqCst);
            }
        };
    }
}

const N: u32 = 1 << 20;
const SCALE: f32 = 3.0;

fn main() -> ExitCode {
    common::run_or(
        run,
        "no GPU here: building the pipeline's plan instead",
        show_plan,
    )
}

fn input() -> Vec<f32> {
    (0..N).map(|i| (i % 1000) as f32 * 0.01).collect()
}

fn run() -> Result<(), Error> {
    let device = Device::new(None)?;
    let k = Kernels::load(&device)?;
    let stream = Stream::new(&device, 0)?;
    let host_in = PinnedBuffer::from_slice(&device, &input())?;
    let mut host_out = PinnedBuffer::<f32>::zeros(&device, N as usize)?;
    let mut dev_in = DeviceBuffer::<f32>::zeros(&device, N as usize)?;
    let mut a = DeviceBuffer::<f32>::zeros(&device, N as usize)?;
    let mut b = DeviceBuffer::<f32>::zeros(&device, N as usize)?;
    let mut out = DeviceBuffer::<f32>::zeros(&device, N as usize)?;
    let runs = Arc::new(AtomicUsize::new(0));

    let pipeline = ProduceConsume::new(
        &host_in,
        &mut dev_in,
        &mut a,
        &mut b,
        &mut out,
        &mut host_out,
        &k,
        SCALE,
        N,
        &runs,
    );
    let mut eager = Eager::new(&stream);
    for _ in 0..3 {
        eager.run(&pipeline)?;
    }
    stream.synchronize()?;
    let stats = eager.stats();

    let expected: Vec<f32> = input()
        .iter()
        .enumerate()
        .map(|(i, x)| x * x + SCALE * (0.5 * i as f32))
        .collect();
    let got = host_out.as_slice()?;
    let wrong = got.iter().zip(&expected).filter(|(g, e)| g != e).count();
    println!("device: {}", device.name()?);
    println!(
        "ran `ProduceConsume` eagerly 3 times on 3 streams: {} launches, {} copies, {} event records, {} event waits",
        stats.launches, stats.copies, stats.event_records, stats.event_waits
    );
    println!("host function ran {} times", runs.load(Ordering::SeqCst));
    if wrong > 0 {
        return Err(Error::InvalidArgument(format!(
            "{wrong} of {N} results differ from the host computation"
        )));
    }
    println!("all {N} results equal the host computation (x² + {SCALE}·i/2)");
    Ok(())
}

fn show_plan() -> Result<(), Error> {
    let k = Kernels::for_planning();
    let n = 1024;
    let host_in = PinnedBuffer::<f32>::for_planning(n)?;
    let mut host_out = PinnedBuffer::<f32>::for_planning(n)?;
    let (mut dev_in, mut a, mut b, mut out) = (
        DeviceBuffer::<f32>::for_planning(n)?,
        DeviceBuffer::<f32>::for_planning(n)?,
        DeviceBuffer::<f32>::for_planning(n)?,
        DeviceBuffer::<f32>::for_planning(n)?,
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let pipeline = ProduceConsume::new(
        &host_in,
        &mut dev_in,
        &mut a,
        &mut b,
        &mut out,
        &mut host_out,
        &k,
        SCALE,
        n as u32,
        &runs,
    );
    let plan = Plan::build(&pipeline)?;
    plan.check_races()?;
    println!(
        "plan of `ProduceConsume`: {} operations, no races",
        plan.len()
    );
    for (i, op) in plan.ops().iter().enumerate() {
        let after: Vec<String> = plan
            .predecessors(i)
            .iter()
            .map(|p| format!("#{p}"))
            .collect();
        println!(
            "  #{i} [{}] {:<40} after {}",
            ProduceConsume::PROGRAM.streams[op.stream].name,
            op.statement.text,
            if after.is_empty() {
                "-".to_string()
            } else {
                after.join(", ")
            }
        );
    }
    println!("\n{}", plan.to_dot());
    Ok(())
}
