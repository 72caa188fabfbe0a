//! Device and pinned host memory, and the traits that let pipelines name them.
//!
//! - [`DeviceBuffer<T>`]: device memory from `cuMemAlloc`, at a stable address (a replayed
//!   graph keeps using it), freed on drop. [`DeviceBuffer::slice`] borrows a sub-range as a
//!   [`DeviceView`].
//! - [`PinnedBuffer<T>`]: page-locked host memory (`cuMemHostAlloc`), which copies can read
//!   and write asynchronously and which graphs can capture.
//! - Ordinary slices and `Vec`s are pageable host memory: copy sources only.
//!
//! The traits [`DeviceMemory`], [`CopySource`] and [`CopyTarget`] are what kernel arguments,
//! `copy` and `fill` statements accept.
//!
//! The synchronous conveniences ([`DeviceBuffer::from_host`], [`DeviceBuffer::to_vec`], …)
//! run on the current stream when it belongs to the buffer's device (see
//! [`crate::current_stream`]), else on the device's default stream, and wait for it. Work on
//! *other* streams is not waited for: synchronize those first.
//!
//! ```no_run
//! use streamgraph_runtime::{Device, DeviceBuffer, PinnedBuffer, Stream};
//!
//! let device = Device::new(None)?;
//! let stream = Stream::new(&device, 0)?;
//! let x = DeviceBuffer::from_host(&device, &[1u32, 2, 3, 4])?;
//! let y = DeviceBuffer::<u32>::zeros(&device, 4)?;
//! stream.copy(&y.slice(0..2), &x.slice(2..4))?; // device to device, in stream order
//! stream.fill(&y.slice(2..), 7)?;
//! let host = PinnedBuffer::<u32>::zeros(&device, 4)?;
//! stream.copy(&host, &y)?;
//! stream.synchronize()?; // the pinned buffer is written by then
//! assert_eq!(host.as_slice(), &[3, 4, 7, 7]);
//! # Ok::<(), streamgraph_runtime::Error>(())
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use crate::device::Device;
use crate::error::{Error, Result};
use crate::ffi;
use crate::issue::{DeviceRange, FillPattern, Issuer, KernelArg, Memory, MemoryRef};
use crate::program::Statement;
use crate::stream::{current_stream_on, Stream};

pub use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

/// Device memory holding elements of type `Self::Elem`: a buffer or a sub-range of one.
pub trait DeviceMemory {
    /// The element type.
    type Elem: DeviceRepr;
    /// The memory's address range.
    fn range(&self) -> DeviceRange;
    /// A reference to the stored `CUdeviceptr`, which a kernel argument points at.
    fn ptr_ref(&self) -> &u64;
    /// Number of elements.
    fn len(&self) -> usize {
        self.range().bytes / std::mem::size_of::<Self::Elem>().max(1)
    }
    /// Whether it holds no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Memory a `copy` can read from: device, pinned or pageable host memory of `T`.
pub trait CopySource<T> {
    /// The memory, borrowed from `self`.
    fn copy_source(&self) -> MemoryRef<'_>;
}

/// Memory a `copy` can write to.
pub trait CopyTarget<T> {
    /// The memory, borrowed from `self`.
    fn copy_target(&self) -> MemoryRef<'_>;
}

/// An element type a `fill` can write with a memset (1, 2 or 4 bytes wide).
pub trait FillValue: DeviceRepr + Copy {
    /// The value's bit pattern.
    fn pattern(self) -> FillPattern;
}

macro_rules! fill_value {
    ($($t:ty => $variant:ident as $bits:ty),* $(,)?) => {$(
        impl FillValue for $t {
            fn pattern(self) -> FillPattern {
                FillPattern::$variant(<$bits>::from_ne_bytes(self.to_ne_bytes()))
            }
        }
    )*};
}

fill_value!(
    u8 => U8 as u8, i8 => U8 as u8,
    u16 => U16 as u16, i16 => U16 as u16,
    u32 => U32 as u32, i32 => U32 as u32, f32 => U32 as u32,
);

#[doc(hidden)]
pub mod __private {
    //! Entry points of generated code; they erase types after the compiler has checked them.
    use super::*;

    /// `&x` in launch arguments.
    pub fn arg_read<M: DeviceMemory + ?Sized>(m: &M) -> KernelArg<'_> {
        KernelArg::from_raw(
            (m.ptr_ref() as *const u64).cast(),
            Some(crate::issue::BufferAccess {
                range: m.range(),
                mode: crate::AccessMode::Read,
            }),
        )
    }

    /// `&mut x` in launch arguments.
    pub fn arg_write<M: DeviceMemory + ?Sized>(m: &M) -> KernelArg<'_> {
        KernelArg::from_raw(
            (m.ptr_ref() as *const u64).cast(),
            Some(crate::issue::BufferAccess {
                range: m.range(),
                mode: crate::AccessMode::Write,
            }),
        )
    }

    /// A by-value kernel argument (scalar or `#[repr(C)]` struct).
    pub fn arg_value<T: DeviceRepr>(v: &T) -> KernelArg<'_> {
        KernelArg::from_raw((v as *const T).cast(), None)
    }

    /// `copy DST <- SRC`: both sides must hold the same element type.
    pub fn copy<I, T, D, S>(
        issuer: &mut I,
        stmt: &'static Statement,
        dst: &D,
        src: &S,
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
        D: CopyTarget<T> + ?Sized,
        S: CopySource<T> + ?Sized,
    {
        issuer.copy(stmt, dst.copy_target(), src.copy_source())
    }

    /// `fill BUF = VALUE`.
    pub fn fill<I, D>(
        issuer: &mut I,
        stmt: &'static Statement,
        dst: &D,
        value: D::Elem,
    ) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
        D: DeviceMemory + ?Sized,
        D::Elem: FillValue,
    {
        issuer.fill(stmt, dst.range(), value.pattern())
    }

    /// `host F`.
    pub fn host<I, F>(issuer: &mut I, stmt: &'static Statement, f: F) -> Result<(), Error>
    where
        I: Issuer + ?Sized,
        F: Fn() + Send + Sync + 'static,
    {
        issuer.host(stmt, std::sync::Arc::new(f))
    }
}

impl<'a> KernelArg<'a> {
    /// A by-value argument: a scalar or a `#[repr(C)]` struct, as the kernel's parameter type.
    pub fn value<T: DeviceRepr>(value: &'a T) -> Self {
        __private::arg_value(value)
    }

    /// A pointer argument to memory the kernel only reads (`const T*`).
    pub fn read<M: DeviceMemory + ?Sized>(memory: &'a M) -> Self {
        __private::arg_read(memory)
    }

    /// A pointer argument to memory the kernel writes (`T*`).
    pub fn write<M: DeviceMemory + ?Sized>(memory: &'a M) -> Self {
        __private::arg_write(memory)
    }
}

/// Resolves `range` against `len` elements: `Some((start, end))` when in bounds.
fn resolve(range: impl RangeBounds<usize>, len: usize) -> Option<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1)?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    (start <= end && end <= len).then_some((start, end))
}

fn out_of_bounds(start: Bound<&usize>, end: Bound<&usize>, len: usize) -> Error {
    Error::InvalidArgument(format!(
        "slice {:?}..{:?} is out of bounds of a buffer of {len} elements",
        start, end
    ))
}

/// A buffer of `T` in device memory, freed on drop. Its address never changes, so graphs
/// that captured it keep working.
///
/// `Send + Sync`: Rust code never dereferences device memory; the driver frees it from any
/// thread.
pub struct DeviceBuffer<T> {
    alloc: ffi::DeviceAlloc,
    len: usize,
    ordinal: i32,
    _elem: PhantomData<T>,
}

impl<T> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("device", &self.ordinal)
            .field("ptr", &format_args!("{:#x}", self.alloc.ptr))
            .field("len", &self.len)
            .finish()
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    fn alloc(device: &Device, len: usize) -> Result<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            Error::InvalidArgument(format!("a buffer of {len} elements does not fit in memory"))
        })?;
        let alloc = ffi::DeviceAlloc::new(device.ctx(), bytes)
            .map_err(|e| Error::driver("cuMemAlloc", e))?;
        Ok(DeviceBuffer {
            alloc,
            len,
            ordinal: device.ordinal(),
            _elem: PhantomData,
        })
    }

    /// A buffer of `len` elements, all zero bits.
    ///
    /// See [`cuMemAlloc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    pub fn zeros(device: &Device, len: usize) -> Result<Self>
    where
        T: ValidAsZeroBits,
    {
        let buffer = Self::alloc(device, len)?;
        let stream = current_stream_on(device);
        crate::stream::fill_async(&stream, buffer.range(), FillPattern::U8(0))?;
        stream.synchronize()?;
        Ok(buffer)
    }

    /// A buffer holding a copy of `src` (waits for the copy).
    pub fn from_host(device: &Device, src: &[T]) -> Result<Self> {
        let buffer = Self::alloc(device, src.len())?;
        let stream = current_stream_on(device);
        crate::stream::copy_async(&stream, buffer.memory(), pageable(src))?;
        stream.synchronize()?;
        Ok(buffer)
    }

    /// A buffer filled from `src` in `stream`'s order; returns once the copy is queued (the
    /// driver has staged `src` by then).
    pub fn from_host_on(stream: &Stream, src: &[T]) -> Result<Self> {
        let buffer = Self::alloc(&stream.device(), src.len())?;
        crate::stream::copy_async(stream, buffer.memory(), pageable(src))?;
        Ok(buffer)
    }

    /// Overwrites the buffer with `src` (same length) and waits for the copy.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        let stream = current_stream_on(&self.device()?);
        self.copy_from_host_on(&stream, src)?;
        stream.synchronize()
    }

    /// Queues an overwrite of the buffer with `src` (same length) on `stream`.
    pub fn copy_from_host_on(&mut self, stream: &Stream, src: &[T]) -> Result<()> {
        crate::stream::copy_async(stream, self.memory(), pageable(src))
    }

    /// Copies the buffer to a new `Vec` and waits for the copy.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.as_view().to_vec()
    }

    /// Copies the buffer to a new `Vec` in `stream`'s order (after the work queued on it) and
    /// waits for the copy.
    pub fn to_vec_on(&self, stream: &Stream) -> Result<Vec<T>> {
        self.as_view().to_vec_on(stream)
    }

    /// A buffer that can only be planned: a unique address range on the
    /// [`DeviceRange::PLANNING`] device with no memory behind it. It lets a pipeline's plan (and
    /// its race check) be built on a machine without a GPU; running it eagerly or capturing it
    /// is an [`Error::PlanningOnly`].
    pub fn for_planning(len: usize) -> Self {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        DeviceBuffer {
            alloc: ffi::DeviceAlloc::planning(bytes),
            len,
            ordinal: DeviceRange::PLANNING,
            _elem: PhantomData,
        }
    }

    /// The device the buffer lives on ([`Error::PlanningOnly`] for a plan-only buffer).
    pub fn device(&self) -> Result<Device> {
        match &self.alloc.ctx {
            Some(ctx) => Ok(Device::from_ctx(ctx)),
            None => Err(Error::PlanningOnly { what: "buffer" }),
        }
    }

    fn memory(&self) -> Memory {
        Memory::Device(self.range())
    }
}

impl<T> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element (`CUdeviceptr`), for interop.
    pub fn device_ptr(&self) -> u64 {
        self.alloc.ptr
    }

    /// The whole buffer as a view.
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView {
            ptr: self.alloc.ptr,
            len: self.len,
            ordinal: self.ordinal,
            _borrow: PhantomData,
        }
    }

    /// The elements in `range`, as a view borrowing the buffer.
    ///
    /// # Panics
    ///
    /// When `range` is out of bounds, like slice indexing; [`DeviceBuffer::try_slice`] returns
    /// an error instead.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceView<'_, T> {
        self.as_view().into_slice(range)
    }

    /// The elements in `range`, or [`Error::InvalidArgument`] when it is out of bounds.
    pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        self.as_view().try_into_slice(range)
    }
}

/// A sub-range of a [`DeviceBuffer`], borrowed from it. Keeps its own copy of the address so
/// that a kernel argument can point at it.
pub struct DeviceView<'a, T> {
    ptr: u64,
    len: usize,
    ordinal: i32,
    _borrow: PhantomData<&'a DeviceBuffer<T>>,
}

impl<T> Clone for DeviceView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for DeviceView<'_, T> {}

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
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the first element.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// A sub-range of this view.
    ///
    /// # Panics
    ///
    /// When `range` is out of bounds; see [`DeviceView::try_slice`].
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceView<'a, T> {
        self.into_slice(range)
    }

    /// A sub-range of this view, or [`Error::InvalidArgument`] when out of bounds.
    pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'a, T>> {
        self.try_into_slice(range)
    }

    fn into_slice(self, range: impl RangeBounds<usize>) -> DeviceView<'a, T> {
        match self.try_into_slice(range) {
            Ok(view) => view,
            Err(e) => panic!("{e}"),
        }
    }

    fn try_into_slice(self, range: impl RangeBounds<usize>) -> Result<DeviceView<'a, T>> {
        let Some((start, end)) = resolve((range.start_bound(), range.end_bound()), self.len) else {
            return Err(out_of_bounds(
                range.start_bound(),
                range.end_bound(),
                self.len,
            ));
        };
        let offset = (start * std::mem::size_of::<T>()) as u64;
        Ok(DeviceView {
            ptr: self.ptr + offset,
            len: end - start,
            ordinal: self.ordinal,
            _borrow: PhantomData,
        })
    }
}

impl<T: DeviceRepr> DeviceView<'_, T> {
    /// Copies the view to a new `Vec` and waits for the copy.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let device = Device::new(Some(self.ordinal))?;
        self.to_vec_on(&current_stream_on(&device))
    }

    /// Copies the view to a new `Vec` in `stream`'s order and waits for the copy.
    pub fn to_vec_on(&self, stream: &Stream) -> Result<Vec<T>> {
        ffi::read_device_vec(stream.ctx(), stream.raw(), self.ptr, self.len)
            .map_err(|e| Error::driver("cuMemcpyDtoHAsync", e))
    }
}

impl<T: DeviceRepr> DeviceMemory for DeviceBuffer<T> {
    type Elem = T;
    fn range(&self) -> DeviceRange {
        DeviceRange {
            device: self.ordinal,
            ptr: self.alloc.ptr,
            bytes: self.len * std::mem::size_of::<T>(),
        }
    }
    fn ptr_ref(&self) -> &u64 {
        &self.alloc.ptr
    }
    fn len(&self) -> usize {
        self.len
    }
}

impl<T: DeviceRepr> DeviceMemory for DeviceView<'_, T> {
    type Elem = T;
    fn range(&self) -> DeviceRange {
        DeviceRange {
            device: self.ordinal,
            ptr: self.ptr,
            bytes: self.len * std::mem::size_of::<T>(),
        }
    }
    fn ptr_ref(&self) -> &u64 {
        &self.ptr
    }
    fn len(&self) -> usize {
        self.len
    }
}

impl<M: DeviceMemory + ?Sized> DeviceMemory for &M {
    type Elem = M::Elem;
    fn range(&self) -> DeviceRange {
        (**self).range()
    }
    fn ptr_ref(&self) -> &u64 {
        (**self).ptr_ref()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
}

impl<M: DeviceMemory + ?Sized> DeviceMemory for &mut M {
    type Elem = M::Elem;
    fn range(&self) -> DeviceRange {
        (**self).range()
    }
    fn ptr_ref(&self) -> &u64 {
        (**self).ptr_ref()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
}

/// A buffer of `T` in page-locked (pinned) host memory: copies to and from it run
/// asynchronously and can be captured into graphs.
///
/// Copies write it through shared references (it is a [`CopyTarget`]), the way a DMA engine
/// does: **read it only after the stream that writes it has been synchronized** (or an event
/// recorded after the copy has completed). `as_mut_slice` needs `&mut self`, which excludes
/// any queued copy borrowing it.
///
/// `Send` when `T: Send` and `Sync` when `T: Sync`: it owns its elements like a `Box<[T]>`,
/// shared references only hand out `&[T]`, and the driver frees pinned memory from any
/// thread.
pub struct PinnedBuffer<T> {
    alloc: ffi::HostAlloc<T>,
    ordinal: i32,
}

impl<T> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("device", &self.ordinal)
            .field("ptr", &self.alloc.as_ptr())
            .field("len", &self.alloc.len())
            .finish()
    }
}

impl<T: DeviceRepr + Copy> PinnedBuffer<T> {
    /// A pinned buffer of `len` elements, all zero bits.
    ///
    /// See [`cuMemHostAlloc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    pub fn zeros(device: &Device, len: usize) -> Result<Self>
    where
        T: ValidAsZeroBits,
    {
        let alloc = ffi::HostAlloc::zeroed(device.ctx(), len)
            .map_err(|e| Error::driver("cuMemHostAlloc", e))?;
        Ok(PinnedBuffer {
            alloc,
            ordinal: device.ordinal(),
        })
    }

    /// A pinned buffer holding a copy of `src`.
    ///
    /// See [`cuMemHostAlloc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    pub fn from_slice(device: &Device, src: &[T]) -> Result<Self> {
        let alloc = ffi::HostAlloc::from_slice(device.ctx(), src)
            .map_err(|e| Error::driver("cuMemHostAlloc", e))?;
        Ok(PinnedBuffer {
            alloc,
            ordinal: device.ordinal(),
        })
    }
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy> PinnedBuffer<T> {
    /// A zeroed buffer in ordinary heap memory, for plans built on a machine without a GPU.
    /// Copies to and from it can be planned and run eagerly (as pageable memory), but not
    /// captured.
    ///
    /// # Panics
    ///
    /// When `len` elements exceed the address space, like `Vec::with_capacity`.
    pub fn for_planning(len: usize) -> Self {
        match ffi::HostAlloc::planning_zeroed(len) {
            Some(alloc) => PinnedBuffer {
                alloc,
                ordinal: DeviceRange::HOST,
            },
            None => panic!("a plan-only buffer of {len} elements does not fit in memory"),
        }
    }
}

impl<T> PinnedBuffer<T> {
    /// The elements. Synchronize the streams that copy into the buffer first.
    pub fn as_slice(&self) -> &[T] {
        self.alloc.as_slice()
    }

    /// The elements, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.alloc.as_mut_slice()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.alloc.len()
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.alloc.len() == 0
    }

    fn memory(&self) -> Memory {
        let (ptr, bytes) = (
            self.alloc.as_ptr().cast(),
            std::mem::size_of_val(self.alloc.as_slice()),
        );
        if self.alloc.is_planning() {
            Memory::PageableHost { ptr, bytes }
        } else {
            Memory::PinnedHost { ptr, bytes }
        }
    }
}

fn pageable<T>(src: &[T]) -> Memory {
    Memory::PageableHost {
        ptr: src.as_ptr().cast_mut().cast(),
        bytes: std::mem::size_of_val(src),
    }
}

impl<T: DeviceRepr> CopySource<T> for DeviceBuffer<T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        MemoryRef::new(self.memory(), std::mem::size_of::<T>())
    }
}

impl<T: DeviceRepr> CopyTarget<T> for DeviceBuffer<T> {
    fn copy_target(&self) -> MemoryRef<'_> {
        MemoryRef::new(self.memory(), std::mem::size_of::<T>())
    }
}

impl<T: DeviceRepr> CopySource<T> for DeviceView<'_, T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        MemoryRef::new(Memory::Device(self.range()), std::mem::size_of::<T>())
    }
}

impl<T: DeviceRepr> CopyTarget<T> for DeviceView<'_, T> {
    fn copy_target(&self) -> MemoryRef<'_> {
        MemoryRef::new(Memory::Device(self.range()), std::mem::size_of::<T>())
    }
}

impl<T: DeviceRepr> CopySource<T> for PinnedBuffer<T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        MemoryRef::new(self.memory(), std::mem::size_of::<T>())
    }
}

impl<T: DeviceRepr> CopyTarget<T> for PinnedBuffer<T> {
    fn copy_target(&self) -> MemoryRef<'_> {
        MemoryRef::new(self.memory(), std::mem::size_of::<T>())
    }
}

impl<T: DeviceRepr> CopySource<T> for [T] {
    fn copy_source(&self) -> MemoryRef<'_> {
        MemoryRef::new(pageable(self), std::mem::size_of::<T>())
    }
}

impl<T: DeviceRepr> CopySource<T> for Vec<T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        MemoryRef::new(pageable(self), std::mem::size_of::<T>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_resolve_like_slices() {
        assert_eq!(resolve(.., 4), Some((0, 4)));
        assert_eq!(resolve(1..3, 4), Some((1, 3)));
        assert_eq!(resolve(1..=3, 4), Some((1, 4)));
        assert_eq!(resolve(2.., 4), Some((2, 4)));
        assert_eq!(resolve(..0, 4), Some((0, 0)));
        assert_eq!(resolve(4.., 4), Some((4, 4)));
        let (start, end) = (3, 2);
        assert_eq!(resolve(start..end, 4), None);
        assert_eq!(resolve(0..5, 4), None);
        assert_eq!(resolve(..=usize::MAX, 4), None);
    }

    #[test]
    fn fill_values_keep_their_bits() {
        assert_eq!(7u8.pattern(), FillPattern::U8(7));
        assert_eq!((-1i8).pattern(), FillPattern::U8(0xff));
        assert_eq!((-2i16).pattern(), FillPattern::U16(0xfffe));
        assert_eq!(1.0f32.pattern(), FillPattern::U32(0x3f80_0000));
        assert_eq!((-1i32).pattern(), FillPattern::U32(u32::MAX));
    }
}
