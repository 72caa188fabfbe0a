//! Copies, fills and read-back: the driver calls that move bytes between the memory that
//! [`MemoryRef`]s name, host allocations of the runtime under their DMA protocol.

use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::CudaStream;

use super::cudarc_order::cudarc_ordered;
use super::ensure_current;
use super::memory::{HolderKind, MemoryRef};
use super::pinned::PinnedAlloc;
use crate::error::{Error, Result};
use crate::operand::{DeviceRange, FillPattern, Memory};

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
    let bytes = dst.memory().bytes();
    if bytes != src.memory().bytes() {
        return Err(Error::InvalidArgument(format!(
            "copy between memory of different sizes: the destination holds {} bytes, the \
             source {} bytes; copy between equal lengths (slice the larger side)",
            bytes,
            src.memory().bytes()
        )));
    }
    if [dst.memory(), src.memory()]
        .iter()
        .any(|m| matches!(m, Memory::Device(r) if r.device == DeviceRange::PLANNING))
    {
        return Err(Error::PlanningOnly { what: "buffer" });
    }
    if bytes == 0 {
        return Ok(());
    }
    if overlapping(dst.memory(), src.memory()) {
        return Err(Error::InvalidArgument(format!(
            "a copy of {bytes} bytes whose destination and source overlap (slices of one \
             buffer); the driver copies between disjoint ranges only: copy through a buffer of \
             its own, or between ranges that do not overlap"
        )));
    }
    cudarc_ordered(stream, [dst.holder(), src.holder()], || {
        copy_ordered(stream, dst, src, track, bytes)
    })
}

/// Whether a copy's two sides share a byte: the driver's copies are defined only between
/// disjoint ranges.
fn overlapping(a: Memory, b: Memory) -> bool {
    let host = |m: Memory| match m {
        Memory::PinnedHost { ptr, bytes } | Memory::PageableHost { ptr, bytes } => {
            Some((ptr as usize, bytes))
        }
        Memory::Device(_) => None,
    };
    match (a, b) {
        (Memory::Device(x), Memory::Device(y)) => x.overlaps(&y),
        _ => match (host(a), host(b)) {
            (Some((p, n)), Some((q, m))) => {
                n > 0 && m > 0 && p < q.saturating_add(m) && q < p.saturating_add(n)
            }
            _ => false,
        },
    }
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
        return unsafe { copy_raw(stream, dst.memory(), src.memory(), bytes) };
    }
    if track {
        // A capture begun by other code would record the copy without running it, and the
        // protocol's event with it; refuse rather than track DMA that has not happened.
        super::status::refuse_capturing(stream, "a copy touching a PinnedBuffer")?;
    }
    PinnedAlloc::dma(&sides, stream, track, || {
        // SAFETY: the protocol holds the host allocations' locks and found no Rust borrow the
        // copy would race with; it tracks the copy (or nothing runs, inside a capture).
        unsafe { copy_raw(stream, dst.memory(), src.memory(), bytes) }
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
    let Memory::Device(range) = dst.memory() else {
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
    stream: &Arc<CudaStream>,
    src: &MemoryRef<'_>,
) -> Result<Vec<T>> {
    // On a lane: a capture that other code begins on `stream` cannot take the copy into a
    // graph that would write a `Vec` long freed on replay (`ffi/lane.rs`).
    super::lane::on_lane(stream, "reading device memory back", |lane| {
        read_device_on(lane, src)
    })
}

/// [`read_device`] on a stream no other code holds.
fn read_device_on<T: bytemuck::Pod>(stream: &CudaStream, src: &MemoryRef<'_>) -> Result<Vec<T>> {
    let Memory::Device(range) = src.memory() else {
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
