//! The runtime's only contact with the CUDA driver and NVRTC: thin wrappers with safe
//! signatures around each `sys::` call the crate uses.
//!
//! Every `unsafe` block of the crate lives in this module (and its submodules) and states why
//! it is sound. Raw handles are passed in by the safe types that own them (`Stream`, `Event`,
//! `Kernel`, the allocations below), so a handle reaching a wrapper is alive; pointers to
//! memory come from live borrows of the buffers they belong to (see each wrapper).
//!
//! Nothing here may run before [`driver_present`] said yes: cudarc's dynamic loader panics when
//! `libcuda` is missing.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, DeviceRepr, DriverError, ValidAsZeroBits};

use crate::issue::{FillPattern, HostFn, LaunchConfig};

pub(crate) mod graph;

pub(crate) use sys::{CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUstream};

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

/// `cuInit(0)`, once per process; later calls return the first outcome.
///
/// Callers must have checked [`driver_present`].
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html>
pub(crate) fn init() -> Result<(), DriverError> {
    static INIT: OnceLock<Result<(), DriverError>> = OnceLock::new();
    // SAFETY: `cuInit` has no pointer arguments; the library is present (caller's check).
    *INIT.get_or_init(|| unsafe { sys::cuInit(0) }.result())
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

/// Stops cudarc from recording per-buffer events on `ctx`: streamgraph orders all work
/// explicitly, and those hidden events would break captures and add calls to every launch.
pub(crate) fn disable_event_tracking(ctx: &CudaContext) {
    // SAFETY: the flag only affects `CudaSlice`s created afterwards; streamgraph allocates no
    // `CudaSlice` and orders every use of its own memory through streams and events.
    unsafe { ctx.disable_event_tracking() }
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
pub(crate) fn stream_priority(ctx: &CudaContext, stream: CUstream) -> Result<i32, DriverError> {
    ensure_current(ctx)?;
    let mut priority: c_int = 0;
    // SAFETY: `stream` is alive (owned by the calling `Stream`); the out-pointer is valid.
    unsafe { sys::cuStreamGetPriority(stream, &mut priority) }.result()?;
    Ok(priority)
}

/// `cuStreamQuery`: `Ok(true)` when all work is done, `Ok(false)` for `CUDA_ERROR_NOT_READY`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn stream_query(ctx: &CudaContext, stream: CUstream) -> Result<bool, DriverError> {
    ensure_current(ctx)?;
    // SAFETY: `stream` is alive (owned by the calling `Stream`).
    match unsafe { sys::cuStreamQuery(stream) } {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        other => Err(DriverError(other)),
    }
}

/// `cuStreamSynchronize`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn stream_synchronize(ctx: &CudaContext, stream: CUstream) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    // SAFETY: `stream` is alive (owned by the calling `Stream`).
    unsafe { sys::cuStreamSynchronize(stream) }.result()
}

/// `cuEventRecord`: captures the work submitted to `stream` so far into `event`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html>
pub(crate) fn event_record(
    ctx: &CudaContext,
    event: CUevent,
    stream: CUstream,
) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    // SAFETY: both handles are alive (owned by the calling `Event` and `Stream`).
    unsafe { sys::cuEventRecord(event, stream) }.result()
}

/// `cuStreamWaitEvent`: later work on `stream` waits for `event`'s current snapshot.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn stream_wait_event(
    ctx: &CudaContext,
    stream: CUstream,
    event: CUevent,
) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    let flags = sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT as c_uint;
    // SAFETY: both handles are alive (owned by the calling `Stream` and `Event`).
    unsafe { sys::cuStreamWaitEvent(stream, event, flags) }.result()
}

/// `cuEventQuery`: `Ok(true)` when the recorded work is done (or nothing was recorded).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html>
pub(crate) fn event_query(ctx: &CudaContext, event: CUevent) -> Result<bool, DriverError> {
    ensure_current(ctx)?;
    // SAFETY: `event` is alive (owned by the calling `Event`).
    match unsafe { sys::cuEventQuery(event) } {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        other => Err(DriverError(other)),
    }
}

/// `cuEventSynchronize`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html>
pub(crate) fn event_synchronize(ctx: &CudaContext, event: CUevent) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    // SAFETY: `event` is alive (owned by the calling `Event`).
    unsafe { sys::cuEventSynchronize(event) }.result()
}

/// `cuEventElapsedTime_v2`: milliseconds from `start` to `end`, both completed.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html>
pub(crate) fn event_elapsed_ms(
    ctx: &CudaContext,
    start: CUevent,
    end: CUevent,
) -> Result<f32, DriverError> {
    ensure_current(ctx)?;
    let mut ms: f32 = 0.0;
    // SAFETY: both events are alive (owned by the calling `Event`s); `ms` is a valid
    // out-pointer.
    unsafe { sys::cuEventElapsedTime_v2(&mut ms, start, end) }.result()?;
    Ok(ms)
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

/// How many kernel arguments a launch collects on the stack before falling back to the heap.
pub(crate) const INLINE_ARGS: usize = 32;

/// `cuLaunchKernel` of `func` on `stream` with `params`, one pointer per argument value.
///
/// The caller has made the function's context current (the hot path checks it once) and
/// upholds the kernel's signature promise made at `Module::kernel`: `params` holds exactly
/// the kernel's parameters, each pointing at a live value of the C type the kernel expects.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html>
#[inline]
pub(crate) fn launch_kernel(
    func: FunctionHandle,
    stream: CUstream,
    config: &LaunchConfig,
    params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    let (g, b) = (config.grid, config.block);
    // SAFETY: `func` and `stream` are alive (a `Kernel` holds its module, a `Stream` its
    // handle); each pointer in `params` points at a value borrowed for the whole call, and
    // their number and types match the kernel's C signature by the `Module::kernel` contract.
    // The driver copies the values before returning, so nothing outlives the call.
    unsafe {
        sys::cuLaunchKernel(
            func.0,
            g.x,
            g.y,
            g.z,
            b.x,
            b.y,
            b.z,
            config.shared_mem_bytes,
            stream,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
}

/// A `CUfunction` handle, shareable across threads: the driver's function handles are not
/// tied to a thread, and Rust never dereferences them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FunctionHandle(pub(crate) CUfunction);

// SAFETY: a `CUfunction` is an opaque driver handle usable from any thread; the owning
// module is kept alive by whoever holds the handle (`Kernel` holds an `Arc` of it).
unsafe impl Send for FunctionHandle {}
// SAFETY: as above; sharing the handle only lets threads pass it to the driver.
unsafe impl Sync for FunctionHandle {}

/// An owned `cuMemAlloc` allocation; freed (with its context made current) on drop.
#[derive(Debug)]
pub(crate) struct DeviceAlloc {
    /// Stored so that a kernel argument can point at it (`DeviceMemory::ptr_ref`).
    pub(crate) ptr: CUdeviceptr,
    /// `None` for plan-only memory: an address range with nothing behind it.
    pub(crate) ctx: Option<Arc<CudaContext>>,
}

impl DeviceAlloc {
    /// `cuMemAlloc_v2` of `bytes` bytes in `ctx` (no allocation for zero bytes: address 0).
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
    pub(crate) fn new(ctx: &Arc<CudaContext>, bytes: usize) -> Result<DeviceAlloc, DriverError> {
        let mut ptr: CUdeviceptr = 0;
        if bytes > 0 {
            ensure_current(ctx)?;
            // SAFETY: `ptr` is a valid out-pointer; the context is current.
            unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) }.result()?;
        }
        Ok(DeviceAlloc {
            ptr,
            ctx: Some(ctx.clone()),
        })
    }

    /// A unique address range of `bytes` bytes with no memory behind it, for plans built
    /// without a GPU. Ranges never overlap each other and sit far above real allocations.
    pub(crate) fn planning(bytes: usize) -> DeviceAlloc {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1 << 56);
        let span = (bytes as u64).next_multiple_of(256).max(256);
        DeviceAlloc {
            ptr: NEXT.fetch_add(span, Ordering::Relaxed),
            ctx: None,
        }
    }
}

impl Drop for DeviceAlloc {
    fn drop(&mut self) {
        let Some(ctx) = &self.ctx else { return };
        if self.ptr == 0 {
            return;
        }
        let freed = ensure_current(ctx).and_then(|()| {
            // SAFETY: `ptr` came from `cuMemAlloc_v2` in this context and is freed once, here.
            // `cuMemFree` waits for work still using the memory before releasing it.
            unsafe { sys::cuMemFree_v2(self.ptr) }.result()
        });
        if let Err(e) = freed {
            // Drop cannot return the error; keep it for the context's next checked call.
            ctx.record_err::<()>(Err(e));
        }
    }
}

/// Copies `len` elements from device memory at `src` into a new `Vec`, after the stream
/// `stream` has finished: the copy is queued on `stream`, which is then synchronized.
///
/// The caller passes the address of a live allocation of at least `len` elements.
pub(crate) fn read_device_vec<T: DeviceRepr>(
    ctx: &CudaContext,
    stream: CUstream,
    src: CUdeviceptr,
    len: usize,
) -> Result<Vec<T>, DriverError> {
    let mut out: Vec<T> = Vec::with_capacity(len);
    let bytes = len * std::mem::size_of::<T>();
    if bytes > 0 {
        ensure_current(ctx)?;
        // SAFETY: `out` has capacity for `bytes` bytes; `src` holds at least that many
        // (caller's contract). The stream is synchronized before `out` is read or returned.
        unsafe { sys::cuMemcpyDtoHAsync_v2(out.as_mut_ptr().cast(), src, bytes, stream) }
            .result()?;
        // SAFETY: `stream` is alive (owned by the caller's `Stream`).
        unsafe { sys::cuStreamSynchronize(stream) }.result()?;
    }
    // SAFETY: the copy above initialised all `len` elements, and `T: DeviceRepr` types are
    // plain data whose device bit patterns are values of `T`.
    unsafe { out.set_len(len) };
    Ok(out)
}

/// `cuMemcpyHtoDAsync_v2`: `bytes` from host memory at `src` to device memory at `dst`.
///
/// The caller passes memory borrowed from live buffers (a `MemoryRef`). Pageable sources are
/// staged by the driver before the call returns, pinned ones must stay alive until the copy
/// ran (buffers free their memory through synchronizing driver calls).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
pub(crate) fn memcpy_htod_async(
    ctx: &CudaContext,
    dst: CUdeviceptr,
    src: *const u8,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    // SAFETY: `src` points at `bytes` readable bytes and `dst` at `bytes` bytes of device
    // memory, both from live borrows (caller's contract); `stream` is alive.
    unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, stream) }.result()
}

/// `cuMemcpyDtoHAsync_v2`: `bytes` from device memory at `src` to host memory at `dst`.
///
/// The caller passes memory borrowed from live buffers (a `MemoryRef`) whose host side may
/// be written by DMA: pinned buffers, never a Rust shared reference to pageable memory.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
pub(crate) fn memcpy_dtoh_async(
    ctx: &CudaContext,
    dst: *mut u8,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    // SAFETY: `dst` points at `bytes` writable bytes owned by a pinned buffer and `src` at
    // `bytes` bytes of device memory, both from live borrows (caller's contract).
    unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, stream) }.result()
}

/// `cuMemcpyDtoDAsync_v2`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
pub(crate) fn memcpy_dtod_async(
    ctx: &CudaContext,
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    // SAFETY: device memory is never a Rust object; both ranges come from live buffers
    // (caller's contract), so the driver only touches allocations that exist.
    unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream) }.result()
}

/// `cuMemcpyAsync` with unified addressing: host to host (pinned) or across devices.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
pub(crate) fn memcpy_async(
    ctx: &CudaContext,
    dst: u64,
    src: u64,
    bytes: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    // SAFETY: both addresses come from live buffers of at least `bytes` bytes whose
    // destination may be written by DMA (caller's contract: pinned or device memory).
    unsafe { sys::cuMemcpyAsync(dst, src, bytes, stream) }.result()
}

/// `cuMemsetD8Async` / `cuMemsetD16Async` / `cuMemsetD32Async` of `count` elements.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
pub(crate) fn memset_async(
    ctx: &CudaContext,
    dst: CUdeviceptr,
    pattern: FillPattern,
    count: usize,
    stream: CUstream,
) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    // SAFETY: `dst` holds `count` elements of the pattern's width in a live device buffer
    // (caller's contract); device memory is never a Rust object.
    unsafe {
        match pattern {
            FillPattern::U8(v) => sys::cuMemsetD8Async(dst, v, count, stream),
            FillPattern::U16(v) => sys::cuMemsetD16Async(dst, v, count, stream),
            FillPattern::U32(v) => sys::cuMemsetD32Async(dst, v, count, stream),
        }
    }
    .result()
}

/// An owned page-locked host allocation of `len` elements of `T` (`cuMemHostAlloc`).
///
/// The driver's DMA engines write it while Rust code may hold references, so the elements
/// are only reached through `as_slice`/`as_mut_slice`, whose callers order them after the
/// copies (see `PinnedBuffer`).
#[derive(Debug)]
pub(crate) struct HostAlloc<T> {
    ptr: NonNull<T>,
    len: usize,
    /// `None` for plan-only buffers, which live in ordinary (pageable) heap memory.
    ctx: Option<Arc<CudaContext>>,
    _owns: PhantomData<T>,
}

// SAFETY: the allocation is owned like a `Box<[T]>`; moving it to another thread moves the
// `T`s, which is fine when `T: Send`. The driver frees page-locked memory from any thread.
unsafe impl<T: Send> Send for HostAlloc<T> {}
// SAFETY: `&HostAlloc<T>` only hands out `&[T]`, like `&Box<[T]>`, so sharing needs `T: Sync`.
unsafe impl<T: Sync> Sync for HostAlloc<T> {}

impl<T: DeviceRepr + Copy> HostAlloc<T> {
    /// `cuMemHostAlloc` (portable: pinned for every context) of `len` elements, all bytes 0.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
    pub(crate) fn zeroed(ctx: &Arc<CudaContext>, len: usize) -> Result<HostAlloc<T>, DriverError>
    where
        T: ValidAsZeroBits,
    {
        let alloc = HostAlloc::<T>::allocate(ctx, len)?;
        // SAFETY: the allocation holds `len` elements of `T` (see `allocate`); all-zero bytes
        // are a valid `T` by `ValidAsZeroBits`.
        unsafe { alloc.ptr.as_ptr().write_bytes(0, len) };
        Ok(alloc)
    }

    /// `cuMemHostAlloc` of `src.len()` elements, copied from `src`.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
    pub(crate) fn from_slice(
        ctx: &Arc<CudaContext>,
        src: &[T],
    ) -> Result<HostAlloc<T>, DriverError> {
        let alloc = HostAlloc::allocate(ctx, src.len())?;
        // SAFETY: the fresh allocation holds `src.len()` elements and cannot overlap `src`;
        // `T: Copy`, so a bitwise copy is a valid copy.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), alloc.ptr.as_ptr(), src.len()) };
        Ok(alloc)
    }

    /// Room for `len` elements, not yet initialised (both constructors initialise it at once).
    fn allocate(ctx: &Arc<CudaContext>, len: usize) -> Result<HostAlloc<T>, DriverError> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))?;
        let ptr = if bytes == 0 {
            NonNull::dangling()
        } else {
            ensure_current(ctx)?;
            let mut raw: *mut c_void = std::ptr::null_mut();
            // SAFETY: `raw` is a valid out-pointer; the context is current. The memory is
            // page-aligned, which satisfies the alignment of every `DeviceRepr` type.
            unsafe { sys::cuMemHostAlloc(&mut raw, bytes, sys::CU_MEMHOSTALLOC_PORTABLE) }
                .result()?;
            NonNull::new(raw.cast::<T>())
                .ok_or(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY))?
        };
        Ok(HostAlloc {
            ptr,
            len,
            ctx: Some(ctx.clone()),
            _owns: PhantomData,
        })
    }

    /// `len` zeroed elements in ordinary heap memory (no driver): plan-only pinned buffers.
    pub(crate) fn planning_zeroed(len: usize) -> Option<HostAlloc<T>>
    where
        T: ValidAsZeroBits,
    {
        let layout = std::alloc::Layout::array::<T>(len).ok()?;
        let ptr = if layout.size() == 0 {
            NonNull::dangling()
        } else {
            // SAFETY: the layout has a non-zero size; all-zero bytes are a valid `T` by
            // `ValidAsZeroBits`. `Drop` frees it with the same layout.
            NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>())?
        };
        Some(HostAlloc {
            ptr,
            len,
            ctx: None,
            _owns: PhantomData,
        })
    }
}

impl<T> HostAlloc<T> {
    /// Whether this is ordinary heap memory of a plan-only buffer.
    pub(crate) fn is_planning(&self) -> bool {
        self.ctx.is_none()
    }

    /// The first element's address.
    pub(crate) fn as_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The elements; the caller orders this read after any copy into the buffer.
    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: `len` initialised elements live at `ptr` for as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The elements, mutably; `&mut self` excludes every other Rust access.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as for `as_slice`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for HostAlloc<T> {
    fn drop(&mut self) {
        if self.len == 0 || std::mem::size_of::<T>() == 0 {
            return;
        }
        let Some(ctx) = &self.ctx else {
            if let Ok(layout) = std::alloc::Layout::array::<T>(self.len) {
                // SAFETY: allocated by `planning_zeroed` with this same layout, freed once.
                unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
            }
            return;
        };
        let freed = ensure_current(ctx).and_then(|()| {
            // SAFETY: the pointer came from `cuMemHostAlloc` and is freed once, here; the
            // elements are plain data (`DeviceRepr`) with nothing to drop.
            unsafe { sys::cuMemFreeHost(self.ptr.as_ptr().cast()) }.result()
        });
        if let Err(e) = freed {
            ctx.record_err::<()>(Err(e));
        }
    }
}

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

/// Runs a [`HostFn`] owned elsewhere (a graph keeps it alive for every replay).
extern "C" fn run_host_fn_shared(user_data: *mut c_void) {
    // SAFETY: `user_data` points at a `HostFn` that its owner keeps alive for as long as the
    // driver may call this callback (see `shared_host_fn_callback`).
    let f = unsafe { &*user_data.cast_const().cast::<HostFn>() };
    report_host_fn_panic(catch_unwind(AssertUnwindSafe(|| f())));
}

/// A panic cannot cross the driver's C frames; the callback returns and the panic is reported
/// on stderr, as the standard library does for panics in threads nobody joins.
fn report_host_fn_panic(outcome: std::thread::Result<()>) {
    if let Err(payload) = outcome {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_string());
        eprintln!("streamgraph: a host function panicked: {message}");
    }
}

/// The callback and user data for a host node whose [`HostFn`] lives at `f` for the whole
/// life of the graph that calls it (capture/graph code keeps the `HostFn` boxed alongside
/// the executable graph).
pub(crate) fn shared_host_fn_callback(f: &HostFn) -> (sys::CUhostFn, *mut c_void) {
    (
        Some(run_host_fn_shared),
        (f as *const HostFn).cast_mut().cast(),
    )
}

/// `cuLaunchHostFunc`: runs `f` once on a driver thread after the stream's earlier work.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html>
pub(crate) fn launch_host_fn_once(
    ctx: &CudaContext,
    stream: CUstream,
    f: HostFn,
) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    let data = Box::into_raw(Box::new(f));
    // SAFETY: the callback reclaims `data` exactly once when the driver runs it; `stream` is
    // alive. The closure is `Send + Sync + 'static`, so running it on a driver thread is fine.
    let launched = unsafe { sys::cuLaunchHostFunc(stream, Some(run_host_fn_once), data.cast()) };
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
