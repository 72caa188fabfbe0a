//! W13, many shapes (issue 26): one MLP step captured as one graph per batch size (32 of
//! them), and the device memory they hold. Each graph runs three layers of W11's step (`mlp.rs`: per
//! layer a cuBLAS GEMM through `ops::Gemm` in a `call` statement and the `bias_act` kernel,
//! ReLU on all but the last) on the first `b` rows of an input `x` and an output `y` that every
//! graph shares (one buffer each, of the largest batch); the weights are shared too. Only the
//! two hidden activations differ between the systems:
//!
//! - `streamgraph`: temporaries (`temp h1: f32[n]; temp h2: f32[n];`), captured as graph
//!   memory nodes, whose physical memory the driver shares between graphs that do not run at
//!   once;
//! - `streamgraph-params`: the same step with `h1` and `h2` as `&mut DeviceBuffer<f32>`
//!   parameters, allocated per graph at that graph's size: what a user writes without
//!   temporaries.
//!
//! PyTorch's column comes from `benches/peers/torch_peer.py` (32 `torch.cuda.CUDAGraph`s
//! captured into one shared pool, largest batch first).
//!
//! Each sample is one cycle, the same for both systems: synchronize, trim the device's graph
//! memory and take the baseline (`total − free` of `Device::memory_info`, after weights, `x`,
//! `y` and the GEMM ops exist); capture and instantiate all graphs, largest batch first (host
//! ms; `streamgraph-params` allocates its buffers before the clock starts); synchronize and
//! read the memory in use over the baseline (`after_instantiate`); launch every graph once,
//! smallest batch first, on one stream, synchronize and read it again (`after_replay`), with
//! `Device::graph_memory`'s high marks (reset at the start of the cycle); then destroy the
//! graphs (and buffers) and trim the graph memory again. The plan's
//! numbers (`Plan::temp_peak_bytes` of the temporaries' step at each batch: the largest and
//! the sum) and the GEMM ops' own memory are properties of the setup, reported in every row
//! set so that the ratios can be read from one system's rows.
//!
//! At setup every batch size's step runs eagerly once (cuBLAS and its kernels loaded before any
//! capture and outside every baseline), then one cycle runs with checks: every graph verified
//! against its plan, and for the smallest and the largest batch, `y` poisoned with NaN, that
//! graph launched alone, its first and last rows compared with W11's CPU reference and the
//! row after its last checked untouched.
//!
//! What the graphs read ([`Net`]: data, weights, GEMM ops, the CPU check) and the cycle's
//! [`Baseline`] serve W14 too (`few_graphs.rs`: the same step in a graph set, timed per
//! request).

use std::time::Instant;

use ::streamgraph::ops::{Gemm, GemmConfig};
use ::streamgraph::{
    pipeline, Capture, Device, DeviceBuffer, DeviceMemory, DeviceMemoryMut, DeviceRange, Eager,
    GraphExec, GraphMemory, Kernel, KeyWriter, ParamKey, Pipeline, Plan, Stream,
};

use crate::gpu::BenchError;
use crate::mlp::{Data, Mlp};
use crate::runner::{metric, Case, Metric, Setup};

type Result<T> = std::result::Result<T, BenchError>;

/// W13's size: three layers of `width`, one graph per batch size.
#[derive(Debug, Clone)]
pub struct Shapes {
    /// Features in and out of every layer.
    pub width: usize,
    /// Rows of each graph's batch, ascending.
    pub batches: Vec<usize>,
}

impl Shapes {
    /// Rows of the largest batch: those of `x` and `y`.
    pub fn max_batch(&self) -> usize {
        self.batches.last().copied().unwrap_or(0)
    }

    pub(crate) fn check(&self) -> Result<()> {
        let ascending = self.batches.windows(2).all(|w| w[0] < w[1]);
        if self.width == 0
            || self.batches.first().is_none_or(|&b| b == 0)
            || !ascending
            || self.max_batch() * self.width > u32::MAX as usize
        {
            return Err(BenchError::Setup(format!("W13: unusable sizes {self:?}")));
        }
        Ok(())
    }
}

/// Layers of the step (two hidden activations between three GEMMs).
pub const LAYERS: usize = 3;

/// Threads per block of `bias_act`.
pub(crate) const BIAS_BLOCK: u32 = 256;

/// The cuBLAS workspace of every GEMM op: none, as in the torch peer (`CUBLAS_WORKSPACE_CONFIG
/// =:0:0`), so that no system's memory holds a workspace the others lack and cuBLAS
/// allocates nothing during a capture.
pub const WORKSPACE: usize = 0;

pub const W13_METRICS: &[Metric] = &[
    metric("capture_all", "host", "ms"),
    metric("memory", "after_instantiate", "MiB"),
    metric("memory", "after_replay", "MiB"),
    metric("memory", "after_replay_per_plan_peak", "x"),
    metric("pool", "reserved_high", "MiB"),
    metric("pool", "used_high", "MiB"),
    metric("plan", "peak_largest", "MiB"),
    metric("plan", "peak_sum", "MiB"),
    metric("ops", "memory", "MiB"),
];

pub(crate) fn mib(bytes: f64) -> f64 {
    bytes / f64::from(1u32 << 20)
}

pub(crate) fn blocks(n: usize) -> u32 {
    (n as u32).div_ceil(BIAS_BLOCK)
}

/// Device memory in use: `total − free`.
pub(crate) fn used(device: &Device) -> Result<usize> {
    let (free, total) = device.memory_info()?;
    Ok(total.saturating_sub(free))
}

/// The first rows of the output `y` that every graph shares, as memory one graph writes.
///
/// Each graph holds a `Rows` of its own over the same buffer: the aliasing a set of graphs
/// over one static output needs (DESIGN.md §10's graph set, launched through `&mut self`,
/// would own it). See the `unsafe impl`s for why it is sound here.
pub struct Rows {
    range: DeviceRange,
}

/// The memory it names: argument updates skip the statements that read only unchanged keys.
impl ParamKey for Rows {
    fn key(&self, out: &mut KeyWriter<'_>) {
        out.write_u64(self.range.ptr);
        out.write_u64(self.range.bytes as u64);
    }
}

// SAFETY: the range is the first bytes of `Model::y`, a `DeviceBuffer<f32>` of the model,
// which is leaked (`Box::leak`) and so stays allocated as long as the process, past every
// graph that captured an operation on it; whole `f32`s (`n` of them, at most `y`'s length).
unsafe impl DeviceMemory for Rows {
    type Elem = f32;
    fn range(&self) -> DeviceRange {
        self.range
    }
}

// SAFETY: several `Rows` name the same memory, one per graph, which is what this impl's
// exclusivity promise forbids in general. Here no two writes through them are unordered: the
// graphs holding them are launched one at a time on one stream (`Temps::cycle`,
// `Params::cycle`, `Model::check`), every eager run is synchronized before the next, and the
// host reads `y` only after a synchronization.
unsafe impl DeviceMemoryMut for Rows {}

pipeline! {
    /// W13's step for `n = b · width` elements: `h1 = x·W0` then bias + ReLU, `h2 = h1·W1` then
    /// bias + ReLU, `y = h2·W2` then bias; the hidden activations are temporaries.
    pub pipeline StepTemps<'o>(
        x: &DeviceBuffer<f32>,
        y: &mut Rows,
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
        main: call gemm(&mut y, &h2, &ws[2]);
        main: launch bias_act<<<blocks(n), BIAS_BLOCK>>>(&mut y, &bs[2], n as u32, width, 0u32);
    }
}

pipeline! {
    /// [`StepTemps`] with the hidden activations as buffers of the caller's.
    pub pipeline StepParams<'o>(
        x: &DeviceBuffer<f32>,
        y: &mut Rows,
        h1: &mut DeviceBuffer<f32>,
        h2: &mut DeviceBuffer<f32>,
        ws: &[DeviceBuffer<f32>],
        bs: &[DeviceBuffer<f32>],
        gemm: &'o Gemm<f32>,
        bias_act: &Kernel,
        n: usize,
        width: u32,
    ) {
        stream main;
        main: call gemm(&mut h1, &x.slice(0..n), &ws[0]);
        main: launch bias_act<<<blocks(n), BIAS_BLOCK>>>(&mut h1, &bs[0], n as u32, width, 1u32);
        main: call gemm(&mut h2, &h1, &ws[1]);
        main: launch bias_act<<<blocks(n), BIAS_BLOCK>>>(&mut h2, &bs[1], n as u32, width, 1u32);
        main: call gemm(&mut y, &h2, &ws[2]);
        main: launch bias_act<<<blocks(n), BIAS_BLOCK>>>(&mut y, &bs[2], n as u32, width, 0u32);
    }
}

/// What every graph of one step at many batch sizes reads, in W13 and in W14
/// (`few_graphs.rs`): the data and its CPU reference, the input `x` of the largest batch,
/// weights, biases, one GEMM op per batch size and the `bias_act` kernel. The output is the
/// workload's own.
pub(crate) struct Net {
    pub(crate) device: Device,
    pub(crate) p: Shapes,
    /// The network as W11 describes it, at the largest batch (for the CPU reference).
    mlp: Mlp,
    data: Data,
    pub(crate) x: DeviceBuffer<f32>,
    pub(crate) ws: Vec<DeviceBuffer<f32>>,
    pub(crate) bs: Vec<DeviceBuffer<f32>>,
    /// `gemms[i]`: `[batches[i] × width] · [width × width]`, row-major.
    pub(crate) gemms: Vec<Gemm<f32>>,
    pub(crate) bias_act: &'static Kernel,
    /// Device memory the GEMM ops took when made, bytes.
    pub(crate) ops_bytes: f64,
}

impl Net {
    /// Checks the sizes, uploads the data and makes one GEMM op per batch size (without a
    /// workspace, [`WORKSPACE`]), measuring the device memory they take.
    pub(crate) fn new(device: &Device, p: &Shapes, bias_act: &'static Kernel) -> Result<Net> {
        p.check()?;
        let mlp = Mlp {
            layers: LAYERS,
            width: p.width,
            batch: p.max_batch(),
            streams: 1,
        };
        let data = Data::new(&mlp);
        let up = |v: &[f32]| DeviceBuffer::from_host(device, v);
        let x = up(&data.x)?;
        let ws = data
            .ws
            .iter()
            .map(|w| up(w))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let bs = data
            .bs
            .iter()
            .map(|b| up(b))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        device.synchronize()?;
        let before = used(device)?;
        let gemms = p
            .batches
            .iter()
            .map(|&b| {
                let config = GemmConfig::<f32>::row_major(b, p.width, p.width);
                Gemm::with_workspace(device, config, WORKSPACE)
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        device.synchronize()?;
        let ops_bytes = used(device)? as f64 - before as f64;
        Ok(Net {
            device: device.clone(),
            p: p.clone(),
            mlp,
            data,
            x,
            ws,
            bs,
            gemms,
            bias_act,
            ops_bytes,
        })
    }

    /// Elements of batch `i`'s activations.
    pub(crate) fn n(&self, i: usize) -> usize {
        self.p.batches[i] * self.p.width
    }

    /// Every batch's step once, eagerly and synchronized (`run(eager, i)` runs batch `i`'s):
    /// cuBLAS's kernels load here, not during a capture or a cycle.
    pub(crate) fn warm(&self, mut run: impl FnMut(&mut Eager, usize) -> Result<()>) -> Result<()> {
        let origin = Stream::new(&self.device, 0)?;
        let mut eager = Eager::new(&origin);
        eager.check(false);
        for i in 0..self.p.batches.len() {
            run(&mut eager, i)?;
            origin.synchronize()?;
        }
        self.device.synchronize()?;
        Ok(())
    }

    /// After batch `i`'s step ran on `origin` into `y` (the output of the largest batch,
    /// poisoned with NaN before): its first and last rows against W11's CPU reference, and
    /// the row after its last untouched. `workload` names the failure.
    pub(crate) fn check_output(
        &self,
        workload: &str,
        i: usize,
        origin: &Stream,
        y: &DeviceBuffer<f32>,
    ) -> Result<()> {
        let (w, b) = (self.p.width, self.p.batches[i]);
        check_rows(workload, origin, y, (w, b, self.p.max_batch()), |r, got| {
            self.data.check_row(&self.mlp, r, got).map_err(|e| match e {
                BenchError::Check(why) => {
                    BenchError::Check(format!("{workload}, the graph of batch {b}: {why}"))
                }
                other => other,
            })
        })
    }
}

/// After batch `b`'s step ran on `origin` into `y` (rows of `w` elements of the largest batch,
/// `max` rows, poisoned with NaN before): `check(r, row)` on its first and last rows, then the
/// row after its last untouched. `workload` names the failure.
pub(crate) fn check_rows(
    workload: &str,
    origin: &Stream,
    y: &DeviceBuffer<f32>,
    (w, b, max): (usize, usize, usize),
    mut check: impl FnMut(usize, &[f32]) -> Result<()>,
) -> Result<()> {
    origin.synchronize()?;
    let row = |r: usize| y.slice(r * w..(r + 1) * w).to_vec_on(origin);
    for r in [0, b - 1] {
        check(r, &row(r)?)?;
    }
    if b < max && row(b)?.iter().any(|v| !v.is_nan()) {
        return Err(BenchError::Check(format!(
            "{workload}: the graph of batch {b} wrote row {b}, past its batch"
        )));
    }
    Ok(())
}

/// W13's model: the shared [`Net`], the output every graph shares, and the plan's numbers.
struct Model {
    net: Net,
    y: DeviceBuffer<f32>,
    /// `Plan::temp_peak_bytes` of [`StepTemps`] at the largest batch.
    peak_largest: usize,
    /// The same, summed over every batch: what buffers per graph take at least.
    peak_sum: usize,
}

impl Model {
    fn new(device: &Device, p: &Shapes, bias_act: &'static Kernel) -> Result<&'static Model> {
        let net = Net::new(device, p, bias_act)?;
        let y = DeviceBuffer::<f32>::zeros(device, p.max_batch() * p.width)?;
        let mut model = Model {
            net,
            y,
            peak_largest: 0,
            peak_sum: 0,
        };
        let peaks = (0..p.batches.len())
            .map(|i| Ok(Plan::build(&model.temps(i, &mut model.rows(i)))?.temp_peak_bytes()))
            .collect::<Result<Vec<_>>>()?;
        model.peak_largest = peaks.last().copied().unwrap_or(0);
        model.peak_sum = peaks.iter().sum();
        let model: &'static Model = Box::leak(Box::new(model));
        model.warm()?;
        Ok(model)
    }

    /// Every batch's step once, eagerly (after checking both pipelines' plans for races at
    /// the largest batch): cuBLAS's kernels load here, not during a capture or a cycle.
    fn warm(&self) -> Result<()> {
        let net = &self.net;
        let last = net.p.batches.len() - 1;
        Plan::build(&self.temps(last, &mut self.rows(last)))?.check_races()?;
        let n = net.n(last);
        let mut h = [
            DeviceBuffer::<f32>::zeros(&net.device, n)?,
            DeviceBuffer::<f32>::zeros(&net.device, n)?,
        ];
        let [h1, h2] = &mut h;
        Plan::build(&self.params(last, &mut self.rows(last), h1, h2))?.check_races()?;
        net.warm(|eager, i| Ok(eager.run(&self.temps(i, &mut self.rows(i)))?))
    }

    /// The rows of `y` that batch `i`'s graph writes.
    fn rows(&self, i: usize) -> Rows {
        Rows {
            range: DeviceRange {
                bytes: self.net.n(i) * std::mem::size_of::<f32>(),
                ..self.y.range()
            },
        }
    }

    fn temps<'a>(&'a self, i: usize, y: &'a mut Rows) -> StepTemps<'a, 'a> {
        let net = &self.net;
        StepTemps::new(
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

    fn params<'a>(
        &'a self,
        i: usize,
        y: &'a mut Rows,
        h1: &'a mut DeviceBuffer<f32>,
        h2: &'a mut DeviceBuffer<f32>,
    ) -> StepParams<'a, 'a> {
        let net = &self.net;
        StepParams::new(
            &net.x,
            y,
            h1,
            h2,
            &net.ws,
            &net.bs,
            &net.gemms[i],
            net.bias_act,
            net.n(i),
            net.p.width as u32,
        )
    }

    /// For the smallest and the largest batch: `y` poisoned with NaN, that batch's graph
    /// launched alone (`launch(i)`), its first and last rows against the CPU, the row after
    /// them untouched.
    fn check(&self, origin: &Stream, launch: impl Fn(usize) -> Result<()>) -> Result<()> {
        let last = self.net.p.batches.len() - 1;
        for i in [0, last] {
            origin.fill(&mut self.rows(last), f32::NAN)?;
            launch(i)?;
            self.net.check_output("W13", i, origin, &self.y)?;
        }
        Ok(())
    }

    /// One cycle's metrics, in [`W13_METRICS`]'s order.
    fn metrics(&self, capture_ms: f64, after: [f64; 2], pool: GraphMemory) -> Vec<f64> {
        vec![
            capture_ms,
            mib(after[0]),
            mib(after[1]),
            after[1] / self.peak_largest as f64,
            mib(pool.reserved_high as f64),
            mib(pool.used_high as f64),
            mib(self.peak_largest as f64),
            mib(self.peak_sum as f64),
            mib(self.net.ops_bytes),
        ]
    }
}

/// The device memory in use when a cycle starts.
pub(crate) struct Baseline<'m> {
    device: &'m Device,
    used: usize,
}

impl<'m> Baseline<'m> {
    /// Synchronizes, returns graph memory no graph uses to the driver, resets the graph
    /// memory's high marks and reads the memory in use.
    pub(crate) fn take(device: &'m Device) -> Result<Baseline<'m>> {
        device.synchronize()?;
        device.trim_graph_memory()?;
        device.reset_graph_memory_high()?;
        Ok(Baseline {
            device,
            used: used(device)?,
        })
    }

    /// Bytes in use over the baseline, after a synchronization.
    pub(crate) fn over(&self) -> Result<f64> {
        self.device.synchronize()?;
        Ok(used(self.device)? as f64 - self.used as f64)
    }

    /// Returns what the cycle's graphs left reserved (their memory was freed with them).
    pub(crate) fn end(self) -> Result<()> {
        self.device.synchronize()?;
        self.device.trim_graph_memory()?;
        Ok(())
    }
}

pub(crate) fn ms_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e3
}

/// Captures and instantiates each of `pipelines` (largest batch first), verified when
/// `check`: the executable graphs, smallest batch first.
fn capture_all<P: Pipeline>(
    capture: &mut Capture,
    pipelines: impl Iterator<Item = P>,
    check: bool,
) -> Result<Vec<GraphExec<P>>> {
    let mut execs = Vec::new();
    for pipeline in pipelines {
        let graph = capture.capture(pipeline)?;
        if check {
            graph.verify()?;
        }
        execs.push(graph.instantiate()?);
    }
    execs.reverse();
    Ok(execs)
}

impl Model {
    /// The rest of a cycle once its graphs are instantiated (`execs`, smallest batch first,
    /// `capture_ms` after `base`): the memory in use, one launch of each, the memory again,
    /// the check when `check`, the graphs dropped and the baseline restored.
    fn finish<P>(
        &self,
        origin: &Stream,
        base: Baseline<'_>,
        capture_ms: f64,
        execs: Vec<GraphExec<P>>,
        check: bool,
    ) -> Result<Vec<f64>> {
        let after_instantiate = base.over()?;
        for exec in &execs {
            exec.launch(origin)?;
        }
        let after_replay = base.over()?;
        let pool = self.net.device.graph_memory()?;
        if check {
            self.check(origin, |i| Ok(execs[i].launch(origin)?))?;
        }
        drop(execs);
        base.end()?;
        Ok(self.metrics(capture_ms, [after_instantiate, after_replay], pool))
    }
}

/// `streamgraph`: hidden activations as temporaries.
struct Temps {
    m: &'static Model,
    origin: Stream,
    capture: Capture,
}

impl Temps {
    fn cycle(&mut self, check: bool) -> Result<Vec<f64>> {
        let m = self.m;
        let base = Baseline::take(&m.net.device)?;
        let mut outs: Vec<Rows> = (0..m.net.p.batches.len()).map(|i| m.rows(i)).collect();
        let t0 = Instant::now();
        let pipelines = outs
            .iter_mut()
            .enumerate()
            .rev()
            .map(|(i, y)| m.temps(i, y));
        let execs = capture_all(&mut self.capture, pipelines, check)?;
        m.finish(&self.origin, base, ms_since(t0), execs, check)
    }
}

impl Case for Temps {
    fn sample(&mut self) -> Result<Vec<f64>> {
        self.cycle(false)
    }
}

/// `streamgraph-params`: hidden activations as buffers allocated per graph.
struct Params {
    m: &'static Model,
    origin: Stream,
    capture: Capture,
}

impl Params {
    fn cycle(&mut self, check: bool) -> Result<Vec<f64>> {
        let m = self.m;
        let base = Baseline::take(&m.net.device)?;
        let mut outs: Vec<Rows> = (0..m.net.p.batches.len()).map(|i| m.rows(i)).collect();
        let mut hidden = (0..m.net.p.batches.len())
            .map(|i| {
                Ok([
                    DeviceBuffer::<f32>::zeros(&m.net.device, m.net.n(i))?,
                    DeviceBuffer::<f32>::zeros(&m.net.device, m.net.n(i))?,
                ])
            })
            .collect::<Result<Vec<_>>>()?;
        let t0 = Instant::now();
        let pipelines = (outs.iter_mut().enumerate().zip(&mut hidden).rev())
            .map(|((i, y), [h1, h2])| m.params(i, y, h1, h2));
        let execs = capture_all(&mut self.capture, pipelines, check)?;
        let metrics = m.finish(&self.origin, base, ms_since(t0), execs, check);
        drop(hidden);
        metrics
    }
}

impl Case for Params {
    fn sample(&mut self) -> Result<Vec<f64>> {
        self.cycle(false)
    }
}

/// W13's two streamgraph systems on one model (made once, leaked): each set up with one
/// checked cycle.
pub fn setups(device: &Device, p: &Shapes, bias_act: &'static Kernel) -> Vec<Setup<'static>> {
    let m = match Model::new(device, p, bias_act) {
        Ok(m) => m,
        Err(e) => {
            let why = format!("W13's shared setup: {e}");
            return vec![
                ("streamgraph", Err(e)),
                ("streamgraph-params", Err(BenchError::Setup(why))),
            ];
        }
    };
    let temps = || -> Result<Box<dyn Case>> {
        let origin = Stream::new(device, 0)?;
        let capture = Capture::new(&origin).check(false);
        let mut case = Temps { m, origin, capture };
        case.cycle(true)?;
        Ok(Box::new(case))
    };
    let params = || -> Result<Box<dyn Case>> {
        let origin = Stream::new(device, 0)?;
        let capture = Capture::new(&origin).check(false);
        let mut case = Params { m, origin, capture };
        case.cycle(true)?;
        Ok(Box::new(case))
    };
    vec![("streamgraph", temps()), ("streamgraph-params", params())]
}
