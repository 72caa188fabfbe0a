//! [`DeviceAlloc`]: device memory the runtime allocated (`cuMemAlloc`) or took over from
//! cudarc, or a plan-only address range, freed when the last `Arc` of it is gone (see
//! [`super::memory`] for who holds those).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::CudaContext;

use super::ensure_current;
use super::owned::Owned;
use crate::error::{Error, Result};

/// An owned `cuMemAlloc` allocation (or a plan-only address range); freed on drop.
///
/// Shared through an `Arc`: buffers, their views and every graph that captured work on the
/// memory hold one, so the memory stays allocated while any of them can still use it.
#[derive(Debug)]
pub(crate) struct DeviceAlloc {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    /// `None` for plan-only memory: an address range with nothing behind it.
    ctx: Option<Arc<CudaContext>>,
    /// Memory cudarc allocated (a `CudaSlice`), freed by dropping it instead of `cuMemFree`.
    cudarc: Option<Owned>,
}

impl DeviceAlloc {
    /// `cuMemAlloc_v2` of `bytes` bytes in `ctx` (no allocation for zero bytes: address 0).
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
    pub(crate) fn new(ctx: &Arc<CudaContext>, bytes: usize) -> Result<Arc<DeviceAlloc>> {
        let mut ptr: sys::CUdeviceptr = 0;
        if bytes > 0 {
            ensure_current(ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
            super::unsafe_during_capture(|| {
                // SAFETY: `ptr` is a valid out-pointer for the call; the context is current.
                unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) }.result()
            })
            .map_err(|e| Error::driver("cuMemAlloc", e))?;
        }
        Ok(Arc::new(DeviceAlloc {
            ptr,
            bytes,
            ctx: Some(ctx.clone()),
            cudarc: None,
        }))
    }

    /// A unique address range of `bytes` bytes with no memory behind it, for plans built
    /// without a GPU. Ranges never overlap each other and sit far above real allocations;
    /// `None` once the 64-bit planning address space is used up.
    pub(crate) fn planning(bytes: usize) -> Option<Arc<DeviceAlloc>> {
        static NEXT: AtomicU64 = AtomicU64::new(1 << 40);
        let span = u64::try_from(bytes)
            .ok()?
            .checked_next_multiple_of(256)?
            .max(256);
        let ptr = NEXT
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |next| {
                next.checked_add(span)
            })
            .ok()?;
        Some(Arc::new(DeviceAlloc {
            ptr,
            bytes,
            ctx: None,
            cudarc: None,
        }))
    }

    /// Takes over a cudarc allocation: `slice` is kept until the last `Arc` is gone, then
    /// dropped (which frees it) once the context has finished all work queued so far.
    ///
    /// Waits for the work cudarc queued on the slice first: its own stream's, and (when cudarc
    /// tracks events) other streams' reads and writes of it. A buffer is used on any stream
    /// afterwards, in no order with cudarc's. Refused while the slice's stream is capturing
    /// (a wait is impossible there); the slice is freed then, in its stream's order.
    pub(crate) fn from_cudarc<T: Send + Sync + 'static>(
        mut slice: cudarc::driver::CudaSlice<T>,
    ) -> Result<Arc<DeviceAlloc>> {
        use cudarc::driver::DevicePtrMut;
        let bytes = slice.num_bytes();
        let ctx = slice.context().clone();
        let stream = slice.stream().clone();
        super::status::refuse_capturing(&stream, "DeviceBuffer::from_cudarc")?;
        // Makes the slice's stream wait for the slice's recorded reads and writes on other
        // streams; the write this would record is not one (the address is only stored).
        let (ptr, sync) = slice.device_ptr_mut(&stream);
        std::mem::forget(sync);
        super::unsafe_during_capture(|| stream.synchronize())
            .map_err(|e| Error::driver("cuStreamSynchronize", e))?;
        Ok(Arc::new(DeviceAlloc {
            ptr,
            bytes,
            ctx: Some(ctx),
            cudarc: Some(Owned::new(slice)),
        }))
    }

    /// The cudarc allocation behind this memory, if cudarc made it.
    pub(crate) fn cudarc(&self) -> Option<&Owned> {
        self.cudarc.as_ref()
    }

    /// Gives a cudarc allocation of `CudaSlice<T>` back once nothing else holds it and the
    /// context has finished its work; `Err` with the allocation otherwise.
    pub(crate) fn into_cudarc<T: 'static>(
        this: Arc<DeviceAlloc>,
    ) -> Result<cudarc::driver::CudaSlice<T>, Arc<DeviceAlloc>> {
        let is_slice = |c: &Owned| c.get::<cudarc::driver::CudaSlice<T>>().is_some();
        if !this.cudarc.as_ref().is_some_and(is_slice) {
            return Err(this);
        }
        let mut alloc = Arc::try_unwrap(this)?;
        let synced = match &alloc.ctx {
            Some(ctx) => {
                super::after_global_capture(|| ensure_current(ctx).and_then(|()| ctx.synchronize()))
            }
            None => Ok(()),
        };
        if synced.is_err() {
            return Err(Arc::new(alloc));
        }
        match alloc.cudarc.take().map(Owned::take) {
            Some(Ok(slice)) => {
                // Nothing is left to free: the slice owns the memory now.
                alloc.ctx = None;
                Ok(slice)
            }
            Some(Err(other)) => {
                alloc.cudarc = Some(other);
                Err(Arc::new(alloc))
            }
            None => Err(Arc::new(alloc)),
        }
    }

    /// The first byte's device address.
    pub(crate) fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The context the memory belongs to; `None` for plan-only memory.
    pub(crate) fn ctx(&self) -> Option<&Arc<CudaContext>> {
        self.ctx.as_ref()
    }

    /// Whether `[ptr, ptr + bytes)` lies inside this allocation.
    pub(super) fn contains(&self, ptr: u64, bytes: usize) -> bool {
        let end = self.ptr.checked_add(self.bytes as u64);
        let want = ptr.checked_add(bytes as u64);
        matches!((end, want), (Some(end), Some(want)) if ptr >= self.ptr && want <= end)
    }
}

impl Drop for DeviceAlloc {
    fn drop(&mut self) {
        let Some(ctx) = &self.ctx else { return };
        if let Some(slice) = self.cudarc.take() {
            // cudarc frees in its own stream's order, which knows nothing of ours: wait for
            // all work of the context first (as `cuMemFree` does for the runtime's memory).
            let synced = super::after_global_capture(|| {
                ensure_current(ctx).and_then(|()| ctx.synchronize())
            });
            match synced {
                Ok(()) => drop(slice),
                Err(e) => {
                    // Work may still use the memory: leak it rather than free it under them.
                    std::mem::forget(slice);
                    ctx.record_err::<()>(Err(e));
                }
            }
            return;
        }
        if self.ptr == 0 {
            return;
        }
        let freed = super::after_global_capture(|| {
            ensure_current(ctx).and_then(|()| {
                // SAFETY: `ptr` came from `cuMemAlloc_v2` in this context and is freed once,
                // here: the last `Arc` is gone, so no buffer, view or graph can name the memory
                // any more. `cuMemFree` waits for work still using the memory before releasing it.
                unsafe { sys::cuMemFree_v2(self.ptr) }.result()
            })
        });
        if let Err(e) = freed {
            // Drop cannot return the error; keep it for the context's next checked call.
            ctx.record_err::<()>(Err(e));
        }
    }
}
