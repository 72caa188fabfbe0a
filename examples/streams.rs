//! The stream contract in a small real program: a producer stream fills a buffer, a
//! high-priority consumer stream waits for it through an event and transforms it, events time
//! the whole exchange, and the host checks the result.
//!
//! Run with `cargo run --example streams`. Without a CUDA driver it says so and exits 0.

mod common;

use std::process::ExitCode;

use streamgraph::{
    Device, DeviceBuffer, Dim3, Error, Event, KernelArg, LaunchConfig, Module, PinnedBuffer, Stream,
};

const SOURCE: &str = r#"
extern "C" __global__ void iota(unsigned* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = i;
}

extern "C" __global__ void affine(unsigned* y, const unsigned* x, unsigned a, unsigned b, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
"#;

const N: u32 = 1 << 20;

fn main() -> ExitCode {
    common::run_or(run, "(nothing to run without a GPU)", || Ok(()))
}

fn run() -> Result<(), Error> {
    let device = Device::new(None)?;
    println!("device {}: {}", device.ordinal(), device.name()?);

    let producer = Stream::new(&device, 0)?;
    let consumer = Stream::new(&device, i32::MIN)?; // clamped to the highest priority
    println!(
        "priorities: producer {}, consumer {} (range {:?})",
        producer.priority()?,
        consumer.priority()?,
        device.stream_priority_range()?
    );

    let module = Module::from_cuda_source(&device, "streams_example", SOURCE)?;
    // SAFETY: the launches below pass (unsigned*, unsigned) to `iota` and
    // (unsigned*, const unsigned*, unsigned, unsigned, unsigned) to `affine`.
    let (iota, affine) = unsafe { (module.kernel("iota")?, module.kernel("affine")?) };

    let mut x = DeviceBuffer::<u32>::zeros(&device, N as usize)?;
    let mut y = DeviceBuffer::<u32>::zeros(&device, N as usize)?;
    let mut host = PinnedBuffer::<u32>::zeros(&device, N as usize)?;
    let config = LaunchConfig {
        grid: Dim3::from(N.div_ceil(256)),
        block: Dim3::from(256),
        shared_mem_bytes: 0,
    };
    let (a, b, n) = (3u32, 1u32, N);

    let start = Event::with_timing(&device)?;
    let end = Event::with_timing(&device)?;

    start.record(&producer)?;
    iota.launch_on(
        &producer,
        config,
        &[KernelArg::write(&mut x), KernelArg::value(&n)],
    )?;
    let filled = producer.record_event(None)?;

    // The consumer's later work waits for `filled`; the host does not block here.
    consumer.wait_event(&filled)?;
    let args = [
        KernelArg::write(&mut y),
        KernelArg::read(&x),
        KernelArg::value(&a),
        KernelArg::value(&b),
        KernelArg::value(&n),
    ];
    affine.launch_on(&consumer, config, &args)?;
    consumer.copy(&mut host, &y)?;
    end.record(&consumer)?;

    consumer.synchronize()?;
    let ms = start.elapsed_time(&end)?;
    let wrong = host
        .as_slice()?
        .iter()
        .enumerate()
        .filter(|&(i, &v)| v != a * i as u32 + b)
        .count();
    println!("{N} elements produced, transformed and copied back in {ms:.3} ms");
    if wrong > 0 {
        return Err(Error::InvalidArgument(format!(
            "{wrong} of {N} elements are wrong"
        )));
    }
    println!("all {N} elements equal {a}·i + {b}");
    Ok(())
}
