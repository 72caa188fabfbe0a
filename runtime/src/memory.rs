//! Device and pinned host memory, and the traits that let pipelines name them.
//!
//! - [`DeviceBuffer<T>`]: device memory from `cuMemAlloc`, at a stable address (a replayed
//!   graph keeps using it), freed once nothing can use it any more. [`DeviceBuffer::slice`]
//!   borrows a sub-range as a [`DeviceView`], [`DeviceBuffer::slice_mut`] as a writable
//!   [`DeviceViewMut`].
//! - [`PinnedBuffer<T>`]: page-locked host memory (`cuMemHostAlloc`), which copies can read
//!   and write asynchronously and which graphs can capture. Rust reads it through guards that
//!   wait for the copies writing it, and a copy (or graph launch) that would write it while a
//!   guard lives is refused ([`Error::PinnedBusy`]).
//! - Ordinary slices and `Vec`s are pageable host memory: copy sources only.
//!
//! Element types are [`Pod`] (plain data whose every bit pattern is a value), so whatever a
//! kernel or copy wrote can be read back. `bool`, `char` and types with padding are not.
//!
//! The traits [`DeviceMemory`], [`CopySource`] and [`CopyTarget`] are what kernel arguments,
//! `copy` and `fill` statements accept. They are `unsafe` to implement: the implementer
//! promises that the memory named is live (see each trait).
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
//! let mut y = DeviceBuffer::<u32>::zeros(&device, 4)?;
//! stream.copy(&mut y.slice_mut(0..2), &x.slice(2..4))?; // device to device, in stream order
//! stream.fill(&mut y.slice_mut(2..), 7)?;
//! let mut host = PinnedBuffer::<u32>::zeros(&device, 4)?;
//! stream.copy(&mut host, &y)?;
//! assert_eq!(&*host.as_slice()?, &[3, 4, 7, 7]); // waits for the copy into `host`
//! # Ok::<(), streamgraph_runtime::Error>(())
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, Deref, DerefMut, RangeBounds};
use std::sync::Arc;

pub use bytemuck::{Pod, Zeroable};
pub use cudarc::driver::DeviceRepr;

use crate::device::Device;
use crate::error::{Error, Result};
use crate::ffi::memory::{
    read_device, DeviceAlloc, Holder, MemoryRef, PinnedAlloc, PinnedRead, PinnedWrite,
};
use crate::ffi::KernelArg;
use crate::operand::{BufferAccess, DeviceRange, FillPattern};
use crate::program::AccessMode;
use crate::stream::{current_stream_on, Stream};

/// Device memory holding elements of type `Self::Elem`: a buffer or a sub-range of one.
///
/// # Safety
///
/// An implementation promises that [`DeviceMemory::range`] names device memory that is
/// allocated on that device for as long as `self` is borrowed **and**, unless
/// [`DeviceMemory::holder`] hands out the runtime's own allocation, for as long as any graph
/// that captured an operation on it can launch; that `ptr_ref` points at the range's first
/// address; and that the range holds whole elements of `Elem`.
pub unsafe trait DeviceMemory {
    /// The element type.
    type Elem: Pod;
    /// The memory's address range.
    fn range(&self) -> DeviceRange;
    /// A reference to the stored `CUdeviceptr`, which a kernel argument points at.
    fn ptr_ref(&self) -> &u64;
    /// What keeps the memory allocated (graphs keep it); the runtime's buffers override it.
    #[doc(hidden)]
    fn holder(&self) -> Holder<'_> {
        Holder::FOREIGN
    }
    /// Number of elements.
    fn len(&self) -> usize {
        self.range().bytes / std::mem::size_of::<Self::Elem>().max(1)
    }
    /// Whether it holds no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Device memory that may be written through this value: what the safe write APIs
/// ([`KernelArg::write`], [`Stream::fill`]) take by `&mut`, so that a write needs an
/// exclusive borrow of the memory.
///
/// # Safety
///
/// As for [`DeviceMemory`]; and a value of the type is the only one through which its memory
/// may be written while it lives (it borrows the memory exclusively, or owns it).
pub unsafe trait DeviceMemoryMut: DeviceMemory {}

/// Memory a `copy` can read from: device, pinned or pageable host memory of `T`.
///
/// # Safety
///
/// The [`MemoryRef`] returned names memory holding elements of `T` that is live for the
/// borrow of `self` (and as [`MemoryRef::from_raw`] requires for graphs).
pub unsafe trait CopySource<T> {
    /// The memory, borrowed from `self`.
    fn copy_source(&self) -> MemoryRef<'_>;
}

/// Memory a `copy` can write to: device or pinned host memory of `T`.
///
/// # Safety
///
/// As for [`CopySource`]; host memory it names is page-locked and guarded against Rust
/// references while copies write it (as [`MemoryRef::from_raw`] requires).
pub unsafe trait CopyTarget<T> {
    /// The memory, borrowed from `self`.
    fn copy_target(&self) -> MemoryRef<'_>;
}

/// An element type a `fill` can write with a memset (1, 2 or 4 bytes wide).
pub trait FillValue: Pod {
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

/// The memory of a [`DeviceMemory`] value, for copies and fills.
pub(crate) fn device_ref<M: DeviceMemory + ?Sized>(m: &M) -> MemoryRef<'_> {
    MemoryRef::promised_device(m.range(), std::mem::size_of::<M::Elem>(), m.holder())
}

fn buffer_arg<M: DeviceMemory + ?Sized>(m: &M, mode: AccessMode) -> KernelArg<'_> {
    KernelArg::by_ref(
        m.ptr_ref(),
        Some(BufferAccess {
            range: m.range(),
            mode,
        }),
        m.holder(),
    )
}

#[doc(hidden)]
pub mod __private {
    //! Entry points of generated code; they erase types after the compiler (and the macro's
    //! checks: writes go through `&mut` parameters) has checked them. Not public API.
    use super::*;

    /// `&x` in launch arguments.
    pub fn arg_read<M: DeviceMemory + ?Sized>(m: &M) -> KernelArg<'_> {
        buffer_arg(m, AccessMode::Read)
    }

    /// `&mut x` in launch arguments (the macro checked that `x` is borrowed `&mut`).
    pub fn arg_write<M: DeviceMemory + ?Sized>(m: &M) -> KernelArg<'_> {
        buffer_arg(m, AccessMode::Write)
    }

    /// A by-value kernel argument (scalar or `#[repr(C)]` struct).
    pub fn arg_value<T: DeviceRepr>(v: &T) -> KernelArg<'_> {
        KernelArg::by_ref(v, None, Holder::FOREIGN)
    }
}

impl<'a> KernelArg<'a> {
    /// A by-value argument: a scalar or a `#[repr(C)]` struct, as the kernel's parameter type.
    pub fn value<T: DeviceRepr>(value: &'a T) -> Self {
        __private::arg_value(value)
    }

    /// A pointer argument to memory the kernel only reads (`const T*`).
    pub fn read<M: DeviceMemory + ?Sized>(memory: &'a M) -> Self {
        buffer_arg(memory, AccessMode::Read)
    }

    /// A pointer argument to memory the kernel writes (`T*`); needs an exclusive borrow.
    pub fn write<M: DeviceMemoryMut + ?Sized>(memory: &'a mut M) -> Self {
        buffer_arg(&*memory, AccessMode::Write)
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

fn out_of_bounds(range: &impl RangeBounds<usize>, len: usize) -> Error {
    Error::InvalidArgument(format!(
        "slice {:?}..{:?} is out of bounds of a buffer of {len} elements",
        range.start_bound(),
        range.end_bound()
    ))
}

/// `len` elements of `T` in bytes, or an error naming what was asked for.
fn bytes_of<T>(len: usize) -> Result<usize> {
    let size = std::mem::size_of::<T>();
    if size == 0 {
        return Err(Error::InvalidArgument(format!(
            "buffers of the zero-sized type `{}` hold nothing; use a sized element type",
            std::any::type_name::<T>()
        )));
    }
    len.checked_mul(size).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "a buffer of {len} elements of {size} bytes does not fit in the address space"
        ))
    })
}

/// The sub-range `range` of `len` elements starting at device address `ptr`: its address and
/// length, checked.
fn sub_range<T>(ptr: u64, len: usize, range: impl RangeBounds<usize>) -> Result<(u64, usize)> {
    let Some((start, end)) = resolve((range.start_bound(), range.end_bound()), len) else {
        return Err(out_of_bounds(&range, len));
    };
    let offset = bytes_of::<T>(start)?;
    let ptr = u64::try_from(offset)
        .ok()
        .and_then(|o| ptr.checked_add(o))
        .ok_or_else(|| out_of_bounds(&range, len))?;
    Ok((ptr, end - start))
}

/// A buffer of `T` in device memory. Its address never changes, so graphs that captured it
/// keep working; the memory is freed once the buffer and every graph that uses it are gone.
///
/// `Send + Sync`: Rust code never dereferences device memory; the driver frees it from any
/// thread.
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

    /// A buffer of `len` elements, all zero bits.
    ///
    /// See [`cuMemAlloc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html).
    pub fn zeros(device: &Device, len: usize) -> Result<Self> {
        let buffer = Self::alloc(device, len)?;
        let stream = current_stream_on(device);
        crate::stream::fill_async(&stream, &device_ref(&buffer), FillPattern::U8(0))?;
        stream.synchronize()?;
        Ok(buffer)
    }

    /// A buffer holding a copy of `src` (waits for the copy).
    pub fn from_host(device: &Device, src: &[T]) -> Result<Self> {
        let stream = current_stream_on(device);
        let buffer = Self::from_host_on(&stream, src)?;
        stream.synchronize()?;
        Ok(buffer)
    }

    /// A buffer filled from `src` in `stream`'s order; returns once the copy is queued (the
    /// driver has staged `src` by then).
    pub fn from_host_on(stream: &Stream, src: &[T]) -> Result<Self> {
        let buffer = Self::alloc(&stream.device(), src.len())?;
        crate::stream::copy_async(
            stream,
            &buffer.copy_target(),
            &MemoryRef::pageable(src),
            true,
        )?;
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
        crate::stream::copy_async(stream, &self.copy_target(), &MemoryRef::pageable(src), true)
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
    pub fn device(&self) -> Result<Device> {
        match self.alloc.ctx() {
            Some(ctx) => Ok(Device::from_ctx(ctx)),
            None => Err(Error::PlanningOnly { what: "buffer" }),
        }
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
        self.alloc.ptr()
    }

    /// The whole buffer as a read-only view.
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
    ///
    /// When `range` is out of bounds, like slice indexing; [`DeviceBuffer::try_slice`] returns
    /// an error instead.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceView<'_, T> {
        self.as_view().slice(range)
    }

    /// The elements in `range`, or [`Error::InvalidArgument`] when it is out of bounds.
    pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        self.as_view().into_slice(range)
    }

    /// The elements in `range`, as a writable view borrowing the buffer exclusively.
    ///
    /// # Panics
    ///
    /// When `range` is out of bounds; [`DeviceBuffer::try_slice_mut`] returns an error instead.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> DeviceViewMut<'_, T> {
        DeviceViewMut {
            view: self.as_view().slice(range),
        }
    }

    /// The elements in `range`, writable, or [`Error::InvalidArgument`] when out of bounds.
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
/// Not `Copy`: a view passed into a pipeline is that pipeline's. Pipelines and the safe write
/// APIs write device memory only through `&mut` borrows or a [`DeviceViewMut`].
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
        match self.try_slice(range) {
            Ok(view) => view,
            Err(e) => panic!("{e}"),
        }
    }

    /// A sub-range of this view, or [`Error::InvalidArgument`] when out of bounds.
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
    pub fn to_vec(&self) -> Result<Vec<T>> {
        if self.ordinal == DeviceRange::PLANNING {
            return Err(Error::PlanningOnly { what: "buffer" });
        }
        let device = Device::new(Some(self.ordinal))?;
        self.to_vec_on(&current_stream_on(&device))
    }

    /// Copies the view to a new `Vec` in `stream`'s order and waits for the copy. The stream
    /// must belong to the view's device.
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
    pub fn len(&self) -> usize {
        self.view.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.view.len == 0
    }

    /// The view, read-only.
    pub fn as_view(&self) -> &DeviceView<'a, T> {
        &self.view
    }
}

// SAFETY: the range lies inside `self.alloc` (checked when it was made), which the buffer
// owns and hands out as its holder; `ptr_ref` points at the first address.
unsafe impl<T: Pod> DeviceMemory for DeviceBuffer<T> {
    type Elem = T;
    #[inline]
    fn range(&self) -> DeviceRange {
        self.as_view().range()
    }
    fn ptr_ref(&self) -> &u64 {
        self.alloc.ptr_ref()
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
    fn ptr_ref(&self) -> &u64 {
        &self.ptr
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
    fn ptr_ref(&self) -> &u64 {
        &self.view.ptr
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

// SAFETY: forwards to `M`, borrowed for as long as the reference.
unsafe impl<M: DeviceMemory + ?Sized> DeviceMemory for &M {
    type Elem = M::Elem;
    fn range(&self) -> DeviceRange {
        (**self).range()
    }
    fn ptr_ref(&self) -> &u64 {
        (**self).ptr_ref()
    }
    fn holder(&self) -> Holder<'_> {
        (**self).holder()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
}

// SAFETY: forwards to `M`, borrowed for as long as the reference.
unsafe impl<M: DeviceMemory + ?Sized> DeviceMemory for &mut M {
    type Elem = M::Elem;
    fn range(&self) -> DeviceRange {
        (**self).range()
    }
    fn ptr_ref(&self) -> &u64 {
        (**self).ptr_ref()
    }
    fn holder(&self) -> Holder<'_> {
        (**self).holder()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
}

// SAFETY: an exclusive borrow of writable memory is writable.
unsafe impl<M: DeviceMemoryMut + ?Sized> DeviceMemoryMut for &mut M {}

/// A buffer of `T` in page-locked (pinned) host memory: copies to and from it run
/// asynchronously and can be captured into graphs.
///
/// Rust reaches its elements through guards: [`PinnedBuffer::as_slice`] waits for the copies
/// (and graph launches) that write it, [`PinnedBuffer::as_mut_slice`] for every copy that
/// touches it. While a guard lives, a copy or launch that would race with it is refused with
/// [`Error::PinnedBusy`], so a DMA engine never writes memory Rust is reading.
///
/// `Send` when `T: Send` and `Sync` when `T: Sync`: it owns its elements like a `Box<[T]>`.
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

// SAFETY: the memory is the buffer's own allocation of `T`s, handed out with its holder.
unsafe impl<T: Pod> CopySource<T> for DeviceBuffer<T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        self.as_view().memory()
    }
}

// SAFETY: as above; device memory.
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

// SAFETY: as above; device memory (pipelines write views only of `&mut` parameters).
unsafe impl<T: Pod> CopyTarget<T> for DeviceView<'_, T> {
    fn copy_target(&self) -> MemoryRef<'_> {
        self.memory()
    }
}

// SAFETY: as for `DeviceView`.
unsafe impl<T: Pod> CopySource<T> for DeviceViewMut<'_, T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        self.view.memory()
    }
}

// SAFETY: as for `DeviceView`.
unsafe impl<T: Pod> CopyTarget<T> for DeviceViewMut<'_, T> {
    fn copy_target(&self) -> MemoryRef<'_> {
        self.view.memory()
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

// SAFETY: a borrowed pageable slice, read only; the driver stages it before a copy returns
// and a capture refuses it.
unsafe impl<T: Pod> CopySource<T> for [T] {
    fn copy_source(&self) -> MemoryRef<'_> {
        MemoryRef::pageable(self)
    }
}

// SAFETY: as for `[T]`.
unsafe impl<T: Pod> CopySource<T> for Vec<T> {
    fn copy_source(&self) -> MemoryRef<'_> {
        MemoryRef::pageable(self)
    }
}

// SAFETY: forwards to `S`, borrowed for as long as the reference.
unsafe impl<T, S: CopySource<T> + ?Sized> CopySource<T> for &S {
    fn copy_source(&self) -> MemoryRef<'_> {
        (**self).copy_source()
    }
}

// SAFETY: forwards to `S`, borrowed for as long as the reference.
unsafe impl<T, S: CopySource<T> + ?Sized> CopySource<T> for &mut S {
    fn copy_source(&self) -> MemoryRef<'_> {
        (**self).copy_source()
    }
}

// SAFETY: forwards to `D`, borrowed for as long as the reference.
unsafe impl<T, D: CopyTarget<T> + ?Sized> CopyTarget<T> for &mut D {
    fn copy_target(&self) -> MemoryRef<'_> {
        (**self).copy_target()
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
    fn sub_ranges_are_checked_not_wrapped() {
        assert_eq!(sub_range::<u32>(0x1000, 8, 2..4).ok(), Some((0x1008, 2)));
        assert!(sub_range::<u32>(0x1000, 8, 2..9).is_err());
        assert!(sub_range::<u64>(u64::MAX - 8, usize::MAX, 4..5).is_err());
        assert!(sub_range::<[u8; 1 << 20]>(0, usize::MAX, (usize::MAX - 1)..).is_err());
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
