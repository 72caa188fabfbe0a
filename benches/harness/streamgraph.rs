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
//! plan at setup; eager runs have that check switched off (`Eager::check(false)`), as
//! raw issues no such check either. Captures run with `Capture::check(false)` (verification
//! is a debugging aid); every captured shape is verified once against its plan at setup
//! (`Graph::verify`), outside the timed regions.
//!
//! Nothing is added to the timed regions that `raw.rs` does not have there: no extra
//! synchronisation, no allocation by the harness (what streamgraph itself does inside its calls
//! is the measured cost).

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::Instant;

use ::streamgraph::{
    pipeline, Capture, Device, DeviceBuffer, DeviceFlag, Eager, EagerStats, Graph, GraphExec,
    Kernel, KernelArg, KeyWriter, Module, OpRef, ParamKey, Pipeline, Plan, Stream,
};
use cudarc::driver::sys;

use crate::decode::Decode;
use crate::diamond::Diamond4;
use crate::few_graphs::Served;
use crate::gpu::{BenchError, Event, Gpu};
use crate::kernels::{self, BLOCK, GRID};
use crate::many_shapes::Shapes;
use crate::mlp::Mlp;
use crate::overlap::Overlap;
use crate::runner::Case;
use crate::workloads::{Chain, Diamond, Eager1, Fanout, Loop, Replays, Update, W5_STEPS};

type Result<T> = std::result::Result<T, BenchError>;
type Setup<'g> = Result<Box<dyn Case + 'g>>;

/// The benchmark kernels as streamgraph kernels.
struct Kernels {
    /// `empty()`.
    empty: Kernel,
    /// `stamp(unsigned int *slot, unsigned int value)`.
    stamp: Kernel,
    /// `countdown(unsigned int *left, unsigned int *go)`.
    countdown: Kernel,
    /// `work(float *x, unsigned n, unsigned iters)` (W9).
    work: Kernel,
    /// `bias_act(float *y, const float *b, unsigned n, unsigned cols, unsigned relu)` (W11).
    bias_act: Kernel,
    /// `spin(unsigned long long ns)` (W12).
    spin: Kernel,
    /// `decode_branch(float *h, const float *s, unsigned n, float a, float c)` (W14).
    decode_branch: Kernel,
    /// `decode_mix(float *y, const float *h0, …, const float *h3, unsigned n)` (W14).
    decode_mix: Kernel,
}

/// A key of every kernel: argument updates skip the statements whose parameters, kernels
/// included, did not change.
impl ParamKey for Kernels {
    fn key(&self, out: &mut KeyWriter<'_>) {
        let Kernels {
            empty,
            stamp,
            countdown,
            work,
            bias_act,
            spin,
            decode_branch,
            decode_mix,
        } = self;
        for k in [
            empty,
            stamp,
            countdown,
            work,
            bias_act,
            spin,
            decode_branch,
            decode_mix,
        ] {
            k.key(out);
        }
    }
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
    // SAFETY: every launch of these kernels below passes `empty` no arguments, `stamp` a
    // `DeviceBuffer<u32>` (in `one_graph.rs`, a `DeviceFlag`, one `u32`) and a `u32`, `countdown` two one-word `u32` buffers (a
    // `DeviceBuffer<u32>` and a `DeviceFlag`), `work` (in `overlap.rs`) a
    // `DeviceBuffer<f32>` and two `u32`s, and `bias_act` (in `mlp.rs`) a written and a read
    // `DeviceBuffer<f32>` and three `u32`s, `spin` (in `decode.rs`) a `u64`, `decode_branch`
    // (in `decode_shapes.rs`) a written and a read `f32` buffer, a `u32` and two `f32`s, and
    // `decode_mix` a written and four read `f32` buffers and a `u32`: their C signatures in
    // `kernels.cu`.
    let kernels = unsafe {
        Kernels {
            empty: module.kernel(kernels::EMPTY)?,
            stamp: module.kernel(kernels::STAMP)?,
            countdown: module.kernel(kernels::COUNTDOWN)?,
            work: module.kernel(kernels::WORK)?,
            bias_act: module.kernel(kernels::BIAS_ACT)?,
            spin: module.kernel(kernels::SPIN)?,
            decode_branch: module.kernel(kernels::DECODE_BRANCH)?,
            decode_mix: module.kernel(kernels::DECODE_MIX)?,
        }
    };
    let stream = Stream::new(&device, 0)?;
    let config = launch_config();
    kernels.empty.launch_on(&stream, config, &[])?;
    let mut slot = DeviceBuffer::<u32>::zeros(&device, 1)?;
    let value = 0u32;
    kernels.stamp.launch_on(
        &stream,
        config,
        &[KernelArg::write(&mut slot), KernelArg::value(&value)],
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

/// A capture issuer on `origin` as the timed regions use it: thread-local mode (the default,
/// as raw), no verification.
fn capture_on(origin: &Stream) -> Capture {
    Capture::new(origin).check(false)
}

/// Captures `pipeline` with `capture`, verifies the graph against the plan once (outside every
/// timed region) and instantiates it.
fn instantiate_verified<P: Pipeline>(capture: &mut Capture, pipeline: P) -> Result<GraphExec<P>> {
    let graph: Graph<P> = capture.capture(pipeline)?;
    graph.verify()?;
    Ok(graph.instantiate()?)
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

/// Whether lane `lane` of round `round` holds a kernel in [`Spread`]: kernel
/// `round * width + lane` exists and the lane is one of the `width` streams used.
fn lane(round: usize, width: usize, lane: usize, kernels: usize) -> bool {
    lane < width && round * width + lane < kernels
}

/// Streams [`Spread`] declares: the widest W4 case.
const SPREAD_STREAMS: usize = 32;

pipeline! {
    /// W4: `kernels` independent launches of `empty`, kernel `i` on stream `i % width` (stream
    /// 0 is the origin), issued in `i` order as `raw.rs` does. 32 streams are declared and the
    /// first `width` used; the pipeline's own fork and join connect them to the origin.
    pipeline Spread(k: &Kernels, kernels: usize, width: usize) {
        stream s0; stream s1; stream s2; stream s3; stream s4; stream s5; stream s6; stream s7;
        stream s8; stream s9; stream s10; stream s11; stream s12; stream s13; stream s14;
        stream s15; stream s16; stream s17; stream s18; stream s19; stream s20; stream s21;
        stream s22; stream s23; stream s24; stream s25; stream s26; stream s27; stream s28;
        stream s29; stream s30; stream s31;

        for r in 0..kernels.div_ceil(width) {
            if lane(r, width, 0, kernels) { s0: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 1, kernels) { s1: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 2, kernels) { s2: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 3, kernels) { s3: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 4, kernels) { s4: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 5, kernels) { s5: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 6, kernels) { s6: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 7, kernels) { s7: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 8, kernels) { s8: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 9, kernels) { s9: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 10, kernels) { s10: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 11, kernels) { s11: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 12, kernels) { s12: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 13, kernels) { s13: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 14, kernels) { s14: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 15, kernels) { s15: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 16, kernels) { s16: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 17, kernels) { s17: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 18, kernels) { s18: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 19, kernels) { s19: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 20, kernels) { s20: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 21, kernels) { s21: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 22, kernels) { s22: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 23, kernels) { s23: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 24, kernels) { s24: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 25, kernels) { s25: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 26, kernels) { s26: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 27, kernels) { s27: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 28, kernels) { s28: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 29, kernels) { s29: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 30, kernels) { s30: launch k.empty<<<GRID, BLOCK>>>(); }
            if lane(r, width, 31, kernels) { s31: launch k.empty<<<GRID, BLOCK>>>(); }
        }
    }
}

pipeline! {
    /// W5: `n` launches of `stamp` on one stream, launch `i` storing `base + i` into `slot`;
    /// the last one's value stays there.
    pipeline Stamps(k: &Kernels, slot: &mut DeviceBuffer<u32>, base: u32, n: usize) {
        stream main;
        for i in 0..n {
            main: launch k.stamp<<<GRID, BLOCK>>>(&mut slot, base.wrapping_add(i as u32));
        }
    }
}

pipeline! {
    /// W5's keyed partial update: the first `m` launches store `head + i`, the others
    /// `rest + i`; a new `head` changes those `m` launches alone, and an argument update
    /// skips the others without evaluating them (their parameters' keys are unchanged).
    pipeline Keyed(k: &Kernels, slot: &mut DeviceBuffer<u32>, head: u32, m: usize, rest: u32, n: usize) {
        stream main;
        for i in 0..m {
            main: launch k.stamp<<<GRID, BLOCK>>>(&mut slot, head.wrapping_add(i as u32));
        }
        for i in m..n {
            main: launch k.stamp<<<GRID, BLOCK>>>(&mut slot, rest.wrapping_add(i as u32));
        }
    }
}

pipeline! {
    /// W5's partial updates: launch `i` of `n` stores `values[i]` into `slot` (cells, so that
    /// new values can be set through the pipeline the executable graph owns).
    pipeline Valued(k: &Kernels, slot: &mut DeviceBuffer<u32>, values: &[Cell<u32>], n: usize) {
        stream main;
        for i in 0..n {
            main: launch k.stamp<<<GRID, BLOCK>>>(&mut slot, values[i].get());
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

    /// Launches `exec` once between the timing events: (device µs, host µs of `launch`).
    fn replay<P>(&self, exec: &GraphExec<P>) -> Result<(f64, f64)> {
        self.start.record_on(self.raw)?;
        let t0 = Instant::now();
        exec.launch(&self.origin)?;
        let host = us_since(t0);
        self.end.record_on(self.raw)?;
        let device = self.start.elapsed_ms(&self.end)? * 1e3;
        Ok((device, host))
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
    eager.check(false);
    eager
}

/// W9 (see `overlap.rs`) with the shared `work` kernel.
pub fn w9<'g>(gpu: &'g Gpu, p: &Overlap) -> Setup<'g> {
    let sg = shared()?;
    crate::overlap::streamgraph(gpu, p, &sg.kernels.work)
}

/// W11 (see `mlp.rs`) with the shared `bias_act` kernel.
pub fn w11<'g>(gpu: &'g Gpu, p: &Mlp) -> Setup<'g> {
    let sg = shared()?;
    crate::mlp::streamgraph(gpu, p, &sg.kernels.bias_act)
}

/// `--probe-launch`'s streamgraph variant: [`Launches`] of `nodes` captured and instantiated,
/// then `rounds` launches, each on an idle stream: their host µs, sorted (five warm-up
/// launches dropped).
pub fn probe_launch(nodes: usize, rounds: usize) -> Result<Vec<f64>> {
    let sg = shared()?;
    let origin = Stream::new(&sg.device, 0)?;
    let exec = instantiate_verified(&mut capture_on(&origin), Launches::new(&sg.kernels, nodes))?;
    let mut us = Vec::with_capacity(rounds + 5);
    for _ in 0..rounds + 5 {
        let t0 = Instant::now();
        exec.launch(&origin)?;
        us.push(us_since(t0));
        origin.synchronize()?;
    }
    us.drain(..5);
    us.sort_by(f64::total_cmp);
    Ok(us)
}

/// W13 (`many_shapes.rs`): its two systems (temporaries, buffers per graph) with this
/// process's device and `bias_act` kernel.
pub fn w13(p: &Shapes) -> Vec<crate::runner::Setup<'static>> {
    match shared() {
        Ok(sg) => crate::many_shapes::setups(&sg.device, p, &sg.kernels.bias_act),
        Err(e) => {
            let why = e.to_string();
            vec![
                ("streamgraph", Err(e)),
                ("streamgraph-params", Err(BenchError::Setup(why))),
            ]
        }
    }
}

/// W14 (`few_graphs.rs`, `one_graph.rs`): its systems (a graph set, eager runs, one graph
/// with a device `switch`) with this process's device
/// and `bias_act` kernel.
pub fn w14(p: &Served) -> Vec<crate::runner::Setup<'static>> {
    match shared() {
        Ok(sg) => {
            let decode = crate::decode_shapes::DecodeKernels {
                branch: &sg.kernels.decode_branch,
                mix: &sg.kernels.decode_mix,
            };
            let k = &sg.kernels;
            crate::few_graphs::setups(&sg.device, p, &k.bias_act, decode, &k.stamp)
        }
        Err(e) => {
            let why = e.to_string();
            vec![
                ("streamgraph-set", Err(e)),
                ("eager", Err(BenchError::Setup(why.clone()))),
                ("streamgraph-switch", Err(BenchError::Setup(why))),
            ]
        }
    }
}

/// W12 (`decode.rs`): its pipeline with this process's device and `spin` kernel.
pub fn w12<'g>(gpu: &'g Gpu, p: &Decode) -> Setup<'g> {
    let sg = shared()?;
    crate::decode::streamgraph(gpu, p, &sg.device, &sg.kernels.spin)
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
    exec: GraphExec<Launches<'static>>,
    nodes: usize,
}

/// W2. [`Launches`] with `n = p.nodes`, captured and instantiated once. Each sample: one
/// `exec.launch` between timing events (device µs per node; host µs of the launch call) and
/// one `Eager::run` of the same pipeline between timing events (device µs per node; host µs
/// per launch).
pub fn w2<'g>(_gpu: &'g Gpu, p: &Chain) -> Setup<'g> {
    let sg = shared()?;
    let pipeline = Launches::new(&sg.kernels, p.nodes);
    check_plan(&pipeline)?;
    let timed = Timed::new(sg)?;
    let eager = eager_on(&timed.origin);
    let exec = instantiate_verified(
        &mut capture_on(&timed.origin),
        Launches::new(&sg.kernels, p.nodes),
    )?;
    Ok(Box::new(W2 {
        timed,
        eager,
        pipeline,
        exec,
        nodes: p.nodes,
    }))
}

impl Case for W2 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let n = self.nodes as f64;
        let (replay_dev, replay_host) = self.timed.replay(&self.exec)?;
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
// W3 and W6: the diamond.

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
    capture: Capture,
    pipeline: Diamond4<'static>,
    exec: GraphExec<Diamond4<'static>>,
}

/// W3. [`Diamond4`] with `p.layers` layers, captured and instantiated once. Each sample: one
/// replay of the instantiated graph (device µs per node and total, host µs of `exec.launch`),
/// one `Eager::run` (device total, host µs, record + wait calls from `eager.stats()`), and a
/// fresh `capture` + `instantiate` (host µs of each and the sum; both dropped after timing).
pub fn w3<'g>(_gpu: &'g Gpu, p: &Diamond) -> Setup<'g> {
    diamond4(p)?;
    let sg = shared()?;
    let pipeline = Diamond4::new(&sg.kernels.empty, p.layers);
    check_plan(&pipeline)?;
    let timed = Timed::new(sg)?;
    let eager = eager_on(&timed.origin);
    let mut capture = capture_on(&timed.origin);
    let exec = instantiate_verified(&mut capture, Diamond4::new(&sg.kernels.empty, p.layers))?;
    Ok(Box::new(W3 {
        timed,
        eager,
        capture,
        pipeline,
        exec,
    }))
}

impl Case for W3 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let layers = self.pipeline.layers;
        let nodes = (layers * 5) as f64;
        let (replay_dev, replay_host) = self.timed.replay(&self.exec)?;

        let before = event_calls(self.eager.stats());
        let (eager_dev, eager_host) = self.timed.eager(&mut self.eager, &self.pipeline)?;
        let calls = event_calls(self.eager.stats()) - before;
        self.timed.origin.synchronize()?;

        let fresh = Diamond4::new(self.pipeline.empty, layers);
        let t0 = Instant::now();
        let graph = self.capture.capture(fresh)?;
        let cap = us_since(t0);
        let t1 = Instant::now();
        let exec = graph.instantiate()?;
        let inst = us_since(t1);
        drop(exec);
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

struct W6<'g> {
    gpu: &'g Gpu,
    p: Replays,
    timed: Timed,
    exec: GraphExec<Diamond4<'static>>,
    /// Timing events of the gated replays.
    gate: [Event; 2],
}

/// W6. W3's [`Diamond4`] instantiated once. Each sample: the `spin` gate on the origin (a raw
/// launch, as in `raw.rs`), `p.gated` replays (`exec.replay`) between timing events
/// (back-to-back replay time), then `p.replays` replays with no synchronisation between, wall
/// time from the first launch to the end event's completion; idle % = 1 − replays ×
/// back-to-back time / wall.
pub fn w6<'g>(gpu: &'g Gpu, p: &Replays) -> Setup<'g> {
    diamond4(&p.diamond)?;
    let sg = shared()?;
    let timed = Timed::new(sg)?;
    let exec = instantiate_verified(
        &mut capture_on(&timed.origin),
        Diamond4::new(&sg.kernels.empty, p.diamond.layers),
    )?;
    Ok(Box::new(W6 {
        gpu,
        p: *p,
        timed,
        exec,
        gate: [Event::timing()?, Event::timing()?],
    }))
}

impl W6<'_> {
    /// Device µs per replay when replays run back to back with no host gaps.
    fn saturated_replay(&self) -> Result<f64> {
        let [a, b] = &self.gate;
        let origin = &self.timed.origin;
        self.gpu.launch_spin(self.timed.raw, self.p.gate_ns)?;
        a.record_on(self.timed.raw)?;
        let t0 = Instant::now();
        self.exec.replay(origin, self.p.gated)?;
        let queued = us_since(t0);
        b.record_on(self.timed.raw)?;
        let device = a.elapsed_ms(b)? * 1e3;
        if queued * 1e3 > 0.8 * self.p.gate_ns as f64 {
            return Err(BenchError::Check(format!(
                "queueing {} replays took {queued:.0} µs, close to the {} µs gate: raise gate_ns",
                self.p.gated,
                self.p.gate_ns / 1000
            )));
        }
        Ok(device / self.p.gated as f64)
    }
}

impl Case for W6<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let saturated = self.saturated_replay()?;
        let Timed {
            origin,
            raw,
            start,
            end,
        } = &self.timed;
        let n = self.p.replays as f64;
        let t0 = Instant::now();
        start.record_on(*raw)?;
        self.exec.replay(origin, self.p.replays)?;
        end.record_on(*raw)?;
        end.synchronize()?;
        let wall = us_since(t0);
        let device = start.elapsed_ms(end)? * 1e3;
        let idle = (1.0 - n * saturated / wall).max(0.0) * 100.0;
        Ok(vec![idle, wall / n, saturated, device / n])
    }
}

// ---------------------------------------------------------------------------------------------
// W4: independent kernels over several streams.

struct W4 {
    timed: Timed,
    exec: GraphExec<Spread<'static>>,
    kernels: usize,
}

/// W4. [`Spread`] with `p.kernels` kernels over `p.width` streams, captured and instantiated
/// once per width; each sample is one `exec.launch` between timing events (device µs per
/// kernel, host µs of the launch call).
pub fn w4<'g>(_gpu: &'g Gpu, p: &Fanout) -> Setup<'g> {
    if p.width == 0 || p.width > SPREAD_STREAMS {
        return Err(BenchError::Setup(format!(
            "streamgraph's Spread pipeline declares {SPREAD_STREAMS} streams; width {} is outside 1..={SPREAD_STREAMS}",
            p.width
        )));
    }
    let sg = shared()?;
    let timed = Timed::new(sg)?;
    let exec = instantiate_verified(
        &mut capture_on(&timed.origin),
        Spread::new(&sg.kernels, p.kernels, p.width),
    )?;
    Ok(Box::new(W4 {
        timed,
        exec,
        kernels: p.kernels,
    }))
}

impl Case for W4 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let (device, host) = self.timed.replay(&self.exec)?;
        Ok(vec![device / self.kernels as f64, host])
    }
}

// ---------------------------------------------------------------------------------------------
// W5: new kernel arguments every iteration.

struct W5 {
    timed: Timed,
    k: &'static Kernels,
    nodes: usize,
    exec: GraphExec<Stamps<'static>>,
    /// The launch operations of `exec`, in chain order.
    ops: Vec<OpRef>,
    /// Captures for the re-instantiation variant, and the slot those captures write.
    capture: Capture,
    spare: DeviceBuffer<u32>,
    iteration: u32,
    /// The partial-update variants' executable graph (its own slot).
    valued: GraphExec<Valued<'static>>,
    /// The keyed partial update's (its own slot).
    keyed: GraphExec<Keyed<'static>>,
}

/// W5. [`Stamps`] with `n = p.nodes`, captured and instantiated once. Each sample, in
/// `raw.rs`'s order: `exec.update_with` a new base (a new capture and an in-place update; host
/// µs per node); a capture of `Stamps` with that base and `instantiate()` of a new executable
/// (host µs per node); then the kernel-node fast path `exec.set_kernel_args` gives every node
/// the arguments of another base (host µs per node), one replay between timing events (device
/// µs per node), and a read of the slot, which must hold the last node's value. The
/// `instantiations` metric is the growth of `exec.stats().reinstantiations` over the sample: 0
/// means the updates never re-instantiated. The fast path passes the slot as a view of the
/// buffer the executable graph's pipeline borrows (`exec.pipeline().slot.as_view()`), so its
/// check that buffer arguments lie in the pipeline's memory runs as in any user's code.
///
/// That slot lives as long as the process: the case owns the executable graph that borrows it.
pub fn w5<'g>(_gpu: &'g Gpu, p: &Update) -> Setup<'g> {
    if p.nodes == 0 || u32::try_from(p.nodes).is_err() {
        return Err(BenchError::Setup(format!(
            "W5 needs 1..=u32::MAX nodes, not {}",
            p.nodes
        )));
    }
    let sg = shared()?;
    let timed = Timed::new(sg)?;
    let slot: &'static mut DeviceBuffer<u32> =
        Box::leak(Box::new(DeviceBuffer::zeros(&sg.device, 1)?));
    let pipeline = Stamps::new(&sg.kernels, slot, 0, p.nodes);
    check_plan(&pipeline)?;
    let mut capture = capture_on(&timed.origin);
    let graph = capture.capture(pipeline)?;
    graph.verify()?;
    let ops = graph.ops();
    if ops.len() != p.nodes {
        return Err(BenchError::Check(format!(
            "the capture holds {} operations, not {}",
            ops.len(),
            p.nodes
        )));
    }
    let exec = graph.instantiate()?;
    let valued_slot: &'static mut DeviceBuffer<u32> =
        Box::leak(Box::new(DeviceBuffer::zeros(&sg.device, 1)?));
    let values: &'static [Cell<u32>] =
        Box::leak((0..p.nodes as u32).map(Cell::new).collect::<Box<[_]>>());
    let valued = Valued::new(&sg.kernels, valued_slot, values, p.nodes);
    check_plan(&valued)?;
    let valued = instantiate_verified(&mut capture_on(&timed.origin), valued)?;
    let keyed_slot: &'static mut DeviceBuffer<u32> =
        Box::leak(Box::new(DeviceBuffer::zeros(&sg.device, 1)?));
    let m = p.nodes.div_ceil(W5_STEPS[0]);
    let keyed = Keyed::new(&sg.kernels, keyed_slot, 0, m, 0, p.nodes);
    check_plan(&keyed)?;
    let mut keyed = instantiate_verified(&mut capture_on(&timed.origin), keyed)?;
    // The first argument update walks every statement and learns the keys the nodes run.
    keyed.update_args_with(|_| {})?;
    Ok(Box::new(W5 {
        timed,
        k: &sg.kernels,
        nodes: p.nodes,
        exec,
        ops,
        capture,
        spare: DeviceBuffer::zeros(&sg.device, 1)?,
        iteration: 0,
        valued,
        keyed,
    }))
}

impl Case for W5 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let n = self.nodes as f64;
        let nodes = self.nodes as u32;
        self.iteration = self.iteration.wrapping_add(1);
        let base = self.iteration.wrapping_mul(2 * nodes);
        let before = self.exec.stats();

        // Whole-graph update: capture with other values, update the executable in place.
        let t0 = Instant::now();
        self.exec.update_with(|p| p.base = base)?;
        let exec_update = us_since(t0);

        // Re-instantiation: capture with other values, instantiate a new executable.
        let fresh = Stamps::new(self.k, &mut self.spare, base, self.nodes);
        let t0 = Instant::now();
        let graph = self.capture.capture(fresh)?;
        let exec = graph.instantiate()?;
        let reinstantiate = us_since(t0);
        drop(exec);

        // Kernel-node fast path: new arguments for every node of the instantiated graph. The
        // slot is the memory each node already writes, which the executable's pipeline borrows
        // exclusively; `KernelArg::write` needs a `&mut` that `exec.pipeline()` cannot give, so
        // the slot goes in as a pointer argument through `KernelArg::read` (the node still
        // writes it; `set_kernel_args` only checks that the range lies in the pipeline's memory).
        let base = base.wrapping_add(nodes);
        let slot = self.exec.pipeline().slot.as_view();
        let stamp = &self.k.stamp;
        let t0 = Instant::now();
        for (i, op) in self.ops.iter().enumerate() {
            let value = base.wrapping_add(i as u32);
            self.exec.set_kernel_args(
                *op,
                stamp,
                &[KernelArg::read(&slot), KernelArg::value(&value)],
            )?;
        }
        let set_params = us_since(t0);
        let (replay_dev, _) = self.timed.replay(&self.exec)?;
        self.timed.origin.synchronize()?;

        let expected = base.wrapping_add(nodes - 1);
        let got = self.exec.pipeline().slot.to_vec()?;
        if got != [expected] {
            return Err(BenchError::Check(format!(
                "last node stored {got:?}, expected {expected}"
            )));
        }
        let after = self.exec.stats();
        if after.updates != before.updates + 1 {
            return Err(BenchError::Check(format!(
                "update_with made {} in-place updates, expected 1",
                after.updates - before.updates
            )));
        }
        let instantiations = after.reinstantiations - before.reinstantiations;

        // Partial updates through `update_args_with`: 1 %, 10 %, 100 % of the values change;
        // the walk compares every launch and sets only the changed ones.
        let mut partial = [0.0; 3];
        for (k, step) in W5_STEPS.into_iter().enumerate() {
            let value = |i: usize| base.wrapping_add(i as u32).wrapping_add(1 + k as u32);
            let before = self.valued.stats();
            let t0 = Instant::now();
            self.valued.update_args_with(|p| {
                for i in (0..p.n).step_by(step) {
                    p.values[i].set(value(i));
                }
            })?;
            partial[k] = us_since(t0);
            let after = self.valued.stats();
            let want = self.nodes.div_ceil(step) as u64;
            if after.nodes_set - before.nodes_set != want || after.updates != before.updates {
                return Err(BenchError::Check(format!(
                    "update_args set {} node(s) and made {} update(s), expected {want} and none",
                    after.nodes_set - before.nodes_set,
                    after.updates - before.updates
                )));
            }
        }
        self.timed.replay(&self.valued)?;
        self.timed.origin.synchronize()?;
        let expected = self.valued.pipeline().values[self.nodes - 1].get();
        let got = self.valued.pipeline().slot.to_vec()?;
        if got != [expected] {
            return Err(BenchError::Check(format!(
                "update_args: last node stored {got:?}, expected {expected}"
            )));
        }

        // The keyed 1 %: a new `head`, read by the first 1 % of the launches alone.
        let before = self.keyed.stats();
        let head = base.wrapping_add(7);
        let t0 = Instant::now();
        self.keyed.update_args_with(|p| p.head = head)?;
        let keyed = us_since(t0);
        let after = self.keyed.stats();
        let m = self.keyed.pipeline().m;
        let skipped = after.args_skipped - before.args_skipped;
        if after.nodes_set - before.nodes_set != m as u64 || skipped != (self.nodes - m) as u64 {
            return Err(BenchError::Check(format!(
                "keyed update_args set {} node(s) and skipped {skipped}, expected {m} and {}",
                after.nodes_set - before.nodes_set,
                self.nodes - m
            )));
        }
        Ok(vec![
            set_params / n,
            replay_dev / n,
            instantiations as f64,
            exec_update / n,
            reinstantiate / n,
            partial[0],
            partial[1],
            partial[2],
            keyed,
        ])
    }
}

// ---------------------------------------------------------------------------------------------
// W7: capture + instantiate against the node count.

struct W7 {
    k: &'static Kernels,
    nodes: usize,
    capture: Capture,
    _timed: Timed,
}

/// W7. [`Launches`] with `n = p.nodes`; each sample times `capture.capture(pipeline)` and
/// `graph.instantiate()` separately (host µs) and drops the executable graph outside the timed
/// region. The chain is verified against its plan once at setup.
pub fn w7<'g>(_gpu: &'g Gpu, p: &Chain) -> Setup<'g> {
    let sg = shared()?;
    let timed = Timed::new(sg)?;
    let mut capture = capture_on(&timed.origin);
    drop(instantiate_verified(
        &mut capture,
        Launches::new(&sg.kernels, p.nodes),
    )?);
    Ok(Box::new(W7 {
        k: &sg.kernels,
        nodes: p.nodes,
        capture,
        _timed: timed,
    }))
}

impl Case for W7 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let pipeline = Launches::new(self.k, self.nodes);
        let t0 = Instant::now();
        let graph = self.capture.capture(pipeline)?;
        let cap = us_since(t0);
        let t1 = Instant::now();
        let exec = graph.instantiate()?;
        let inst = us_since(t1);
        drop(exec);
        let total = cap + inst;
        Ok(vec![cap, inst, total, total / self.nodes as f64])
    }
}

// ---------------------------------------------------------------------------------------------
// W8: a loop on the device.

pipeline! {
    /// W8's loop body: 4 + 3 + 3 `empty` kernels on three streams, joined, then `countdown`,
    /// which clears `go` after the last iteration.
    pipeline LoopBody(k: &Kernels, left: &mut DeviceBuffer<u32>, go: &mut DeviceFlag) {
        stream main;
        stream s1;
        stream s2;

        main: launch k.empty<<<GRID, BLOCK>>>();
        s1: launch k.empty<<<GRID, BLOCK>>>();
        s2: launch k.empty<<<GRID, BLOCK>>>();
        main: launch k.empty<<<GRID, BLOCK>>>();
        s1: launch k.empty<<<GRID, BLOCK>>>();
        s2: launch k.empty<<<GRID, BLOCK>>>();
        main: launch k.empty<<<GRID, BLOCK>>>();
        s1: launch k.empty<<<GRID, BLOCK>>>();
        s2: launch k.empty<<<GRID, BLOCK>>>();
        main: launch k.empty<<<GRID, BLOCK>>>();
        main: wait_stream s1;
        main: wait_stream s2;
        main: launch k.countdown<<<GRID, BLOCK>>>(&mut left, &mut go);
    }
}

pipeline! {
    /// W8's whole loop: `left = iterations`, `go = 1`, then `while go { LoopBody }` (the body
    /// written out again, as a device block).
    pipeline DeviceLoop(k: &Kernels, left: &mut DeviceBuffer<u32>, go: &mut DeviceFlag, iterations: u32) {
        stream main;
        stream s1;
        stream s2;

        main: fill left = iterations;
        main: fill go = 1u32;
        main: while go {
            main: launch k.empty<<<GRID, BLOCK>>>();
            s1: launch k.empty<<<GRID, BLOCK>>>();
            s2: launch k.empty<<<GRID, BLOCK>>>();
            main: launch k.empty<<<GRID, BLOCK>>>();
            s1: launch k.empty<<<GRID, BLOCK>>>();
            s2: launch k.empty<<<GRID, BLOCK>>>();
            main: launch k.empty<<<GRID, BLOCK>>>();
            s1: launch k.empty<<<GRID, BLOCK>>>();
            s2: launch k.empty<<<GRID, BLOCK>>>();
            main: launch k.empty<<<GRID, BLOCK>>>();
            main: wait_stream s1;
            main: wait_stream s2;
            main: launch k.countdown<<<GRID, BLOCK>>>(&mut left, &mut go);
        }
    }
}

pipeline! {
    /// [`DeviceLoop`] with its body issued stream by stream (four launches on `main`, then
    /// three on `s1`, three on `s2`), as cuda.core's `while_loop` and raw's hand-built body
    /// are made: the same graph, its nodes created in another order (`--probe-loop`).
    pipeline BranchwiseLoop(k: &Kernels, left: &mut DeviceBuffer<u32>, go: &mut DeviceFlag, iterations: u32) {
        stream main;
        stream s1;
        stream s2;

        main: fill left = iterations;
        main: fill go = 1u32;
        main: while go {
            main: launch k.empty<<<GRID, BLOCK>>>();
            main: launch k.empty<<<GRID, BLOCK>>>();
            main: launch k.empty<<<GRID, BLOCK>>>();
            main: launch k.empty<<<GRID, BLOCK>>>();
            s1: launch k.empty<<<GRID, BLOCK>>>();
            s1: launch k.empty<<<GRID, BLOCK>>>();
            s1: launch k.empty<<<GRID, BLOCK>>>();
            s2: launch k.empty<<<GRID, BLOCK>>>();
            s2: launch k.empty<<<GRID, BLOCK>>>();
            s2: launch k.empty<<<GRID, BLOCK>>>();
            main: wait_stream s1;
            main: wait_stream s2;
            main: launch k.countdown<<<GRID, BLOCK>>>(&mut left, &mut go);
        }
    }
}

pipeline! {
    /// W8's loop as a signalled loop: [`DeviceLoop`] with `countdown` setting the loop's
    /// condition as it writes `go` (`streamgraph_signal`), so that the body ends without the
    /// built-in kernel that reads `go` back: 11 nodes an iteration where `DeviceLoop` has 12.
    pipeline SignalledLoop(k: &Kernels, countdown: &Kernel, left: &mut DeviceBuffer<u32>, go: &mut DeviceFlag, iterations: u32) {
        stream main;
        stream s1;
        stream s2;

        main: fill left = iterations;
        main: fill go = 1u32;
        main: while go, signalled {
            main: launch k.empty<<<GRID, BLOCK>>>();
            s1: launch k.empty<<<GRID, BLOCK>>>();
            s2: launch k.empty<<<GRID, BLOCK>>>();
            main: launch k.empty<<<GRID, BLOCK>>>();
            s1: launch k.empty<<<GRID, BLOCK>>>();
            s2: launch k.empty<<<GRID, BLOCK>>>();
            main: launch k.empty<<<GRID, BLOCK>>>();
            s1: launch k.empty<<<GRID, BLOCK>>>();
            s2: launch k.empty<<<GRID, BLOCK>>>();
            main: launch k.empty<<<GRID, BLOCK>>>();
            main: wait_stream s1;
            main: wait_stream s2;
            main: launch countdown<<<GRID, BLOCK>>>(&mut left, &mut go);
        }
    }
}

/// W8's `countdown` for a signalled loop (after `streamgraph::SIGNAL_HEADER`).
const COUNTDOWN_SIGNAL: &str = r#"
extern "C" __global__ void countdown_signal(unsigned int *left, unsigned int *go) {
    unsigned int v = *left - 1u;
    *left = v;
    streamgraph_signal(go, v != 0u ? 1u : 0u);
}
"#;

/// The signalling `countdown`, compiled once per process (its module lives as long).
fn countdown_signal(sg: &'static Shared) -> Result<&'static Kernel> {
    static KERNEL: OnceLock<(Module, Kernel)> = OnceLock::new();
    if let Some((_, k)) = KERNEL.get() {
        return Ok(k);
    }
    let module = Module::from_signalling_source(&sg.device, "w8_signal", COUNTDOWN_SIGNAL)?;
    // SAFETY: `countdown_signal(unsigned int *left, unsigned int *go)`: every launch passes two
    // device words.
    let kernel = unsafe { module.kernel("countdown_signal")? };
    Ok(&KERNEL.get_or_init(|| (module, kernel)).1)
}

struct W8 {
    timed: Timed,
    eager: Eager,
    /// (a) the device loop run eagerly: the runtime reads `go` back after each iteration.
    eager_loop: DeviceLoop<'static>,
    /// (b) one iteration captured, replayed while `go` reads back non-zero.
    body: GraphExec<LoopBody<'static>>,
    /// (c) the whole loop captured: one conditional WHILE node.
    device_loop: GraphExec<DeviceLoop<'static>>,
    /// (d) the same as a signalled loop.
    signalled: GraphExec<SignalledLoop<'static>>,
    iterations: usize,
}

/// Three one-word counters and flags that live for the rest of the process (the pipelines
/// borrow them for `'static`).
fn loop_words(
    sg: &'static Shared,
) -> Result<(&'static mut DeviceBuffer<u32>, &'static mut DeviceFlag)> {
    let left = Box::leak(Box::new(DeviceBuffer::<u32>::zeros(&sg.device, 1)?));
    let go = Box::leak(Box::new(DeviceFlag::new(&sg.device, 0)?));
    Ok((left, go))
}

/// W8. The loop of `p.iterations` iterations three ways, each sample: (a) `Eager::run` of
/// [`DeviceLoop`] (the flag is read back after every iteration), (b) [`LoopStart`] eagerly, then
/// [`LoopBody`]'s graph launched and `go` read back until it is zero (what users do today),
/// (c) one launch of [`DeviceLoop`]'s graph. Host µs per iteration is the time the host spends
/// in the loop's calls, device µs per iteration the events around them, both over the
/// iterations.
pub fn w8<'g>(_gpu: &'g Gpu, p: &Loop) -> Setup<'g> {
    let sg = shared()?;
    let n = u32::try_from(p.iterations)
        .map_err(|_| BenchError::Setup("W8: too many iterations for a u32".into()))?;
    let timed = Timed::new(sg)?;
    let eager = eager_on(&timed.origin);
    let (left, go) = loop_words(sg)?;
    let eager_loop = DeviceLoop::new(&sg.kernels, left, go, n);
    check_plan(&eager_loop)?;
    let (left, go) = loop_words(sg)?;
    let body = instantiate_verified(
        &mut capture_on(&timed.origin),
        LoopBody::new(&sg.kernels, left, go),
    )?;
    let (left, go) = loop_words(sg)?;
    let device_loop = instantiate_verified(
        &mut capture_on(&timed.origin),
        DeviceLoop::new(&sg.kernels, left, go, n),
    )?;
    let (left, go) = loop_words(sg)?;
    let signalled = instantiate_verified(
        &mut capture_on(&timed.origin),
        SignalledLoop::new(&sg.kernels, countdown_signal(sg)?, left, go, n),
    )?;
    Ok(Box::new(W8 {
        timed,
        eager,
        eager_loop,
        body,
        device_loop,
        signalled,
        iterations: p.iterations,
    }))
}

/// `bench-harness --probe-loop`: W8's default loop with its body issued interleaved over the
/// three streams ([`DeviceLoop`]) and stream by stream ([`BranchwiseLoop`]), each captured
/// and instantiated once, replayed alternately `rounds` times at each K: device µs per
/// iteration, the medians (interleaved, branchwise) per K.
pub fn probe_loop(rounds: usize) -> Result<Vec<(usize, f64, f64)>> {
    let sg = shared()?;
    let timed = Timed::new(sg)?;
    let mut out = Vec::new();
    for k in [10usize, 100, 1_000, 10_000] {
        let n = k as u32;
        let (left, go) = loop_words(sg)?;
        let interleaved = instantiate_verified(
            &mut capture_on(&timed.origin),
            DeviceLoop::new(&sg.kernels, left, go, n),
        )?;
        let (left, go) = loop_words(sg)?;
        let branchwise = instantiate_verified(
            &mut capture_on(&timed.origin),
            BranchwiseLoop::new(&sg.kernels, left, go, n),
        )?;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for round in 0..rounds + 3 {
            let first = round % 2 == 0;
            for which in [first, !first] {
                let (dev, _) = if which {
                    timed.replay(&interleaved)?
                } else {
                    timed.replay(&branchwise)?
                };
                timed.origin.synchronize()?;
                // The first rounds warm both graphs up.
                if round >= 3 {
                    if which { &mut a } else { &mut b }.push(dev / k as f64);
                }
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        out.push((k, median(&mut a), median(&mut b)));
    }
    Ok(out)
}

/// `cuMemsetD32Async` of one word at `ptr` on `stream`.
fn set_word(stream: sys::CUstream, ptr: u64, value: u32) -> Result<()> {
    // SAFETY: `ptr` is a word of a live `DeviceBuffer` or `DeviceFlag` (leaked for the
    // process); nothing else uses it while the stream runs the memset (the graphs that name
    // it are launched on the same stream, after it).
    let r = unsafe { sys::cuMemsetD32Async(ptr, value, 1, stream) };
    crate::gpu::check(r, "cuMemsetD32Async")
}

impl Case for W8 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let n = self.iterations as f64;
        let (eager_dev, eager_host) = self.timed.eager(&mut self.eager, &self.eager_loop)?;
        self.timed.origin.synchronize()?;

        // (b): the host loop, from `left = iterations`, `go = 1` (set outside the timing).
        let words = self.body.pipeline();
        set_word(
            self.timed.raw,
            words.left.device_ptr(),
            self.iterations as u32,
        )?;
        set_word(self.timed.raw, words.go.device_ptr(), 1)?;
        self.timed.origin.synchronize()?;
        self.timed.start.record_on(self.timed.raw)?;
        let t0 = Instant::now();
        let mut ran = 0usize;
        loop {
            self.body.launch(&self.timed.origin)?;
            ran += 1;
            if self.body.pipeline().go.get_on(&self.timed.origin)? == 0 || ran > self.iterations {
                break;
            }
        }
        let host_loop_host = us_since(t0);
        self.timed.end.record_on(self.timed.raw)?;
        let host_loop_dev = self.timed.start.elapsed_ms(&self.timed.end)? * 1e3;
        if ran != self.iterations {
            return Err(BenchError::Setup(format!(
                "W8 host loop ran {ran} iterations instead of {}",
                self.iterations
            )));
        }

        let (loop_dev, loop_host) = self.timed.replay(&self.device_loop)?;
        self.timed.origin.synchronize()?;
        let (signalled_dev, signalled_host) = self.timed.replay(&self.signalled)?;
        self.timed.origin.synchronize()?;
        let words = self.signalled.pipeline();
        let (left, go) = (words.left.to_vec()?, words.go.get()?);
        if left != [0] || go != 0 {
            return Err(BenchError::Check(format!(
                "W8 signalled loop left {left:?} iterations and `go` = {go}, expected [0] and 0"
            )));
        }
        Ok(vec![
            eager_host / n,
            eager_dev / n,
            host_loop_host / n,
            host_loop_dev / n,
            loop_host / n,
            loop_dev / n,
            signalled_host / n,
            signalled_dev / n,
        ])
    }
}
