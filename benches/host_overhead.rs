//! streamgraph's own host cost per operation on the paths around replay: capture, the
//! kernel-node fast path (`set_kernel_args`) and `update`, next to the same capture written
//! against the driver by hand.
//!
//! ```text
//! cargo bench --bench host_overhead [-- CASE N ITERATIONS]
//! bash benches/host-overhead.sh          # no GPU: instructions per operation, stand-in driver
//! ```
//!
//! Cases (`CASE N ITERATIONS` runs one; without arguments every case runs with its default):
//! - `raw N`: `N` launches of an empty kernel captured by hand (`cuStreamBeginCapture`,
//!   `cuLaunchKernel`, `cuStreamEndCapture`) and the graph destroyed;
//! - `counted N`: the same, and the graph's node count asked once (`cuGraphGetNodes` with a
//!   null array), as every capture of streamgraph does to refuse work from outside its
//!   statements;
//! - `capture N`: the same chain as a pipeline, `Capture::capture` and the graph dropped;
//! - `distinct N`: `N` launches of `stamp`, each on a buffer of its own (as an MLP's layers
//!   write their own activations): what a launch costs in a capture beyond `capture N`'s
//!   when the graph must keep one more allocation alive for it;
//! - `rawstamp N`: `N` launches of `stamp` captured by hand (its two parameters), the graph
//!   destroyed: the baseline of `distinct N`;
//! - `calls N`: the chain with each launch issued by a `call` statement's op (`Empty`), which
//!   launches the kernel through its `CallStream`: what a library call costs in a capture
//!   beyond its own work (`calls N` minus `capture N`, per call);
//! - `calls2 N`: the same with an op that launches the kernel twice: what a call of two
//!   nodes costs beyond them (`calls2 N` minus `capture 2N`, per call), its nodes found
//!   without listing the graph;
//! - `gemms N`: `N` calls of an `ops::Gemm` (f32, 4 × 4 × 4), captured and dropped; on the
//!   stand-in driver with the stand-in cuBLAS of `benches/stub-driver/cublas.c`, whose GEMM is
//!   one launch on the handle's stream;
//! - `rawgemms N`: the same `cublasGemmEx` calls captured by hand on one handle bound to the
//!   stream once: the baseline of `gemms N`;
//! - `diamond N`: W3's diamond of `N` layers (four streams, events), captured and dropped;
//! - `eager N`: the chain of `capture N` run eagerly (`Eager::run`, unchecked);
//! - `ediamond N`: the diamond of `diamond N` run eagerly;
//! - `launch_on N`: `N` launches of the kernel by `Kernel::launch_on`, one by one;
//! - `set N`: `set_kernel_args` on each of the `N` launches of an instantiated chain;
//! - `rawset N`: the same by hand, `cuGraphExecKernelNodeSetParams` on each node;
//! - `update N`: `update_with` of a chain of `N` launches whose arguments change;
//! - `rawupdate N`: the same by hand: the chain captured with new arguments,
//!   `cuGraphExecUpdate`, the captured graph destroyed;
//! - `args N`: `update_args_with` of the same chain (every launch's arguments change);
//! - `same N`: `update_args_with` of the same chain, nothing changed: every launch's
//!   parameters unchanged, so the walk skips them (what a relaunch of a graph set's key costs);
//! - `tail N`: `update_args_with` of the same chain and one launch more, which alone reads
//!   the parameter that changes: `N` launches skipped, one set;
//! - `cells N`: `update_args_with` of `N` launches, launch `i` storing `values[i].get()`, the
//!   values in cells (which have no parameter key), one value changed: every launch walked
//!   and compared, one set (W5's 1 % case, whose values are cells, at one launch of `N`).
//!
//! Each case prints the best of five rounds in nanoseconds per round. On a GPU these are
//! wall-clock times (the comparison with raw code and the peers is `bench-harness`'s job, in
//! one process with alternation). `benches/host-overhead.sh` runs the cases against a stand-in
//! driver (`benches/stub-driver/`) whose calls return at once, under `valgrind --tool=callgrind`,
//! and reports the instructions each operation costs: what streamgraph adds, counted exactly,
//! on any machine.

#[path = "harness/diamond.rs"]
mod diamond;

use std::cell::Cell;
use std::process::ExitCode;
use std::time::Instant;

use cudarc::cublas::{result as blas, sys as blas_sys};
use cudarc::driver::sys;
use diamond::Diamond4;
use streamgraph::ops::{Gemm, GemmConfig};
use streamgraph::{
    pipeline, CallStream, Capture, Device, DeviceBuffer, Dim3, Eager, Kernel, KernelArg, KeyWriter,
    LaunchConfig, Module, ParamKey, Stream, StreamOp,
};

/// What a case fails with: a streamgraph error, a driver error of the hand-written capture, or
/// a wrong argument.
type Error = Box<dyn std::error::Error>;

/// The kernels the cases launch.
#[derive(Debug)]
pub struct Kernels {
    /// Does nothing.
    pub empty: Kernel,
    /// Stores its value through its pointer.
    pub stamp: Kernel,
}

/// A key of both kernels: argument updates skip the statements whose parameters did not
/// change.
impl ParamKey for Kernels {
    fn key(&self, out: &mut KeyWriter<'_>) {
        self.empty.key(out);
        self.stamp.key(out);
    }
}

const SOURCE: &str = r#"
extern "C" __global__ void empty() {}
extern "C" __global__ void stamp(unsigned* slot, unsigned value) { *slot = value; }
"#;

pipeline! {
    /// `n` launches of `empty` on one stream.
    pipeline Chain(k: &Kernels, n: usize) {
        stream main;
        for _ in 0..n {
            main: launch k.empty<<<1, 1>>>();
        }
    }
}

/// An op that launches `empty` `times` times on the stream it is given.
#[derive(Debug)]
pub struct Empty<'k>(&'k Kernel, u32);

// SAFETY: `issue` launches `empty`, a kernel of no arguments that touches no memory, on the
// stream it is given and nowhere else; it declares no operands because it touches none.
unsafe impl StreamOp for Empty<'_> {
    type Operands<'a> = ();

    fn issue(&self, stream: &CallStream<'_>, _: &mut ()) -> streamgraph::Result<()> {
        let one = LaunchConfig {
            grid: Dim3::from(1),
            block: Dim3::from(1),
            shared_mem_bytes: 0,
        };
        (0..self.1).try_for_each(|_| stream.launch(self.0, one, &[]))
    }
}

pipeline! {
    /// `n` calls of an op that launches `empty`.
    pipeline Calls(op: &Empty<'_>, n: usize) {
        stream main;
        for _ in 0..n {
            main: call op();
        }
    }
}

pipeline! {
    /// `n` calls of `gemm`: `c = a · b`.
    pipeline Gemms(gemm: &Gemm<f32>, c: &mut DeviceBuffer<f32>, a: &DeviceBuffer<f32>, b: &DeviceBuffer<f32>, n: usize) {
        stream main;
        for _ in 0..n {
            main: call gemm(&mut c, &a, &b);
        }
    }
}

pipeline! {
    /// `n` launches of `stamp`, launch `i` into `slots[i]`.
    pipeline Distinct(k: &Kernels, slots: &mut [DeviceBuffer<u32>], n: usize) {
        stream main;
        for i in 0..n {
            main: launch k.stamp<<<1, 1>>>(&mut slots[i], i as u32);
        }
    }
}

pipeline! {
    /// `n` launches of `stamp`, launch `i` storing `base + i`.
    pipeline Stamps(k: &Kernels, slot: &mut DeviceBuffer<u32>, n: usize, base: u32) {
        stream main;
        for i in 0..n {
            main: launch k.stamp<<<1, 1>>>(&mut slot, base.wrapping_add(i as u32));
        }
    }
}

pipeline! {
    /// [`Stamps`], then one launch of `stamp` storing `tail`.
    pipeline Tail(k: &Kernels, slot: &mut DeviceBuffer<u32>, n: usize, base: u32, tail: u32) {
        stream main;
        for i in 0..n {
            main: launch k.stamp<<<1, 1>>>(&mut slot, base.wrapping_add(i as u32));
        }
        main: launch k.stamp<<<1, 1>>>(&mut slot, tail);
    }
}

pipeline! {
    /// `n` launches of `stamp`, launch `i` storing `values[i]`: values the pipeline reads
    /// through cells, which no parameter key can follow.
    pipeline Cells(k: &Kernels, slot: &mut DeviceBuffer<u32>, values: &[Cell<u32>], n: usize) {
        stream main;
        for i in 0..n {
            main: launch k.stamp<<<1, 1>>>(&mut slot, values[i].get());
        }
    }
}

/// Everything a case needs.
struct Setup {
    device: Device,
    stream: Stream,
    module: Module,
    k: Kernels,
}

fn setup() -> Result<Setup, streamgraph::Error> {
    let device = Device::new(Some(0))?;
    let stream = Stream::new(&device, 0)?;
    let module = Module::from_cuda_source(&device, "host_overhead", SOURCE)?;
    // SAFETY: `empty` is launched with no arguments and `stamp` with a `u32` buffer and a
    // `u32`, their C signatures above.
    let k = unsafe {
        Kernels {
            empty: module.kernel("empty")?,
            stamp: module.kernel("stamp")?,
        }
    };
    Ok(Setup {
        device,
        stream,
        module,
        k,
    })
}

/// The best of five rounds of `iterations` calls of `round`, in nanoseconds per call.
fn best_of_five(
    iterations: usize,
    mut round: impl FnMut(usize) -> Result<(), Error>,
) -> Result<f64, Error> {
    let mut best = f64::MAX;
    for r in 0..5 {
        let t = Instant::now();
        for i in 0..iterations {
            round(r * iterations + i)?;
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e9 / iterations.max(1) as f64);
    }
    Ok(best)
}

/// A driver call's result, naming the call when it failed.
fn check(r: sys::CUresult, call: &'static str) -> Result<(), Error> {
    r.result().map_err(|e| format!("{call}: {e}").into())
}

/// A graph made by hand, destroyed as it drops.
struct HandGraph(sys::CUgraph);

impl Drop for HandGraph {
    fn drop(&mut self) {
        // SAFETY: the graph is alive and destroyed once, here.
        unsafe { sys::cuGraphDestroy(self.0) };
    }
}

/// An executable graph made by hand, destroyed as it drops.
struct HandExec(sys::CUgraphExec);

impl Drop for HandExec {
    fn drop(&mut self) {
        // SAFETY: the executable graph is alive and destroyed once, here; the cases
        // synchronize nothing on it because they never launch it.
        unsafe { sys::cuGraphExecDestroy(self.0) };
    }
}

/// What the hand-written cases launch: `stamp` on one stream, storing into `slot`.
struct Hand {
    func: sys::CUfunction,
    stream: sys::CUstream,
    slot: u64,
}

impl Hand {
    /// `stamp` on the setup's stream, storing into `slot` (which outlives the captures).
    fn new(s: &Setup, slot: &DeviceBuffer<u32>) -> Result<Hand, Error> {
        let cudarc = s.module.as_cudarc().ok_or("the module is not loaded")?;
        Ok(Hand {
            func: cudarc.load_function("stamp")?.cu_function(),
            stream: s.stream.as_cudarc().cu_stream(),
            slot: slot.device_ptr(),
        })
    }

    /// `stamp`'s parameters for `value`: a pointer to the slot's address and one to the value,
    /// both borrowed from the caller.
    fn params(&self, slot: &mut u64, value: &mut u32) -> [*mut std::ffi::c_void; 2] {
        *slot = self.slot;
        [(slot as *mut u64).cast(), (value as *mut u32).cast()]
    }

    /// `n` launches of `stamp` captured by hand, launch `i` storing `base + i`, as W5's raw
    /// driver code does; the capture is ended even after a failed launch.
    fn capture(&self, n: usize, base: u32) -> Result<HandGraph, Error> {
        let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
        check(
            // SAFETY: the stream is alive and not capturing.
            unsafe { sys::cuStreamBeginCapture_v2(self.stream, mode) },
            "cuStreamBeginCapture",
        )?;
        let mut launched = Ok(());
        let (mut slot, mut value) = (0u64, 0u32);
        for i in 0..n {
            value = base.wrapping_add(i as u32);
            let mut params = self.params(&mut slot, &mut value);
            // SAFETY: `func` is `stamp(unsigned*, unsigned)`; the parameter array points at a
            // live device address and a live `u32`, which the driver copies before returning.
            let r = unsafe {
                sys::cuLaunchKernel(
                    self.func,
                    1,
                    1,
                    1,
                    1,
                    1,
                    1,
                    0,
                    self.stream,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            };
            launched = check(r, "cuLaunchKernel");
            if launched.is_err() {
                break;
            }
        }
        std::hint::black_box(value);
        let mut graph = std::ptr::null_mut();
        let ended = check(
            // SAFETY: the stream is capturing; `graph` is a valid out-pointer.
            unsafe { sys::cuStreamEndCapture(self.stream, &mut graph) },
            "cuStreamEndCapture",
        );
        let graph = (!graph.is_null()).then_some(HandGraph(graph));
        launched?;
        ended?;
        graph.ok_or_else(|| "the capture made no graph".into())
    }
}

fn run(s: &Setup, case: &str, n: usize, iterations: usize) -> Result<f64, Error> {
    let mut capture = Capture::new(&s.stream).check(false);
    match case {
        "raw" | "counted" => {
            let counted = case == "counted";
            let cudarc = s.module.as_cudarc().ok_or("the module is not loaded")?;
            let func = cudarc.load_function("empty")?.cu_function();
            let stream = s.stream.as_cudarc().cu_stream();
            let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
            best_of_five(iterations, |_| {
                // SAFETY: the stream is alive and not capturing; `func` takes no arguments
                // (null parameter arrays); the graph the capture returns, when not null, is
                // alive until it is destroyed, once, and a null array asks only for its node
                // count.
                unsafe {
                    check(
                        sys::cuStreamBeginCapture_v2(stream, mode),
                        "cuStreamBeginCapture",
                    )?;
                    // The capture is ended (and its graph destroyed) even after a failed
                    // launch, so that the stream is usable again.
                    let mut launched = Ok(());
                    for _ in 0..n {
                        let r = sys::cuLaunchKernel(
                            func,
                            1,
                            1,
                            1,
                            1,
                            1,
                            1,
                            0,
                            stream,
                            std::ptr::null_mut(),
                            std::ptr::null_mut(),
                        );
                        launched = check(r, "cuLaunchKernel");
                        if launched.is_err() {
                            break;
                        }
                    }
                    let mut graph = std::ptr::null_mut();
                    let ended = check(
                        sys::cuStreamEndCapture(stream, &mut graph),
                        "cuStreamEndCapture",
                    );
                    if !graph.is_null() {
                        if counted && launched.is_ok() {
                            let mut nodes = 0usize;
                            let r = sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut nodes);
                            launched = check(r, "cuGraphGetNodes");
                            std::hint::black_box(nodes);
                        }
                        check(sys::cuGraphDestroy(graph), "cuGraphDestroy")?;
                    }
                    launched.and(ended)
                }
            })
        }
        "capture" => best_of_five(iterations, |_| {
            Ok(capture.capture(Chain::new(&s.k, n)).map(drop)?)
        }),
        "calls" | "calls2" => {
            let op = Empty(&s.k.empty, if case == "calls" { 1 } else { 2 });
            best_of_five(iterations, |_| {
                Ok(capture.capture(Calls::new(&op, n)).map(drop)?)
            })
        }
        "distinct" => {
            let mut slots = (0..n)
                .map(|_| DeviceBuffer::<u32>::zeros(&s.device, 1))
                .collect::<Result<Vec<_>, _>>()?;
            best_of_five(iterations, |_| {
                Ok(capture
                    .capture(Distinct::new(&s.k, &mut slots, n))
                    .map(drop)?)
            })
        }
        "gemms" | "rawgemms" => {
            let mut c = DeviceBuffer::<f32>::zeros(&s.device, 16)?;
            let a = DeviceBuffer::<f32>::zeros(&s.device, 16)?;
            let b = DeviceBuffer::<f32>::zeros(&s.device, 16)?;
            if case == "gemms" {
                let gemm = Gemm::with_workspace(&s.device, GemmConfig::<f32>::row_major(4, 4, 4), 0)?;
                return best_of_five(iterations, |_| {
                    Ok(capture
                        .capture(Gemms::new(&gemm, &mut c, &a, &b, n))
                        .map(drop)?)
                });
            }
            let stream = s.stream.as_cudarc().cu_stream();
            let handle = blas::create_handle()?;
            // SAFETY: the handle was just created; the stream is alive and of its device.
            unsafe { blas::set_stream(handle, stream as blas_sys::cudaStream_t) }?;
            let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
            let (alpha, beta) = (1.0f32, 0.0f32);
            let f32_type = blas_sys::cudaDataType_t::CUDA_R_32F;
            let no = blas_sys::cublasOperation_t::CUBLAS_OP_N;
            let result = best_of_five(iterations, |_| {
                // SAFETY: the stream is alive and not capturing; the buffers hold the 4 × 4
                // matrices the GEMM reads and writes; alpha and beta are host floats (pointer
                // mode host) live for the calls; the graph, when not null, is destroyed once.
                unsafe {
                    check(sys::cuStreamBeginCapture_v2(stream, mode), "cuStreamBeginCapture")?;
                    let mut issued = Ok(());
                    for _ in 0..n {
                        issued = blas::gemm_ex(
                            handle,
                            no,
                            no,
                            4,
                            4,
                            4,
                            std::ptr::addr_of!(alpha).cast(),
                            b.device_ptr() as *const std::ffi::c_void,
                            f32_type,
                            4,
                            a.device_ptr() as *const std::ffi::c_void,
                            f32_type,
                            4,
                            std::ptr::addr_of!(beta).cast(),
                            c.device_ptr() as *mut std::ffi::c_void,
                            f32_type,
                            4,
                            blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                            blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                        );
                        if issued.is_err() {
                            break;
                        }
                    }
                    let mut graph = std::ptr::null_mut();
                    let ended = check(sys::cuStreamEndCapture(stream, &mut graph), "cuStreamEndCapture");
                    if !graph.is_null() {
                        check(sys::cuGraphDestroy(graph), "cuGraphDestroy")?;
                    }
                    issued.map_err(|e| format!("cublasGemmEx: {e}"))?;
                    ended
                }
            });
            // SAFETY: the handle is live and used no more.
            unsafe { blas::destroy_handle(handle) }?;
            result
        }
        "diamond" => best_of_five(iterations, |_| {
            Ok(capture.capture(Diamond4::new(&s.k.empty, n)).map(drop)?)
        }),
        "eager" | "ediamond" => {
            let mut eager = Eager::new(&s.stream);
            eager.check(false);
            best_of_five(iterations, |_| {
                Ok(match case {
                    "eager" => eager.run(&Chain::new(&s.k, n)),
                    _ => eager.run(&Diamond4::new(&s.k.empty, n)),
                }?)
            })
        }
        "launch_on" => {
            // `n` launches one by one, outside any pipeline (each on a lane, forked and joined).
            let one = LaunchConfig {
                grid: Dim3::from(1),
                block: Dim3::from(1),
                shared_mem_bytes: 0,
            };
            best_of_five(iterations, |_| {
                (0..n).try_for_each(|_| s.k.empty.launch_on(&s.stream, one, &[]))?;
                Ok(())
            })
        }
        "set" => {
            let mut slot = DeviceBuffer::<u32>::zeros(&s.device, 1)?;
            let graph = capture.capture(Stamps::new(&s.k, &mut slot, n, 0))?;
            let ops = graph.ops();
            let exec = graph.instantiate()?;
            let view = exec.pipeline().slot.as_view();
            best_of_five(iterations, |r| {
                for (i, op) in ops.iter().enumerate() {
                    let value = (r + i) as u32;
                    exec.set_kernel_args(
                        *op,
                        &s.k.stamp,
                        &[KernelArg::read(&view), KernelArg::value(&value)],
                    )?;
                }
                Ok(())
            })
        }
        "rawstamp" => {
            let slot = DeviceBuffer::<u32>::zeros(&s.device, 1)?;
            let hand = Hand::new(s, &slot)?;
            best_of_five(iterations, |r| hand.capture(n, r as u32).map(drop))
        }
        "rawset" | "rawupdate" => {
            let slot = DeviceBuffer::<u32>::zeros(&s.device, 1)?;
            let hand = Hand::new(s, &slot)?;
            let graph = hand.capture(n, 0)?;
            let mut exec = std::ptr::null_mut();
            check(
                // SAFETY: the graph is alive; `exec` is a valid out-pointer.
                unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph.0, 0) },
                "cuGraphInstantiateWithFlags",
            )?;
            let exec = HandExec(exec);
            if case == "rawupdate" {
                return best_of_five(iterations, |r| {
                    let fresh = hand.capture(n, r as u32)?;
                    let mut info = std::mem::MaybeUninit::uninit();
                    check(
                        // SAFETY: both graphs are alive; `info` is a valid out-pointer.
                        unsafe { sys::cuGraphExecUpdate_v2(exec.0, fresh.0, info.as_mut_ptr()) },
                        "cuGraphExecUpdate",
                    )
                });
            }
            // The nodes in creation order: launch `i`'s is the `i`-th.
            let mut nodes = vec![std::ptr::null_mut(); n];
            let mut count = n;
            check(
                // SAFETY: the graph is alive; `nodes` has room for `count` handles.
                unsafe { sys::cuGraphGetNodes(graph.0, nodes.as_mut_ptr(), &mut count) },
                "cuGraphGetNodes",
            )?;
            nodes.truncate(count);
            best_of_five(iterations, |r| {
                let mut slot = 0u64;
                for (i, &node) in nodes.iter().enumerate() {
                    let mut value = (r + i) as u32;
                    let mut args = hand.params(&mut slot, &mut value);
                    let params = sys::CUDA_KERNEL_NODE_PARAMS {
                        func: hand.func,
                        gridDimX: 1,
                        gridDimY: 1,
                        gridDimZ: 1,
                        blockDimX: 1,
                        blockDimY: 1,
                        blockDimZ: 1,
                        sharedMemBytes: 0,
                        kernelParams: args.as_mut_ptr(),
                        extra: std::ptr::null_mut(),
                        kern: std::ptr::null_mut(),
                        ctx: std::ptr::null_mut(),
                    };
                    check(
                        // SAFETY: `node` is a kernel node of the graph `exec` was instantiated
                        // from; the parameters point at live values of `stamp`'s parameter types,
                        // which the driver copies before returning.
                        unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec.0, node, &params) },
                        "cuGraphExecKernelNodeSetParams",
                    )?;
                }
                Ok(())
            })
        }
        "update" => {
            let mut slot = DeviceBuffer::<u32>::zeros(&s.device, 1)?;
            let mut exec = capture
                .capture(Stamps::new(&s.k, &mut slot, n, 0))?
                .instantiate()?;
            best_of_five(iterations, |r| Ok(exec.update_with(|p| p.base = r as u32)?))
        }
        "args" => {
            let mut slot = DeviceBuffer::<u32>::zeros(&s.device, 1)?;
            let mut exec = capture
                .capture(Stamps::new(&s.k, &mut slot, n, 0))?
                .instantiate()?;
            best_of_five(iterations, |r| {
                Ok(exec.update_args_with(|p| p.base = r as u32 + 1)?)
            })
        }
        "same" => {
            let mut slot = DeviceBuffer::<u32>::zeros(&s.device, 1)?;
            let mut exec = capture
                .capture(Stamps::new(&s.k, &mut slot, n, 0))?
                .instantiate()?;
            best_of_five(iterations, |_| Ok(exec.update_args_with(|_| {})?))
        }
        "tail" => {
            let mut slot = DeviceBuffer::<u32>::zeros(&s.device, 1)?;
            let mut exec = capture
                .capture(Tail::new(&s.k, &mut slot, n, 0, 0))?
                .instantiate()?;
            best_of_five(iterations, |r| {
                Ok(exec.update_args_with(|p| p.tail = r as u32 + 1)?)
            })
        }
        "cells" => {
            let mut slot = DeviceBuffer::<u32>::zeros(&s.device, 1)?;
            let values: Vec<Cell<u32>> = (0..n.max(1)).map(|_| Cell::new(0)).collect();
            let mut exec = capture
                .capture(Cells::new(&s.k, &mut slot, &values, n))?
                .instantiate()?;
            best_of_five(iterations, |r| {
                Ok(exec.update_args_with(|p| p.values[r % p.values.len()].set(r as u32 + 1))?)
            })
        }
        other => {
            Err(format!(
                "no case `{other}`: raw, counted, capture, distinct, rawstamp, calls, gemms, rawgemms, diamond, eager, ediamond, launch_on, set, rawset, update, rawupdate, args, same, tail or cells"
            )
            .into())
        }
    }
}

/// The cases run without arguments: (case, N, iterations).
const DEFAULTS: &[(&str, usize, usize)] = &[
    ("raw", 0, 20_000),
    ("counted", 0, 20_000),
    ("capture", 0, 20_000),
    ("raw", 10, 10_000),
    ("counted", 10, 10_000),
    ("capture", 10, 10_000),
    ("raw", 1000, 100),
    ("capture", 1000, 100),
    ("calls", 1000, 100),
    ("calls2", 500, 100),
    ("distinct", 1000, 100),
    ("diamond", 51, 200),
    ("eager", 1000, 100),
    ("ediamond", 51, 200),
    ("launch_on", 1000, 20),
    ("set", 1000, 20),
    ("rawset", 1000, 20),
    ("update", 1000, 20),
    ("rawupdate", 1000, 20),
    ("args", 1000, 20),
    ("cells", 1000, 20),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let cases: Vec<(String, usize, usize)> = match args.as_slice() {
        [] => DEFAULTS
            .iter()
            .map(|&(c, n, i)| (c.to_owned(), n, i))
            .collect(),
        [case, n, iterations] => match (n.parse(), iterations.parse()) {
            (Ok(n), Ok(i)) => vec![(case.clone(), n, i)],
            _ => {
                eprintln!("host_overhead: N and ITERATIONS are counts, e.g. `capture 1000 100`");
                return ExitCode::FAILURE;
            }
        },
        _ => {
            eprintln!("usage: host_overhead [CASE N ITERATIONS]");
            return ExitCode::FAILURE;
        }
    };
    let s = match setup() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("host_overhead: {e}");
            eprintln!("host_overhead: runs on a CUDA GPU, or on the stand-in driver through benches/host-overhead.sh");
            return ExitCode::SUCCESS;
        }
    };
    for (case, n, iterations) in cases {
        match run(&s, &case, n, iterations) {
            Ok(ns) => println!("{case:<8} n={n:<6} {ns:>12.0} ns per round"),
            Err(e) => {
                eprintln!("host_overhead: {case} {n}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
