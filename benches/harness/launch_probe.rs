//! `bench-harness --probe-launch`: what the host time of one `cuGraphLaunch` of a chain of
//! empty kernels (W2's 1,000, W4's 4,096) depends on, in one process, by hand (issue 25: the
//! peers' replays launched with 2–4× less host time than the harness's raw code, cause
//! unsettled). Each variant launches its executable graph `ROUNDS` times, the GPU idle before
//! each timed launch unless the variant says otherwise, and reports the median and the 10th
//! and 90th percentiles of the launch call's host µs. The variants run in the order listed,
//! then again in reverse, so that a variant's position in the process shows.
//!
//! - `alone`: the graph's own stream, synchronised before each launch (the harness's W2);
//! - `uploaded`: `cuGraphUpload` on its stream once before the rounds, then as `alone`;
//! - `upload_flag`: instantiated with `CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD` on its stream;
//! - `alternating`: before each timed launch, another executable graph of the same chain is
//!   launched and finished on another stream (the harness alternates raw and streamgraph);
//! - `after_eager`: before each timed launch, the chain's 1,000 launches issued eagerly on the
//!   stream and finished (the harness's W2 sample runs the eager chain after the replay);
//! - `after_slow_eager`: as `after_eager`, with the host busy 4 µs between the eager launches
//!   (about what a Python peer's launch loop takes: the GPU keeps up with the host);
//! - `after_other_eager`: as `after_eager`, the chain issued on another stream (the harness
//!   alternates two systems, each on its own stream);
//! - `w2_sample`: the harness's W2 sample as it is, timing events and all: the launch between
//!   two event records, an event synchronisation, then the eager chain between the events and
//!   synchronised;
//! - `w2_warm`: as `w2_sample`, with one untimed launch (finished) before the timed one;
//! - `back_to_back`: the second of two launches with nothing between them (the first still
//!   running);
//! - `idle_2ms`: the host sleeps 2 ms after the synchronisation before the timed launch;
//! - `streamgraph`: the same chain as a pipeline, captured by `Capture`, launched by
//!   `GraphExec::launch`.

use std::ptr;
use std::time::{Duration, Instant};

use cudarc::driver::sys;

use crate::gpu::{check, BenchError, Event, Exec, Gpu, Graph, Stream};
use crate::raw::{self, issue_chain};

type Result<T> = std::result::Result<T, BenchError>;

/// Timed launches per variant.
const ROUNDS: usize = 60;

/// Chain lengths probed: W2's and W4's.
const NODES: [usize; 2] = [1_000, 4_096];

/// The chain captured on `stream`.
fn capture(gpu: &Gpu, stream: &Stream, nodes: usize) -> Result<Graph> {
    raw::capture(stream, || issue_chain(gpu, stream, nodes))
}

/// `graph` instantiated with `CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD` on `stream`.
fn instantiate_uploaded(graph: &Graph, stream: &Stream) -> Result<Exec> {
    let mut params = sys::CUDA_GRAPH_INSTANTIATE_PARAMS {
        flags: u64::from(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD.0),
        hUploadStream: stream.0,
        hErrNode_out: ptr::null_mut(),
        result_out: sys::CUgraphInstantiateResult::CUDA_GRAPH_INSTANTIATE_SUCCESS,
    };
    let mut exec = ptr::null_mut();
    check(
        // SAFETY: the graph is alive; `params` and `exec` are valid for the call.
        unsafe { sys::cuGraphInstantiateWithParams(&mut exec, graph.0, &mut params) },
        "cuGraphInstantiateWithParams",
    )?;
    Ok(Exec(exec))
}

fn upload(exec: &Exec, stream: &Stream) -> Result<()> {
    check(
        // SAFETY: executable graph and stream are alive.
        unsafe { sys::cuGraphUpload(exec.0, stream.0) },
        "cuGraphUpload",
    )
}

/// Host µs of `launch`, with `before` run (and the stream idle) first, `ROUNDS` times.
fn rounds(
    stream: &Stream,
    mut before: impl FnMut() -> Result<()>,
    mut launch: impl FnMut() -> Result<()>,
) -> Result<Vec<f64>> {
    let mut us = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS + 5 {
        before()?;
        let t0 = Instant::now();
        launch()?;
        us.push(t0.elapsed().as_secs_f64() * 1e6);
        stream.synchronize()?;
    }
    us.drain(..5);
    us.sort_by(f64::total_cmp);
    Ok(us)
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// One variant's rounds, printed as a line.
fn report(nodes: usize, name: &str, us: Result<Vec<f64>>) {
    match us {
        Ok(us) => println!(
            "{nodes:>6} {name:<14} p50 {:>8.2}  p10 {:>8.2}  p90 {:>8.2}",
            quantile(&us, 0.5),
            quantile(&us, 0.1),
            quantile(&us, 0.9)
        ),
        Err(e) => println!("{nodes:>6} {name:<14} failed: {e}"),
    }
}

const VARIANTS: [&str; 12] = [
    "alone",
    "uploaded",
    "upload_flag",
    "alternating",
    "after_eager",
    "after_slow_eager",
    "after_other_eager",
    "w2_sample",
    "w2_warm",
    "back_to_back",
    "idle_2ms",
    "streamgraph",
];

/// Runs every variant for every chain length, forwards then backwards.
pub fn run(gpu: &Gpu) -> Result<()> {
    println!("host µs of one graph launch of a chain of empty kernels ({ROUNDS} rounds)");
    for nodes in NODES {
        let order: Vec<&str> = VARIANTS
            .iter()
            .chain(VARIANTS.iter().rev())
            .copied()
            .collect();
        for name in order {
            report(nodes, name, variant(gpu, nodes, name));
        }
    }
    Ok(())
}

fn variant(gpu: &Gpu, nodes: usize, name: &str) -> Result<Vec<f64>> {
    let stream = Stream::new()?;
    let graph = capture(gpu, &stream, nodes)?;
    let launch = |exec: &Exec| exec.launch(&stream);
    let idle = || Ok(());
    let us = match name {
        "alone" => {
            let exec = graph.instantiate()?;
            rounds(&stream, idle, || launch(&exec))?
        }
        "uploaded" => {
            let exec = graph.instantiate()?;
            upload(&exec, &stream)?;
            stream.synchronize()?;
            rounds(&stream, idle, || launch(&exec))?
        }
        "upload_flag" => {
            let exec = instantiate_uploaded(&graph, &stream)?;
            stream.synchronize()?;
            rounds(&stream, idle, || launch(&exec))?
        }
        "alternating" => {
            let exec = graph.instantiate()?;
            let other_stream = Stream::new()?;
            let other = capture(gpu, &other_stream, nodes)?.instantiate()?;
            rounds(
                &stream,
                || {
                    other.launch(&other_stream)?;
                    other_stream.synchronize()
                },
                || launch(&exec),
            )?
        }
        "after_eager" => {
            let exec = graph.instantiate()?;
            rounds(
                &stream,
                || {
                    issue_chain(gpu, &stream, nodes)?;
                    stream.synchronize()
                },
                || launch(&exec),
            )?
        }
        "after_slow_eager" => {
            let exec = graph.instantiate()?;
            rounds(
                &stream,
                || {
                    for _ in 0..nodes {
                        raw::launch_empty(gpu, &stream)?;
                        let t = Instant::now();
                        while t.elapsed() < Duration::from_micros(4) {
                            std::hint::spin_loop();
                        }
                    }
                    stream.synchronize()
                },
                || launch(&exec),
            )?
        }
        "after_other_eager" => {
            let exec = graph.instantiate()?;
            let other = Stream::new()?;
            rounds(
                &stream,
                || {
                    issue_chain(gpu, &other, nodes)?;
                    other.synchronize()
                },
                || launch(&exec),
            )?
        }
        "w2_sample" | "w2_warm" => {
            let exec = graph.instantiate()?;
            let (start, end) = (Event::timing()?, Event::timing()?);
            let mut us = Vec::with_capacity(ROUNDS + 5);
            for _ in 0..ROUNDS + 5 {
                if name == "w2_warm" {
                    launch(&exec)?;
                    stream.synchronize()?;
                }
                start.record_on(stream.0)?;
                let t0 = Instant::now();
                launch(&exec)?;
                us.push(t0.elapsed().as_secs_f64() * 1e6);
                end.record_on(stream.0)?;
                start.elapsed_ms(&end)?;
                start.record_on(stream.0)?;
                issue_chain(gpu, &stream, nodes)?;
                end.record_on(stream.0)?;
                start.elapsed_ms(&end)?;
                stream.synchronize()?;
            }
            us.drain(..5);
            us.sort_by(f64::total_cmp);
            us
        }
        "back_to_back" => {
            let exec = graph.instantiate()?;
            rounds(&stream, || launch(&exec), || launch(&exec))?
        }
        "idle_2ms" => {
            let exec = graph.instantiate()?;
            rounds(
                &stream,
                || {
                    std::thread::sleep(Duration::from_millis(2));
                    Ok(())
                },
                || launch(&exec),
            )?
        }
        "streamgraph" => return crate::streamgraph::probe_launch(nodes, ROUNDS),
        other => return Err(BenchError::Setup(format!("no launch variant `{other}`"))),
    };
    Ok(us)
}
