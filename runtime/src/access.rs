//! Access to memory: the traits through which kernel arguments, copies and fills name the
//! memory they touch ([`DeviceMemory`], [`DeviceMemoryMut`], [`CopySource`], [`CopyTarget`],
//! [`FillValue`], [`KernelValue`]), and the [`MemoryMut`] and [`KernelArg`] values they make.
//!
//! The memory traits are `unsafe` to implement: the implementer promises that the memory named
//! is live and, for the `Mut` and `Target` traits, borrowed exclusively (see each trait). The
//! runtime's buffers implement them (`memory/`); streams, issuers and plans take them.

use std::marker::PhantomData;

pub use bytemuck::Pod;
pub use cudarc::driver::DeviceRepr;

use crate::ffi::memory::{Holder, MemoryMut, MemoryRef};
use crate::ffi::KernelArg;
use crate::operand::{BufferAccess, DeviceRange, FillPattern};
use crate::program::AccessMode;

/// Device memory holding elements of type `Self::Elem`: a buffer or a sub-range of one.
///
/// # Safety
///
/// An implementation promises that [`DeviceMemory::range`] names device memory that is
/// allocated on that device for as long as `self` is borrowed **and**, unless
/// [`DeviceMemory::holder`] hands out the runtime's own allocation, for as long as any graph
/// that captured an operation on it can launch; and that the range holds whole elements of
/// `Elem`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not device memory",
    label = "a kernel buffer argument or `fill` target must be device memory",
    note = "pass a `DeviceBuffer<T>`, a view of one (`x.slice(0..n)`) or a cudarc `CudaSlice<T>`; \
            host data becomes a device buffer with `DeviceBuffer::from_host(&device, &data)`"
)]
pub unsafe trait DeviceMemory {
    /// The element type.
    type Elem: Pod;
    /// The memory's address range.
    fn range(&self) -> DeviceRange;
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
/// ([`KernelArg::write`], [`Stream::fill`](crate::stream::Stream::fill), [`MemoryMut::device`])
/// take by `&mut` (or as the `&&mut` of a pipeline's `issue(&self)`), so that a write needs an
/// exclusive borrow of the memory. The read-only views and shared references are not.
///
/// # Safety
///
/// As for [`DeviceMemory`]; and a value of the type is the only one through which its memory
/// may be written while it lives (it borrows the memory exclusively, or owns it).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be written: it is not device memory borrowed exclusively",
    label = "written here, through a shared borrow or something that is not device memory",
    note = "device memory is written through `&mut DeviceBuffer<T>`, a `DeviceViewMut` \
            (`x.slice_mut(0..n)`), `&mut DeviceFlag`, `&mut CudaSlice<T>` or a `CudaViewMut`; a \
            pipeline parameter that a statement writes is declared `x: &mut DeviceBuffer<T>`"
)]
pub unsafe trait DeviceMemoryMut: DeviceMemory {}

/// Memory a `copy` can read from: device, pinned or pageable host memory of `T`.
///
/// # Safety
///
/// The [`MemoryRef`]s its methods return name memory holding elements of `T` that is live for
/// the borrow of `self` (and as [`MemoryRef::from_raw`] requires for graphs).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the source of a copy of `{T}` elements",
    label = "not device or host memory of `{T}`",
    note = "a copy reads a `DeviceBuffer<T>`, a `PinnedBuffer<T>` or a view of either, with the \
            same element type as the destination"
)]
pub unsafe trait CopySource<T> {
    /// The memory, borrowed from `self`.
    fn copy_source(&self) -> MemoryRef<'_>;

    /// [`CopySource::copy_source`], for `elem`'s element type: generated code passes one marker
    /// to both sides of a copy, so that a source of another element type than the destination
    /// is reported on the source, as this trait words it.
    #[doc(hidden)]
    fn copy_source_of(&self, elem: PhantomData<T>) -> MemoryRef<'_> {
        let _ = elem;
        self.copy_source()
    }
}

/// Memory a `copy` can write to: device or pinned host memory of `T` that this value owns or
/// borrows exclusively. A copy writes it only through an exclusive borrow of the value
/// ([`Stream::copy`](crate::stream::Stream::copy) takes `&mut`, [`MemoryMut::copy_target`]
/// `&mut` or the `&&mut` of a pipeline's `issue(&self)`); the read-only views
/// ([`DeviceView`](crate::DeviceView), [`PinnedView`](crate::PinnedView), cudarc's `CudaView`) and shared references are not
/// targets.
///
/// # Safety
///
/// As for [`CopySource`] (for the [`MemoryRef`]s of its methods); host memory it names is
/// page-locked and guarded against Rust references while copies write it (as
/// [`MemoryRef::from_raw`] requires); and a value of the type is the only one through which
/// its memory may be written while it lives (it borrows the memory exclusively, or owns it).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the destination of a copy",
    label = "not device or page-locked host memory borrowed exclusively",
    note = "a copy writes a `DeviceBuffer<T>`, a `PinnedBuffer<T>` or a mutable view of either \
            (`x.slice_mut(0..n)`), borrowed `&mut`, with the same element type as the source; \
            a read-only view (`x.slice(0..n)`) or a shared borrow cannot be written"
)]
pub unsafe trait CopyTarget<T> {
    /// The memory, borrowed from `self`. It names the memory only: writing it takes a
    /// [`MemoryMut`], made from an exclusive borrow of `self`.
    fn copy_target(&self) -> MemoryRef<'_>;
}

impl<'a> MemoryMut<'a> {
    /// The memory of `dst`, for a copy to write: `dst` borrowed exclusively.
    pub fn copy_target<T, D: CopyTarget<T> + ?Sized>(dst: &'a mut D) -> MemoryMut<'a> {
        let dst: &'a D = dst;
        MemoryMut::exclusive(dst.copy_target())
    }

    /// The memory of `dst`, for a copy to write, through a shared reference to an exclusive
    /// borrow: what a hand-written [`crate::Pipeline`]'s `issue(&self)` holds for a buffer it
    /// borrowed `&mut` (the borrow proves that nothing else writes the memory while it lives).
    pub fn copy_target_through<T, D: CopyTarget<T> + ?Sized>(dst: &'a &mut D) -> MemoryMut<'a> {
        MemoryMut::exclusive((**dst).copy_target())
    }

    /// The memory of `dst`, for a fill to write: `dst` borrowed exclusively.
    pub fn device<M: DeviceMemoryMut + ?Sized>(dst: &'a mut M) -> MemoryMut<'a> {
        MemoryMut::exclusive(device_ref(&*dst))
    }

    /// As [`MemoryMut::device`], through a shared reference to an exclusive borrow (see
    /// [`MemoryMut::copy_target_through`]).
    pub fn device_through<M: DeviceMemoryMut + ?Sized>(dst: &'a &mut M) -> MemoryMut<'a> {
        MemoryMut::exclusive(device_ref(&**dst))
    }
}

/// An element type a `fill` can write with a memset (1, 2 or 4 bytes wide).
#[diagnostic::on_unimplemented(
    message = "`fill` cannot write elements of type `{Self}`",
    label = "a fill writes elements of 1, 2 or 4 bytes",
    note = "fill buffers of `u8`, `i8`, `u16`, `i16`, `u32`, `i32` or `f32`; write other types \
            with a kernel or a copy"
)]
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

// The half-precision elements of the BLAS ops.
#[cfg(feature = "cublas")]
fill_value!(half::f16 => U16 as u16, half::bf16 => U16 as u16);

/// The memory of a [`DeviceMemory`] value, for copies and fills.
pub(crate) fn device_ref<M: DeviceMemory + ?Sized>(m: &M) -> MemoryRef<'_> {
    MemoryRef::promised_device(m.range(), std::mem::size_of::<M::Elem>(), m.holder())
}

pub(crate) fn buffer_arg<M: DeviceMemory + ?Sized>(m: &M, mode: AccessMode) -> KernelArg<'_> {
    KernelArg::buffer(
        BufferAccess {
            range: m.range(),
            mode,
        },
        m.holder(),
    )
}

/// A launch argument passed by value in `pipeline!` (written without `&`/`&mut`): a scalar or
/// `#[repr(C)]` struct, that is any [`DeviceRepr`] type.
///
/// ```
/// use streamgraph::KernelValue;
///
/// let n = 256u32;
/// let _arg = n.kernel_arg(); // what `launch k<<<…>>>(n)` passes
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed to a kernel by value",
    label = "passed by value: a scalar or `#[repr(C)]` struct is expected here",
    note = "pass a buffer as `&mut x` if the kernel writes it, or `&x` if it only reads it",
    note = "a value passed by value implements `DeviceRepr` (the integer and float types do; \
            implement it for your own `#[repr(C)]` structs)"
)]
///
/// Sealed: every [`DeviceRepr`] type has it, and nothing else. A by-value argument names no
/// memory the race check could see, so a value type of one's own that passed a buffer
/// through it would carry a write past the check.
pub trait KernelValue: value_seal::Sealed {
    /// The argument, pointing at `self`.
    fn kernel_arg(&self) -> KernelArg<'_>;
}

/// Keeps [`KernelValue`] to [`DeviceRepr`] types.
mod value_seal {
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be passed to a kernel by value",
        label = "passed by value: a scalar or `#[repr(C)]` struct is expected here",
        note = "pass a buffer as `&mut x` if the kernel writes it, or `&x` if it only reads it",
        note = "a value passed by value implements `DeviceRepr` (the integer and float types \
                do; implement it for your own `#[repr(C)]` structs)"
    )]
    pub trait Sealed {}
    impl<T: cudarc::driver::DeviceRepr> Sealed for T {}
}

impl<T: DeviceRepr> KernelValue for T {
    fn kernel_arg(&self) -> KernelArg<'_> {
        KernelArg::value(self)
    }
}

impl<'a> KernelArg<'a> {
    /// A by-value argument: a scalar or a `#[repr(C)]` struct, as the kernel's parameter type.
    pub fn value<T: DeviceRepr>(value: &'a T) -> Self {
        KernelArg::by_ref(value, None, Holder::FOREIGN)
    }

    /// A pointer argument to memory the kernel only reads (`const T*`).
    pub fn read<M: DeviceMemory + ?Sized>(memory: &'a M) -> Self {
        buffer_arg(memory, AccessMode::Read)
    }

    /// A pointer argument to memory the kernel writes, through a shared reference to an
    /// exclusive borrow: what a hand-written [`crate::Pipeline`]'s `issue(&self)` holds for a
    /// buffer it borrowed `&mut` (the borrow proves that nothing else writes the memory while
    /// the pipeline lives).
    pub fn write_through<M: DeviceMemoryMut + ?Sized>(memory: &'a &mut M) -> Self {
        buffer_arg(&**memory, AccessMode::Write)
    }

    /// A pointer argument to memory the kernel writes (`T*`); needs an exclusive borrow.
    pub fn write<M: DeviceMemoryMut + ?Sized>(memory: &'a mut M) -> Self {
        buffer_arg(&*memory, AccessMode::Write)
    }
}

// SAFETY: forwards to `M`, borrowed for as long as the reference.
unsafe impl<M: DeviceMemory + ?Sized> DeviceMemory for &M {
    type Elem = M::Elem;
    fn range(&self) -> DeviceRange {
        (**self).range()
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
    fn holder(&self) -> Holder<'_> {
        (**self).holder()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
}

// SAFETY: an exclusive borrow of writable memory is writable.
unsafe impl<M: DeviceMemoryMut + ?Sized> DeviceMemoryMut for &mut M {}

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
