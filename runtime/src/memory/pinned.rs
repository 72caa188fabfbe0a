//! Page-locked host memory: [`PinnedBuffer`] and the guards [`PinnedRef`] and [`PinnedMut`]
//! through which Rust reaches its elements.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut, RangeBounds};
use std::sync::Arc;

use super::{bytes_of, out_of_bounds, resolve, CopySource, CopyTarget, Pod};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::ffi::memory::MemoryRef;
use crate::ffi::pinned::{PinnedAlloc, PinnedRead, PinnedWrite};
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
/// use streamgraph::{Device, DeviceBuffer, PinnedBuffer, Stream};
/// let device = Device::new(None)?;
/// let stream = Stream::new(&device, 0)?;
/// let host = PinnedBuffer::from_slice(&device, &[1u32, 2, 3])?;
/// let mut on_device = DeviceBuffer::<u32>::zeros(&device, 3)?;
/// let mut back = PinnedBuffer::<u32>::zeros(&device, 3)?;
/// stream.copy(&mut on_device, &host)?; // asynchronous: DMA from pinned memory
/// stream.copy(&mut back, &on_device)?;
/// assert_eq!(&*back.as_slice()?, &[1, 2, 3]); // the guard waits for the copy into `back`
/// # Ok::<(), streamgraph::Error>(())
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
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, PinnedBuffer};
    /// let host = PinnedBuffer::<f32>::zeros(&Device::new(None)?, 1024)?;
    /// assert_eq!(host.to_vec()?, vec![0.0; 1024]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, PinnedBuffer};
    /// let host = PinnedBuffer::from_slice(&Device::new(None)?, &[1u32, 2, 3])?;
    /// assert_eq!(&*host.as_slice()?, &[1, 2, 3]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// let mut host = PinnedBuffer::<u32>::for_planning(4)?; // heap memory: no GPU needed
    /// host.as_mut_slice()?.copy_from_slice(&[1, 2, 3, 4]);
    /// assert_eq!(host.to_vec()?, [1, 2, 3, 4]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, PinnedBuffer, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let x = DeviceBuffer::from_host(&stream.device(), &[1u32, 2, 3])?;
    /// let mut host = PinnedBuffer::<u32>::zeros(&stream.device(), 3)?;
    /// stream.copy(&mut host, &x)?; // asynchronous
    /// let elements = host.as_slice()?; // waits for the copy into `host`
    /// assert_eq!(&*elements, &[1, 2, 3]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn as_slice(&self) -> Result<PinnedRef<'_, T>> {
        Ok(PinnedRef {
            guard: self.alloc.read()?,
            _elem: PhantomData,
        })
    }

    /// The elements, mutably, once every copy touching them has finished. While the guard
    /// lives, copies to or from the buffer are refused ([`Error::PinnedBusy`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// let mut host = PinnedBuffer::<f32>::for_planning(3)?;
    /// host.as_mut_slice()?.copy_from_slice(&[1.0, 2.0, 3.0]); // after every copy touching `host`
    /// assert_eq!(host.to_vec()?, [1.0, 2.0, 3.0]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn as_mut_slice(&mut self) -> Result<PinnedMut<'_, T>> {
        Ok(PinnedMut {
            guard: self.alloc.write()?,
            _elem: PhantomData,
        })
    }

    /// A copy of the elements, once the copies writing them have finished.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// let host = PinnedBuffer::<u32>::for_planning(3)?;
    /// assert_eq!(host.to_vec()?, [0, 0, 0]); // zeroed when made
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// assert_eq!(PinnedBuffer::<u32>::for_planning(16)?.len(), 16);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// assert!(PinnedBuffer::<u32>::for_planning(0)?.is_empty());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn as_view(&self) -> PinnedView<'_, T> {
        PinnedView {
            alloc: &self.alloc,
            start: 0,
            len: self.len,
            _elem: PhantomData,
        }
    }

    /// The elements in `range`, as a read-only view borrowing the buffer: a copy source.
    /// Copies from it take part in the buffer's DMA protocol (see [`PinnedBuffer`]).
    ///
    /// # Panics
    ///
    /// When `range` is out of bounds, like slice indexing; [`PinnedBuffer::try_slice`] returns
    /// an error instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// let mut host = PinnedBuffer::<u32>::for_planning(4)?;
    /// host.as_mut_slice()?.copy_from_slice(&[1, 2, 3, 4]);
    /// let middle = host.slice(1..3); // a copy source, as `&host` is
    /// assert_eq!(middle.to_vec()?, [2, 3]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> PinnedView<'_, T> {
        self.as_view().slice(range)
    }

    /// The elements in `range`, or [`Error::InvalidArgument`] when it is out of bounds.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::{Error, PinnedBuffer};
    /// let host = PinnedBuffer::<u32>::for_planning(4)?;
    /// assert_eq!(host.try_slice(2..)?.len(), 2);
    /// assert!(matches!(host.try_slice(3..5), Err(Error::InvalidArgument(_))));
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Result<PinnedView<'_, T>> {
        self.as_view().try_slice(range)
    }

    /// The elements in `range`, as a writable view borrowing the buffer exclusively: a copy
    /// source and target. Copies into it are refused while a guard of the buffer lives, and
    /// the buffer's guards wait for them, as for copies into the whole buffer.
    ///
    /// # Panics
    ///
    /// When `range` is out of bounds; [`PinnedBuffer::try_slice_mut`] returns an error instead.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, PinnedBuffer, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let x = DeviceBuffer::from_host(&stream.device(), &[7u32, 8])?;
    /// let mut host = PinnedBuffer::<u32>::zeros(&stream.device(), 4)?;
    /// stream.copy(&mut host.slice_mut(2..), &x)?; // into elements 2 and 3
    /// assert_eq!(host.to_vec()?, [0, 0, 7, 8]); // waits for that copy
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> PinnedViewMut<'_, T> {
        PinnedViewMut {
            view: self.as_view().slice(range),
            _mut: PhantomData,
        }
    }

    /// The elements in `range`, writable, or [`Error::InvalidArgument`] when out of bounds.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::{Error, PinnedBuffer};
    /// let mut host = PinnedBuffer::<u32>::for_planning(4)?;
    /// assert_eq!(host.try_slice_mut(..3)?.len(), 3);
    /// assert!(matches!(host.try_slice_mut(..5), Err(Error::InvalidArgument(_))));
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn try_slice_mut(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<PinnedViewMut<'_, T>> {
        Ok(PinnedViewMut {
            view: self.as_view().try_slice(range)?,
            _mut: PhantomData,
        })
    }
}

/// A sub-range of a [`PinnedBuffer`] borrowed from it shared ([`PinnedBuffer::slice`]): a
/// copy source only. Copies write pinned memory through `&mut PinnedBuffer` or a
/// [`PinnedViewMut`] ([`PinnedBuffer::slice_mut`]).
///
/// The DMA protocol guards the whole buffer: a copy from a view counts as a copy from the
/// buffer, so the buffer's [`PinnedBuffer::as_mut_slice`] waits for it; a copy into a
/// [`PinnedViewMut`] counts as a copy into the buffer, refused while a guard of it lives and
/// waited for by the guards made later.
pub struct PinnedView<'a, T> {
    alloc: &'a Arc<PinnedAlloc>,
    /// First element, counted from the buffer's start.
    start: usize,
    len: usize,
    _elem: PhantomData<&'a [T]>,
}

impl<T> fmt::Debug for PinnedView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedView")
            .field("start", &self.start)
            .field("len", &self.len)
            .finish()
    }
}

impl<'a, T> PinnedView<'a, T> {
    /// Number of elements.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// let host = PinnedBuffer::<u32>::for_planning(8)?;
    /// assert_eq!(host.slice(2..5).len(), 3);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// let host = PinnedBuffer::<u32>::for_planning(8)?;
    /// assert!(host.slice(8..).is_empty());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A sub-range of this view.
    ///
    /// # Panics
    ///
    /// When `range` is out of bounds; see [`PinnedView::try_slice`].
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// let mut host = PinnedBuffer::<u32>::for_planning(4)?;
    /// host.as_mut_slice()?.copy_from_slice(&[1, 2, 3, 4]);
    /// let tail = host.slice(1..).slice(1..); // counted from the view's first element
    /// assert_eq!(tail.to_vec()?, [3, 4]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> PinnedView<'a, T> {
        match self.try_slice(range) {
            Ok(view) => view,
            Err(e) => panic!("{e}"),
        }
    }

    /// A sub-range of this view, or [`Error::InvalidArgument`] when out of bounds.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// let host = PinnedBuffer::<u32>::for_planning(8)?;
    /// let tail = host.slice(4..);
    /// assert!(tail.try_slice(..4).is_ok() && tail.try_slice(..5).is_err());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Result<PinnedView<'a, T>> {
        let Some((start, end)) = resolve((range.start_bound(), range.end_bound()), self.len) else {
            return Err(out_of_bounds(&range, self.len));
        };
        Ok(PinnedView {
            alloc: self.alloc,
            start: self.start + start,
            len: end - start,
            _elem: PhantomData,
        })
    }

    fn memory(&self) -> MemoryRef<'a> {
        let size = std::mem::size_of::<T>();
        // In bounds of the buffer by construction, whose size in bytes was checked when it was
        // made; should it not be, `pinned_view` names nothing.
        let offset = self.start.saturating_mul(size);
        MemoryRef::pinned_view(self.alloc, offset, self.len.saturating_mul(size), size)
    }
}

impl<T: Pod> PinnedView<'_, T> {
    /// A copy of the view's elements, once the copies writing the buffer have finished.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// let mut host = PinnedBuffer::<u32>::for_planning(4)?;
    /// host.as_mut_slice()?.copy_from_slice(&[1, 2, 3, 4]);
    /// assert_eq!(host.slice(..2).to_vec()?, [1, 2]); // waits for copies writing `host`
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let guard = self.alloc.read()?;
        let all: &[T] = bytemuck::cast_slice(guard.bytes());
        let end = self.start.saturating_add(self.len);
        Ok(all.get(self.start..end).unwrap_or_default().to_vec())
    }
}

/// A writable sub-range of a [`PinnedBuffer`] ([`PinnedBuffer::slice_mut`]): a copy source
/// and target, under the buffer's DMA protocol.
pub struct PinnedViewMut<'a, T> {
    view: PinnedView<'a, T>,
    _mut: PhantomData<&'a mut [T]>,
}

impl<T> fmt::Debug for PinnedViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PinnedViewMut").field(&self.view).finish()
    }
}

impl<'a, T> PinnedViewMut<'a, T> {
    /// Number of elements.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// let mut host = PinnedBuffer::<u32>::for_planning(8)?;
    /// assert_eq!(host.slice_mut(..3).len(), 3);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.view.len
    }

    /// Whether it holds no elements.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// let mut host = PinnedBuffer::<u32>::for_planning(8)?;
    /// assert!(host.slice_mut(8..).is_empty());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.view.len == 0
    }

    /// A read-only view of the same memory, borrowed from this one: it cannot be used while
    /// this view is borrowed exclusively.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::PinnedBuffer;
    /// let mut host = PinnedBuffer::<u32>::for_planning(4)?;
    /// host.as_mut_slice()?.copy_from_slice(&[1, 2, 3, 4]);
    /// let tail = host.slice_mut(2..);
    /// assert_eq!(tail.as_view().to_vec()?, [3, 4]); // read through the writable view
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn as_view(&self) -> PinnedView<'_, T> {
        PinnedView { ..self.view }
    }
}

// SAFETY: a range inside the buffer's own host allocation of `T`s (checked when the view was
// made); copies follow the allocation's DMA protocol.
unsafe impl<T: Pod> CopySource<T> for PinnedView<'_, T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        self.memory()
    }
}

// SAFETY: as for `PinnedView`.
unsafe impl<T: Pod> CopySource<T> for PinnedViewMut<'_, T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        self.view.memory()
    }
}

// SAFETY: as for `PinnedView`; made from `&mut PinnedBuffer`.
unsafe impl<T: Pod> CopyTarget<T> for PinnedViewMut<'_, T> {
    fn copy_target(&self) -> MemoryRef<'_> {
        self.view.memory()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operand::Memory;

    fn host_range(m: MemoryRef<'_>) -> (usize, usize) {
        match m.memory() {
            Memory::PinnedHost { ptr, bytes } | Memory::PageableHost { ptr, bytes } => {
                (ptr as usize, bytes)
            }
            Memory::Device(_) => panic!("host memory expected"),
        }
    }

    #[test]
    fn views_name_their_sub_range_of_the_buffer() -> Result<()> {
        let mut buffer = PinnedBuffer::<u32>::for_planning(16)?;
        let (base, bytes) = host_range(buffer.copy_source());
        assert_eq!(bytes, 64);
        let view = buffer.slice(4..12);
        assert_eq!(view.len(), 8);
        assert_eq!(host_range(view.copy_source()), (base + 16, 32));
        assert_eq!(host_range(view.slice(2..=3).copy_source()), (base + 24, 8));
        assert!(view.try_slice(..9).is_err());
        assert!(buffer.try_slice(15..17).is_err());
        let tail = buffer.slice_mut(12..);
        assert_eq!(host_range(tail.copy_target()), (base + 48, 16));
        assert_eq!(tail.len(), 4);
        assert!(buffer.try_slice_mut(17..).is_err());
        assert!(buffer.slice(16..).is_empty());
        Ok(())
    }

    #[test]
    fn views_read_their_elements_through_the_buffer_guard() -> Result<()> {
        let mut buffer = PinnedBuffer::<u32>::for_planning(6)?;
        buffer.as_mut_slice()?.copy_from_slice(&[0, 1, 2, 3, 4, 5]);
        assert_eq!(buffer.slice(2..5).to_vec()?, [2, 3, 4]);
        let view_target = buffer.slice_mut(1..3);
        assert_eq!(view_target.as_view().to_vec()?, [1, 2]);
        Ok(())
    }
}
