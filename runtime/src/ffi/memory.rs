//! The handles through which the runtime names memory to the driver: [`MemoryRef`] (memory a
//! copy, fill or kernel reads), [`MemoryMut`] (memory one writes, reached through an exclusive
//! borrow) and their [`Holder`], what keeps the memory allocated. The memory itself is a
//! [`DeviceAlloc`], a [`PinnedAlloc`] (with the protocol that keeps DMA apart from Rust
//! references to it, in [`super::pinned`]), pageable host memory or foreign memory.
//!
//! Device memory is never a Rust object, so the driver may write it at any time; what must
//! hold is that it is *allocated* while work can still touch it. Every allocation is an
//! `Arc`, and a captured graph keeps the `Arc`s of the memory it uses (see [`MemoryRef`]'s
//! holder), so memory outlives every replay whatever the pipeline value does.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::device_alloc::DeviceAlloc;
use super::pinned::PinnedAlloc;
use crate::operand::{DeviceRange, Memory};

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
    /// A pipeline's temporary: memory of the run (stream-ordered allocation) or of the graph
    /// (its memory nodes), which the statements that allocate and free it bound. Nothing to
    /// keep.
    Temporary,
    /// Memory of a cudarc `CudaSlice` or view, borrowed for the call, which cudarc frees in
    /// the order of this stream (see [`super::cudarc_order::cudarc_ordered`]). Never captured.
    Cudarc(&'a Arc<CudaStream>),
}

impl Holder<'_> {
    /// Memory whose owner vouches for it in an `unsafe` impl: nothing to keep.
    pub const FOREIGN: Holder<'static> = Holder(HolderKind::Foreign);
    /// A pipeline's temporary: its statements bound its life; nothing to keep.
    pub(crate) const TEMPORARY: Holder<'static> = Holder(HolderKind::Temporary);
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

impl fmt::Debug for Holder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            HolderKind::Foreign => "Foreign",
            HolderKind::Pageable => "Pageable",
            HolderKind::Temporary => "Temporary",
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
