//! Double-buffered chunks: host-to-device copies, compute and device-to-host copies on three
//! streams, so that chunk `c + 1` uploads while chunk `c` computes and chunk `c - 1`
//! downloads — against one stream doing the same work in order.
//!
//! The host data lives in two [`PinnedBuffer`]s; each chunk is a pinned view of them
//! (`host_in.slice(..)`), so the copies run asynchronously and can be captured. Two device
//! buffers per direction (slices of two) alternate between even and odd chunks; event arrays
//! (`event loaded[2];`, `wait loaded[c % 2]`) keep a slot from being overwritten while the
//! previous chunk in it is still read.
//!
//! Prints the median time of a whole pass, eager and replayed, for both pipelines (CUDA events
//! on the origin stream, after warm-up), their ratio (the overlap gained), and checks that all
//! four give the same bits and match a CPU reference. Without a GPU it prints the overlapped
//! pipeline's plan instead.
//!
//! Run with `cargo run --release --example overlap [CHUNKS] [ELEMENTS_PER_CHUNK] [ITERS]`.

mod common;

use std::process::ExitCode;

use streamgraph::{
    capture, pipeline, Device, DeviceBuffer, Eager, Error, Event, Kernel, Module, PinnedBuffer,
    Plan, Stream,
};

const SOURCE: &str = r#"
// y = x after `iters` steps of v = v * 0.999 + 0.5: compute whose length is chosen.
extern "C" __global__ void work(float* y, const float* x, unsigned n, unsigned iters) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (unsigned k = 0; k < iters; ++k) v = v * 0.999f + 0.5f;
    y[i] = v;
}
"#;

pipeline! {
    /// Chunk `c` of `host_in` is uploaded on `h2d` into slot `c % 2` of `ins`, computed on
    /// `compute` into slot `c % 2` of `outs`, downloaded on `d2h` into chunk `c` of `host_out`.
    /// A slot is refilled only after the chunk before it in that slot has been computed
    /// (`computed[c % 2]`) and downloaded (`drained[c % 2]`): one event per slot, picked by the
    /// chunk's index.
    pub pipeline Overlapped(
        host_in: &PinnedBuffer<f32>,
        host_out: &mut PinnedBuffer<f32>,
        ins: &mut [DeviceBuffer<f32>],
        outs: &mut [DeviceBuffer<f32>],
        k: &Kernel,
        chunks: usize,
        m: usize,
        iters: u32,
    ) {
        stream main;
        stream h2d;
        stream compute;
        stream d2h;
        event loaded[2];
        event computed[2];
        event drained[2];

        // Every slot starts free.
        main: record computed[0];
        main: record computed[1];
        main: record drained[0];
        main: record drained[1];
        for c in 0..chunks {
            h2d: wait computed[c % 2];
            h2d: copy ins[c % 2] <- host_in.slice(c * m..(c + 1) * m);
            h2d: record loaded[c % 2];

            compute: wait loaded[c % 2];
            compute: wait drained[c % 2];
            compute: launch k<<<(m as u32).div_ceil(256), 256>>>(&mut outs[c % 2], &ins[c % 2], m as u32, iters);
            compute: record computed[c % 2];

            d2h: wait computed[c % 2];
            d2h: copy host_out.slice_mut(c * m..(c + 1) * m) <- outs[c % 2];
            d2h: record drained[c % 2];
        }
    }
}

pipeline! {
    /// The same work on one stream, chunk after chunk.
    pub pipeline Serial(
        host_in: &PinnedBuffer<f32>,
        host_out: &mut PinnedBuffer<f32>,
        input: &mut DeviceBuffer<f32>,
        output: &mut DeviceBuffer<f32>,
        k: &Kernel,
        chunks: usize,
        m: usize,
        iters: u32,
    ) {
        stream main;
        for c in 0..chunks {
            main: copy input <- host_in.slice(c * m..(c + 1) * m);
            main: launch k<<<(m as u32).div_ceil(256), 256>>>(&mut output, &input, m as u32, iters);
            main: copy host_out.slice_mut(c * m..(c + 1) * m) <- output;
        }
    }
}

/// Chunks, elements per chunk and compute iterations, from the command line.
struct Shape {
    chunks: usize,
    m: usize,
    iters: u32,
}

fn shape() -> Shape {
    let arg = |i: usize, default: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    let chunks = arg(1, 16).max(1);
    Shape {
        chunks,
        m: arg(2, 4 << 20).max(1),
        iters: u32::try_from(arg(3, 1500)).unwrap_or(1500),
    }
}

const WARMUP: usize = 3;
const SAMPLES: usize = 15;

fn main() -> ExitCode {
    let shape = shape();
    common::run_or(
        || run(&shape),
        "no GPU here: the overlapped pipeline's plan instead",
        || {
            let plan = plan(&shape)?;
            println!(
                "four chunks: {} operations, edges {:?}",
                plan.len(),
                plan.edges()
            );
            println!("\n{}", plan.to_dot());
            Ok(())
        },
    )
}

/// The overlapped pipeline's plan for four chunks, on plan-only memory.
fn plan(shape: &Shape) -> Result<Plan, Error> {
    let m = 1024;
    let k = Kernel::for_planning("work");
    let host_in = PinnedBuffer::<f32>::for_planning(4 * m)?;
    let mut host_out = PinnedBuffer::<f32>::for_planning(4 * m)?;
    let d = || DeviceBuffer::<f32>::for_planning(m);
    let (mut ins, mut outs) = ([d()?, d()?], [d()?, d()?]);
    let plan = Plan::build(&Overlapped::new(
        &host_in,
        &mut host_out,
        &mut ins,
        &mut outs,
        &k,
        4,
        m,
        shape.iters,
    ))?;
    plan.check_races()?;
    Ok(plan)
}

/// Median of the samples, in milliseconds.
fn median(mut ms: Vec<f32>) -> f32 {
    ms.sort_by(f32::total_cmp);
    ms[ms.len() / 2]
}

/// Times `pass` on `origin` with CUDA events: `WARMUP` untimed passes, then the median of
/// `SAMPLES`.
fn time(origin: &Stream, mut pass: impl FnMut() -> Result<(), Error>) -> Result<f32, Error> {
    let device = origin.device();
    let (start, end) = (Event::with_timing(&device)?, Event::with_timing(&device)?);
    for _ in 0..WARMUP {
        pass()?;
    }
    origin.synchronize()?;
    let mut samples = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        start.record(origin)?;
        pass()?;
        end.record(origin)?;
        end.synchronize()?;
        samples.push(start.elapsed_time(&end)?);
    }
    Ok(median(samples))
}

fn run(shape: &Shape) -> Result<(), Error> {
    let Shape { chunks, m, iters } = *shape;
    let n = chunks * m;
    let device = Device::new(None)?;
    let module = Module::from_cuda_source(&device, "overlap", SOURCE)?;
    // SAFETY: `work` is launched with (float*, const float*, unsigned, unsigned).
    let k = unsafe { module.kernel("work")? };
    let origin = Stream::new(&device, 0)?;
    let input: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.01).collect();
    let host_in = PinnedBuffer::from_slice(&device, &input)?;
    let mut host_out = PinnedBuffer::<f32>::zeros(&device, n)?;
    let d = || DeviceBuffer::<f32>::zeros(&device, m);
    let (mut ins, mut outs) = ([d()?, d()?], [d()?, d()?]);
    println!(
        "{chunks} chunks of {m} floats ({:.1} MiB each way per chunk), {iters} iterations per element",
        (m * 4) as f64 / (1 << 20) as f64
    );

    let mut results = Vec::new();
    let mut eager = Eager::new(&origin);

    // One stream, eagerly and replayed.
    let serial_eager = time(&origin, || {
        eager.run(&Serial::new(
            &host_in,
            &mut host_out,
            &mut ins[0],
            &mut outs[0],
            &k,
            chunks,
            m,
            iters,
        ))
    })?;
    results.push(("serial, eager", host_out.to_vec()?));
    let exec = capture(
        &origin,
        Serial::new(
            &host_in,
            &mut host_out,
            &mut ins[0],
            &mut outs[0],
            &k,
            chunks,
            m,
            iters,
        ),
    )?
    .instantiate()?;
    let serial_replay = time(&origin, || exec.launch(&origin))?;
    // The pinned buffer's guard waits for the replays that write it.
    results.push(("serial, replay", exec.pipeline().host_out.to_vec()?));
    drop(exec);

    // Three streams, eagerly and replayed.
    let overlap_eager = time(&origin, || {
        eager.run(&Overlapped::new(
            &host_in,
            &mut host_out,
            &mut ins,
            &mut outs,
            &k,
            chunks,
            m,
            iters,
        ))
    })?;
    results.push(("overlapped, eager", host_out.to_vec()?));
    let exec = capture(
        &origin,
        Overlapped::new(
            &host_in,
            &mut host_out,
            &mut ins,
            &mut outs,
            &k,
            chunks,
            m,
            iters,
        ),
    )?
    .instantiate()?;
    let overlap_replay = time(&origin, || exec.launch(&origin))?;
    results.push(("overlapped, replay", exec.pipeline().host_out.to_vec()?));
    drop(exec);

    println!("median of {SAMPLES} passes after {WARMUP} warm-up passes (CUDA events):");
    println!("  one stream,    eager : {serial_eager:8.3} ms");
    println!("  one stream,    replay: {serial_replay:8.3} ms");
    println!("  three streams, eager : {overlap_eager:8.3} ms");
    println!("  three streams, replay: {overlap_replay:8.3} ms");
    println!(
        "overlap: {:.2}x eager, {:.2}x replay (one stream's time / three streams' time)",
        serial_eager / overlap_eager,
        serial_replay / overlap_replay
    );

    let (first, want) = &results[0];
    let mut same = true;
    for (name, got) in &results[1..] {
        if let Some(i) = (0..n).find(|&i| got[i].to_bits() != want[i].to_bits()) {
            eprintln!(
                "{name} differs from {first} at element {i}: {} vs {}",
                got[i], want[i]
            );
            same = false;
        }
    }
    // The CPU's answer for each of the 1,000 input values (`mul_add`: the GPU fuses the
    // multiply-add), every element compared within a relative 1e-5.
    let reference: Vec<f32> = (0..1000)
        .map(|j| {
            let mut v = j as f32 * 0.01;
            for _ in 0..iters {
                v = v.mul_add(0.999, 0.5);
            }
            v
        })
        .collect();
    let off = (0..n).find(|&i| {
        let r = reference[i % 1000];
        (want[i] - r).abs() > 1e-5 * r.abs().max(1.0)
    });
    println!(
        "all four bitwise equal: {same}; CPU reference: {}; element {} = {} (CPU: {})",
        off.map_or("all elements match".to_string(), |i| format!(
            "element {i} differs"
        )),
        n - 1,
        want[n - 1],
        reference[(n - 1) % 1000]
    );
    if same && off.is_none() {
        Ok(())
    } else {
        Err(Error::InvalidArgument(
            "the four passes differ, or differ from the CPU".into(),
        ))
    }
}
