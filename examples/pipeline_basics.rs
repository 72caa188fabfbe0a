//! The README's first pipeline ("A first pipeline"), as its Setup runs it:
//! `cargo run --example pipeline_basics`. Without a GPU it prints the pipeline's plan and stops
//! there; with one it also runs the pipeline eagerly, captures it into a CUDA graph, checks the
//! graph against the plan, replays it 100 times and prints a result.

use streamgraph::{capture, pipeline, Device, DeviceBuffer, Eager, Kernel, Module, Plan, Stream};

pipeline! {
    /// `y = 1 + 2·x`: `side` fills `y`; `main` waits for that, then adds `2·x` to it.
    pipeline Axpy(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, axpy: &Kernel, n: u32) {
        stream main;
        stream side;
        event filled;
        side: fill y = 1.0f32;
        side: record filled;
        main: wait filled;
        main: launch axpy<<<n.div_ceil(256), 256>>>(&mut y, &x, 2.0f32, n);
    }
}

const AXPY: &str = r#"extern "C" __global__ void axpy(float* y, const float* x, float a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}"#;

fn run() -> streamgraph::Result<()> {
    // Planned, without a GPU: the happens-before model and its race check.
    let x = DeviceBuffer::for_planning(1024)?;
    let mut y = DeviceBuffer::for_planning(1024)?;
    let plan = Plan::build(&Axpy::new(&x, &mut y, &Kernel::for_planning("axpy"), 1024))?;
    plan.check_races()?;
    print!("{plan}");

    let device = match Device::new(None) {
        Err(e) if e.is_unavailable() => {
            println!("{e}\nwithout a GPU, the plan is all that runs");
            return Ok(());
        }
        device => device?,
    };
    let stream = Stream::new(&device, 0)?;
    let module = Module::from_cuda_source(&device, "axpy", AXPY)?;
    // SAFETY: every launch of `axpy` passes (float*, const float*, float, unsigned).
    let axpy = unsafe { module.kernel("axpy")? };
    let x = DeviceBuffer::from_host(&device, &[1.0f32; 1024])?;
    let mut y = DeviceBuffer::zeros(&device, 1024)?;

    Eager::new(&stream).run(&Axpy::new(&x, &mut y, &axpy, 1024))?; // on two streams
    let graph = capture(&stream, Axpy::new(&x, &mut y, &axpy, 1024))?; // into a CUDA graph
    graph.verify()?; // its edges are the plan's, exactly
    graph.instantiate()?.replay(&stream, 100)?; // dropped at once: waits for the replays
    println!("y[0] = {} (1 + 2·1)", y.to_vec_on(&stream)?[0]);
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
