//! The runtime's only contact with the CUDA driver and NVRTC.
//!
//! Every `unsafe` block of the crate lives in this module and its submodules, and states why
//! it is sound. The wrappers are safe functions whose arguments carry their own proof: handles
//! come as the cudarc objects that own them (`CudaStream`, `CudaEvent`, `CudaContext`), memory
//! as [`memory::MemoryRef`]s and [`KernelArg`]s, which only live buffers (or an `unsafe`
//! promise) can make, and graphs as the owned types of [`graph`], which keep what their
//! launches touch. A wrapper whose soundness would rest on its caller is an `unsafe fn` with a
//! `# Safety` section, called only from inside this module.
//!
//! Nothing here may run before [`driver_present`] said yes: cudarc's dynamic loader panics when
//! `libcuda` is missing; [`init`] checks it.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, DriverError};

use crate::error::{CaptureFault, Error};
use crate::operand::{BufferAccess, HostFn, LaunchConfig};

pub(crate) mod graph;
pub(crate) mod memory;

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
    ensure_current(stream.context())?;
    // SAFETY: `stream` owns its live handle.
    unsafe { sys::cuStreamSynchronize(stream.cu_stream()) }.result()
}

/// `cuEventRecord`: captures the work submitted to `stream` so far into `event`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html>
pub(crate) fn event_record(event: &CudaEvent, stream: &CudaStream) -> Result<(), DriverError> {
    ensure_current(stream.context())?;
    // SAFETY: both objects own their live handles.
    unsafe { sys::cuEventRecord(event.cu_event(), stream.cu_stream()) }.result()
}

/// `cuStreamWaitEvent`: later work on `stream` waits for `event`'s current snapshot.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn stream_wait_event(stream: &CudaStream, event: &CudaEvent) -> Result<(), DriverError> {
    ensure_current(stream.context())?;
    let flags = sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT as c_uint;
    // SAFETY: both objects own their live handles.
    unsafe { sys::cuStreamWaitEvent(stream.cu_stream(), event.cu_event(), flags) }.result()
}

/// `cuEventQuery`: `Ok(true)` when the recorded work is done (or nothing was recorded).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html>
pub(crate) fn event_query(event: &CudaEvent) -> Result<bool, DriverError> {
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
    ensure_current(event.context())?;
    // SAFETY: `event` owns its live handle.
    unsafe { sys::cuEventSynchronize(event.cu_event()) }.result()
}

/// `cuEventElapsedTime_v2`: milliseconds from `start` to `end`, both completed.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html>
pub(crate) fn event_elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f32, DriverError> {
    ensure_current(start.context())?;
    let mut ms: f32 = 0.0;
    // SAFETY: both objects own their live handles; `ms` is a valid out-pointer.
    unsafe { sys::cuEventElapsedTime_v2(&mut ms, start.cu_event(), end.cu_event()) }.result()?;
    Ok(ms)
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

/// One kernel argument: a pointer to its value (as `cuLaunchKernel` takes it), borrowed for
/// `'a`, and for buffers the memory it touches, how, and what keeps it allocated.
///
/// Made from references only, so its value pointer is live for `'a`; buffer arguments come
/// from [`crate::DeviceMemory`], whose foreign impls are `unsafe`.
#[derive(Debug, Clone, Copy)]
pub struct KernelArg<'a> {
    value: *mut c_void,
    access: Option<BufferAccess>,
    holder: memory::Holder<'a>,
    _borrow: PhantomData<&'a ()>,
}

impl<'a> KernelArg<'a> {
    /// An argument whose value lives at `value` for `'a`.
    pub(crate) fn by_ref<T>(
        value: &'a T,
        access: Option<BufferAccess>,
        holder: memory::Holder<'a>,
    ) -> Self {
        KernelArg {
            value: (value as *const T).cast_mut().cast(),
            access,
            holder,
            _borrow: PhantomData,
        }
    }

    /// The buffer access this argument makes, if it is a buffer.
    pub fn access(&self) -> Option<BufferAccess> {
        self.access
    }

    /// What keeps the argument's memory allocated.
    pub(crate) fn holder(&self) -> memory::HolderKind<'a> {
        self.holder.0
    }
}

/// How many kernel arguments a launch collects on the stack before falling back to the heap.
const INLINE_ARGS: usize = 32;

/// Calls `f` with the argument pointers of `args`, on the stack for up to [`INLINE_ARGS`].
#[inline]
fn with_params<R>(args: &[KernelArg<'_>], f: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
    if args.len() <= INLINE_ARGS {
        let mut inline = [std::ptr::null_mut(); INLINE_ARGS];
        for (slot, arg) in inline.iter_mut().zip(args) {
            *slot = arg.value;
        }
        f(&mut inline[..args.len()])
    } else {
        let mut list: Vec<_> = args.iter().map(|a| a.value).collect();
        f(&mut list)
    }
}

/// `cuLaunchKernel` of `func` on `stream` with `args`, one per kernel parameter.
///
/// `func` comes from a `Kernel`, whose `unsafe` lookup (`Module::kernel`) carries the promise
/// that every launch of it passes arguments matching its C signature; the caller passes the
/// arguments its user gave for that kernel. The context of `func` is current (the hot path
/// checks it once).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html>
#[inline]
pub(crate) fn launch_kernel(
    func: &LoadedFunction,
    stream: &CudaStream,
    config: &LaunchConfig,
    args: &[KernelArg<'_>],
) -> Result<(), DriverError> {
    let (g, b) = (config.grid, config.block);
    with_params(args, |params| {
        // SAFETY: `func` is a function of the module it holds loaded, and `stream` owns its
        // handle; each pointer in `params` points at a value borrowed for the whole call (the
        // `KernelArg` lifetimes), and their number and types match the kernel's C signature by
        // the `Module::kernel` promise. The driver copies the values before returning.
        unsafe {
            sys::cuLaunchKernel(
                func.func,
                g.x,
                g.y,
                g.z,
                b.x,
                b.y,
                b.z,
                config.shared_mem_bytes,
                stream.cu_stream(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
    })
}

/// Code to load as a module: a CUBIN image (from NVRTC) or PTX text.
#[derive(Debug)]
pub(crate) enum ModuleImage<'a> {
    /// A CUBIN image.
    Cubin(Vec<u8>),
    /// PTX assembly text (no NUL byte).
    Ptx(&'a str),
}

/// `cuModuleLoadData` of `image` in `ctx`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html>
pub(crate) fn load_module(
    ctx: &Arc<CudaContext>,
    image: ModuleImage<'_>,
) -> Result<Arc<cudarc::driver::CudaModule>, DriverError> {
    let image = match image {
        ModuleImage::Cubin(bytes) => cudarc::nvrtc::Ptx::from_binary(bytes),
        ModuleImage::Ptx(text) => cudarc::nvrtc::Ptx::from_src(text),
    };
    ctx.load_module(image)
}

/// `cuModuleGetFunction`: the kernel `name` of `module`; `None` when it has none.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MODULE.html>
pub(crate) fn module_function(
    module: &Arc<cudarc::driver::CudaModule>,
    name: &str,
) -> Result<Option<LoadedFunction>, DriverError> {
    match module.load_function(name) {
        Ok(f) => Ok(Some(LoadedFunction {
            func: f.cu_function(),
            module: module.clone(),
        })),
        Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A kernel function together with the module that keeps it loaded: the only form in which a
/// function reaches the driver.
#[derive(Debug, Clone)]
pub(crate) struct LoadedFunction {
    func: CUfunction,
    module: Arc<cudarc::driver::CudaModule>,
}

// SAFETY: a `CUfunction` is an opaque driver handle usable from any thread, and the module
// that owns it is held alongside (cudarc's `CudaModule` is `Send + Sync`).
unsafe impl Send for LoadedFunction {}
// SAFETY: as above; sharing only lets threads pass the handle to the driver.
unsafe impl Sync for LoadedFunction {}

impl LoadedFunction {
    /// The function's identity, to compare launches by.
    pub(crate) fn handle(&self) -> FunctionHandle {
        FunctionHandle(self.func as usize)
    }

    /// The module the function lives in.
    pub(crate) fn module(&self) -> &Arc<cudarc::driver::CudaModule> {
        &self.module
    }
}

/// Which kernel function a launch runs: an identity to compare, never passed to the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct FunctionHandle(usize);

/// Runs a boxed [`HostFn`] once and frees it: the callback of eager `host` statements.
extern "C" fn run_host_fn_once(user_data: *mut c_void) {
    // SAFETY: `user_data` is the `Box<HostFn>` leaked by `launch_host_fn_once`; the driver
    // calls this callback exactly once, so the box is reclaimed exactly once.
    let f = unsafe { Box::from_raw(user_data.cast::<HostFn>()) };
    // Dropping the closure runs user destructors: keep that inside the unwind guard too.
    let outcome = catch_unwind(AssertUnwindSafe(move || {
        f();
        drop(f);
    }));
    report_host_fn_panic(outcome);
}

/// A panic cannot cross the driver's C frames; the callback returns and the panic is reported
/// on stderr, as the standard library does for panics in threads nobody joins.
pub(super) fn report_host_fn_panic(outcome: std::thread::Result<()>) {
    if let Err(payload) = outcome {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_string());
        eprintln!("streamgraph: a host function panicked: {message}");
    }
}

/// `cuLaunchHostFunc`: runs `f` once on a driver thread after the stream's earlier work.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html>
pub(crate) fn launch_host_fn_once(stream: &CudaStream, f: HostFn) -> Result<(), DriverError> {
    ensure_current(stream.context())?;
    let data = Box::into_raw(Box::new(f));
    // SAFETY: the callback reclaims `data` exactly once when the driver runs it; `stream` owns
    // its handle. The closure is `Send + Sync + 'static`, so a driver thread may run it.
    let launched =
        unsafe { sys::cuLaunchHostFunc(stream.cu_stream(), Some(run_host_fn_once), data.cast()) };
    if let Err(e) = launched.result() {
        // SAFETY: the driver refused the callback, so it will never run; reclaim the box here.
        drop(unsafe { Box::from_raw(data) });
        return Err(e);
    }
    Ok(())
}

/// Why compiling CUDA C failed.
#[derive(Debug)]
pub(crate) enum CompileFailure {
    /// The source did not compile; NVRTC's log.
    Log(String),
    /// An NVRTC call failed outside compilation.
    Call(&'static str, String),
}

/// Compiles `source` with NVRTC for `sm_{major}{minor}` and returns the CUBIN image.
///
/// The caller has checked [`nvrtc_present`] and that `source`/`name` hold no NUL byte.
///
/// <https://docs.nvidia.com/cuda/nvrtc/index.html>
pub(crate) fn nvrtc_compile(
    name: &CStr,
    source: &CStr,
    options: &[CString],
) -> Result<Vec<u8>, CompileFailure> {
    use cudarc::nvrtc::sys as nv;
    let call = |what: &'static str, r: nv::nvrtcResult| -> Result<(), CompileFailure> {
        match r {
            nv::nvrtcResult::NVRTC_SUCCESS => Ok(()),
            other => Err(CompileFailure::Call(what, format!("{other:?}"))),
        }
    };
    let mut prog: nv::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: `source` and `name` are NUL-terminated and outlive the program (destroyed below
    // before this function returns); no headers are passed.
    let created = unsafe {
        nv::nvrtcCreateProgram(
            &mut prog,
            source.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    call("nvrtcCreateProgram", created)?;
    let result = (|| {
        let opts: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let n = c_int::try_from(opts.len())
            .map_err(|_| CompileFailure::Call("nvrtcCompileProgram", "too many options".into()))?;
        // SAFETY: `prog` was created above; `opts` holds `n` NUL-terminated strings alive for
        // the call.
        let compiled = unsafe { nv::nvrtcCompileProgram(prog, n, opts.as_ptr()) };
        if compiled != nv::nvrtcResult::NVRTC_SUCCESS {
            return Err(CompileFailure::Log(program_log(prog).unwrap_or_else(|e| {
                format!("{compiled:?} (the log could not be read: {e:?})")
            })));
        }
        let mut size = 0usize;
        // SAFETY: `prog` compiled; `size` is a valid out-pointer.
        call("nvrtcGetCUBINSize", unsafe {
            nv::nvrtcGetCUBINSize(prog, &mut size)
        })?;
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` has room for the `size` bytes NVRTC reported.
        call("nvrtcGetCUBIN", unsafe {
            nv::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast())
        })?;
        Ok(cubin)
    })();
    // SAFETY: `prog` was created above and is destroyed once, here.
    let destroyed = unsafe { nv::nvrtcDestroyProgram(&mut prog) };
    let cubin = result?;
    call("nvrtcDestroyProgram", destroyed)?;
    Ok(cubin)
}

/// NVRTC's log of a compiled (or failed) program.
fn program_log(prog: cudarc::nvrtc::sys::nvrtcProgram) -> Result<String, String> {
    use cudarc::nvrtc::sys as nv;
    let mut size = 0usize;
    // SAFETY: `prog` is a live program; `size` is a valid out-pointer.
    let r = unsafe { nv::nvrtcGetProgramLogSize(prog, &mut size) };
    if r != nv::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("{r:?}"));
    }
    let mut log = vec![0u8; size.max(1)];
    // SAFETY: `log` has room for the `size` bytes NVRTC reported.
    let r = unsafe { nv::nvrtcGetProgramLog(prog, log.as_mut_ptr().cast()) };
    if r != nv::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("{r:?}"));
    }
    let text = CStr::from_bytes_until_nul(&log)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(&log).into_owned());
    Ok(text.trim_end().to_string())
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
}
