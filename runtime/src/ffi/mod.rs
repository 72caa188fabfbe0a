//! The runtime's only contact with the CUDA driver and NVRTC.
//!
//! Every `unsafe` block of the crate lives in this module and its submodules, and states why
//! it is sound. The wrappers are safe functions whose arguments carry their own proof: handles
//! come as the cudarc objects that own them (`CudaStream`, `CudaEvent`, `CudaContext`), memory
//! as [`memory::MemoryRef`]s and [`KernelArg`]s, which only live buffers (or an `unsafe`
//! promise) can make, and graphs as the owned types of [`graph`] and [`graph_exec`], which
//! keep what their launches touch ([`keep`]). A wrapper whose soundness would rest on its
//! caller is an `unsafe fn` with a `# Safety` section, called only from inside this module.
//!
//! Nothing here may run before [`driver_present`] said yes: cudarc's dynamic loader panics when
//! `libcuda` is missing; [`init`] checks it.

use std::ffi::{c_int, c_uint};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, DriverError};

use crate::error::{CaptureFault, Error};

pub(crate) mod arena;
#[cfg(feature = "cublas")]
pub(crate) mod blas;
#[cfg(feature = "cublas")]
pub(crate) mod blas_lt;
pub(crate) mod capture;
pub(crate) mod collective;
mod cond_source;
pub(crate) mod conditional;
pub(crate) mod copy;
pub(crate) mod cudarc_order;
pub(crate) mod device_alloc;
pub(crate) mod graph;
pub(crate) mod graph_exec;
mod host_fn;
pub(crate) mod keep;
pub(crate) mod lane;
mod launch;
pub(crate) mod memory;
#[cfg(feature = "nccl")]
pub(crate) mod nccl;
mod nvrtc;
#[cfg(feature = "nvtx")]
pub(crate) mod nvtx;
pub(crate) mod owned;
pub(crate) mod philox;
pub(crate) mod pinned;
pub(crate) mod status;
pub(crate) mod temp;

pub use cond_source::SIGNAL_HEADER;
pub(crate) use host_fn::launch_host_fn_once;
pub use launch::KernelArg;
pub(crate) use launch::{
    launch_kernel, load_module, module_function, CodeOwner, FunctionHandle, LoadedFunction,
    ModuleImage,
};
pub(crate) use nvrtc::{nvrtc_compile, nvrtc_compile_ptx, CompileFailure};
pub(crate) use sys::{CUcontext, CUdevice, CUfunction};

impl Error {
    /// A failed driver call. Failures that break a capture's rules (on this thread or, in
    /// global mode, on another thread that is capturing) become [`Error::Capture`], so they
    /// are explained in capture terms wherever they surface.
    pub(crate) fn driver(call: &'static str, source: cudarc::driver::DriverError) -> Error {
        match CaptureFault::from_code(source.0) {
            Some(fault) => Error::Capture {
                fault,
                statement: None,
                after: None,
                pipeline: None,
            },
            None => Error::Driver { call, source },
        }
    }
}

impl CaptureFault {
    /// The fault a driver result code stands for, if it is a capture error.
    pub(crate) fn from_code(code: sys::CUresult) -> Option<CaptureFault> {
        use sys::CUresult as R;
        Some(match code {
            R::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED => CaptureFault::Unsupported,
            R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED => CaptureFault::Invalidated,
            R::CUDA_ERROR_STREAM_CAPTURE_MERGE => CaptureFault::Merge,
            R::CUDA_ERROR_STREAM_CAPTURE_UNMATCHED => CaptureFault::Unmatched,
            R::CUDA_ERROR_STREAM_CAPTURE_UNJOINED => CaptureFault::Unjoined,
            R::CUDA_ERROR_STREAM_CAPTURE_ISOLATION => CaptureFault::ExternalEvent,
            R::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT => CaptureFault::Implicit,
            R::CUDA_ERROR_CAPTURED_EVENT => CaptureFault::CapturedEvent,
            R::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD => CaptureFault::WrongThread,
            _ => return None,
        })
    }
}

/// Streamgraph's global-mode captures and the calls they forbid on other threads.
///
/// During a capture in `CU_STREAM_CAPTURE_MODE_GLOBAL`, "potentially unsafe" calls on other
/// threads (synchronizing, allocating, freeing) must fail; on driver 580 a stream
/// synchronize racing with such a capture was seen to crash inside the driver instead. So a
/// global capture of streamgraph holds this lock exclusively from its begin to its end, and
/// streamgraph's own unsafe calls on other threads take it shared first: they are refused with
/// `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` (an [`Error::Capture`] with
/// [`CaptureFault::Implicit`]) while a global capture runs, or — where nothing can be
/// returned, in `Drop` — wait for it to end. The capturing thread itself is exempt.
static GLOBAL_CAPTURE: std::sync::RwLock<()> = std::sync::RwLock::new(());

thread_local! {
    /// Whether this thread holds [`GLOBAL_CAPTURE`] exclusively.
    static CAPTURING_GLOBALLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// How many times this thread holds [`GLOBAL_CAPTURE`] shared (nested calls skip the lock).
    static SHARED_HELD: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether this thread may call the driver without the lock: it captures globally itself, or
/// already holds the lock shared.
fn lock_held() -> bool {
    CAPTURING_GLOBALLY.with(|c| c.get()) || SHARED_HELD.with(|c| c.get()) > 0
}

/// Runs `f` counted as holding the lock shared.
fn holding<R>(f: impl FnOnce() -> R) -> R {
    SHARED_HELD.with(|c| c.set(c.get() + 1));
    let out = f();
    SHARED_HELD.with(|c| c.set(c.get() - 1));
    out
}

/// Held by a thread while it captures in global mode (see [`GLOBAL_CAPTURE`]).
pub(crate) struct GlobalCapture {
    _held: std::sync::RwLockWriteGuard<'static, ()>,
}

impl GlobalCapture {
    /// Waits for other threads' unsafe calls of streamgraph to end, then holds them off.
    ///
    /// Refused with [`CaptureFault::NestedGlobalCapture`] when this thread holds the lock
    /// already — it captures globally (a pipeline's `issue` began another global capture) or
    /// is inside one of the calls the lock guards — since waiting for the lock would then wait
    /// for this thread itself, forever.
    pub(crate) fn begin() -> Result<GlobalCapture, CaptureFault> {
        GlobalCapture::begin_on(&GLOBAL_CAPTURE)
    }

    /// Whether [`GlobalCapture::begin`] would be refused on this thread, asked without
    /// taking the lock (so that a capture can refuse before it touches the driver).
    pub(crate) fn may_begin() -> Result<(), CaptureFault> {
        if lock_held() {
            return Err(CaptureFault::NestedGlobalCapture);
        }
        Ok(())
    }

    /// [`GlobalCapture::begin`] with `lock` standing for [`GLOBAL_CAPTURE`] (tests use their
    /// own, so that a regression that hangs holds no lock other tests need).
    fn begin_on(lock: &'static std::sync::RwLock<()>) -> Result<GlobalCapture, CaptureFault> {
        GlobalCapture::may_begin()?;
        let held = lock.write().unwrap_or_else(|p| p.into_inner());
        CAPTURING_GLOBALLY.with(|c| c.set(true));
        Ok(GlobalCapture { _held: held })
    }
}

impl Drop for GlobalCapture {
    fn drop(&mut self) {
        CAPTURING_GLOBALLY.with(|c| c.set(false));
    }
}

/// Runs `call`, a call that a global-mode capture forbids on other threads, unless one of
/// streamgraph's global captures runs on another thread: then it is refused at once.
pub(crate) fn unsafe_during_capture<R>(
    call: impl FnOnce() -> Result<R, DriverError>,
) -> Result<R, DriverError> {
    if lock_held() {
        return call();
    }
    match GLOBAL_CAPTURE.try_read() {
        Ok(_shared) => holding(call),
        Err(std::sync::TryLockError::Poisoned(p)) => {
            let _shared = p.into_inner();
            holding(call)
        }
        Err(std::sync::TryLockError::WouldBlock) => Err(DriverError(
            sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
        )),
    }
}

/// Runs `call` (a release in `Drop`, which cannot be refused) once no global capture of
/// streamgraph runs on another thread.
pub(crate) fn after_global_capture<R>(call: impl FnOnce() -> R) -> R {
    if lock_held() {
        return call();
    }
    let _shared = GLOBAL_CAPTURE.read().unwrap_or_else(|p| p.into_inner());
    holding(call)
}

/// How many entries a record of work per stream (a host allocation's DMA events, an
/// executable graph's launch streams) holds before it is first pruned of finished ones.
const PRUNE_AT: usize = 8;

/// Prunes `kept`, a record of work per stream, of the entries that `finished` says are done,
/// once it holds `*bound` entries (at least [`PRUNE_AT`]); the bound becomes twice what is
/// left. So a record grows only with what may still run, and asking `finished` costs O(1)
/// calls per entry added, amortized, and nothing on the calls that add none.
pub(crate) fn prune_finished<T>(
    kept: &mut Vec<T>,
    bound: &mut usize,
    mut finished: impl FnMut(&T) -> bool,
) {
    if kept.len() < (*bound).max(PRUNE_AT) {
        return;
    }
    kept.retain(|entry| !finished(entry));
    *bound = (2 * kept.len()).max(PRUNE_AT);
}

/// `cuCtxSynchronize` of `ctx`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CTX.html>
pub(crate) fn ctx_synchronize(ctx: &CudaContext) -> Result<(), DriverError> {
    unsafe_during_capture(|| ctx.synchronize())
}

/// Whether the driver library can be loaded; asked once, since `dlopen` is not free.
pub(crate) fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: `is_culib_present` only tries to `dlopen` the candidate library names and drops
    // what it opened; it calls no driver function.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// Whether NVRTC can be loaded; asked once.
pub(crate) fn nvrtc_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: as for `driver_present`: only `dlopen` attempts, no NVRTC call.
    *PRESENT.get_or_init(|| unsafe { cudarc::nvrtc::sys::is_culib_present() })
}

/// The file names tried when loading `lib` (`"cuda"`, `"nvrtc"`), for error messages.
pub(crate) fn searched_names(lib: &str) -> String {
    let mut names: Vec<String> = Vec::new();
    for name in cudarc::get_lib_name_candidates(lib) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.join(", ")
}

/// `cuInit(0)`, once per process; later calls return the first outcome. `None` when the
/// driver library cannot be loaded.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html>
pub(crate) fn init() -> Option<Result<(), DriverError>> {
    static INIT: OnceLock<Result<(), DriverError>> = OnceLock::new();
    if !driver_present() {
        return None;
    }
    // SAFETY: `cuInit` has no pointer arguments; the library is present (checked above), so
    // cudarc's loader does not panic.
    Some(*INIT.get_or_init(|| unsafe { sys::cuInit(0) }.result()))
}

/// Whether `e` says the driver found no device.
pub(crate) fn is_no_device(e: DriverError) -> bool {
    e.0 == sys::CUresult::CUDA_ERROR_NO_DEVICE
}

/// `cuDeviceGetCount`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html>
pub(crate) fn device_count() -> Result<i32, DriverError> {
    let mut count: c_int = 0;
    // SAFETY: `count` is a valid out-pointer for the duration of the call.
    unsafe { sys::cuDeviceGetCount(&mut count) }.result()?;
    Ok(count)
}

/// `cuDeviceGet`: the device handle of an ordinal.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__DEVICE.html>
pub(crate) fn device_get(ordinal: i32) -> Result<CUdevice, DriverError> {
    let mut device: CUdevice = 0;
    // SAFETY: `device` is a valid out-pointer for the duration of the call.
    unsafe { sys::cuDeviceGet(&mut device, ordinal) }.result()?;
    Ok(device)
}

/// `cuMemGetInfo_v2` in `ctx`: `(free, total)` bytes of device memory.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
pub(crate) fn memory_info(ctx: &CudaContext) -> Result<(usize, usize), DriverError> {
    ensure_current(ctx)?;
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: both out-pointers are valid for the call; the context is current.
    unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }.result()?;
    Ok((free, total))
}

/// `cuCtxGetCurrent`: the context bound to this thread, null when none.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CTX.html>
pub(crate) fn current_context() -> Result<CUcontext, DriverError> {
    let mut ctx: CUcontext = std::ptr::null_mut();
    // SAFETY: `ctx` is a valid out-pointer for the duration of the call.
    unsafe { sys::cuCtxGetCurrent(&mut ctx) }.result()?;
    Ok(ctx)
}

/// `cuCtxGetDevice`: the device of the context bound to this thread.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CTX.html>
pub(crate) fn current_context_device() -> Result<CUdevice, DriverError> {
    let mut device: CUdevice = 0;
    // SAFETY: `device` is a valid out-pointer for the duration of the call.
    unsafe { sys::cuCtxGetDevice(&mut device) }.result()?;
    Ok(device)
}

/// Makes `ctx` current on this thread unless it already is (`cuCtxGetCurrent` is a
/// thread-local read in the driver, far cheaper than `cuCtxSetCurrent`).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CTX.html>
#[inline]
pub(crate) fn ensure_current(ctx: &CudaContext) -> Result<(), DriverError> {
    let want = ctx.cu_ctx();
    if current_context()? != want {
        // SAFETY: `want` belongs to `ctx`, which the caller keeps alive across the call.
        unsafe { sys::cuCtxSetCurrent(want) }.result()?;
    }
    Ok(())
}

/// Runs `call` (a driver call on an object of `ctx`) without asking the driver first which
/// context is current: on the hot paths that query costs as much as a fifth of the call. The
/// objects a call names carry their context, so with another context current the driver
/// either uses theirs or fails; only when `call` fails and `ctx` was not current is it made
/// current and `call` run again (a failed call issued nothing).
#[inline]
pub(crate) fn in_context<R>(
    ctx: &CudaContext,
    mut call: impl FnMut() -> Result<R, DriverError>,
) -> Result<R, DriverError> {
    match call() {
        Ok(r) => Ok(r),
        Err(e) => retry_in_context(ctx, e, call),
    }
}

/// [`in_context`] after `call` failed with `failed`: off the hot path.
#[cold]
#[inline(never)]
pub(super) fn retry_in_context<R>(
    ctx: &CudaContext,
    failed: DriverError,
    mut call: impl FnMut() -> Result<R, DriverError>,
) -> Result<R, DriverError> {
    match current_context() {
        Ok(c) if c == ctx.cu_ctx() => Err(failed),
        _ => {
            ensure_current(ctx)?;
            call()
        }
    }
}

/// `cuCtxGetStreamPriorityRange` of `ctx`: `(least, greatest)`, e.g. `(0, -5)`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__CTX.html>
pub(crate) fn stream_priority_range(ctx: &CudaContext) -> Result<(i32, i32), DriverError> {
    ensure_current(ctx)?;
    let (mut least, mut greatest): (c_int, c_int) = (0, 0);
    // SAFETY: both out-pointers are valid for the duration of the call.
    unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) }.result()?;
    Ok((least, greatest))
}

/// `cuStreamGetPriority`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn stream_priority(stream: &CudaStream) -> Result<i32, DriverError> {
    ensure_current(stream.context())?;
    let mut priority: c_int = 0;
    // SAFETY: `stream` owns its live handle; the out-pointer is valid for the call.
    unsafe { sys::cuStreamGetPriority(stream.cu_stream(), &mut priority) }.result()?;
    Ok(priority)
}

/// `cuStreamQuery`: `Ok(true)` when all work is done, `Ok(false)` for `CUDA_ERROR_NOT_READY`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn stream_query(stream: &CudaStream) -> Result<bool, DriverError> {
    unsafe_during_capture(|| stream_query_now(stream))
}

/// [`stream_query`] of `stream`, which no capture holds, for the runtime's own idle checks
/// (a lane taken over, an executable graph's launch streams pruned): on a thread that began a
/// capture of its own (other code did) the driver refuses a query of another stream and
/// invalidates that capture, so the thread's capture mode is relaxed for the call (as
/// [`synchronize_beside_capture`] does).
pub(crate) fn stream_query_beside_capture(stream: &CudaStream) -> Result<bool, DriverError> {
    unsafe_during_capture(|| relaxed(|| stream_query_now(stream)))
}

/// Runs `call` with this thread's capture interaction mode relaxed
/// (`cuThreadExchangeStreamCaptureMode`), the mode restored after.
fn relaxed<R>(call: impl FnOnce() -> Result<R, DriverError>) -> Result<R, DriverError> {
    let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: `mode` is a live value the call swaps with the thread's mode.
    unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }.result()?;
    let done = call();
    // SAFETY: as above: the thread's own mode back.
    let restored = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }.result();
    restored.and(done)
}

fn stream_query_now(stream: &CudaStream) -> Result<bool, DriverError> {
    ensure_current(stream.context())?;
    // SAFETY: `stream` owns its live handle.
    match unsafe { sys::cuStreamQuery(stream.cu_stream()) } {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        other => Err(DriverError(other)),
    }
}

/// `cuStreamSynchronize`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn stream_synchronize(stream: &CudaStream) -> Result<(), DriverError> {
    unsafe_during_capture(|| {
        ensure_current(stream.context())?;
        // SAFETY: `stream` owns its live handle.
        unsafe { sys::cuStreamSynchronize(stream.cu_stream()) }.result()
    })
}

/// Waits on the host for `stream`, which no capture holds, on a thread that may have begun a
/// capture of its own in global or thread-local mode (other code did, on a caller's stream):
/// the driver refuses such a thread every synchronize (a "potentially unsafe" call) and
/// invalidates that capture. So the thread's capture interaction mode is relaxed for the call
/// (`cuThreadExchangeStreamCaptureMode`, the driver's way for a call that does not touch the
/// capture) and restored after. A global capture of streamgraph on another thread is waited
/// for, not refused: the wait is what lets the caller's borrows end.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn synchronize_beside_capture(stream: &CudaStream) -> Result<(), DriverError> {
    after_global_capture(|| {
        ensure_current(stream.context())?;
        // SAFETY: `stream` owns its live handle.
        relaxed(|| unsafe { sys::cuStreamSynchronize(stream.cu_stream()) }.result())
    })
}

/// `cuEventRecord`: captures the work submitted to `stream` so far into `event`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html>
pub(crate) fn event_record(event: &CudaEvent, stream: &CudaStream) -> Result<(), DriverError> {
    in_context(stream.context(), || {
        // SAFETY: both objects own their live handles.
        unsafe { sys::cuEventRecord(event.cu_event(), stream.cu_stream()) }.result()
    })
}

/// `cuStreamWaitEvent`: later work on `stream` waits for `event`'s current snapshot.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn stream_wait_event(stream: &CudaStream, event: &CudaEvent) -> Result<(), DriverError> {
    let flags = sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT as c_uint;
    in_context(stream.context(), || {
        // SAFETY: both objects own their live handles.
        unsafe { sys::cuStreamWaitEvent(stream.cu_stream(), event.cu_event(), flags) }.result()
    })
}

/// `cuEventQuery`: `Ok(true)` when the recorded work is done (or nothing was recorded).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html>
pub(crate) fn event_query(event: &CudaEvent) -> Result<bool, DriverError> {
    unsafe_during_capture(|| event_query_now(event))
}

fn event_query_now(event: &CudaEvent) -> Result<bool, DriverError> {
    ensure_current(event.context())?;
    // SAFETY: `event` owns its live handle.
    match unsafe { sys::cuEventQuery(event.cu_event()) } {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        other => Err(DriverError(other)),
    }
}

/// `cuEventSynchronize`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html>
pub(crate) fn event_synchronize(event: &CudaEvent) -> Result<(), DriverError> {
    unsafe_during_capture(|| event_synchronize_now(event))
}

fn event_synchronize_now(event: &CudaEvent) -> Result<(), DriverError> {
    ensure_current(event.context())?;
    // SAFETY: `event` owns its live handle.
    unsafe { sys::cuEventSynchronize(event.cu_event()) }.result()
}

/// `cuEventElapsedTime`: milliseconds from `start` to `end`, both completed.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html>
pub(crate) fn event_elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f32, DriverError> {
    unsafe_during_capture(|| event_elapsed_ms_now(start, end))
}

fn event_elapsed_ms_now(start: &CudaEvent, end: &CudaEvent) -> Result<f32, DriverError> {
    ensure_current(start.context())?;
    // cudarc picks `cuEventElapsedTime` or `_v2`, whichever its CUDA version feature binds.
    // SAFETY: both objects own their live handles.
    unsafe { cudarc::driver::result::event::elapsed(start.cu_event(), end.cu_event()) }
}

/// `cuEventCreate` in `ctx`, with timing only when asked (disabled timing makes cheaper
/// dependency edges).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html>
pub(crate) fn new_event(ctx: &Arc<CudaContext>, timing: bool) -> Result<CudaEvent, DriverError> {
    let flags = if timing {
        sys::CUevent_flags::CU_EVENT_DEFAULT
    } else {
        sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
    };
    ctx.new_event(Some(flags))
}

/// Creates a non-blocking stream with `priority` (already clamped by the caller).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn new_stream(
    ctx: &Arc<CudaContext>,
    priority: i32,
) -> Result<Arc<cudarc::driver::CudaStream>, DriverError> {
    ctx.new_stream_with_priority(priority)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_codes_map_to_faults() {
        use sys::CUresult as R;
        let cases = [
            (
                R::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                CaptureFault::Unsupported,
            ),
            (
                R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                CaptureFault::Invalidated,
            ),
            (R::CUDA_ERROR_STREAM_CAPTURE_MERGE, CaptureFault::Merge),
            (
                R::CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
                CaptureFault::Unmatched,
            ),
            (
                R::CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
                CaptureFault::Unjoined,
            ),
            (
                R::CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
                CaptureFault::ExternalEvent,
            ),
            (
                R::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
                CaptureFault::Implicit,
            ),
            (R::CUDA_ERROR_CAPTURED_EVENT, CaptureFault::CapturedEvent),
            (
                R::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
                CaptureFault::WrongThread,
            ),
        ];
        for (code, fault) in cases {
            assert_eq!(CaptureFault::from_code(code), Some(fault));
        }
        assert_eq!(CaptureFault::from_code(R::CUDA_ERROR_INVALID_VALUE), None);
        assert_eq!(CaptureFault::from_code(R::CUDA_SUCCESS), None);
    }

    #[test]
    fn capture_rule_violations_become_capture_errors_wherever_they_surface() {
        use sys::CUresult as R;
        let e = Error::driver(
            "cuMemAlloc",
            DriverError(R::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
        );
        assert!(matches!(e, Error::Capture { .. }), "{e:?}");
        let e = Error::driver(
            "cuStreamSynchronize",
            DriverError(R::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT),
        );
        assert!(matches!(e, Error::Capture { .. }), "{e:?}");
        let e = Error::driver("cuMemAlloc", DriverError(R::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(
            matches!(
                e,
                Error::Driver {
                    call: "cuMemAlloc",
                    ..
                }
            ),
            "{e:?}"
        );
    }

    /// A global capture begun on a thread that runs one already is refused at once, as is one
    /// begun inside a call the lock guards; once the first ended, the thread may begin another.
    /// On a thread of its own and with a lock of its own, joined with a deadline: a regression
    /// (waiting for the lock the thread holds itself) fails instead of hanging.
    #[test]
    fn a_global_capture_inside_another_on_the_same_thread_is_refused_not_awaited() {
        static LOCK: std::sync::RwLock<()> = std::sync::RwLock::new(());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let outer = GlobalCapture::begin_on(&LOCK);
            let outer_began = outer.is_ok();
            let nested = GlobalCapture::begin_on(&LOCK).map(drop);
            drop(outer);
            let inside_a_guarded_call = holding(|| GlobalCapture::begin_on(&LOCK).map(drop));
            let again = GlobalCapture::begin_on(&LOCK).map(drop);
            let _ = tx.send((outer_began, nested, inside_a_guarded_call, again));
        });
        let (outer_began, nested, inside_a_guarded_call, again) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("a global capture begun inside another on the same thread waited for itself");
        assert!(outer_began);
        assert_eq!(nested, Err(CaptureFault::NestedGlobalCapture));
        assert_eq!(
            inside_a_guarded_call,
            Err(CaptureFault::NestedGlobalCapture)
        );
        assert_eq!(
            again,
            Ok(()),
            "the first capture's end lets the thread begin another"
        );
        let e = Error::capture(CaptureFault::NestedGlobalCapture).to_string();
        assert!(e.contains("inside another global-mode capture"), "{e}");
        assert!(e.contains("CaptureMode::ThreadLocal"), "{e}");
    }

    /// Finished entries go once the record reaches its bound, which then follows what is left,
    /// so that the checks stay O(1) per entry added.
    #[test]
    fn per_stream_records_are_pruned_of_finished_entries_as_they_grow() {
        let (mut kept, mut bound, mut asked) = (Vec::new(), 0, 0usize);
        for i in 0..2000u32 {
            prune_finished(&mut kept, &mut bound, |_: &u32| {
                asked += 1;
                true
            });
            kept.push(i);
            assert!(kept.len() <= PRUNE_AT, "{} kept after {i}", kept.len());
        }
        assert!(asked <= 2000, "{asked} checks for 2000 entries");
        // Nothing finishes: the bound doubles with what is kept, the checks stay linear.
        let (mut kept, mut bound, mut asked) = (Vec::new(), 0, 0usize);
        for i in 0..2000u32 {
            prune_finished(&mut kept, &mut bound, |_: &u32| {
                asked += 1;
                false
            });
            kept.push(i);
        }
        assert_eq!(kept.len(), 2000, "busy entries are kept");
        assert!(asked <= 2 * 2000, "{asked} checks for 2000 entries");
        // Some finish: only those go.
        let mut kept: Vec<u32> = (0..PRUNE_AT as u32).collect();
        let mut bound = 0;
        prune_finished(&mut kept, &mut bound, |&e| e % 2 == 0);
        assert!(kept.iter().all(|e| e % 2 == 1), "{kept:?}");
        assert_eq!(bound, PRUNE_AT);
    }
}
