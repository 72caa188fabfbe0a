//! Memory the driver reads and writes: device allocations, page-locked host allocations and
//! the protocol that keeps DMA apart from Rust references to them (in [`super::pinned`],
//! re-exported here), the [`MemoryRef`] handles through which copies and fills name memory,
//! and the copy, fill and read-back calls.
//!
//! Device memory is never a Rust object, so the driver may write it at any time; what must
//! hold is that it is *allocated* while work can still touch it. Every allocation is an
//! `Arc`, and a captured graph keeps the `Arc`s of the memory it uses (see [`MemoryRef`]'s
//! holder), so memory outlives every replay whatever the pipeline value does.

use std::any::Any;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaStream};

use super::ensure_current;
pub(crate) use super::pinned::{PinnedAlloc, PinnedRead, PinnedWrite};
use super::status::{stream_capture_status, CaptureStatus};
use crate::error::{Error, Result};
use crate::operand::{DeviceRange, FillPattern, Memory};

/// A cudarc value kept for what it owns (an allocation, a loaded module): only dropped or
/// handed back whole, never used in between, so it is unwind-safe like the runtime's handles.
pub(crate) struct Owned(AssertUnwindSafe<Box<dyn Any + Send + Sync>>);

impl Owned {
    pub(crate) fn new<T: Any + Send + Sync>(value: T) -> Owned {
        Owned(AssertUnwindSafe(Box::new(value)))
    }

    /// The value, when it is a `T`.
    pub(crate) fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }

    /// The value, when it is a `T`; `Err(self)` otherwise.
    fn take<T: Any>(self) -> std::result::Result<T, Owned> {
        let AssertUnwindSafe(boxed) = self.0;
        boxed
            .downcast::<T>()
            .map(|v| *v)
            .map_err(|b| Owned(AssertUnwindSafe(b)))
    }
}

impl fmt::Debug for Owned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Owned")
    }
}

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
    fn contains(&self, ptr: u64, bytes: usize) -> bool {
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

/// What keeps the memory of a [`MemoryRef`] or kernel argument allocated. Graphs keep it for
/// as long as they can launch. Opaque outside the runtime.
#[derive(Clone, Copy)]
pub struct Holder<'a>(pub(crate) HolderKind<'a>);

#[derive(Clone, Copy)]
pub(crate) enum HolderKind<'a> {
    /// Memory whose owner promised liveness in an `unsafe` constructor or trait impl.
    Foreign,
    /// Pageable host memory borrowed for the call (a copy source; staged before it returns).
    Pageable,
    /// A device allocation of the runtime.
    Device(&'a Arc<DeviceAlloc>),
    /// A host allocation of the runtime, with its DMA protocol.
    Pinned(&'a Arc<PinnedAlloc>),
    /// Memory of a cudarc `CudaSlice` or view, borrowed for the call, which cudarc frees in
    /// the order of this stream (see [`cudarc_ordered`]). Never captured.
    Cudarc(&'a Arc<CudaStream>),
}

impl Holder<'_> {
    /// Memory whose owner vouches for it in an `unsafe` impl: nothing to keep.
    pub const FOREIGN: Holder<'static> = Holder(HolderKind::Foreign);
}

impl<'a> Holder<'a> {
    pub(crate) fn device(alloc: &'a Arc<DeviceAlloc>) -> Holder<'a> {
        Holder(HolderKind::Device(alloc))
    }

    /// Memory of a cudarc slice whose allocation is ordered on `stream`.
    pub(crate) fn cudarc(stream: &'a Arc<CudaStream>) -> Holder<'a> {
        Holder(HolderKind::Cudarc(stream))
    }
}

/// Runs `op`, which queues work on `stream` that touches the cudarc memory of `holders`, so
/// that cudarc's own ordering stays sound: `stream` first waits for the work queued so far on
/// each slice's stream (its allocation and earlier uses), and afterwards each slice's stream
/// waits for `stream`, so that cudarc's stream-ordered free (on drop) comes after the work.
///
/// A capture is refused: a graph replays after the borrow of the slice has ended, when cudarc
/// may have freed it. [`crate::DeviceBuffer::from_cudarc`] makes memory graphs can keep.
pub(crate) fn cudarc_ordered<'h, R>(
    stream: &Arc<CudaStream>,
    holders: impl IntoIterator<Item = HolderKind<'h>>,
    op: impl FnOnce() -> Result<R>,
) -> Result<R> {
    let owners: Vec<&Arc<CudaStream>> = holders
        .into_iter()
        .filter_map(|h| match h {
            HolderKind::Cudarc(s) => Some(s),
            _ => None,
        })
        .collect();
    if owners.is_empty() {
        return op();
    }
    // Refused whichever stream allocated the slice: the graph would outlive the borrow. And
    // refused while a slice's own stream is captured (by other code): the ordering below
    // records an event on it, which would join that capture.
    let capturing = |s: &CudaStream| {
        stream_capture_status(s)
            .map(|status| status != CaptureStatus::None)
            .map_err(|e| Error::driver("cuStreamIsCapturing", e))
    };
    let mut any_capturing = capturing(stream)?;
    for owner in &owners {
        any_capturing |= capturing(owner)?;
    }
    if any_capturing {
        return Err(Error::InvalidArgument(
            "cudarc memory (a `CudaSlice`, `CudaView` or `CudaViewMut`) cannot be captured into \
             a graph: the graph replays after the borrow ends, when cudarc may have freed it; \
             move the slice into a `DeviceBuffer::from_cudarc(slice)`, which graphs keep alive"
                .into(),
        ));
    }
    // Work on the slice's own stream is in its order already.
    let owners: Vec<_> = owners
        .into_iter()
        .filter(|s| s.cu_stream() != stream.cu_stream())
        .collect();
    let order = |waiter: &CudaStream, after: &CudaStream| -> Result<()> {
        let event = after
            .record_event(None)
            .map_err(|e| Error::driver("cuEventRecord", e))?;
        waiter
            .wait(&event)
            .map_err(|e| Error::driver("cuStreamWaitEvent", e))
    };
    for owner in &owners {
        order(stream, owner)?;
    }
    let result = op();
    for owner in &owners {
        if let Err(e) = order(owner, stream) {
            // The free would not wait for the work: wait for it here instead.
            stream
                .synchronize()
                .map_err(|e| Error::driver("cuStreamSynchronize", e))?;
            return Err(e);
        }
    }
    result
}

impl fmt::Debug for Holder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            HolderKind::Foreign => "Foreign",
            HolderKind::Pageable => "Pageable",
            HolderKind::Device(_) => "Device",
            HolderKind::Pinned(_) => "Pinned",
            HolderKind::Cudarc(_) => "Cudarc",
        })
    }
}

/// One side of a copy or the target of a fill: device, page-locked or pageable host memory,
/// borrowed for `'a`, with what keeps it allocated.
///
/// Made only by the runtime's buffers (through [`crate::CopySource`], [`crate::CopyTarget`]
/// and [`crate::DeviceMemory`], whose foreign impls are `unsafe`) or by the `unsafe`
/// [`MemoryRef::from_raw`]: so the memory named is live and, when host memory is written,
/// guarded against Rust references for as long as the copy runs.
#[derive(Debug, Clone, Copy)]
pub struct MemoryRef<'a> {
    memory: Memory,
    elem_size: usize,
    holder: Holder<'a>,
}

impl<'a> MemoryRef<'a> {
    /// Names memory the runtime does not own, for a foreign [`crate::CopySource`] or
    /// [`crate::CopyTarget`] impl (e.g. memory of another CUDA library).
    ///
    /// # Safety
    ///
    /// - `memory` is allocated for at least `'a` **and** for as long as any graph that
    ///   captured an operation on it can launch (graphs cannot keep foreign memory alive);
    /// - device memory belongs to the device `memory` names; host memory that a copy may
    ///   write is page-locked, and no Rust reference to it is used while such a copy runs;
    /// - `elem_size` is the size of one element of the memory's type.
    pub unsafe fn from_raw(memory: Memory, elem_size: usize) -> MemoryRef<'a> {
        MemoryRef {
            memory,
            elem_size,
            holder: Holder::FOREIGN,
        }
    }

    /// `bytes` bytes at device address `ptr` inside `alloc`; `None` when they do not lie
    /// inside it.
    pub(crate) fn device(
        alloc: &'a Arc<DeviceAlloc>,
        device: i32,
        ptr: u64,
        bytes: usize,
        elem_size: usize,
    ) -> Option<MemoryRef<'a>> {
        alloc.contains(ptr, bytes).then_some(MemoryRef {
            memory: Memory::Device(DeviceRange { device, ptr, bytes }),
            elem_size,
            holder: Holder::device(alloc),
        })
    }

    /// Device memory named by an `unsafe impl DeviceMemory`: `range` is live by the
    /// implementer's promise, and `holder` is what the impl handed out.
    pub(crate) fn promised_device(
        range: DeviceRange,
        elem_size: usize,
        holder: Holder<'a>,
    ) -> MemoryRef<'a> {
        MemoryRef {
            memory: Memory::Device(range),
            elem_size,
            holder,
        }
    }

    /// The whole of a host allocation of the runtime.
    pub(crate) fn pinned(alloc: &'a Arc<PinnedAlloc>, elem_size: usize) -> MemoryRef<'a> {
        MemoryRef::host(alloc, alloc.ptr.as_ptr(), alloc.bytes, elem_size)
    }

    /// `bytes` bytes from byte `offset` of a host allocation of the runtime; `None` when they
    /// do not lie inside it.
    pub(crate) fn pinned_part(
        alloc: &'a Arc<PinnedAlloc>,
        offset: usize,
        bytes: usize,
        elem_size: usize,
    ) -> Option<MemoryRef<'a>> {
        let end = offset.checked_add(bytes)?;
        if end > alloc.bytes {
            return None;
        }
        let ptr = alloc.ptr.as_ptr().wrapping_add(offset);
        Some(MemoryRef::host(alloc, ptr, bytes, elem_size))
    }

    /// As [`MemoryRef::pinned_part`], naming no bytes when the part is not inside `alloc`
    /// (for views, which lie inside their buffer by construction).
    pub(crate) fn pinned_view(
        alloc: &'a Arc<PinnedAlloc>,
        offset: usize,
        bytes: usize,
        elem_size: usize,
    ) -> MemoryRef<'a> {
        MemoryRef::pinned_part(alloc, offset, bytes, elem_size)
            .unwrap_or_else(|| MemoryRef::host(alloc, alloc.ptr.as_ptr(), 0, elem_size))
    }

    /// `bytes` bytes at `ptr` inside `alloc` (checked by the callers).
    fn host(alloc: &'a Arc<PinnedAlloc>, ptr: *mut u8, bytes: usize, elem_size: usize) -> Self {
        let memory = if alloc.is_planning() {
            Memory::PageableHost { ptr, bytes }
        } else {
            Memory::PinnedHost { ptr, bytes }
        };
        MemoryRef {
            memory,
            elem_size,
            holder: Holder(HolderKind::Pinned(alloc)),
        }
    }

    /// A pageable host slice, as a copy source (the driver stages it before the copy call
    /// returns).
    pub(crate) fn pageable<T: bytemuck::Pod>(src: &'a [T]) -> MemoryRef<'a> {
        MemoryRef {
            memory: Memory::PageableHost {
                ptr: src.as_ptr().cast_mut().cast(),
                bytes: std::mem::size_of_val(src),
            },
            elem_size: std::mem::size_of::<T>(),
            holder: Holder(HolderKind::Pageable),
        }
    }

    /// The memory.
    pub fn memory(&self) -> Memory {
        self.memory
    }

    /// Size of one element in bytes (both sides of a copy share it).
    pub fn elem_size(&self) -> usize {
        self.elem_size
    }

    /// What keeps the memory allocated.
    pub(crate) fn holder(&self) -> HolderKind<'a> {
        self.holder.0
    }

    /// The elements `start..end` of this memory (counted in elements of
    /// [`MemoryRef::elem_size`] bytes), with the same holder; `None` when they do not lie
    /// inside it.
    pub(crate) fn elements(&self, start: usize, end: usize) -> Option<MemoryRef<'a>> {
        let size = self.elem_size;
        let offset = start.checked_mul(size)?;
        let bytes = end.checked_sub(start)?.checked_mul(size)?;
        if offset.checked_add(bytes)? > self.memory.bytes() {
            return None;
        }
        let memory = match self.memory {
            Memory::Device(range) => Memory::Device(DeviceRange {
                ptr: range.ptr.checked_add(u64::try_from(offset).ok()?)?,
                bytes,
                ..range
            }),
            // Inside the range checked above, so inside the same allocation.
            Memory::PinnedHost { ptr, .. } => Memory::PinnedHost {
                ptr: ptr.wrapping_add(offset),
                bytes,
            },
            Memory::PageableHost { ptr, .. } => Memory::PageableHost {
                ptr: ptr.wrapping_add(offset),
                bytes,
            },
        };
        Some(MemoryRef { memory, ..*self })
    }
}

/// Memory that a copy or fill writes, or a collective's result: a [`MemoryRef`] made through
/// an **exclusive** borrow of the memory (or through a shared reference to one, which is what
/// a pipeline's `issue(&self)` holds for a buffer it borrowed `&mut`), so that nothing but the
/// holder of that borrow writes the memory while it lives. A shared borrow of a buffer never
/// makes one: [`crate::Issuer`]'s writes take this type, so a `&DeviceBuffer` (or a view of one)
/// can only be read.
///
/// Made by [`MemoryMut::copy_target`], [`MemoryMut::device`] and their `_through` forms
/// (which take the `&&mut` that `issue(&self)` holds).
#[derive(Debug)]
pub struct MemoryMut<'a> {
    memory: MemoryRef<'a>,
}

impl<'a> MemoryMut<'a> {
    /// `memory`, which the caller reached through an exclusive borrow (or a shared reference
    /// to one) that lives for `'a`.
    pub(crate) fn exclusive(memory: MemoryRef<'a>) -> MemoryMut<'a> {
        MemoryMut { memory }
    }

    /// The memory, as a reference that reads it (for the driver calls that write it, and for
    /// bookkeeping).
    pub fn memory_ref(&self) -> MemoryRef<'a> {
        self.memory
    }

    /// The memory.
    pub fn memory(&self) -> Memory {
        self.memory.memory
    }

    /// Size of one element in bytes.
    pub fn elem_size(&self) -> usize {
        self.memory.elem_size
    }
}
/// The host allocations among a copy's sides, for the DMA protocol (`true`: written).
fn host_sides<'x>(dst: &MemoryRef<'x>, src: &MemoryRef<'x>) -> Vec<(&'x PinnedAlloc, bool)> {
    let mut sides = Vec::new();
    if let HolderKind::Pinned(a) = dst.holder() {
        sides.push((&**a, true));
    }
    if let HolderKind::Pinned(a) = src.holder() {
        sides.push((&**a, false));
    }
    sides
}

/// Queues a copy of `src` into `dst` (the same number of bytes) on `stream`, choosing the
/// driver call from the kinds of memory. Host allocations of the runtime follow the DMA
/// protocol; `track` is off inside a capture (nothing runs until the graph is launched).
pub(crate) fn copy(
    stream: &Arc<CudaStream>,
    dst: &MemoryRef<'_>,
    src: &MemoryRef<'_>,
    track: bool,
) -> Result<()> {
    let bytes = dst.memory.bytes();
    if bytes != src.memory.bytes() {
        return Err(Error::InvalidArgument(format!(
            "copy between memory of different sizes: the destination holds {} bytes, the \
             source {} bytes; copy between equal lengths (slice the larger side)",
            bytes,
            src.memory.bytes()
        )));
    }
    if [dst.memory, src.memory]
        .iter()
        .any(|m| matches!(m, Memory::Device(r) if r.device == DeviceRange::PLANNING))
    {
        return Err(Error::PlanningOnly { what: "buffer" });
    }
    if bytes == 0 {
        return Ok(());
    }
    cudarc_ordered(stream, [dst.holder(), src.holder()], || {
        copy_ordered(stream, dst, src, track, bytes)
    })
}

/// [`copy`] once cudarc memory among the sides is ordered.
fn copy_ordered(
    stream: &Arc<CudaStream>,
    dst: &MemoryRef<'_>,
    src: &MemoryRef<'_>,
    track: bool,
    bytes: usize,
) -> Result<()> {
    let sides = host_sides(dst, src);
    if sides.is_empty() {
        // SAFETY: both sides are live device memory or a pageable source (the `MemoryRef`
        // invariant); no host allocation of the runtime is involved.
        return unsafe { copy_raw(stream, dst.memory, src.memory, bytes) };
    }
    if track {
        // A capture begun by other code would record the copy without running it, and the
        // protocol's event with it; refuse rather than track DMA that has not happened.
        super::status::refuse_capturing(stream, "a copy touching a PinnedBuffer")?;
    }
    PinnedAlloc::dma(&sides, stream, track, || {
        // SAFETY: the protocol holds the host allocations' locks and found no Rust borrow the
        // copy would race with; it tracks the copy (or nothing runs, inside a capture).
        unsafe { copy_raw(stream, dst.memory, src.memory, bytes) }
    })
}

/// The driver call of a copy of `bytes` bytes from `src` to `dst`.
///
/// # Safety
///
/// `dst` and `src` come from live [`MemoryRef`]s of `bytes` bytes each, and host memory of
/// the runtime among them has been cleared by [`PinnedAlloc::dma`] (no Rust borrow races
/// with the copy, and later borrows wait for it).
unsafe fn copy_raw(stream: &CudaStream, dst: Memory, src: Memory, bytes: usize) -> Result<()> {
    let (ctx, raw) = (stream.context(), stream.cu_stream());
    ensure_current(ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let (call, result) = match (dst, src) {
        (Memory::Device(d), Memory::Device(s)) if d.device == s.device => (
            "cuMemcpyDtoDAsync",
            // SAFETY: both ranges name `bytes` bytes of live device memory (the `MemoryRef`
            // invariant); device memory is never a Rust object.
            unsafe { sys::cuMemcpyDtoDAsync_v2(d.ptr, s.ptr, bytes, raw) },
        ),
        (Memory::Device(d), Memory::Device(s)) => (
            "cuMemcpyAsync",
            // SAFETY: as above, across devices (unified addressing).
            unsafe { sys::cuMemcpyAsync(d.ptr, s.ptr, bytes, raw) },
        ),
        (Memory::Device(d), Memory::PinnedHost { ptr, .. } | Memory::PageableHost { ptr, .. }) => (
            "cuMemcpyHtoDAsync",
            // SAFETY: the host side is `bytes` readable bytes that live for the borrow: a
            // pageable source is staged before the call returns, a pinned one is guarded by
            // the DMA protocol (no mutable borrow while the copy runs) and kept allocated.
            unsafe { sys::cuMemcpyHtoDAsync_v2(d.ptr, ptr.cast_const().cast(), bytes, raw) },
        ),
        (Memory::PinnedHost { ptr, .. } | Memory::PageableHost { ptr, .. }, Memory::Device(s)) => (
            "cuMemcpyDtoHAsync",
            // SAFETY: the host side is `bytes` writable bytes of a runtime host allocation
            // (or foreign memory promised by `MemoryRef::from_raw`): the DMA protocol refused
            // the copy if any Rust borrow of them lives and makes later borrows wait for it.
            unsafe { sys::cuMemcpyDtoHAsync_v2(ptr.cast(), s.ptr, bytes, raw) },
        ),
        (
            Memory::PinnedHost { ptr: d, .. } | Memory::PageableHost { ptr: d, .. },
            Memory::PinnedHost { ptr: s, .. } | Memory::PageableHost { ptr: s, .. },
        ) => (
            "cuMemcpyAsync",
            // SAFETY: both sides as in the two cases above.
            unsafe { sys::cuMemcpyAsync(d as u64, s as u64, bytes, raw) },
        ),
    };
    result.result().map_err(|e| Error::driver(call, e))
}

/// Queues a fill of the device memory `dst` with `pattern` on `stream`
/// (`cuMemsetD8/D16/D32Async`).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
pub(crate) fn fill(
    stream: &Arc<CudaStream>,
    dst: &MemoryRef<'_>,
    pattern: FillPattern,
) -> Result<()> {
    cudarc_ordered(stream, [dst.holder()], || {
        fill_ordered(stream, dst, pattern)
    })
}

/// [`fill`] once cudarc memory is ordered.
fn fill_ordered(stream: &CudaStream, dst: &MemoryRef<'_>, pattern: FillPattern) -> Result<()> {
    let Memory::Device(range) = dst.memory else {
        return Err(Error::InvalidArgument(
            "a fill targets device memory only; copy into host memory instead".into(),
        ));
    };
    if range.device == DeviceRange::PLANNING {
        return Err(Error::PlanningOnly { what: "buffer" });
    }
    let width = match pattern {
        FillPattern::U8(_) => 1,
        FillPattern::U16(_) => 2,
        FillPattern::U32(_) => 4,
    };
    if range.bytes % width != 0 {
        return Err(Error::InvalidArgument(format!(
            "fill of {} bytes with a {width}-byte pattern: the length must be a multiple of the \
             pattern's width",
            range.bytes
        )));
    }
    if range.bytes == 0 {
        return Ok(());
    }
    let (ctx, raw) = (stream.context(), stream.cu_stream());
    ensure_current(ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let count = range.bytes / width;
    // SAFETY: `range` names `count` elements of the pattern's width in live device memory
    // (the `MemoryRef` invariant); device memory is never a Rust object.
    let result = unsafe {
        match pattern {
            FillPattern::U8(v) => sys::cuMemsetD8Async(range.ptr, v, count, raw),
            FillPattern::U16(v) => sys::cuMemsetD16Async(range.ptr, v, count, raw),
            FillPattern::U32(v) => sys::cuMemsetD32Async(range.ptr, v, count, raw),
        }
    };
    result
        .result()
        .map_err(|e| Error::driver("cuMemsetAsync", e))
}

/// Copies the device memory `src` into a new `Vec<T>` in `stream`'s order and waits for it.
///
/// Errors: plan-only memory, memory of another device than the stream's, a length that is
/// not a whole number of elements or that cannot be allocated.
pub(crate) fn read_device<T: bytemuck::Pod>(
    stream: &CudaStream,
    src: &MemoryRef<'_>,
) -> Result<Vec<T>> {
    let Memory::Device(range) = src.memory else {
        return Err(Error::InvalidArgument(
            "read-back takes device memory".into(),
        ));
    };
    if range.device == DeviceRange::PLANNING {
        return Err(Error::PlanningOnly { what: "buffer" });
    }
    let size = std::mem::size_of::<T>();
    if size == 0 || range.bytes % size != 0 {
        return Err(Error::InvalidArgument(format!(
            "{} bytes of device memory are not a whole number of {size}-byte elements",
            range.bytes
        )));
    }
    // The copy would land in the capture's graph, writing a `Vec` long freed on replay.
    super::status::refuse_capturing(stream, "reading device memory back")?;
    let ctx = stream.context();
    let ordinal = i32::try_from(ctx.ordinal()).unwrap_or(i32::MAX);
    if ordinal != range.device {
        return Err(Error::DeviceMismatch {
            what: "reading memory back on a stream of another device",
            left: range.device,
            right: ordinal,
        });
    }
    let len = range.bytes / size;
    let mut out: Vec<T> = Vec::new();
    out.try_reserve_exact(len).map_err(|_| {
        Error::InvalidArgument(format!(
            "a host vector of {len} elements ({} bytes) cannot be allocated",
            range.bytes
        ))
    })?;
    if range.bytes == 0 {
        return Ok(out);
    }
    ensure_current(ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let raw = stream.cu_stream();
    // SAFETY: `out` has capacity for `range.bytes` bytes and no Rust reference to its spare
    // capacity exists; `range` is live device memory (the `MemoryRef` invariant).
    let queued =
        unsafe { sys::cuMemcpyDtoHAsync_v2(out.as_mut_ptr().cast(), range.ptr, range.bytes, raw) }
            .result()
            .map_err(|e| Error::driver("cuMemcpyDtoHAsync", e));
    let synced = queued.and_then(|()| {
        super::stream_synchronize(stream).map_err(|e| Error::driver("cuStreamSynchronize", e))
    });
    if let Err(e) = synced {
        // The copy may still be queued: leak the vector rather than free memory a DMA writes.
        std::mem::forget(out);
        return Err(e);
    }
    // SAFETY: the copy above wrote all `len` elements and completed (the stream was
    // synchronized); `T: Pod`, so every bit pattern is a valid `T`.
    unsafe { out.set_len(len) };
    Ok(out)
}
