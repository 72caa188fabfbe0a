//! Page-locked host memory: [`PinnedBuffer`] and the guards [`PinnedRef`] and [`PinnedMut`]
//! through which Rust reaches its elements.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use super::{bytes_of, CopySource, CopyTarget, Pod};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::ffi::memory::{MemoryRef, PinnedAlloc, PinnedRead, PinnedWrite};
use crate::operand::DeviceRange;

/// A buffer of `T` in page-locked (pinned) host memory: copies to and from it run
/// asynchronously and can be captured into graphs.
///
/// Rust reaches its elements through guards: [`PinnedBuffer::as_slice`] waits for the copies
/// (and graph launches) that write it, [`PinnedBuffer::as_mut_slice`] for every copy that
/// touches it. While a guard lives, a copy or launch that would race with it is refused with
/// [`Error::PinnedBusy`], so a DMA engine never writes memory Rust is reading.
///
/// `Send` when `T: Send` and `Sync` when `T: Sync`: it owns its elements like a `Box<[T]>`.
///
/// ```no_run
/// # extern crate streamgraph_runtime as streamgraph;
/// use streamgraph::{Device, DeviceBuffer, PinnedBuffer, Stream};
/// # fn main() -> streamgraph::Result<()> {
/// let device = Device::new(None)?;
/// let stream = Stream::new(&device, 0)?;
/// let host = PinnedBuffer::from_slice(&device, &[1u32, 2, 3])?;
/// let mut on_device = DeviceBuffer::<u32>::zeros(&device, 3)?;
/// let mut back = PinnedBuffer::<u32>::zeros(&device, 3)?;
/// stream.copy(&mut on_device, &host)?; // asynchronous: DMA from pinned memory
/// stream.copy(&mut back, &on_device)?;
/// assert_eq!(&*back.as_slice()?, &[1, 2, 3]); // the guard waits for the copy into `back`
/// # Ok(())
/// # }
/// ```
pub struct PinnedBuffer<T> {
    alloc: Arc<PinnedAlloc>,
    len: usize,
    ordinal: i32,
    _elem: PhantomData<T>,
}

impl<T> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("device", &self.ordinal)
            .field("ptr", &self.alloc.addr())
            .field("len", &self.len)
            .finish()
    }
}

impl<T: Pod> PinnedBuffer<T> {
    /// A pinned buffer of `len` elements, all zero bits.
    ///
    /// See [`cuMemHostAlloc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    pub fn zeros(device: &Device, len: usize) -> Result<Self> {
        let alloc = PinnedAlloc::pinned(device.ctx(), bytes_of::<T>(len)?, |_| {})?;
        Ok(PinnedBuffer {
            alloc,
            len,
            ordinal: device.ordinal(),
            _elem: PhantomData,
        })
    }

    /// A pinned buffer holding a copy of `src`.
    ///
    /// See [`cuMemHostAlloc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    pub fn from_slice(device: &Device, src: &[T]) -> Result<Self> {
        let bytes = bytes_of::<T>(src.len())?;
        let alloc = PinnedAlloc::pinned(device.ctx(), bytes, |b| {
            b.copy_from_slice(bytemuck::cast_slice(src))
        })?;
        Ok(PinnedBuffer {
            alloc,
            len: src.len(),
            ordinal: device.ordinal(),
            _elem: PhantomData,
        })
    }

    /// A zeroed buffer in ordinary heap memory, for plans built on a machine without a GPU.
    /// Copies to and from it can be planned and run eagerly (as pageable memory), but not
    /// captured.
    pub fn for_planning(len: usize) -> Result<Self> {
        let bytes = bytes_of::<T>(len)?;
        let alloc =
            PinnedAlloc::heap(bytes, std::mem::align_of::<T>(), |_| {}).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "a plan-only buffer of {len} elements ({bytes} bytes) cannot be allocated"
                ))
            })?;
        Ok(PinnedBuffer {
            alloc,
            len,
            ordinal: DeviceRange::HOST,
            _elem: PhantomData,
        })
    }

    /// The elements, once the copies writing them have finished. While the guard lives,
    /// copies into the buffer are refused ([`Error::PinnedBusy`]).
    pub fn as_slice(&self) -> Result<PinnedRef<'_, T>> {
        Ok(PinnedRef {
            guard: self.alloc.read()?,
            _elem: PhantomData,
        })
    }

    /// The elements, mutably, once every copy touching them has finished. While the guard
    /// lives, copies to or from the buffer are refused ([`Error::PinnedBusy`]).
    pub fn as_mut_slice(&mut self) -> Result<PinnedMut<'_, T>> {
        Ok(PinnedMut {
            guard: self.alloc.write()?,
            _elem: PhantomData,
        })
    }

    /// A copy of the elements, once the copies writing them have finished.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        Ok(self.as_slice()?.to_vec())
    }

    /// The `len` elements from `start`, as copy memory; `None` when out of bounds.
    #[cfg(test)]
    pub(crate) fn part(&self, start: usize, len: usize) -> Option<MemoryRef<'_>> {
        let size = std::mem::size_of::<T>();
        MemoryRef::pinned_part(
            &self.alloc,
            start.checked_mul(size)?,
            len.checked_mul(size)?,
            size,
        )
    }
}

impl<T> PinnedBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The elements of a [`PinnedBuffer`], read-only (see [`PinnedBuffer::as_slice`]).
pub struct PinnedRef<'a, T> {
    guard: PinnedRead<'a>,
    _elem: PhantomData<&'a [T]>,
}

impl<T: Pod> Deref for PinnedRef<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // The allocation is aligned for `T` and holds whole elements (it was made for them).
        bytemuck::cast_slice(self.guard.bytes())
    }
}

impl<T: Pod + fmt::Debug> fmt::Debug for PinnedRef<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The elements of a [`PinnedBuffer`], mutably (see [`PinnedBuffer::as_mut_slice`]).
pub struct PinnedMut<'a, T> {
    guard: PinnedWrite<'a>,
    _elem: PhantomData<&'a mut [T]>,
}

impl<T: Pod> Deref for PinnedMut<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        bytemuck::cast_slice(self.guard.bytes())
    }
}

impl<T: Pod> DerefMut for PinnedMut<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        bytemuck::cast_slice_mut(self.guard.bytes_mut())
    }
}

impl<T: Pod + fmt::Debug> fmt::Debug for PinnedMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

// SAFETY: the buffer's own host allocation of `T`s; copies follow its DMA protocol.
unsafe impl<T: Pod> CopySource<T> for PinnedBuffer<T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        MemoryRef::pinned(&self.alloc, std::mem::size_of::<T>())
    }
}

// SAFETY: as above.
unsafe impl<T: Pod> CopyTarget<T> for PinnedBuffer<T> {
    fn copy_target(&self) -> MemoryRef<'_> {
        MemoryRef::pinned(&self.alloc, std::mem::size_of::<T>())
    }
}
