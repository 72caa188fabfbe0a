//! Device and pinned host memory, and the traits that let pipelines name them.
//!
//! TODO(foundation): `DeviceBuffer<T>`, `DeviceView`/`DeviceViewMut` (sub-ranges),
//! `PinnedBuffer<T>` and the impls of the traits below.

use crate::error::Error;
use crate::issue::{DeviceRange, FillPattern, Issuer, KernelArg, MemoryRef};
use crate::program::Statement;

pub use cudarc::driver::DeviceRepr;

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
            Some(crate::issue::BufferAccess { range: m.range(), mode: crate::AccessMode::Read }),
        )
    }

    /// `&mut x` in launch arguments.
    pub fn arg_write<M: DeviceMemory + ?Sized>(m: &M) -> KernelArg<'_> {
        KernelArg::from_raw(
            (m.ptr_ref() as *const u64).cast(),
            Some(crate::issue::BufferAccess { range: m.range(), mode: crate::AccessMode::Write }),
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

/// A buffer in device memory (placeholder until the foundation lands).
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    ptr: u64,
    len: usize,
    _t: std::marker::PhantomData<T>,
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// A buffer that can only be planned: a unique address range on the
    /// [`DeviceRange::PLANNING`] device, no memory behind it. Lets a pipeline's plan (and its
    /// race check) be built on a machine without a GPU; issuing it for real is an error.
    pub fn for_planning(len: usize) -> DeviceBuffer<T> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1 << 40);
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        let ptr = NEXT.fetch_add(bytes.next_multiple_of(256).max(256), Ordering::Relaxed);
        DeviceBuffer { ptr, len, _t: std::marker::PhantomData }
    }
}

impl<T: DeviceRepr> DeviceMemory for DeviceBuffer<T> {
    type Elem = T;
    fn range(&self) -> DeviceRange {
        DeviceRange {
            device: DeviceRange::PLANNING,
            ptr: self.ptr,
            bytes: self.len * std::mem::size_of::<T>(),
        }
    }
    fn ptr_ref(&self) -> &u64 {
        &self.ptr
    }
}

/// A buffer in page-locked host memory (placeholder until the foundation lands).
#[derive(Debug)]
pub struct PinnedBuffer<T> {
    _t: std::marker::PhantomData<T>,
}
