//! The streamgraph column: each workload through streamgraph's own API, timed exactly like
//! `raw.rs` (same kernels from `kernels.cu`, same events around the same regions, same metrics
//! in the same order).
//!
//! Setup: device 0 through `Device::new`, the kernels compiled by `Module::from_cuda_source`
//! once per process and launched once before any workload (lazy loading stays out of every
//! measurement), an origin `Stream` per case. Timing events stay the harness's raw driver
//! events, recorded on the origin's driver handle, so both columns are timed by the same calls.
//!
//! Pipelines are declared once with `pipeline!` at module level, with `for` loops over size
//! parameters, so one pipeline type serves every size. Each is checked once for races by its
//! plan at setup; eager runs have that check switched off (`Eager::check_plan(false)`), as
//! raw issues no such check either.
//!
//! Nothing is added to the timed regions that `raw.rs` does not have there: no extra
//! synchronisation, no allocation by the harness (what streamgraph itself does inside its calls
//! is the measured cost).

use std::sync::OnceLock;
use std::time::Instant;

use ::streamgraph::{pipeline, Device, Eager, EagerStats, Kernel, Module, Pipeline, Plan, Stream};
use cudarc::driver::sys;

use crate::gpu::{BenchError, Event, Gpu};
use crate::kernels::{self, BLOCK, GRID};
use crate::runner::Case;
use crate::workloads::{Chain, Diamond, Eager1, Fanout, Replays, Update};

type Result<T> = std::result::Result<T, BenchError>;
type Setup<'g> = Result<Box<dyn Case + 'g>>;

/// The benchmark kernels as streamgraph kernels.
struct Kernels {
    /// `empty()`.
    empty: Kernel,
    /// `stamp(unsigned int *slot, unsigned int value)`; used once capture is wired.
    #[allow(dead_code)]
    stamp: Kernel,
}

/// What every streamgraph case shares: the device and the loaded kernels.
struct Shared {
    device: Device,
    kernels: Kernels,
    _module: Module,
}

/// Device 0 with [`kernels::SOURCE`] compiled and each kernel launched once; made on first use.
fn shared() -> Result<&'static Shared> {
    static SHARED: OnceLock<std::result::Result<Shared, String>> = OnceLock::new();
    SHARED
        .get_or_init(|| open().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| BenchError::Setup(e.clone()))
}

fn open() -> Result<Shared> {
    let device = Device::new(Some(0))?;
    let module = Module::from_cuda_source(&device, "bench", kernels::SOURCE)?;
    // SAFETY: every launch of these kernels below passes `empty` no arguments and `stamp` a
    // `DeviceBuffer<u32>` and a `u32`, their C signatures in `kernels.cu`.
    let kernels = unsafe {
        Kernels {
            empty: module.kernel(kernels::EMPTY)?,
            stamp: module.kernel(kernels::STAMP)?,
        }
    };
    let stream = Stream::new(&device, 0)?;
    let config = launch_config();
    kernels.empty.launch_on(&stream, config, &[])?;
    let slot = ::streamgraph::DeviceBuffer::<u32>::zeros(&device, 1)?;
    let value = 0u32;
    kernels.stamp.launch_on(
        &stream,
        config,
        &[
            ::streamgraph::KernelArg::write(&slot),
            ::streamgraph::KernelArg::value(&value),
        ],
    )?;
    stream.synchronize()?;
    Ok(Shared {
        device,
        kernels,
        _module: module,
    })
}

fn launch_config() -> ::streamgraph::LaunchConfig {
    ::streamgraph::LaunchConfig {
        grid: GRID.into(),
        block: BLOCK.into(),
        shared_mem_bytes: 0,
    }
}

/// Microseconds since `t0`.
fn us_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e6
}

/// Record and wait calls an eager issuer made.
fn event_calls(s: EagerStats) -> u64 {
    s.event_records + s.event_waits
}

/// Builds `pipeline`'s happens-before plan and refuses races: once per case, outside timing.
fn check_plan<P: Pipeline>(pipeline: &P) -> Result<()> {
    Plan::build(pipeline)?.check_races()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Pipelines.

pipeline! {
    /// `n` launches of `empty` on one stream: W1's eager launches, W2's and W7's chain.
    pipeline Launches(k: &Kernels, n: usize) {
        stream main;
        for _ in 0..n {
            main: launch k.empty<<<GRID, BLOCK>>>();
        }
    }
}

pipeline! {
    /// W3's diamond with four branches, exactly `raw.rs`'s DAG: each layer one kernel on the
    /// origin, a fork event the side streams wait for, one kernel on each of the four streams,
    /// and join events the next layer's origin kernel waits for. The pipeline's own end join
    /// stands in for the last layer's waits.
    pipeline Diamond4(k: &Kernels, layers: usize) {
        stream main;
        stream s1;
        stream s2;
        stream s3;
        event fork;
        event j1;
        event j2;
        event j3;

        for layer in 0..layers {
            if layer > 0 {
                main: wait j1;
                main: wait j2;
                main: wait j3;
            }
            main: launch k.empty<<<GRID, BLOCK>>>();
            main: record fork;
            s1: wait fork;
            s2: wait fork;
            s3: wait fork;
            main: launch k.empty<<<GRID, BLOCK>>>();
            s1: launch k.empty<<<GRID, BLOCK>>>();
            s2: launch k.empty<<<GRID, BLOCK>>>();
            s3: launch k.empty<<<GRID, BLOCK>>>();
            s1: record j1;
            s2: record j2;
            s3: record j3;
        }
    }
}

/// The origin stream of a case, its driver handle for the timing events, and two timing events.
struct Timed {
    origin: Stream,
    raw: sys::CUstream,
    start: Event,
    end: Event,
}

impl Timed {
    fn new(sg: &Shared) -> Result<Timed> {
        let origin = Stream::new(&sg.device, 0)?;
        let raw = origin.as_cudarc().cu_stream();
        Ok(Timed {
            origin,
            raw,
            start: Event::timing()?,
            end: Event::timing()?,
        })
    }

    /// Runs `pipeline` eagerly between the timing events: (device µs, host µs of `run`).
    fn eager<P: Pipeline>(&self, eager: &mut Eager, pipeline: &P) -> Result<(f64, f64)> {
        self.start.record_on(self.raw)?;
        let t0 = Instant::now();
        eager.run(pipeline)?;
        let host = us_since(t0);
        self.end.record_on(self.raw)?;
        let device = self.start.elapsed_ms(&self.end)? * 1e3;
        Ok((device, host))
    }
}

/// An eager issuer on `origin` without the per-run plan check (done once at setup instead).
fn eager_on(origin: &Stream) -> Eager {
    let mut eager = Eager::new(origin);
    eager.check_plan(false);
    eager
}

// ---------------------------------------------------------------------------------------------
// W1: eager launches on one stream.

struct W1 {
    timed: Timed,
    eager: Eager,
    pipeline: Launches<'static>,
    kernels: usize,
}

/// W1. [`Launches`] with `n = p.kernels`, built once. Each sample: record the start event,
/// `Instant`, `eager.run(&pipeline)`, host time, record the end event, synchronise. Metrics:
/// host µs per launch, device µs per launch, and the record + wait calls `eager.stats()` counted
/// during the run (goal: 0 on one stream).
pub fn w1<'g>(_gpu: &'g Gpu, p: &Eager1) -> Setup<'g> {
    let sg = shared()?;
    let pipeline = Launches::new(&sg.kernels, p.kernels);
    check_plan(&pipeline)?;
    let timed = Timed::new(sg)?;
    let eager = eager_on(&timed.origin);
    Ok(Box::new(W1 {
        timed,
        eager,
        pipeline,
        kernels: p.kernels,
    }))
}

impl Case for W1 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let n = self.kernels as f64;
        let before = event_calls(self.eager.stats());
        let (device, host) = self.timed.eager(&mut self.eager, &self.pipeline)?;
        self.timed.origin.synchronize()?;
        let calls = event_calls(self.eager.stats()) - before;
        Ok(vec![host / n, device / n, calls as f64])
    }
}

// ---------------------------------------------------------------------------------------------
// W2: the chain, replayed and eager.

struct W2 {
    timed: Timed,
    eager: Eager,
    pipeline: Launches<'static>,
    nodes: usize,
}

/// W2. [`Launches`] with `n = p.nodes`. Each sample: one replay of the captured and
/// instantiated chain between timing events (device µs per node; host µs of the launch call)
/// and one `Eager::run` of the same pipeline between timing events (device µs per node; host
/// µs per launch). Until capture is wired the replay metrics are NaN (reported as "no valid
/// samples").
pub fn w2<'g>(_gpu: &'g Gpu, p: &Chain) -> Setup<'g> {
    let sg = shared()?;
    let pipeline = Launches::new(&sg.kernels, p.nodes);
    check_plan(&pipeline)?;
    let timed = Timed::new(sg)?;
    let eager = eager_on(&timed.origin);
    Ok(Box::new(W2 {
        timed,
        eager,
        pipeline,
        nodes: p.nodes,
    }))
}

impl Case for W2 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let n = self.nodes as f64;
        let (replay_dev, replay_host) = (f64::NAN, f64::NAN);
        let (eager_dev, eager_host) = self.timed.eager(&mut self.eager, &self.pipeline)?;
        self.timed.origin.synchronize()?;
        Ok(vec![
            replay_dev / n,
            replay_host,
            eager_dev / n,
            eager_host / n,
        ])
    }
}

// ---------------------------------------------------------------------------------------------
// W3: the diamond, replayed, eager, captured.

/// Checks that `p` is the shape [`Diamond4`] declares.
fn diamond4(p: &Diamond) -> Result<()> {
    if p.branches != 4 {
        return Err(BenchError::Setup(format!(
            "streamgraph's Diamond4 pipeline declares 4 streams; the workload asks for {} branches",
            p.branches
        )));
    }
    Ok(())
}

struct W3 {
    timed: Timed,
    eager: Eager,
    pipeline: Diamond4<'static>,
}

/// W3. [`Diamond4`] with `p.layers` layers. Each sample: one replay of the instantiated graph
/// (device µs per node and total, host µs of `exec.launch`), one `Eager::run` (device total,
/// host µs, event calls from `eager.stats()`), and a fresh capture + instantiate (host µs of
/// each and the sum). Until capture is wired the replay and capture metrics are NaN.
pub fn w3<'g>(_gpu: &'g Gpu, p: &Diamond) -> Setup<'g> {
    diamond4(p)?;
    let sg = shared()?;
    let pipeline = Diamond4::new(&sg.kernels, p.layers);
    check_plan(&pipeline)?;
    let timed = Timed::new(sg)?;
    let eager = eager_on(&timed.origin);
    Ok(Box::new(W3 {
        timed,
        eager,
        pipeline,
    }))
}

impl Case for W3 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let nodes = (self.pipeline.layers * 5) as f64;
        let (replay_dev, replay_host) = (f64::NAN, f64::NAN);
        let before = event_calls(self.eager.stats());
        let (eager_dev, eager_host) = self.timed.eager(&mut self.eager, &self.pipeline)?;
        let calls = event_calls(self.eager.stats()) - before;
        self.timed.origin.synchronize()?;
        let (cap, inst) = (f64::NAN, f64::NAN);
        Ok(vec![
            replay_dev / nodes,
            replay_dev,
            replay_host,
            eager_dev,
            eager_host,
            calls as f64,
            cap,
            inst,
            cap + inst,
        ])
    }
}

/// W4. Pipeline `Spread(k, kernels, width)` with 32 declared streams of which the first
/// `width` are used: kernel `i` on stream `i % width`; the pipeline's implicit fork and join
/// connect them to the origin. Captured and instantiated once per width; each sample is one
/// `exec.launch` between timing events (device µs per kernel, host µs of the launch call).
pub fn w4<'g>(_gpu: &'g Gpu, _p: &Fanout) -> Setup<'g> {
    Err(BenchError::NotWired)
}

/// W5. Pipeline `Stamps(k, slot: &mut DeviceBuffer<u32>, base: u32, n)`: `n` launches of
/// `k.stamp(&mut slot, base + i)` on one stream. Captured and instantiated once. Each sample, in
/// `raw.rs`'s order: capture `Stamps` with a new base and `exec.update(new_pipeline)` (host µs
/// per node); capture again and `instantiate()` a new executable (host µs per node); then the
/// kernel-node fast path sets every node's arguments for another base (host µs per node), one
/// replay between timing events (device µs per node), and a read of `slot` that must hold the
/// last node's value. The instantiation counter of `GraphExec` (before − after) is the
/// `instantiations` metric: 0 means the update never re-instantiated.
pub fn w5<'g>(_gpu: &'g Gpu, _p: &Update) -> Setup<'g> {
    Err(BenchError::NotWired)
}

/// W6. W3's `Diamond` instantiated once. Each sample: the `spin` gate on the origin (raw
/// launch), `p.gated` × `exec.launch` between timing events (back-to-back replay time), then
/// `p.replays` × `exec.launch` with no synchronisation between, wall time from the first launch
/// to the end event's completion; idle % = 1 − replays × back-to-back time / wall.
pub fn w6<'g>(_gpu: &'g Gpu, _p: &Replays) -> Setup<'g> {
    Err(BenchError::NotWired)
}

/// W7. The `Launches` pipeline with `n = p.nodes`; each sample times
/// `Capture::new(&stream).capture(pipeline)` and `graph.instantiate()` separately (host µs) and
/// drops both outside the timed region.
pub fn w7<'g>(_gpu: &'g Gpu, _p: &Chain) -> Setup<'g> {
    Err(BenchError::NotWired)
}
