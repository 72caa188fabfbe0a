//! Requests of many sizes through few graphs: a two-layer step `y = relu(x·W1 + b1)·W2 + b2` over
//! the first `n` rows of a batch, with its hidden layer a temporary, served by a `GraphSet`
//! that holds one graph per batch-size bucket (1, 2, 4, …, 256 rows).
//!
//! Each request of `r` rows is padded to its bucket (`Buckets::bucket_for`: the smallest that
//! holds it) and runs that bucket's graph: captured on the bucket's first request, replayed
//! afterwards. The set holds at most six graphs: a seventh bucket drops the least recently
//! used one. Every request's rows are compared with an eager run of the same pipeline
//! (bitwise) and, for some, with a CPU reference. Prints each bucket's counts and the memory
//! all buckets' temporaries share (`GraphSet::temp_memory`) against what they would take
//! apart.
//! Without a GPU it prints the plan of the largest bucket's step instead.
//!
//! Run with `cargo run --release --example many_shapes`.

mod common;

use std::process::ExitCode;

use streamgraph::{
    pipeline, Buckets, DeviceBuffer, Eager, Error, GraphSet, Kernel, Module, Plan, Stream,
};

const SOURCE: &str = r#"
// out[r][j] = act(sum_k in[r][k] * w[k][j] + b[j]) for rows r < rows of width `width` (one
// thread per output element; `relu` picks the activation).
extern "C" __global__ void dense(float* out, const float* in, const float* w, const float* b,
                                 unsigned rows, unsigned width, unsigned relu) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * width) return;
    unsigned r = i / width, j = i % width;
    float s = b[j];
    for (unsigned k = 0; k < width; ++k) s += in[r * width + k] * w[k * width + j];
    out[i] = relu ? fmaxf(s, 0.0f) : s;
}
"#;

/// Features in, hidden and out.
const WIDTH: usize = 64;
/// Rows of the largest bucket, and of `x` and `y`.
const MAX_ROWS: usize = 256;
/// Graphs the set holds at most.
const HELD: usize = 6;
const REQUESTS: usize = 300;

pipeline! {
    /// The step for the first `rows` rows: `h = relu(x·W1 + b1)`, `y = h·W2 + b2`.
    pipeline Step(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, w: &[DeviceBuffer<f32>],
                  b: &[DeviceBuffer<f32>], dense: &Kernel, rows: usize) {
        stream main;
        temp h: f32[rows * WIDTH];
        main: launch dense<<<blocks(rows), 128u32>>>(&mut h, &x, &w[0], &b[0], rows as u32, WIDTH as u32, 1u32);
        main: launch dense<<<blocks(rows), 128u32>>>(&mut y, &h, &w[1], &b[1], rows as u32, WIDTH as u32, 0u32);
    }
}

fn blocks(rows: usize) -> u32 {
    (rows * WIDTH).div_ceil(128) as u32
}

fn main() -> ExitCode {
    common::run_or(
        run,
        "without a GPU: the largest bucket's plan instead",
        || {
            let d = |n| DeviceBuffer::<f32>::for_planning(n);
            let (x, mut y) = (d(MAX_ROWS * WIDTH)?, d(MAX_ROWS * WIDTH)?);
            let (w, b) = (
                [d(WIDTH * WIDTH)?, d(WIDTH * WIDTH)?],
                [d(WIDTH)?, d(WIDTH)?],
            );
            let k = Kernel::for_planning("dense");
            let plan = Plan::build(&Step::new(&x, &mut y, &w, &b, &k, MAX_ROWS))?;
            print!("{plan}");
            println!("temporaries at most: {} bytes", plan.temp_peak_bytes());
            Ok(())
        },
    )
}

/// Row `r` of the step on the CPU (f64 sums) with weights `w` and biases `b`.
fn reference(x: &[f32], w: &[Vec<f32>], b: &[Vec<f32>], r: usize) -> Vec<f64> {
    let dense = |input: &[f64], w: &[f32], b: &[f32], relu: bool| -> Vec<f64> {
        (0..WIDTH)
            .map(|j| {
                let s = (0..WIDTH).fold(f64::from(b[j]), |s, k| {
                    s + input[k] * f64::from(w[k * WIDTH + j])
                });
                if relu {
                    s.max(0.0)
                } else {
                    s
                }
            })
            .collect()
    };
    let row: Vec<f64> = x[r * WIDTH..(r + 1) * WIDTH]
        .iter()
        .map(|&v| f64::from(v))
        .collect();
    dense(&dense(&row, &w[0], &b[0], true), &w[1], &b[1], false)
}

fn run() -> Result<(), Error> {
    let stream = Stream::on(None, 0)?;
    let device = stream.device();
    let module = Module::from_cuda_source(&device, "many_shapes", SOURCE)?;
    // SAFETY: `Step` launches `dense` with (float*, const float*, const float*, const float*,
    // unsigned, unsigned, unsigned).
    let dense = unsafe { module.kernel("dense")? };
    let host_x = common::values(MAX_ROWS * WIDTH, 1, 1.0);
    let host_w = [
        common::values(WIDTH * WIDTH, 2, 0.2),
        common::values(WIDTH * WIDTH, 3, 0.2),
    ];
    let host_b = [common::values(WIDTH, 4, 0.1), common::values(WIDTH, 5, 0.1)];
    let up = |v: &[f32]| DeviceBuffer::from_host(&device, v);
    let x = up(&host_x)?;
    let w = [up(&host_w[0])?, up(&host_w[1])?];
    let b = [up(&host_b[0])?, up(&host_b[1])?];
    let mut y = DeviceBuffer::<f32>::zeros(&device, MAX_ROWS * WIDTH)?;
    let mut eager_y = DeviceBuffer::<f32>::zeros(&device, MAX_ROWS * WIDTH)?;

    let buckets = Buckets::powers_of_two(MAX_ROWS)?;
    let mut set = GraphSet::new(&stream, HELD);
    let mut eager = Eager::new(&stream);
    // Request sizes from a fixed sequence, small ones more often (as decode steps are).
    let sizes = common::values(REQUESTS, 6, 1.0);
    let mut padded = 0;
    for (i, u) in sizes.iter().enumerate() {
        let rows = 1 + ((u.abs() * u.abs()) * (MAX_ROWS - 1) as f32) as usize;
        let bucket = buckets.bucket_for(rows)?;
        padded += bucket.padding;
        set.launch(
            &stream,
            bucket.size,
            &Step::new(&x, &mut y, &w, &b, &dense, bucket.size),
        )?;
        eager.run(&Step::new(&x, &mut eager_y, &w, &b, &dense, bucket.size))?;
        let got = y.slice(0..rows * WIDTH).to_vec_on(&stream)?;
        if got != eager_y.slice(0..rows * WIDTH).to_vec_on(&stream)? {
            return Err(Error::InvalidArgument(format!(
                "request {i} ({rows} rows): the replay differs from the eager run"
            )));
        }
        if i % 50 == 0 {
            let last = rows - 1;
            let want = reference(&host_x, &host_w, &host_b, last);
            let row = &got[last * WIDTH..];
            let off = row
                .iter()
                .zip(&want)
                .map(|(&g, &w)| (f64::from(g) - w).abs());
            let worst = off.fold(0.0, f64::max);
            if worst > 1e-4 {
                return Err(Error::InvalidArgument(format!(
                    "request {i} ({rows} rows): row {last} is off the CPU's by {worst}"
                )));
            }
        }
    }
    stream.synchronize()?;
    println!(
        "{REQUESTS} requests in {} buckets ({padded} padding rows), replays equal to eager runs",
        buckets.len()
    );
    println!("bucket  captures  launches  held  temporaries");
    for size in buckets.sizes() {
        if let Some(s) = set.stats(size) {
            let held = if s.held { "yes" } else { "no" };
            println!(
                "{size:>6}  {:>8}  {:>8}  {held:>4}  {:>9} B",
                s.captures, s.launches, s.temp_bytes
            );
        }
    }
    println!(
        "{} graphs held ({} dropped past {HELD}); their temporaries: {} B apart, {} B of the set's memory, shared",
        set.len(),
        set.dropped(),
        set.temp_bytes(),
        set.temp_memory()
    );
    Ok(())
}
