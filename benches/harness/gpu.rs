//! The device context every system's workloads run in, the error type of the harness, and
//! small owners of raw driver handles (streams, events, graphs, device words) for the
//! hand-written baseline. Setup goes through cudarc's safe API; everything timed calls
//! `cudarc::driver::sys` directly (see `raw.rs`).

use std::ffi::c_void;
use std::fmt;
use std::ptr;
use std::sync::Arc;

use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{CudaContext, CudaModule};

use crate::kernels;

/// Why a workload could not be measured.
#[derive(Debug)]
pub enum BenchError {
    /// A driver call failed.
    Driver { call: &'static str, code: CUresult },
    /// Setup outside the driver failed (NVRTC, module load).
    Setup(String),
    /// A result read back from the device was wrong.
    Check(String),
    /// The system has no implementation of this workload yet.
    NotWired,
    /// streamgraph returned an error (setup or a timed call).
    Streamgraph(streamgraph::Error),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Driver { call, code } => write!(f, "{call} failed with {code:?}"),
            BenchError::Setup(msg) => write!(f, "setup failed: {msg}"),
            BenchError::Check(msg) => write!(f, "wrong result: {msg}"),
            BenchError::NotWired => write!(f, "not yet wired"),
            BenchError::Streamgraph(e) => write!(f, "streamgraph: {e}"),
        }
    }
}

impl std::error::Error for BenchError {}

impl From<streamgraph::Error> for BenchError {
    fn from(e: streamgraph::Error) -> Self {
        BenchError::Streamgraph(e)
    }
}

/// Turns a driver status into a `Result`, naming the call.
#[inline(always)]
pub fn check(code: CUresult, call: &'static str) -> Result<(), BenchError> {
    if code == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(BenchError::Driver { call, code })
    }
}

/// Device 0's primary context with the benchmark kernels loaded.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    _module: Arc<CudaModule>,
    /// `empty()`.
    pub empty: sys::CUfunction,
    /// `stamp(unsigned int *slot, unsigned int value)`.
    pub stamp: sys::CUfunction,
    /// `spin(unsigned long long ns)`.
    pub spin: sys::CUfunction,
    /// `countdown(unsigned int *left, unsigned int *go)`.
    pub countdown: sys::CUfunction,
    /// `work(float *x, unsigned n, unsigned iters)` (W9).
    pub work: sys::CUfunction,
    /// `bias_act(float *y, const float *b, unsigned n, unsigned cols, unsigned relu)` (W11).
    pub bias_act: sys::CUfunction,
    /// The device's name.
    pub name: String,
    /// The driver's CUDA version, e.g. `13.0`.
    pub driver_version: String,
}

impl Gpu {
    /// Opens device 0, compiles [`kernels::SOURCE`] with NVRTC and loads its kernels.
    ///
    /// The caller has checked that the driver library is present.
    pub fn open() -> Result<Gpu, BenchError> {
        let ctx = CudaContext::new(0).map_err(|e| BenchError::Setup(format!("device 0: {e}")))?;
        ctx.bind_to_thread()
            .map_err(|e| BenchError::Setup(format!("bind context: {e}")))?;
        // SAFETY: only asks whether a shared library can be opened; loads nothing else.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(BenchError::Setup(
                "no NVRTC library (libnvrtc.so.13) found; install the CUDA 13 runtime compiler"
                    .into(),
            ));
        }
        let ptx = cudarc::nvrtc::compile_ptx(kernels::SOURCE)
            .map_err(|e| BenchError::Setup(format!("NVRTC could not compile kernels.cu: {e}")))?;
        let module = ctx
            .load_module(ptx)
            .map_err(|e| BenchError::Setup(format!("load module: {e}")))?;
        let load = |name: &str| {
            module
                .load_function(name)
                .map(|f| f.cu_function())
                .map_err(|e| BenchError::Setup(format!("kernel `{name}`: {e}")))
        };
        let (empty, stamp, spin, countdown, work, bias_act) = (
            load(kernels::EMPTY)?,
            load(kernels::STAMP)?,
            load(kernels::SPIN)?,
            load(kernels::COUNTDOWN)?,
            load(kernels::WORK)?,
            load(kernels::BIAS_ACT)?,
        );
        let name = ctx.name().unwrap_or_else(|_| "unknown device".into());
        let mut version = 0;
        check(
            // SAFETY: writes one int through a valid pointer.
            unsafe { sys::cuDriverGetVersion(&mut version) },
            "cuDriverGetVersion",
        )?;
        let gpu = Gpu {
            ctx,
            _module: module,
            empty,
            stamp,
            spin,
            countdown,
            work,
            bias_act,
            name,
            driver_version: format!("{}.{}", version / 1000, (version % 1000) / 10),
        };
        gpu.warm()?;
        Ok(gpu)
    }

    /// The context (device 0's primary context).
    pub fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Launches each kernel once outside any capture: kernel loading may be lazy, and no
    /// workload should pay for it (or load code in the middle of a capture).
    fn warm(&self) -> Result<(), BenchError> {
        let stream = Stream::new()?;
        let slot = DeviceWord::new()?;
        let mut ptr_arg = slot.0;
        let mut value = 0u32;
        let mut ns = 0u64;
        let mut stamp_args: [*mut c_void; 2] = [
            ptr::addr_of_mut!(ptr_arg).cast(),
            ptr::addr_of_mut!(value).cast(),
        ];
        let mut spin_args: [*mut c_void; 1] = [ptr::addr_of_mut!(ns).cast()];
        let launches: [(sys::CUfunction, *mut *mut c_void); 3] = [
            (self.empty, ptr::null_mut()),
            (self.stamp, stamp_args.as_mut_ptr()),
            (self.spin, spin_args.as_mut_ptr()),
        ];
        for (f, args) in launches {
            let (g, b) = (kernels::GRID, kernels::BLOCK);
            // SAFETY: each argument array matches its kernel's parameters (none; a device
            // pointer and an unsigned int; an unsigned long long) and points at live locals;
            // the stream is alive.
            let r = unsafe {
                sys::cuLaunchKernel(f, g, 1, 1, b, 1, 1, 0, stream.0, args, ptr::null_mut())
            };
            check(r, "cuLaunchKernel")?;
        }
        stream.synchronize()
    }

    /// `spin<<<1, 1, 0, stream>>>(ns)` on a stream owned elsewhere (streamgraph's origin).
    pub fn launch_spin(&self, stream: sys::CUstream, ns: u64) -> Result<(), BenchError> {
        let mut ns = ns;
        let mut args: [*mut c_void; 1] = [ptr::addr_of_mut!(ns).cast()];
        let (g, b) = (kernels::GRID, kernels::BLOCK);
        // SAFETY: `spin` takes one unsigned long long and `args` points at a live u64 for the
        // call; the caller keeps the stream alive (it borrows its owner).
        let r = unsafe {
            sys::cuLaunchKernel(
                self.spin,
                g,
                1,
                1,
                b,
                1,
                1,
                0,
                stream,
                args.as_mut_ptr(),
                ptr::null_mut(),
            )
        };
        check(r, "cuLaunchKernel")
    }

    /// Waits for all work of the context (between workloads, never in timed regions).
    pub fn synchronize(&self) -> Result<(), BenchError> {
        self.ctx
            .synchronize()
            .map_err(|e| BenchError::Setup(format!("synchronize: {e}")))
    }
}

/// An owned non-blocking stream of default priority.
pub struct Stream(pub sys::CUstream);

impl Stream {
    pub fn new() -> Result<Stream, BenchError> {
        let mut s = ptr::null_mut();
        let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        check(
            // SAFETY: writes a new stream handle through a valid pointer; the context is current.
            unsafe { sys::cuStreamCreateWithPriority(&mut s, flags, 0) },
            "cuStreamCreateWithPriority",
        )?;
        Ok(Stream(s))
    }

    pub fn synchronize(&self) -> Result<(), BenchError> {
        // SAFETY: the stream is alive (owned by `self`).
        check(
            unsafe { sys::cuStreamSynchronize(self.0) },
            "cuStreamSynchronize",
        )
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the handle is owned and destroyed once; pending work still completes.
        unsafe { sys::cuStreamDestroy_v2(self.0) };
    }
}

/// `n` owned streams.
pub fn streams(n: usize) -> Result<Vec<Stream>, BenchError> {
    (0..n).map(|_| Stream::new()).collect()
}

/// An owned event: with timing for measurements, without for dependency edges.
pub struct Event(pub sys::CUevent);

impl Event {
    /// A timing event (`elapsed_ms` works on it).
    pub fn timing() -> Result<Event, BenchError> {
        Event::with_flags(sys::CUevent_flags::CU_EVENT_DEFAULT as u32)
    }

    /// A dependency-only event: cheaper to record and wait on.
    pub fn edge() -> Result<Event, BenchError> {
        Event::with_flags(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32)
    }

    fn with_flags(flags: u32) -> Result<Event, BenchError> {
        let mut e = ptr::null_mut();
        check(
            // SAFETY: writes a new event handle through a valid pointer; the context is current.
            unsafe { sys::cuEventCreate(&mut e, flags) },
            "cuEventCreate",
        )?;
        Ok(Event(e))
    }

    /// Records the event on a stream owned elsewhere (streamgraph's origin, through
    /// `Stream::as_cudarc().cu_stream()`); the caller keeps that stream alive.
    #[inline(always)]
    pub fn record_on(&self, stream: sys::CUstream) -> Result<(), BenchError> {
        // SAFETY: the event is alive (borrowed); the caller keeps the stream alive; both belong
        // to device 0's primary context.
        check(
            unsafe { sys::cuEventRecord(self.0, stream) },
            "cuEventRecord",
        )
    }

    /// Waits for the event's recorded work.
    pub fn synchronize(&self) -> Result<(), BenchError> {
        // SAFETY: the event is alive (borrowed).
        check(
            unsafe { sys::cuEventSynchronize(self.0) },
            "cuEventSynchronize",
        )
    }

    /// Milliseconds from `self` to `end`, waiting for `end` first.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f64, BenchError> {
        check(
            // SAFETY: `end` is alive and was recorded.
            unsafe { sys::cuEventSynchronize(end.0) },
            "cuEventSynchronize",
        )?;
        let mut ms = 0.0f32;
        check(
            // SAFETY: both timing events are alive and recorded; writes one float.
            unsafe { sys::cuEventElapsedTime_v2(&mut ms, self.0, end.0) },
            "cuEventElapsedTime_v2",
        )?;
        Ok(f64::from(ms))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the handle is owned and destroyed once.
        unsafe { sys::cuEventDestroy_v2(self.0) };
    }
}

/// `n` owned dependency-only events.
pub fn edges(n: usize) -> Result<Vec<Event>, BenchError> {
    (0..n).map(|_| Event::edge()).collect()
}

/// An owned graph (the result of a capture).
pub struct Graph(pub sys::CUgraph);

impl Graph {
    pub fn instantiate(&self) -> Result<Exec, BenchError> {
        let mut exec = ptr::null_mut();
        check(
            // SAFETY: the graph is alive; writes an executable-graph handle through a valid pointer.
            unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, self.0, 0) },
            "cuGraphInstantiateWithFlags",
        )?;
        Ok(Exec(exec))
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: the handle is owned and destroyed once; executables made from it are independent.
        unsafe { sys::cuGraphDestroy(self.0) };
    }
}

/// An owned executable graph.
pub struct Exec(pub sys::CUgraphExec);

impl Exec {
    pub fn launch(&self, stream: &Stream) -> Result<(), BenchError> {
        // SAFETY: executable graph and stream are alive.
        check(
            unsafe { sys::cuGraphLaunch(self.0, stream.0) },
            "cuGraphLaunch",
        )
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        // SAFETY: the handle is owned and destroyed once; callers synchronise before dropping.
        unsafe { sys::cuGraphExecDestroy(self.0) };
    }
}

/// One `unsigned int` of device memory.
pub struct DeviceWord(pub sys::CUdeviceptr);

impl DeviceWord {
    pub fn new() -> Result<DeviceWord, BenchError> {
        let mut p = 0;
        // SAFETY: allocates 4 bytes; writes the address through a valid pointer.
        check(unsafe { sys::cuMemAlloc_v2(&mut p, 4) }, "cuMemAlloc_v2")?;
        Ok(DeviceWord(p))
    }

    /// Reads the word (synchronous copy; waits for earlier work of the context's legacy stream
    /// only, so callers synchronise their streams first).
    pub fn read(&self) -> Result<u32, BenchError> {
        let mut v = 0u32;
        check(
            // SAFETY: copies 4 bytes from a live allocation into a local.
            unsafe { sys::cuMemcpyDtoH_v2((&mut v as *mut u32).cast::<c_void>(), self.0, 4) },
            "cuMemcpyDtoH_v2",
        )?;
        Ok(v)
    }
}

impl Drop for DeviceWord {
    fn drop(&mut self) {
        // SAFETY: the allocation is owned and freed once.
        unsafe { sys::cuMemFree_v2(self.0) };
    }
}
