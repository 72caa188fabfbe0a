//! W11, an MLP step through cuBLAS: `layers` layers of `act(a·W + b)` (`f32`, `width` features
//! in and out, ReLU on every layer but the last) for a batch of `batch` rows, each layer one
//! cuBLAS GEMM (`cublasGemmEx`, `CUBLAS_COMPUTE_32F`, row-major as the column-major call
//! `Cᵀ = Wᵀ·aᵀ`) and one `bias_act` kernel of `kernels.cu`. With `streams = 2` the batch is
//! split in two halves, the first on the origin, the second on a side stream (forked from the
//! origin at the start, joined into it at the end), each with its own cuBLAS handle and 32 MiB
//! workspace, both reading the same weights.
//!
//! Systems: `raw`, the same cuBLAS calls by hand (cudarc's `CudaBlas` handles on cudarc
//! streams, `cublasSetWorkspace_v2` once at setup, `cublasGemmEx` through
//! `cudarc::cublas::result`, kernels and events through `cudarc::driver::sys`, the graph from
//! `cuStreamBeginCapture_v2`/`cuStreamEndCapture` + `cuGraphInstantiateWithFlags`); and
//! `streamgraph`, a `pipeline!` of `call` statements on `ops::Gemm` and `launch`es of the same
//! kernel, run by `Eager` and captured by `Capture` (checks off; verified once at setup).
//!
//! Each sample: [`STEPS`] replays back to back between two timing events on the origin (device
//! µs per step, and host µs per `cuGraphLaunch`/`GraphExec::launch`), the same number of eager
//! steps (device and host µs per step), and one fresh capture + instantiate of the step (host
//! µs of each), destroyed at once. At setup each system runs the step eagerly once and
//! compares the first and last rows of the output with a CPU reference (each row of an MLP
//! depends on its own input row only), then checks that a replay gives the eager run's bits.

use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::Arc;
use std::time::Instant;

use ::streamgraph::ops::{Gemm, GemmConfig};
use ::streamgraph::{
    pipeline, Capture, Device, DeviceBuffer, Eager, GraphExec, Kernel, Plan, Stream,
};
use cudarc::cublas::{result as blas, sys as blas_sys, CudaBlas};
use cudarc::driver::{sys, CudaStream};

use crate::gpu::{check, BenchError, Event, Gpu, Graph};
use crate::runner::{metric, Case, Metric};

type Result<T> = std::result::Result<T, BenchError>;

/// W11's size.
#[derive(Debug, Clone, Copy)]
pub struct Mlp {
    /// Layers, each `width × width`.
    pub layers: usize,
    /// Features in and out of every layer.
    pub width: usize,
    /// Rows of the batch.
    pub batch: usize,
    /// 1, or 2: the batch in two halves on two streams.
    pub streams: usize,
}

impl Mlp {
    /// Rows per stream.
    fn rows(&self) -> usize {
        self.batch / self.streams
    }

    fn check(&self) -> Result<()> {
        if self.layers == 0
            || self.width == 0
            || !(1..=2).contains(&self.streams)
            || self.batch == 0
            || !self.batch.is_multiple_of(self.streams)
            || self.batch * self.width > u32::MAX as usize
        {
            return Err(BenchError::Setup(format!("W11: unusable sizes {self:?}")));
        }
        Ok(())
    }
}

/// Steps per sample (replays back to back; eager steps one after another).
pub const STEPS: usize = 20;

/// The cuBLAS workspace of each handle: streamgraph's default on Hopper.
const WORKSPACE: usize = 32 << 20;

/// Threads per block of `bias_act`.
const BIAS_BLOCK: u32 = 256;

pub const W11_METRICS: &[Metric] = &[
    metric("replay", "device_per_step", "us"),
    metric("replay", "host_per_step", "us"),
    metric("eager", "device_per_step", "us"),
    metric("eager", "host_per_step", "us"),
    metric("capture+instantiate", "capture", "us"),
    metric("capture+instantiate", "instantiate", "us"),
    metric("capture+instantiate", "total", "us"),
];

// ---------------------------------------------------------------------------------------------
// Data and the CPU reference, shared by both systems (and by W13, `many_shapes.rs`).

/// Deterministic values in `[-scale, scale)`.
fn values(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// The host data of one network: input `[batch × width]`, per layer `W` `[width × width]`
/// (row-major, uniform with the variance `2 / width` that keeps ReLU activations near 1) and
/// `b` `[width]`.
pub(crate) struct Data {
    pub(crate) x: Vec<f32>,
    pub(crate) ws: Vec<Vec<f32>>,
    pub(crate) bs: Vec<Vec<f32>>,
}

impl Data {
    pub(crate) fn new(p: &Mlp) -> Data {
        let scale = (6.0 / p.width as f32).sqrt();
        Data {
            x: values(p.batch * p.width, 1, 1.0),
            ws: (0..p.layers)
                .map(|l| values(p.width * p.width, 10 + l as u64, scale))
                .collect(),
            bs: (0..p.layers)
                .map(|l| values(p.width, 100 + l as u64, 0.1))
                .collect(),
        }
    }

    /// Checks output row `r` (`got`) against the network on the CPU in f64. Tolerance per
    /// element, layer by layer: the rounding of a `width`-term `f32` sum, `4·√width·2⁻²⁴` of
    /// the sum of the terms' magnitudes (the `√n·u` rule for sums whose roundings are
    /// independent, with a margin of 4; the worst case, `n·u`, is 16 times looser at 4,096
    /// terms), plus the input's tolerances carried through `W`, added in quadrature.
    pub(crate) fn check_row(&self, p: &Mlp, r: usize, got: &[f32]) -> Result<()> {
        let w = p.width;
        let unit = 4.0 * (w as f64).sqrt() * f64::powi(2.0, -24);
        let mut a: Vec<f64> = self.x[r * w..(r + 1) * w]
            .iter()
            .map(|&v| f64::from(v))
            .collect();
        let mut err = vec![0.0f64; w];
        for l in 0..p.layers {
            let (wl, bl) = (&self.ws[l], &self.bs[l]);
            let mut out: Vec<f64> = bl.iter().map(|&v| f64::from(v)).collect();
            let mut magnitude: Vec<f64> = bl.iter().map(|&v| f64::from(v.abs())).collect();
            let mut carried = vec![0.0f64; w];
            for k in 0..w {
                let row = &wl[k * w..(k + 1) * w];
                for c in 0..w {
                    let wk = f64::from(row[c]);
                    out[c] += a[k] * wk;
                    magnitude[c] += (a[k] * wk).abs();
                    carried[c] += (err[k] * wk).powi(2);
                }
            }
            let relu = l + 1 < p.layers;
            for c in 0..w {
                if relu {
                    out[c] = out[c].max(0.0);
                }
                err[c] = unit * magnitude[c] + carried[c].sqrt() + 1e-7;
            }
            a = out;
        }
        for c in 0..w {
            let off = (f64::from(got[c]) - a[c]).abs();
            if off.is_nan() || off > err[c] {
                return Err(BenchError::Check(format!(
                    "row {r} column {c}: {}, the CPU says {} (tolerance {:e})",
                    got[c], a[c], err[c]
                )));
            }
        }
        Ok(())
    }

    /// Checks the first and last rows of the output `y` (`[batch × width]`).
    fn check_output(&self, p: &Mlp, y: &[f32]) -> Result<()> {
        let w = p.width;
        for r in [0, p.batch - 1] {
            self.check_row(p, r, &y[r * w..(r + 1) * w])
                .map_err(|e| match e {
                    BenchError::Check(why) => BenchError::Check(format!("W11 {why}")),
                    other => other,
                })?;
        }
        Ok(())
    }
}

/// W11's CPU check without a GPU: a small network computed in `f32` on the host passes it,
/// and the same output with one element off by 1 % of its value fails it.
pub fn self_test() -> std::result::Result<(), String> {
    let p = Mlp {
        layers: 8,
        width: 512,
        batch: 2,
        streams: 2,
    };
    let data = Data::new(&p);
    let w = p.width;
    let mut y = Vec::new();
    for r in 0..p.batch {
        let mut a = data.x[r * w..(r + 1) * w].to_vec();
        for l in 0..p.layers {
            a = (0..w)
                .map(|c| {
                    let v = (0..w).fold(data.bs[l][c], |s, k| s + a[k] * data.ws[l][k * w + c]);
                    if l + 1 < p.layers {
                        v.max(0.0)
                    } else {
                        v
                    }
                })
                .collect();
        }
        y.extend(a);
    }
    data.check_output(&p, &y)
        .map_err(|e| format!("W11's check refuses a host-computed output: {e}"))?;
    let last = y.len() - 1;
    y[last] += 0.01 * y[last].abs().max(0.1);
    if data.check_output(&p, &y).is_ok() {
        return Err("W11's check accepts an element off by 1 %".into());
    }
    Ok(())
}

fn same_bits(eager: &[f32], replay: &[f32]) -> Result<()> {
    match eager
        .iter()
        .zip(replay)
        .position(|(a, b)| a.to_bits() != b.to_bits())
    {
        None if eager.len() == replay.len() => Ok(()),
        None => Err(BenchError::Check(
            "W11: outputs of different lengths".into(),
        )),
        Some(i) => Err(BenchError::Check(format!(
            "W11: the replay's output element {i} is {}, the eager run's {}",
            replay[i], eager[i]
        ))),
    }
}

fn us_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e6
}

// ---------------------------------------------------------------------------------------------
// Raw: cudarc's cuBLAS handles, driver calls.

/// Device memory from `cuMemAlloc_v2`, freed on drop.
struct DeviceMem {
    ptr: sys::CUdeviceptr,
    bytes: usize,
}

impl DeviceMem {
    fn new(bytes: usize) -> Result<DeviceMem> {
        let mut ptr = 0;
        check(
            // SAFETY: writes the new allocation's address through a valid pointer.
            unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes.max(1)) },
            "cuMemAlloc_v2",
        )?;
        Ok(DeviceMem { ptr, bytes })
    }

    fn from_host(data: &[f32]) -> Result<DeviceMem> {
        let mem = DeviceMem::new(std::mem::size_of_val(data))?;
        check(
            // SAFETY: copies `bytes` from a live host slice of that size into the allocation.
            unsafe { sys::cuMemcpyHtoD_v2(mem.ptr, data.as_ptr().cast(), mem.bytes) },
            "cuMemcpyHtoD_v2",
        )?;
        Ok(mem)
    }

    /// The floats it holds (a synchronous copy; callers synchronise their streams first).
    fn to_host(&self) -> Result<Vec<f32>> {
        let mut out = vec![0.0f32; self.bytes / 4];
        check(
            // SAFETY: copies `bytes` from the allocation into a host vector of that size.
            unsafe {
                sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast::<c_void>(), self.ptr, self.bytes)
            },
            "cuMemcpyDtoH_v2",
        )?;
        Ok(out)
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        // SAFETY: owned allocation, freed once; callers synchronise before dropping.
        unsafe { sys::cuMemFree_v2(self.ptr) };
    }
}

/// One stream's half of the network: its handle, its workspace, its activations (`acts[0]`
/// the input rows, `acts[l + 1]` layer `l`'s output).
struct Lane {
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    _workspace: DeviceMem,
    acts: Vec<DeviceMem>,
}

impl Lane {
    fn new(gpu: &Gpu, p: &Mlp, input: &[f32]) -> Result<Lane> {
        let stream = gpu
            .ctx()
            .new_stream()
            .map_err(|e| BenchError::Setup(format!("W11 stream: {e}")))?;
        let blas = CudaBlas::new(stream.clone())
            .map_err(|e| BenchError::Setup(format!("W11 cuBLAS handle: {e}")))?;
        let workspace = DeviceMem::new(WORKSPACE)?;
        // SAFETY: the handle is live (owned by `blas`); the workspace is a live allocation of
        // `WORKSPACE` bytes of this context, kept by the lane as long as the handle.
        unsafe {
            blas_sys::cublasSetWorkspace_v2(*blas.handle(), workspace.ptr as *mut c_void, WORKSPACE)
        }
        .result()
        .map_err(|e| BenchError::Setup(format!("cublasSetWorkspace_v2: {e}")))?;
        let mut acts = vec![DeviceMem::from_host(input)?];
        for _ in 0..p.layers {
            acts.push(DeviceMem::new(p.rows() * p.width * 4)?);
        }
        Ok(Lane {
            stream,
            blas,
            _workspace: workspace,
            acts,
        })
    }

    fn cu(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }
}

struct RawW11<'g> {
    gpu: &'g Gpu,
    p: Mlp,
    /// The origin's lane first.
    lanes: Vec<Lane>,
    ws: Vec<DeviceMem>,
    bs: Vec<DeviceMem>,
    fork: Event,
    join: Event,
    exec: crate::gpu::Exec,
    _graph: Graph,
    start: Event,
    end: Event,
}

/// W11 by hand: one eager step checked against the CPU, then captured once and instantiated;
/// the replay's output checked against the eager run's bits.
pub fn raw<'g>(gpu: &'g Gpu, p: &Mlp) -> Result<Box<dyn Case + 'g>> {
    p.check()?;
    // SAFETY: only tries to open the library; calls nothing in it.
    if !unsafe { blas_sys::is_culib_present() } {
        return Err(BenchError::Setup(
            "no cuBLAS library (libcublas) found".into(),
        ));
    }
    let data = Data::new(p);
    let part = p.rows() * p.width;
    let lanes = (0..p.streams)
        .map(|s| Lane::new(gpu, p, &data.x[s * part..(s + 1) * part]))
        .collect::<Result<Vec<_>>>()?;
    let ws = data
        .ws
        .iter()
        .map(|w| DeviceMem::from_host(w))
        .collect::<Result<Vec<_>>>()?;
    let bs = data
        .bs
        .iter()
        .map(|b| DeviceMem::from_host(b))
        .collect::<Result<Vec<_>>>()?;
    let mut case = RawW11 {
        gpu,
        p: *p,
        lanes,
        ws,
        bs,
        fork: Event::edge()?,
        join: Event::edge()?,
        exec: crate::gpu::Exec(ptr::null_mut()),
        _graph: Graph(ptr::null_mut()),
        start: Event::timing()?,
        end: Event::timing()?,
    };
    case.step()?;
    case.synchronize()?;
    let eager = case.output()?;
    data.check_output(p, &eager)?;
    let (graph, _) = case.capture()?;
    case.exec = graph.instantiate()?;
    case._graph = graph;
    for lane in &case.lanes {
        check(
            // SAFETY: the last activation buffer is live; zeroes its floats, so the replay
            // below must write them again.
            unsafe { sys::cuMemsetD32_v2(lane.acts[p.layers].ptr, 0, part) },
            "cuMemsetD32_v2",
        )?;
    }
    gpu.synchronize()?; // the memsets ran on the legacy stream
    case.exec_launch()?;
    case.synchronize()?;
    same_bits(&eager, &case.output()?)?;
    Ok(Box::new(case))
}

impl RawW11<'_> {
    fn origin(&self) -> sys::CUstream {
        self.lanes[0].cu()
    }

    fn synchronize(&self) -> Result<()> {
        check(
            // SAFETY: the stream is alive (owned by the lane).
            unsafe { sys::cuStreamSynchronize(self.origin()) },
            "cuStreamSynchronize",
        )
    }

    /// The output, lane after lane (rows in order).
    fn output(&self) -> Result<Vec<f32>> {
        let mut y = Vec::new();
        for lane in &self.lanes {
            y.extend(lane.acts[self.p.layers].to_host()?);
        }
        Ok(y)
    }

    /// Layer `l` of `lane`: `acts[l + 1] = acts[l] · W[l]` by cuBLAS, then `bias_act`.
    #[inline(always)]
    fn layer(&self, lane: &Lane, l: usize) -> Result<()> {
        let (rows, width) = (self.p.rows() as c_int, self.p.width as c_int);
        let (alpha, beta) = (1.0f32, 0.0f32);
        let f32_type = blas_sys::cudaDataType::CUDA_R_32F;
        let n = blas_sys::cublasOperation_t::CUBLAS_OP_N;
        // SAFETY: row-major `[rows × width] = [rows × width] · [width × width]` as the
        // column-major call `Cᵀ = Wᵀ · aᵀ`: `W` (lda = width) holds width² floats, `acts[l]`
        // (ldb = width) and `acts[l + 1]` (ldc = width) rows · width; the handle is bound to
        // the lane's stream, with the lane's workspace; alpha and beta are host floats
        // (pointer mode host) live for the call.
        unsafe {
            blas::gemm_ex(
                *lane.blas.handle(),
                n,
                n,
                width,
                rows,
                width,
                ptr::addr_of!(alpha).cast(),
                self.ws[l].ptr as *const c_void,
                f32_type,
                width,
                lane.acts[l].ptr as *const c_void,
                f32_type,
                width,
                ptr::addr_of!(beta).cast(),
                lane.acts[l + 1].ptr as *mut c_void,
                f32_type,
                width,
                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| BenchError::Setup(format!("cublasGemmEx: {e}")))?;
        let mut y = lane.acts[l + 1].ptr;
        let mut b = self.bs[l].ptr;
        let mut count = (self.p.rows() * self.p.width) as u32;
        let mut cols = self.p.width as u32;
        let mut relu = u32::from(l + 1 < self.p.layers);
        let mut args: [*mut c_void; 5] = [
            ptr::addr_of_mut!(y).cast(),
            ptr::addr_of_mut!(b).cast(),
            ptr::addr_of_mut!(count).cast(),
            ptr::addr_of_mut!(cols).cast(),
            ptr::addr_of_mut!(relu).cast(),
        ];
        check(
            // SAFETY: the arguments match `bias_act(float*, const float*, unsigned, unsigned,
            // unsigned)` and point at locals that outlive the call; `y` holds `count` floats
            // and `b` `cols`.
            unsafe {
                sys::cuLaunchKernel(
                    self.gpu.bias_act,
                    count.div_ceil(BIAS_BLOCK),
                    1,
                    1,
                    BIAS_BLOCK,
                    1,
                    1,
                    0,
                    lane.cu(),
                    args.as_mut_ptr(),
                    ptr::null_mut(),
                )
            },
            "cuLaunchKernel",
        )
    }

    /// One step: the side lane forked from the origin, every layer on each lane, joined.
    #[inline(always)]
    fn step(&self) -> Result<()> {
        let split = self.lanes.len() > 1;
        if split {
            self.fork.record_on(self.origin())?;
            wait(self.lanes[1].cu(), &self.fork)?;
        }
        for l in 0..self.p.layers {
            for lane in &self.lanes {
                self.layer(lane, l)?;
            }
        }
        if split {
            self.join.record_on(self.lanes[1].cu())?;
            wait(self.origin(), &self.join)?;
        }
        Ok(())
    }

    /// Captures one step on the origin: (graph, capture µs).
    fn capture(&self) -> Result<(Graph, f64)> {
        let origin = self.origin();
        let t0 = Instant::now();
        check(
            // SAFETY: the stream is alive; thread-local capture as everywhere in `raw.rs`.
            unsafe {
                sys::cuStreamBeginCapture_v2(
                    origin,
                    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                )
            },
            "cuStreamBeginCapture",
        )?;
        let issued = self.step();
        let mut graph = ptr::null_mut();
        // SAFETY: ends the capture begun above; writes the graph through a valid pointer.
        let ended = check(
            unsafe { sys::cuStreamEndCapture(origin, &mut graph) },
            "cuStreamEndCapture",
        );
        let us = us_since(t0);
        let graph = Graph(graph);
        issued?;
        ended?;
        Ok((graph, us))
    }

    fn exec_launch(&self) -> Result<()> {
        check(
            // SAFETY: the executable graph and the origin stream are alive.
            unsafe { sys::cuGraphLaunch(self.exec.0, self.origin()) },
            "cuGraphLaunch",
        )
    }

    /// (device µs, host µs) of `f` between the timing events on the origin.
    fn timed(&self, f: impl FnOnce() -> Result<()>) -> Result<(f64, f64)> {
        self.start.record_on(self.origin())?;
        let t0 = Instant::now();
        f()?;
        let host = us_since(t0);
        self.end.record_on(self.origin())?;
        Ok((self.start.elapsed_ms(&self.end)? * 1e3, host))
    }
}

fn wait(stream: sys::CUstream, event: &Event) -> Result<()> {
    // SAFETY: both handles are alive.
    check(
        unsafe { sys::cuStreamWaitEvent(stream, event.0, 0) },
        "cuStreamWaitEvent",
    )
}

impl Case for RawW11<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let steps = STEPS as f64;
        let (replay_dev, replay_host) =
            self.timed(|| (0..STEPS).try_for_each(|_| self.exec_launch()))?;
        let (eager_dev, eager_host) = self.timed(|| (0..STEPS).try_for_each(|_| self.step()))?;
        self.synchronize()?;
        let (graph, cap) = self.capture()?;
        let t1 = Instant::now();
        let exec = graph.instantiate()?;
        let inst = us_since(t1);
        drop(exec);
        drop(graph);
        Ok(vec![
            replay_dev / steps,
            replay_host / steps,
            eager_dev / steps,
            eager_host / steps,
            cap,
            inst,
            cap + inst,
        ])
    }
}

impl Drop for RawW11<'_> {
    fn drop(&mut self) {
        // Nothing may be pending on the buffers when they are freed.
        let _ = self.gpu.synchronize();
    }
}

// ---------------------------------------------------------------------------------------------
// streamgraph.

fn blocks(n: u32) -> u32 {
    n.div_ceil(BIAS_BLOCK)
}

pipeline! {
    /// `layers` layers on `main` (rows of `main_acts`) and, when `split`, on `side` (rows of
    /// `side_acts`): per layer a GEMM into the next activation buffer and `bias_act` on it.
    /// `acts[0]` is the input; `n` is the floats of one activation buffer.
    pub pipeline MlpLayers<'o>(
        main_acts: &mut [DeviceBuffer<f32>],
        side_acts: &mut [DeviceBuffer<f32>],
        ws: &[DeviceBuffer<f32>],
        bs: &[DeviceBuffer<f32>],
        gemm_main: &'o Gemm<f32>,
        gemm_side: &'o Gemm<f32>,
        bias_act: &Kernel,
        layers: usize,
        split: bool,
        n: u32,
        width: u32,
    ) {
        stream main;
        stream side;
        for l in 0..layers {
            main: call gemm_main(&mut main_acts[l + 1], &main_acts[l], &ws[l]);
            main: launch bias_act<<<blocks(n), BIAS_BLOCK>>>(&mut main_acts[l + 1], &bs[l], n, width, u32::from(l + 1 < layers));
            if split {
                side: call gemm_side(&mut side_acts[l + 1], &side_acts[l], &ws[l]);
                side: launch bias_act<<<blocks(n), BIAS_BLOCK>>>(&mut side_acts[l + 1], &bs[l], n, width, u32::from(l + 1 < layers));
            }
        }
    }
}

/// The buffers of one [`MlpLayers`]: per stream `layers + 1` activation buffers.
struct Acts {
    main: Vec<DeviceBuffer<f32>>,
    side: Vec<DeviceBuffer<f32>>,
}

impl Acts {
    fn new(device: &Device, p: &Mlp, data: &Data) -> Result<Acts> {
        let part = p.rows() * p.width;
        let lane = |s: usize| -> Result<Vec<DeviceBuffer<f32>>> {
            let mut acts = vec![DeviceBuffer::from_host(
                device,
                &data.x[s * part..(s + 1) * part],
            )?];
            for _ in 0..p.layers {
                acts.push(DeviceBuffer::<f32>::zeros(device, part)?);
            }
            Ok(acts)
        };
        Ok(Acts {
            main: lane(0)?,
            side: if p.streams > 1 { lane(1)? } else { Vec::new() },
        })
    }
}

/// What every [`MlpLayers`] of a case reads: weights, biases, the GEMMs, the kernel.
struct Model {
    p: Mlp,
    ws: Vec<DeviceBuffer<f32>>,
    bs: Vec<DeviceBuffer<f32>>,
    gemm_main: Gemm<f32>,
    gemm_side: Gemm<f32>,
    bias_act: &'static Kernel,
}

impl Model {
    fn step<'a>(&'a self, acts: &'a mut Acts) -> MlpLayers<'a, 'a> {
        let split = self.p.streams > 1;
        MlpLayers::new(
            &mut acts.main,
            &mut acts.side,
            &self.ws,
            &self.bs,
            &self.gemm_main,
            if split {
                &self.gemm_side
            } else {
                &self.gemm_main
            },
            self.bias_act,
            self.p.layers,
            split,
            (self.p.rows() * self.p.width) as u32,
            self.p.width as u32,
        )
    }

    /// The output of `acts`, lane after lane (rows in order).
    fn output(&self, acts: &Acts, origin: &Stream) -> Result<Vec<f32>> {
        let mut y = acts.main[self.p.layers].to_vec_on(origin)?;
        if let Some(last) = acts.side.get(self.p.layers) {
            y.extend(last.to_vec_on(origin)?);
        }
        Ok(y)
    }
}

struct SgW11 {
    model: &'static Model,
    origin: Stream,
    raw: sys::CUstream,
    eager: Eager,
    capture: Capture,
    exec: GraphExec<MlpLayers<'static, 'static>>,
    /// The buffers of the eager steps and fresh captures (the graph holds the others).
    spare: Acts,
    start: Event,
    end: Event,
}

/// W11 through streamgraph: [`MlpLayers`] planned and checked for races, run eagerly once and
/// checked against the CPU, captured once (verified) and instantiated; the replay's output
/// checked against the eager run's bits. The model lives as long as the process.
pub fn streamgraph(_gpu: &Gpu, p: &Mlp, bias_act: &'static Kernel) -> Result<Box<dyn Case>> {
    p.check()?;
    let device = Device::new(Some(0))?;
    let origin = Stream::new(&device, 0)?;
    let data = Data::new(p);
    let config = GemmConfig::<f32>::row_major(p.rows(), p.width, p.width);
    let model: &'static Model = Box::leak(Box::new(Model {
        p: *p,
        ws: data
            .ws
            .iter()
            .map(|w| DeviceBuffer::from_host(&device, w))
            .collect::<std::result::Result<_, _>>()?,
        bs: data
            .bs
            .iter()
            .map(|b| DeviceBuffer::from_host(&device, b))
            .collect::<std::result::Result<_, _>>()?,
        gemm_main: Gemm::with_workspace(&device, config, WORKSPACE)?,
        gemm_side: Gemm::with_workspace(&device, config, WORKSPACE)?,
        bias_act,
    }));
    let mut eager = Eager::new(&origin);
    eager.check(false);
    let mut spare = Acts::new(&device, p, &data)?;
    Plan::build(&model.step(&mut spare))?.check_races()?;
    eager.run(&model.step(&mut spare))?;
    let eager_out = model.output(&spare, &origin)?;
    data.check_output(p, &eager_out)?;

    let graphed: &'static mut Acts = Box::leak(Box::new(Acts::new(&device, p, &data)?));
    let mut capture = Capture::new(&origin).check(false);
    let graph = capture.capture(model.step(graphed))?;
    graph.verify()?;
    let exec = graph.instantiate()?;
    exec.launch(&origin)?;
    origin.synchronize()?;
    let pipeline = exec.pipeline();
    let mut replayed = pipeline.main_acts[p.layers].to_vec_on(&origin)?;
    if let Some(last) = pipeline.side_acts.get(p.layers) {
        replayed.extend(last.to_vec_on(&origin)?);
    }
    same_bits(&eager_out, &replayed)?;
    let raw = origin.as_cudarc().cu_stream();
    Ok(Box::new(SgW11 {
        model,
        origin,
        raw,
        eager,
        capture,
        exec,
        spare,
        start: Event::timing()?,
        end: Event::timing()?,
    }))
}

impl SgW11 {
    /// (device µs, host µs) of `f` between the timing events on the origin.
    fn timed(&mut self, f: impl FnOnce(&mut Self) -> Result<()>) -> Result<(f64, f64)> {
        self.start.record_on(self.raw)?;
        let t0 = Instant::now();
        f(self)?;
        let host = us_since(t0);
        self.end.record_on(self.raw)?;
        Ok((self.start.elapsed_ms(&self.end)? * 1e3, host))
    }
}

impl Case for SgW11 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let steps = STEPS as f64;
        let (replay_dev, replay_host) = self.timed(|s| {
            for _ in 0..STEPS {
                s.exec.launch(&s.origin)?;
            }
            Ok(())
        })?;
        let model = self.model;
        let (eager_dev, eager_host) = self.timed(|s| {
            for _ in 0..STEPS {
                s.eager.run(&model.step(&mut s.spare))?;
            }
            Ok(())
        })?;
        self.origin.synchronize()?;
        let t0 = Instant::now();
        let graph = self.capture.capture(model.step(&mut self.spare))?;
        let cap = us_since(t0);
        let t1 = Instant::now();
        let exec = graph.instantiate()?;
        let inst = us_since(t1);
        drop(exec);
        Ok(vec![
            replay_dev / steps,
            replay_host / steps,
            eager_dev / steps,
            eager_host / steps,
            cap,
            inst,
            cap + inst,
        ])
    }
}
