//! Device memory: [`DeviceBuffer`] and the views [`DeviceView`] and [`DeviceViewMut`] that
//! borrow sub-ranges of it.

use std::fmt;
use std::marker::PhantomData;
use std::ops::RangeBounds;
use std::sync::Arc;

use super::{
    bytes_of, device_ref, sub_range, CopySource, CopyTarget, DeviceMemory, DeviceMemoryMut, Pod,
};
use super::{CudarcView, CudarcViewMut};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::ffi::copy::read_device;
use crate::ffi::device_alloc::DeviceAlloc;
use crate::ffi::memory::{Holder, MemoryRef};
use crate::operand::{DeviceRange, FillPattern};
use crate::stream::{current_stream_on, Stream};

/// A buffer of `T` in device memory. Its address never changes, so graphs that captured it
/// keep working; the memory is freed once the buffer and every graph that uses it are gone.
///
/// `Send + Sync`: Rust code never dereferences device memory; the driver frees it from any
/// thread.
///
/// ```no_run
/// use streamgraph::{Device, DeviceBuffer};
/// let mut x = DeviceBuffer::from_host(&Device::new(None)?, &[1.0f32, 2.0, 3.0, 4.0])?;
/// x.copy_from_host(&[5.0, 6.0, 7.0, 8.0])?;
/// assert_eq!(x.slice(1..3).to_vec()?, [6.0, 7.0]); // a view of elements 1 and 2
/// # Ok::<(), streamgraph::Error>(())
/// ```
pub struct DeviceBuffer<T> {
    alloc: Arc<DeviceAlloc>,
    len: usize,
    ordinal: i32,
    _elem: PhantomData<T>,
}

impl<T> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("device", &self.ordinal)
            .field("ptr", &format_args!("{:#x}", self.alloc.ptr()))
            .field("len", &self.len)
            .finish()
    }
}

impl<T: Pod> DeviceBuffer<T> {
    fn alloc(device: &Device, len: usize) -> Result<Self> {
        let alloc = DeviceAlloc::new(device.ctx(), bytes_of::<T>(len)?)?;
        Ok(DeviceBuffer {
            alloc,
            len,
            ordinal: device.ordinal(),
            _elem: PhantomData,
        })
    }

    /// The buffer as memory cudarc's safe API reads, bound to `stream` (cudarc's
    /// `DevicePtr`): `stream.as_cudarc().memcpy_dtoh(&view, &mut host)`, a cuBLAS call's
    /// operand. Work cudarc queues with it on `stream` is in `stream`'s order; on another
    /// stream, that stream first waits for `stream` and the call is waited for. Refused with
    /// [`crate::Error::StreamCapturing`] while code outside streamgraph captures `stream`
    /// (and a capture of another stream the view is handed is invalidated).
    /// # Examples
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let stream = Stream::on(None, 0)?;
    ///     let x = DeviceBuffer::from_host(&stream.device(), &[1u32, 2, 3])?;
    ///     let view = x.cudarc_view(&stream)?; // a cudarc `DevicePtr<u32>` bound to `stream`
    ///     assert_eq!(stream.as_cudarc().clone_dtoh(&view)?, [1, 2, 3]); // cudarc's copy
    ///     Ok(())
    /// }
    /// ```
    pub fn cudarc_view<'a>(&'a self, stream: &'a Stream) -> Result<CudarcView<'a, T>> {
        self.bind(stream, "DeviceBuffer::cudarc_view")?;
        Ok(CudarcView::new(
            self.alloc.ptr(),
            self.len,
            stream.as_cudarc(),
            true,
        ))
    }

    /// The buffer as memory cudarc's safe API writes, bound to `stream` (cudarc's
    /// `DevicePtrMut`), as [`DeviceBuffer::cudarc_view`]: a memset's or a kernel's output.
    /// # Examples
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let stream = Stream::on(None, 0)?;
    ///     let mut x = DeviceBuffer::from_host(&stream.device(), &[1u32, 2, 3])?;
    ///     stream.as_cudarc().memset_zeros(&mut x.cudarc_view_mut(&stream)?)?; // cudarc's memset
    ///     assert_eq!(x.to_vec_on(&stream)?, [0, 0, 0]); // read after it, in `stream`'s order
    ///     Ok(())
    /// }
    /// ```
    pub fn cudarc_view_mut<'a>(&'a mut self, stream: &'a Stream) -> Result<CudarcViewMut<'a, T>> {
        self.bind(stream, "DeviceBuffer::cudarc_view_mut")?;
        Ok(CudarcViewMut::new(
            self.alloc.ptr(),
            self.len,
            stream.as_cudarc(),
            true,
        ))
    }

    /// Refuses a view on `stream` while other code captures it, or on another device.
    fn bind(&self, stream: &Stream, what: &'static str) -> Result<()> {
        stream.refuse_capturing(what)?;
        let device = stream.device().ordinal();
        if device != self.ordinal {
            return Err(Error::DeviceMismatch {
                what: "a cudarc view of a buffer on a stream of another device",
                left: self.ordinal,
                right: device,
            });
        }
        Ok(())
    }

    /// A buffer of `len` elements, all zero bits.
    ///
    /// See [`cuMemAlloc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    /// # Examples
    /// ```no_run
    /// use streamgraph::{Device, DeviceBuffer};
    /// assert_eq!(DeviceBuffer::<f32>::zeros(&Device::new(None)?, 4)?.to_vec()?, [0.0; 4]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn zeros(device: &Device, len: usize) -> Result<Self> {
        let buffer = Self::alloc(device, len)?;
        let stream = current_stream_on(device);
        crate::stream::fill_checked(
            &stream,
            &device_ref(&buffer),
            FillPattern::U8(0),
            "DeviceBuffer::zeros",
        )?;
        stream.synchronize()?;
        Ok(buffer)
    }

    /// A buffer holding a copy of `src` (waits for the copy).
    /// # Examples
    /// ```no_run
    /// use streamgraph::{Device, DeviceBuffer};
    /// assert_eq!(DeviceBuffer::from_host(&Device::new(None)?, &[1u32, 2])?.to_vec()?, [1, 2]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn from_host(device: &Device, src: &[T]) -> Result<Self> {
        let stream = current_stream_on(device);
        let buffer = Self::from_host_on(&stream, src)?;
        stream.synchronize()?;
        Ok(buffer)
    }

    /// A buffer filled from `src` in `stream`'s order; returns once the copy is queued (the
    /// driver has staged `src` by then). Refused with [`crate::Error::StreamCapturing`],
    /// before anything is allocated, while code outside streamgraph captures `stream`.
    /// # Examples
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let x = DeviceBuffer::from_host_on(&stream, &[1.0f32, 2.0])?; // queued on `stream`
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn from_host_on(stream: &Stream, src: &[T]) -> Result<Self> {
        // An allocation on the capturing thread would invalidate that capture.
        stream.refuse_capturing("DeviceBuffer::from_host")?;
        let buffer = Self::alloc(&stream.device(), src.len())?;
        crate::stream::copy_checked(
            stream,
            &buffer.copy_target(),
            &MemoryRef::pageable(src),
            "DeviceBuffer::from_host",
        )?;
        Ok(buffer)
    }

    /// Overwrites the buffer with `src` (same length) and waits for the copy.
    /// # Examples
    /// ```no_run
    /// use streamgraph::{Device, DeviceBuffer};
    /// let mut x = DeviceBuffer::<u32>::zeros(&Device::new(None)?, 3)?;
    /// x.copy_from_host(&[4, 5, 6])?; // as many elements as `x` has; waits for the copy
    /// assert_eq!(x.to_vec()?, [4, 5, 6]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        let stream = current_stream_on(&self.device()?);
        self.copy_from_host_on(&stream, src)?;
        stream.synchronize()
    }

    /// Queues an overwrite of the buffer with `src` (same length) on `stream`.
    /// # Examples
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::<u32>::zeros(&stream.device(), 3)?;
    /// x.copy_from_host_on(&stream, &[4, 5, 6])?; // queued on `stream`
    /// assert_eq!(x.to_vec_on(&stream)?, [4, 5, 6]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn copy_from_host_on(&mut self, stream: &Stream, src: &[T]) -> Result<()> {
        crate::stream::copy_checked(
            stream,
            &self.copy_target(),
            &MemoryRef::pageable(src),
            "DeviceBuffer::copy_from_host",
        )
    }

    /// Copies the buffer to a new `Vec` and waits for the copy.
    /// # Examples
    /// ```no_run
    /// use streamgraph::{Device, DeviceBuffer};
    /// assert_eq!(DeviceBuffer::from_host(&Device::new(None)?, &[-1i32, 2])?.to_vec()?, [-1, 2]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.as_view().to_vec()
    }

    /// Copies the buffer to a new `Vec` in `stream`'s order (after the work queued on it) and
    /// waits for the copy.
    /// # Examples
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// assert_eq!(DeviceBuffer::from_host_on(&stream, &[1u32, 2])?.to_vec_on(&stream)?, [1, 2]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn to_vec_on(&self, stream: &Stream) -> Result<Vec<T>> {
        self.as_view().to_vec_on(stream)
    }

    /// A buffer that can only be planned: a unique address range on the
    /// [`DeviceRange::PLANNING`] device with no memory behind it. It lets a pipeline's plan (and
    /// its race check) be built on a machine without a GPU; running it eagerly or capturing it
    /// is an [`Error::PlanningOnly`].
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert!(DeviceBuffer::<f32>::for_planning(1024)?.device().is_err()); // no memory behind it
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn for_planning(len: usize) -> Result<Self> {
        let alloc = DeviceAlloc::planning(bytes_of::<T>(len)?).ok_or_else(|| {
            Error::InvalidArgument(
                "the address space for plan-only buffers is used up; plan smaller buffers".into(),
            )
        })?;
        Ok(DeviceBuffer {
            alloc,
            len,
            ordinal: DeviceRange::PLANNING,
            _elem: PhantomData,
        })
    }

    /// The device the buffer lives on ([`Error::PlanningOnly`] for a plan-only buffer).
    /// # Examples
    /// ```no_run
    /// use streamgraph::{Device, DeviceBuffer};
    /// assert_eq!(DeviceBuffer::<f32>::zeros(&Device::new(Some(0))?, 4)?.device()?.ordinal(), 0);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn device(&self) -> Result<Device> {
        match self.alloc.ctx() {
            Some(ctx) => Ok(Device::from_ctx(ctx)),
            None => Err(Error::PlanningOnly { what: "buffer" }),
        }
    }
}

impl<T> DeviceBuffer<T> {
    /// A buffer over `alloc`, which holds `len` elements of `T` on device `ordinal`.
    pub(super) fn from_parts(alloc: Arc<DeviceAlloc>, len: usize, ordinal: i32) -> Self {
        DeviceBuffer {
            alloc,
            len,
            ordinal,
            _elem: PhantomData,
        }
    }

    /// The allocation, length and device of the buffer.
    pub(super) fn into_parts(self) -> (Arc<DeviceAlloc>, usize, i32) {
        (self.alloc, self.len, self.ordinal)
    }

    /// The allocation.
    pub(super) fn allocation(&self) -> &Arc<DeviceAlloc> {
        &self.alloc
    }

    /// Number of elements.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert_eq!(DeviceBuffer::<f32>::for_planning(256)?.len(), 256);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert!(DeviceBuffer::<f32>::for_planning(0)?.is_empty());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element (`CUdeviceptr`), for interop.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert_ne!(DeviceBuffer::<f32>::for_planning(4)?.device_ptr(), 0); // plan-only address
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn device_ptr(&self) -> u64 {
        self.alloc.ptr()
    }

    /// The whole buffer as a read-only view.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert_eq!(DeviceBuffer::<f32>::for_planning(4)?.as_view().len(), 4);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView {
            alloc: &self.alloc,
            ptr: self.alloc.ptr(),
            len: self.len,
            ordinal: self.ordinal,
            _elem: PhantomData,
        }
    }

    /// The elements in `range`, as a read-only view borrowing the buffer.
    ///
    /// # Panics
    /// When `range` is out of bounds, like slice indexing; [`DeviceBuffer::try_slice`] returns
    /// an error instead.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert_eq!(DeviceBuffer::<f32>::for_planning(8)?.slice(2..6).len(), 4); // elements 2 to 5
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceView<'_, T> {
        self.as_view().slice(range)
    }

    /// The elements in `range`, or [`Error::InvalidArgument`] when it is out of bounds.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert!(DeviceBuffer::<f32>::for_planning(4)?.try_slice(2..5).is_err()); // past the end
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        self.as_view().into_slice(range)
    }

    /// The elements in `range`, as a writable view borrowing the buffer exclusively.
    ///
    /// # Panics
    /// When `range` is out of bounds; [`DeviceBuffer::try_slice_mut`] returns an error instead.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert_eq!(DeviceBuffer::<f32>::for_planning(4)?.slice_mut(2..).len(), 2); // writable
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> DeviceViewMut<'_, T> {
        DeviceViewMut {
            view: self.as_view().slice(range),
        }
    }

    /// The elements in `range`, writable, or [`Error::InvalidArgument`] when out of bounds.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert!(DeviceBuffer::<f32>::for_planning(4)?.try_slice_mut(..5).is_err()); // past the end
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn try_slice_mut(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<DeviceViewMut<'_, T>> {
        let view = self.as_view().into_slice(range)?;
        Ok(DeviceViewMut { view })
    }
}

/// A read-only sub-range of a [`DeviceBuffer`], borrowed from it. Keeps its own copy of the
/// address so that a kernel argument can point at it.
///
/// A copy source and a kernel input, never written: it borrows the buffer shared, and others
/// may be reading it. Pipelines and the safe write APIs write device memory only through
/// `&mut` borrows or a [`DeviceViewMut`] ([`DeviceBuffer::slice_mut`]). Not `Copy`.
pub struct DeviceView<'a, T> {
    alloc: &'a Arc<DeviceAlloc>,
    ptr: u64,
    len: usize,
    ordinal: i32,
    _elem: PhantomData<&'a [T]>,
}

impl<T> fmt::Debug for DeviceView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceView")
            .field("device", &self.ordinal)
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .finish()
    }
}

impl<'a, T> DeviceView<'a, T> {
    /// Number of elements.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert_eq!(DeviceBuffer::<f32>::for_planning(8)?.slice(2..5).len(), 3);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert!(DeviceBuffer::<f32>::for_planning(8)?.slice(8..).is_empty());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// let x = DeviceBuffer::<u64>::for_planning(8)?;
    /// assert_eq!(x.slice(2..).device_ptr(), x.device_ptr() + 16); // two 8-byte elements in
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// A sub-range of this view.
    ///
    /// # Panics
    /// When `range` is out of bounds; see [`DeviceView::try_slice`].
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert_eq!(DeviceBuffer::<f32>::for_planning(8)?.slice(4..).slice(1..).len(), 3); // 5..8
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceView<'a, T> {
        match self.try_slice(range) {
            Ok(view) => view,
            Err(e) => panic!("{e}"),
        }
    }

    /// A sub-range of this view, or [`Error::InvalidArgument`] when out of bounds.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert!(DeviceBuffer::<f32>::for_planning(8)?.slice(4..).try_slice(..5).is_err());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'a, T>> {
        DeviceView { ..*self }.into_slice(range)
    }

    fn into_slice(self, range: impl RangeBounds<usize>) -> Result<DeviceView<'a, T>> {
        let (ptr, len) = sub_range::<T>(self.ptr, self.len, range)?;
        Ok(DeviceView { ptr, len, ..self })
    }

    fn bytes(&self) -> usize {
        // In bounds of a buffer whose size in bytes was checked when it was made.
        self.len.saturating_mul(std::mem::size_of::<T>())
    }

    fn memory(&self) -> MemoryRef<'a> {
        let bytes = self.bytes();
        MemoryRef::device(
            self.alloc,
            self.ordinal,
            self.ptr,
            bytes,
            std::mem::size_of::<T>(),
        )
        .unwrap_or_else(|| {
            // A view lies inside its allocation by construction; should it not, name nothing.
            MemoryRef::promised_device(
                DeviceRange {
                    device: self.ordinal,
                    ptr: self.ptr,
                    bytes: 0,
                },
                std::mem::size_of::<T>(),
                Holder::device(self.alloc),
            )
        })
    }
}

impl<T: Pod> DeviceView<'_, T> {
    /// Copies the view to a new `Vec` and waits for the copy.
    /// # Examples
    /// ```no_run
    /// use streamgraph::{Device, DeviceBuffer};
    /// let x = DeviceBuffer::from_host(&Device::new(None)?, &[1.0f32, 2.0, 3.0])?;
    /// assert_eq!(x.slice(1..).to_vec()?, [2.0, 3.0]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn to_vec(&self) -> Result<Vec<T>> {
        if self.ordinal == DeviceRange::PLANNING {
            return Err(Error::PlanningOnly { what: "buffer" });
        }
        let device = Device::new(Some(self.ordinal))?;
        self.to_vec_on(&current_stream_on(&device))
    }

    /// Copies the view to a new `Vec` in `stream`'s order and waits for the copy. The stream
    /// must belong to the view's device.
    /// # Examples
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let x = DeviceBuffer::from_host_on(&stream, &[1u32, 2, 3])?;
    /// assert_eq!(x.slice(1..).to_vec_on(&stream)?, [2, 3]); // after the copy into `x`
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn to_vec_on(&self, stream: &Stream) -> Result<Vec<T>> {
        read_device(stream.as_cudarc(), &self.memory())
    }
}

/// A writable sub-range of a [`DeviceBuffer`], borrowed from it exclusively
/// ([`DeviceBuffer::slice_mut`]).
pub struct DeviceViewMut<'a, T> {
    view: DeviceView<'a, T>,
}

impl<T> fmt::Debug for DeviceViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DeviceViewMut").field(&self.view).finish()
    }
}

impl<'a, T> DeviceViewMut<'a, T> {
    /// Number of elements.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert_eq!(DeviceBuffer::<f32>::for_planning(8)?.slice_mut(..3).len(), 3);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.view.len
    }

    /// Whether it holds no elements.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert!(DeviceBuffer::<f32>::for_planning(8)?.slice_mut(8..).is_empty());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.view.len == 0
    }

    /// A read-only view of the same memory, borrowed from this one: it cannot be used while
    /// this view is borrowed exclusively.
    /// # Examples
    /// ```
    /// use streamgraph::DeviceBuffer;
    /// assert_eq!(DeviceBuffer::<f32>::for_planning(8)?.slice_mut(2..).as_view().len(), 6);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView { ..self.view }
    }
}

// SAFETY: the range lies inside `self.alloc` (checked when it was made), which the buffer
// owns and hands out as its holder.
unsafe impl<T: Pod> DeviceMemory for DeviceBuffer<T> {
    type Elem = T;
    #[inline]
    fn range(&self) -> DeviceRange {
        self.as_view().range()
    }
    fn holder(&self) -> Holder<'_> {
        Holder::device(&self.alloc)
    }
    fn len(&self) -> usize {
        self.len
    }
}

// SAFETY: `&mut DeviceBuffer` or ownership is needed to write through it.
unsafe impl<T: Pod> DeviceMemoryMut for DeviceBuffer<T> {}

// SAFETY: as for `DeviceBuffer`: the view lies inside the allocation it borrows.
unsafe impl<T: Pod> DeviceMemory for DeviceView<'_, T> {
    type Elem = T;
    #[inline]
    fn range(&self) -> DeviceRange {
        DeviceRange {
            device: self.ordinal,
            ptr: self.ptr,
            bytes: self.bytes(),
        }
    }
    fn holder(&self) -> Holder<'_> {
        Holder::device(self.alloc)
    }
    fn len(&self) -> usize {
        self.len
    }
}

// SAFETY: as for `DeviceView`.
unsafe impl<T: Pod> DeviceMemory for DeviceViewMut<'_, T> {
    type Elem = T;
    fn range(&self) -> DeviceRange {
        self.view.range()
    }
    fn holder(&self) -> Holder<'_> {
        Holder::device(self.view.alloc)
    }
    fn len(&self) -> usize {
        self.view.len
    }
}

// SAFETY: made from `&mut DeviceBuffer` only, and not `Copy`.
unsafe impl<T: Pod> DeviceMemoryMut for DeviceViewMut<'_, T> {}

// SAFETY: the memory is the buffer's own allocation of `T`s, handed out with its holder.
unsafe impl<T: Pod> CopySource<T> for DeviceBuffer<T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        self.as_view().memory()
    }
}

// SAFETY: as above; device memory, which only `&mut DeviceBuffer` (or the owner) writes.
unsafe impl<T: Pod> CopyTarget<T> for DeviceBuffer<T> {
    fn copy_target(&self) -> MemoryRef<'_> {
        self.as_view().memory()
    }
}

// SAFETY: the view's range inside its buffer's allocation, with its holder.
unsafe impl<T: Pod> CopySource<T> for DeviceView<'_, T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        self.memory()
    }
}

// SAFETY: as for `DeviceView`.
unsafe impl<T: Pod> CopySource<T> for DeviceViewMut<'_, T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        self.view.memory()
    }
}

// SAFETY: as for `DeviceView`; made from `&mut DeviceBuffer` only, and not `Copy`.
unsafe impl<T: Pod> CopyTarget<T> for DeviceViewMut<'_, T> {
    fn copy_target(&self) -> MemoryRef<'_> {
        self.view.memory()
    }
}
