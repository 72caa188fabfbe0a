//! W14, many shapes, few graphs (issue 27 item 4): W13's MLP step (`many_shapes.rs`: three
//! layers of a cuBLAS GEMM through `ops::Gemm` in a `call` statement and the `bias_act`
//! kernel, hidden activations as temporaries) at 32 batch sizes, served request by request.
//! Requests of random sizes arrive (a fixed seeded sequence, sizes uniform in `1..=` the
//! largest batch, the same in every system and every sample); each is padded to its bucket
//! (`Buckets::bucket_for`: the smallest batch size that holds it) and runs that bucket's step.
//!
//! Systems:
//!
//! - `streamgraph-set`: a `GraphSet` keyed by the bucket's size, holding all 32 graphs,
//!   prepared at start-up with `prepare_all` (largest batch first); per request
//!   `GraphSet::launch` of the bucket's key with the bucket's pipeline (which borrows the one
//!   output `y` for the call only);
//! - `eager`: the same pipeline run by `Eager` per request (temporaries from the device's
//!   pool, whose release threshold is raised for the cycle, as a serving loop would);
//! - `streamgraph-switch` (`one_graph.rs`): one graph whose device `switch` block runs the
//!   bucket's body, the bucket's index set as its first kernel's argument before each launch;
//!
//! PyTorch's column comes from `benches/peers/torch_peer.py` (a `torch.cuda.CUDAGraph` per
//! size, all captured into one pool, largest first, as vLLM does).
//!
//! Each sample is one cycle: synchronize, trim the graph memory and take the baseline
//! (`many_shapes::Baseline`); start-up (`streamgraph-set`: `prepare_all`, host ms:
//! `capture_all`; `streamgraph-switch`: one capture, instantiation and upload; `eager`:
//! nothing to capture, 0); every bucket's step once, smallest first,
//! synchronize, memory in use over the baseline and the pool (`Device::graph_memory().reserved`,
//! plus `GraphSet::temp_memory`, the set's own memory for its temporaries); then the
//! requests, each timed alone: the start event on the origin, the launch call (host µs), the
//! end event, a wait for it (wall µs from the call to the wait's return; device µs between the
//! events, which includes the time the host takes to issue); the sample's medians over its
//! requests. Then the set is dropped and the graph memory trimmed.
//!
//! At setup: the plan checked for races and its peak read at the largest batch, every batch's
//! step run eagerly once (cuBLAS's kernels load there), then one checked cycle per system:
//! every graph of the set verified against its plan, and for the smallest and the largest
//! batch `y` poisoned with NaN, that bucket's step run alone and its first and last rows
//! compared with W11's CPU reference (`Net::check_output`), the row after them untouched.

use std::time::Instant;

use ::streamgraph::ops::Gemm;
use ::streamgraph::{
    pipeline, Buckets, Capture, Device, DeviceBuffer, DeviceFlag, Eager, GraphSet, Kernel,
    Pipeline, Plan, Stream,
};
use cudarc::driver::sys;

use crate::decode_shapes::{DecodeKernels, DecodeNet};
use crate::gpu::{BenchError, Event};
use crate::many_shapes::{blocks, mib, Baseline, Net, Shapes, BIAS_BLOCK};
use crate::one_graph::{SwitchCase, SwitchParts, SwitchStep};
use crate::runner::{metric, Case, Metric, Setup};
use crate::stats;

type Result<T> = std::result::Result<T, BenchError>;

/// The step W14 serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedStep {
    /// W13's MLP step (three cuBLAS GEMMs, `bias_act` after each).
    Mlp,
    /// W12's decode-like step with a batch (`decode_shapes.rs`): `layers` diamond layers over
    /// four streams, five short elementwise kernels each.
    Decode { layers: usize },
}

/// W14's size: the step's shapes (one graph per batch size) and the requests served per
/// sample.
#[derive(Debug, Clone)]
pub struct Served {
    pub step: ServedStep,
    pub shapes: Shapes,
    /// Requests per sample.
    pub requests: usize,
    /// Seed of the request sizes ([`requests`]).
    pub seed: u64,
}

pub const W14_METRICS: &[Metric] = &[
    metric("capture_all", "host", "ms"),
    metric("memory", "after_first_runs", "MiB"),
    metric("pool", "graph_reserved", "MiB"),
    metric("step", "device", "us"),
    metric("step", "wall", "us"),
    metric("step", "host_launch", "us"),
    metric("plan", "peak_largest", "MiB"),
];

/// `count` request sizes uniform in `1..=max` from a xorshift64 generator seeded with `seed`;
/// `common.py`'s `w14_requests` makes the same sequence.
pub fn requests(seed: u64, count: usize, max: usize) -> Vec<usize> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..count)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            1 + (s % max.max(1) as u64) as usize
        })
        .collect()
}

/// The request generator without a GPU: the first sizes of seed 14 up to 256 are those
/// `common.py` makes (checked there against the same numbers).
pub fn self_test() -> std::result::Result<(), String> {
    let got = requests(14, 8, 256);
    let want = SELF_TEST_REQUESTS;
    if got != want {
        return Err(format!(
            "W14's requests of seed 14: {got:?}, expected {want:?}"
        ));
    }
    let many = requests(14, 10_000, 256);
    if many.iter().any(|&r| !(1..=256).contains(&r)) || !many.contains(&1) || !many.contains(&256) {
        return Err("W14's request sizes do not span 1..=256".into());
    }
    Ok(())
}

/// `requests(14, 8, 256)`, as `common.py` checks it too.
const SELF_TEST_REQUESTS: [usize; 8] = [118, 192, 7, 43, 109, 31, 117, 227];

pipeline! {
    /// W14's step for `n = b · width` elements: W13's `StepTemps` with the output as the
    /// first `n` elements of a buffer of the largest batch, `y`, which every bucket's pipeline
    /// borrows in turn (a graph set borrows a pipeline only for the call).
    pub pipeline BucketStep<'o>(
        x: &DeviceBuffer<f32>,
        y: &mut DeviceBuffer<f32>,
        ws: &[DeviceBuffer<f32>],
        bs: &[DeviceBuffer<f32>],
        gemm: &'o Gemm<f32>,
        bias_act: &Kernel,
        n: usize,
        width: u32,
    ) {
        stream main;
        temp h1: f32[n];
        temp h2: f32[n];
        main: call gemm(&mut h1, &x.slice(0..n), &ws[0]);
        main: launch bias_act<<<blocks(n), BIAS_BLOCK>>>(&mut h1, &bs[0], n as u32, width, 1u32);
        main: call gemm(&mut h2, &h1, &ws[1]);
        main: launch bias_act<<<blocks(n), BIAS_BLOCK>>>(&mut h2, &bs[1], n as u32, width, 1u32);
        main: call gemm(&mut y.slice_mut(0..n), &h2, &ws[2]);
        main: launch bias_act<<<blocks(n), BIAS_BLOCK>>>(&mut y.slice_mut(0..n), &bs[2], n as u32, width, 0u32);
    }
}

/// A step that W14 serves at every batch size: what its systems need of it.
pub(crate) trait Model: Sync + 'static {
    /// The step of one batch size, writing the first rows of the output.
    type Step<'a>: Pipeline
    where
        Self: 'a;
    /// Every batch size's step in one graph, a device `switch` picking one (`one_graph.rs`).
    type Switch<'a>: Pipeline
    where
        Self: 'a;

    fn device(&self) -> &Device;
    /// Rows of each batch, ascending.
    fn batches(&self) -> &[usize];
    /// Elements of the output's rows at batch `i`.
    fn n(&self, i: usize) -> usize;
    /// Batch `i`'s step, writing the first `n(i)` elements of `y` (the largest batch's).
    fn step<'a>(&'a self, y: &'a mut DeviceBuffer<f32>, i: usize) -> Self::Step<'a>;
    /// After batch `i`'s step ran on `origin` into `y`, poisoned with NaN before: its first
    /// and last rows against the CPU reference, and the row after them untouched.
    fn check_output(
        &self,
        workload: &str,
        i: usize,
        origin: &Stream,
        y: &DeviceBuffer<f32>,
    ) -> Result<()>;
    /// The switch's step, its index set to `index` first.
    fn switch<'a>(&'a self, parts: &'a mut SwitchParts, index: u32) -> Self::Switch<'a>;
    /// The switch step's output.
    fn switch_output<'p>(step: &'p Self::Switch<'_>) -> &'p DeviceBuffer<f32>;
    /// The switch step's index.
    fn switch_flag<'p, 'a>(step: &'p Self::Switch<'a>) -> &'p &'a mut DeviceFlag
    where
        Self: 'a;

    /// Elements of the output: the largest batch's.
    fn output_len(&self) -> usize {
        self.n(self.batches().len() - 1)
    }
}

/// Batch `i`'s step on `net`, writing the first rows of `y`.
fn step<'a>(net: &'a Net, y: &'a mut DeviceBuffer<f32>, i: usize) -> BucketStep<'a, 'a> {
    BucketStep::new(
        &net.x,
        y,
        &net.ws,
        &net.bs,
        &net.gemms[i],
        net.bias_act,
        net.n(i),
        net.p.width as u32,
    )
}

impl Model for Net {
    type Step<'a> = BucketStep<'a, 'a>;
    type Switch<'a> = SwitchStep<'a, 'a>;

    fn device(&self) -> &Device {
        &self.device
    }

    fn batches(&self) -> &[usize] {
        &self.p.batches
    }

    fn n(&self, i: usize) -> usize {
        Net::n(self, i)
    }

    fn step<'a>(&'a self, y: &'a mut DeviceBuffer<f32>, i: usize) -> BucketStep<'a, 'a> {
        step(self, y, i)
    }

    fn check_output(
        &self,
        workload: &str,
        i: usize,
        origin: &Stream,
        y: &DeviceBuffer<f32>,
    ) -> Result<()> {
        Net::check_output(self, workload, i, origin, y)
    }

    fn switch<'a>(&'a self, parts: &'a mut SwitchParts, index: u32) -> SwitchStep<'a, 'a> {
        SwitchStep::new(
            &self.x,
            &mut parts.y,
            &mut parts.arm,
            parts.stamp,
            index,
            &self.ws,
            &self.bs,
            &self.gemms,
            self.bias_act,
            &parts.ns,
            parts.ns.last().copied().unwrap_or(0),
            self.p.width as u32,
        )
    }

    fn switch_output<'p>(step: &'p SwitchStep<'_, '_>) -> &'p DeviceBuffer<f32> {
        step.y
    }

    fn switch_flag<'p, 'a>(step: &'p SwitchStep<'a, 'a>) -> &'p &'a mut DeviceFlag
    where
        Self: 'a,
    {
        &step.arm
    }
}

/// What every system of W14 shares: the step, the buckets, the requests, the plan's peak.
pub(crate) struct Shared<M: Model> {
    pub(crate) model: &'static M,
    buckets: Buckets,
    /// Request sizes of every sample, in order.
    pub(crate) requests: Vec<usize>,
    /// `Plan::temp_peak_bytes` of the step at the largest batch.
    peak_largest: usize,
}

impl<M: Model> Shared<M> {
    /// The shared parts over `model`: the largest batch's plan checked for races, and every
    /// batch's step run eagerly once and synchronized (cuBLAS's kernels load there, not during
    /// a capture or a cycle).
    fn new(model: &'static M, p: &Served) -> Result<&'static Shared<M>> {
        let device = model.device();
        let batches = model.batches();
        let buckets = Buckets::new(batches.iter().copied())?;
        let mut y = DeviceBuffer::<f32>::zeros(device, model.output_len())?;
        let last = batches.len() - 1;
        let plan = Plan::build(&model.step(&mut y, last))?;
        plan.check_races()?;
        let peak_largest = plan.temp_peak_bytes();
        let origin = Stream::new(device, 0)?;
        let mut eager = Eager::new(&origin);
        eager.check(false);
        for i in 0..batches.len() {
            eager.run(&model.step(&mut y, i))?;
            origin.synchronize()?;
        }
        device.synchronize()?;
        Ok(Box::leak(Box::new(Shared {
            model,
            buckets,
            requests: requests(p.seed, p.requests, *batches.last().unwrap_or(&0)),
            peak_largest,
        })))
    }

    /// The index of the batch size `size` (one of the buckets).
    fn index(&self, size: usize) -> usize {
        self.model.batches().partition_point(|&b| b < size)
    }

    /// The bucket index of a request of `n` rows.
    pub(crate) fn bucket(&self, n: usize) -> Result<usize> {
        Ok(self.index(self.buckets.bucket_for(n)?.size))
    }

    /// One cycle's metrics, in [`W14_METRICS`]'s order; `serve` is (device, wall, host) µs.
    pub(crate) fn metrics(
        &self,
        capture_ms: f64,
        after: f64,
        reserved: u64,
        serve: [f64; 3],
    ) -> Vec<f64> {
        vec![
            capture_ms,
            mib(after),
            mib(reserved as f64),
            serve[0],
            serve[1],
            serve[2],
            mib(self.peak_largest as f64),
        ]
    }
}

/// The timing events of one system, on its origin.
pub(crate) struct Timer {
    raw: sys::CUstream,
    start: Event,
    end: Event,
}

impl Timer {
    pub(crate) fn new(origin: &Stream) -> Result<Timer> {
        Ok(Timer {
            raw: origin.as_cudarc().cu_stream(),
            start: Event::timing()?,
            end: Event::timing()?,
        })
    }

    /// Each request of `sizes` alone: the start event, `launch(size)`, the end event, a wait
    /// for it; the medians over the requests of (device µs between the events, wall µs from
    /// the call to the wait's return, host µs of the call).
    pub(crate) fn serve(
        &self,
        sizes: &[usize],
        mut launch: impl FnMut(usize) -> Result<()>,
    ) -> Result<[f64; 3]> {
        let mut times = [
            Vec::with_capacity(sizes.len()),
            Vec::with_capacity(sizes.len()),
            Vec::with_capacity(sizes.len()),
        ];
        for &n in sizes {
            self.start.record_on(self.raw)?;
            let t0 = Instant::now();
            launch(n)?;
            let host = us_since(t0);
            self.end.record_on(self.raw)?;
            self.end.synchronize()?;
            let wall = us_since(t0);
            times[0].push(self.start.elapsed_ms(&self.end)? * 1e3);
            times[1].push(wall);
            times[2].push(host);
        }
        let median = |v: &[f64]| stats::summarize(v).map_or(f64::NAN, |s| s.p50);
        Ok([median(&times[0]), median(&times[1]), median(&times[2])])
    }
}

fn us_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e6
}

/// `streamgraph-set`: the 32 graphs in a `GraphSet`.
struct SetCase<M: Model> {
    s: &'static Shared<M>,
    origin: Stream,
    y: DeviceBuffer<f32>,
    timer: Timer,
}

impl<M: Model> SetCase<M> {
    fn cycle(&mut self, check: bool) -> Result<Vec<f64>> {
        let (s, m) = (self.s, self.s.model);
        let batches = m.batches();
        let base = Baseline::take(m.device())?;
        let capture = Capture::new(&self.origin).check(false);
        let mut set: GraphSet<usize> = GraphSet::with_capture(capture, batches.len());
        let y = &mut self.y;
        let prepared = set.prepare_all(batches.iter().rev().copied(), |&b, prepare| {
            prepare.pipeline(&m.step(y, s.index(b)))
        })?;
        let capture_ms = prepared.elapsed.as_secs_f64() * 1e3;
        if prepared.captured != batches.len() || set.len() != prepared.captured {
            return Err(BenchError::Check(format!(
                "W14: prepare_all captured {} graphs and the set holds {}, not {}",
                prepared.captured,
                set.len(),
                batches.len()
            )));
        }
        for (i, &b) in batches.iter().enumerate() {
            set.launch(&self.origin, b, &m.step(y, i))?;
        }
        let after = base.over()?;
        // The set's own memory for its temporaries, and graph memory should any graph hold
        // memory nodes.
        let reserved = set.temp_memory() as u64 + m.device().graph_memory()?.reserved;
        if check {
            for (i, &b) in batches.iter().enumerate() {
                set.verify(&b, &m.step(y, i))?;
            }
            for i in [0, batches.len() - 1] {
                self.origin.fill(y, f32::NAN)?;
                set.launch(&self.origin, batches[i], &m.step(y, i))?;
                m.check_output("W14 (streamgraph-set)", i, &self.origin, y)?;
            }
        }
        let serve = self.timer.serve(&s.requests, |n| {
            let i = s.bucket(n)?;
            Ok(set.launch(&self.origin, batches[i], &m.step(y, i))?)
        })?;
        if check {
            let recaptured = batches
                .iter()
                .filter_map(|b| set.stats(b))
                .any(|k| k.captures != 1 || k.instantiations != 1);
            if recaptured || set.dropped() != 0 {
                return Err(BenchError::Check(
                    "W14: serving the requests captured or dropped graphs; every bucket's graph \
                     should be captured once, at start-up"
                        .into(),
                ));
            }
        }
        drop(set);
        base.end()?;
        Ok(s.metrics(capture_ms, after, reserved, serve))
    }
}

impl<M: Model> Case for SetCase<M> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        self.cycle(false)
    }
}

/// `eager`: the same pipeline issued by `Eager` per request.
struct EagerCase<M: Model> {
    s: &'static Shared<M>,
    origin: Stream,
    eager: Eager,
    y: DeviceBuffer<f32>,
    timer: Timer,
}

impl<M: Model> EagerCase<M> {
    fn cycle(&mut self, check: bool) -> Result<Vec<f64>> {
        let (s, m) = (self.s, self.s.model);
        let (device, batches) = (m.device(), m.batches());
        // The pool returns what it holds at the baseline's synchronization, then keeps what the
        // cycle's steps free for the next (what a serving loop sets).
        device.set_temp_release_threshold(0)?;
        let base = Baseline::take(device)?;
        device.set_temp_release_threshold(u64::MAX)?;
        let y = &mut self.y;
        for i in 0..batches.len() {
            self.eager.run(&m.step(y, i))?;
        }
        let after = base.over()?;
        let reserved = device.graph_memory()?.reserved;
        if check {
            for i in [0, batches.len() - 1] {
                self.origin.fill(y, f32::NAN)?;
                self.eager.run(&m.step(y, i))?;
                m.check_output("W14 (eager)", i, &self.origin, y)?;
            }
        }
        let eager = &mut self.eager;
        let serve = self.timer.serve(&s.requests, |n| {
            let i = s.bucket(n)?;
            eager.run(&m.step(y, i))?;
            Ok(())
        })?;
        device.set_temp_release_threshold(0)?;
        base.end()?;
        Ok(s.metrics(0.0, after, reserved, serve))
    }
}

impl<M: Model> Case for EagerCase<M> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        self.cycle(false)
    }
}

/// W14's systems over the MLP step (`ServedStep::Mlp`) or the decode-like step, on one shared
/// model (made once, leaked), each set up with one checked cycle.
pub fn setups(
    device: &Device,
    p: &Served,
    bias_act: &'static Kernel,
    decode: DecodeKernels,
    stamp: &'static Kernel,
) -> Vec<Setup<'static>> {
    match p.step {
        ServedStep::Mlp => {
            let net = Net::new(device, &p.shapes, bias_act).map(|net| &*Box::leak(Box::new(net)));
            setups_of(net, p, stamp)
        }
        ServedStep::Decode { layers } => {
            let model = DecodeNet::new(device, &p.shapes, layers, decode)
                .map(|model| &*Box::leak(Box::new(model)));
            setups_of(model, p, stamp)
        }
    }
}

/// W14's systems on `model`.
fn setups_of<M: Model>(
    model: Result<&'static M>,
    p: &Served,
    stamp: &'static Kernel,
) -> Vec<Setup<'static>> {
    let s = match model.and_then(|m| Shared::new(m, p)) {
        Ok(s) => s,
        Err(e) => {
            let why = format!("W14's shared setup: {e}");
            return vec![
                ("streamgraph-set", Err(e)),
                ("eager", Err(BenchError::Setup(why.clone()))),
                ("streamgraph-switch", Err(BenchError::Setup(why))),
            ];
        }
    };
    let device = s.model.device();
    let y = || DeviceBuffer::<f32>::zeros(device, s.model.output_len());
    let set = || -> Result<Box<dyn Case>> {
        let origin = Stream::new(device, 0)?;
        let timer = Timer::new(&origin)?;
        let mut case = SetCase {
            s,
            y: y()?,
            origin,
            timer,
        };
        case.cycle(true)?;
        Ok(Box::new(case))
    };
    let eager = || -> Result<Box<dyn Case>> {
        let origin = Stream::new(device, 0)?;
        let timer = Timer::new(&origin)?;
        let mut eager = Eager::new(&origin);
        eager.check(false);
        let mut case = EagerCase {
            s,
            y: y()?,
            origin,
            eager,
            timer,
        };
        case.cycle(true)?;
        Ok(Box::new(case))
    };
    let switch = || -> Result<Box<dyn Case>> { Ok(Box::new(SwitchCase::new(s, stamp)?)) };
    vec![
        ("streamgraph-set", set()),
        ("eager", eager()),
        ("streamgraph-switch", switch()),
    ]
}
