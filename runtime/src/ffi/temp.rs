//! The driver calls of pipeline temporaries: stream-ordered allocation and release from the
//! device's default memory pool (a capture records them as graph memory nodes), the pool's
//! release threshold, and the device's graph-memory counters and trim.
//!
//! <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MALLOC__ASYNC.html>,
//! <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html> (graph memory).

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, DriverError};

use super::ensure_current;

/// `cuMemAllocAsync` of `bytes` bytes (at least one) on `stream`, from the default pool of
/// its device; while `stream` captures, a memory-allocation node of the graph.
pub(crate) fn alloc_async(
    ctx: &CudaContext,
    stream: sys::CUstream,
    bytes: usize,
) -> Result<sys::CUdeviceptr, DriverError> {
    let mut ptr: sys::CUdeviceptr = 0;
    super::in_context(ctx, || {
        // SAFETY: `ptr` is a valid out-pointer; `stream` is a live stream of `ctx`, kept alive
        // by the caller across the call.
        unsafe { sys::cuMemAllocAsync(&mut ptr, bytes.max(1), stream) }.result()
    })?;
    Ok(ptr)
}

/// `cuMemFreeAsync` of `ptr` on `stream`: the memory returns to its pool once the stream's
/// earlier work is done; while `stream` captures, a memory-free node of the graph.
pub(crate) fn free_async(
    ctx: &CudaContext,
    stream: sys::CUstream,
    ptr: sys::CUdeviceptr,
) -> Result<(), DriverError> {
    super::in_context(ctx, || {
        // SAFETY: `ptr` came from `alloc_async` on this context and is freed once (its
        // `TempMemory` is consumed); `stream` is live for the call.
        unsafe { sys::cuMemFreeAsync(ptr, stream) }.result()
    })
}

/// Sets the release threshold of the default memory pool of `ctx`'s device: memory the pool
/// holds beyond it goes back to the driver at the next synchronization.
pub(crate) fn set_release_threshold(ctx: &CudaContext, bytes: u64) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: `pool` is a valid out-pointer; the device belongs to the current context.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) }.result()?;
    let mut value = bytes;
    // SAFETY: the attribute takes a `cuuint64_t`, which `value` is; the pool is the device's.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut value as *mut u64).cast(),
        )
    }
    .result()
}

/// The four graph-memory counters of `ctx`'s device: used now, used at most, reserved now,
/// reserved at most (bytes).
pub(crate) fn graph_memory(ctx: &CudaContext) -> Result<[u64; 4], DriverError> {
    use sys::CUgraphMem_attribute::*;
    ensure_current(ctx)?;
    let mut out = [0u64; 4];
    for (slot, attr) in out.iter_mut().zip([
        CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT,
        CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
        CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
        CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH,
    ]) {
        // SAFETY: every one of these attributes is a `cuuint64_t`, written to `slot`.
        unsafe {
            sys::cuDeviceGetGraphMemAttribute(ctx.cu_device(), attr, (slot as *mut u64).cast())
        }
        .result()?;
    }
    Ok(out)
}

/// Resets the device's graph-memory high-water marks (used and reserved) to their current
/// values.
pub(crate) fn reset_graph_memory_high(ctx: &CudaContext) -> Result<(), DriverError> {
    use sys::CUgraphMem_attribute::*;
    ensure_current(ctx)?;
    for attr in [
        CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
        CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH,
    ] {
        let mut zero = 0u64;
        // SAFETY: the high-water attributes take a `cuuint64_t` of 0 (reset), read from `zero`.
        unsafe {
            sys::cuDeviceSetGraphMemAttribute(ctx.cu_device(), attr, (&mut zero as *mut u64).cast())
        }
        .result()?;
    }
    Ok(())
}

/// `cuDeviceGraphMemTrim`: returns the graph memory no graph uses now to the driver.
pub(crate) fn trim_graph_memory(ctx: &CudaContext) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    // SAFETY: the device belongs to the current context.
    unsafe { sys::cuDeviceGraphMemTrim(ctx.cu_device()) }.result()
}
