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
//! Memory is written only through an exclusive borrow: `&mut DeviceBuffer`, a
//! [`DeviceViewMut`] (from [`DeviceBuffer::slice_mut`]), `&mut PinnedBuffer`, a
//! [`PinnedViewMut`], `&mut DeviceFlag`, `&mut CudaSlice` or a `CudaViewMut`. The read-only views
//! ([`DeviceView`], [`PinnedView`], cudarc's `CudaView`) and shared references are copy
//! sources and kernel inputs only: a write takes a [`MemoryMut`], which only an exclusive
//! borrow makes.
//!
//! The synchronous conveniences ([`DeviceBuffer::from_host`], [`DeviceBuffer::to_vec`], …)
//! run on the current stream when it belongs to the buffer's device (see
//! [`crate::current_stream`]), else on the device's default stream, and wait for it. Work on
//! *other* streams is not waited for: synchronize those first.
//!
//! ```no_run
//! use streamgraph::{Device, DeviceBuffer, PinnedBuffer, Stream};
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
//! # Ok::<(), streamgraph::Error>(())
//! ```

use std::ops::{Bound, RangeBounds};

pub(crate) use crate::access::device_ref;
pub use crate::access::{
    CopySource, CopyTarget, DeviceMemory, DeviceMemoryMut, DeviceRepr, FillValue, KernelValue, Pod,
};
pub use bytemuck::Zeroable;

use crate::access::buffer_arg;
use crate::error::{Error, Result};
use crate::ffi::memory::MemoryMut;
use crate::ffi::memory::{Holder, MemoryRef};
use crate::ffi::KernelArg;
use crate::operand::{BufferAccess, DeviceRange};
use crate::program::AccessMode;

mod cudarc_view;
mod device;
mod flag;
mod interop;
mod pinned;
mod temp;

pub use cudarc_view::{CudarcView, CudarcViewMut};
pub use device::{DeviceBuffer, DeviceView, DeviceViewMut};
pub use flag::DeviceFlag;
pub use pinned::{PinnedBuffer, PinnedMut, PinnedRef, PinnedView, PinnedViewMut};
pub(crate) use temp::temp_bytes;
pub use temp::{temporaries, Scope, Temp, TempMemory, TempView};

#[doc(hidden)]
pub mod __private {
    //! Entry points of generated code; they erase types after the compiler (and the macro's
    //! checks) has checked them. Not public API. Every write takes an exclusive borrow: a
    //! [`Place`], made from the `&&mut` that `issue(&self)` holds for a `&mut` parameter.
    use super::*;

    /// `&x` in launch arguments.
    pub fn arg_read<M: DeviceMemory + ?Sized>(m: &M) -> KernelArg<'_> {
        buffer_arg(m, AccessMode::Read)
    }

    /// `&mut x` in launch arguments, through a shared reference to an exclusive borrow (as
    /// [`KernelArg::write_through`]).
    pub fn arg_write<'a, M: DeviceMemoryMut + ?Sized>(m: &'a &mut M) -> KernelArg<'a> {
        buffer_arg(&**m, AccessMode::Write)
    }

    /// What a statement writes: a parameter that the pipeline borrowed `&mut`, reached through
    /// `issue(&self)` ([`place`]), optionally one element of it (`xs[i]`, [`Place::index`]) and
    /// a part of that (`x.slice_mut(a..b)`, [`Place::slice`]). Only an exclusive borrow makes
    /// one, and it is written only when its memory is writable ([`DeviceMemoryMut`],
    /// [`CopyTarget`]): a buffer borrowed shared under the `&mut` (`&mut &DeviceBuffer<T>`,
    /// `&mut DeviceView<'_, T>`) is not. An index or range out of bounds is kept as an error,
    /// returned when the place is written.
    pub struct Place<'a, M: ?Sized> {
        /// The memory, or why there is none (boxed: a place moves through generated code).
        memory: std::result::Result<&'a M, Box<Error>>,
        part: Option<(Bound<usize>, Bound<usize>)>,
    }

    impl<M: ?Sized> std::fmt::Debug for Place<'_, M> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Place")
                .field("error", &self.memory.as_ref().err())
                .field("part", &self.part)
                .finish_non_exhaustive()
        }
    }

    /// The parameter `m` as a [`Place`]: `&self.x` of `issue(&self)` for `x: &mut M`.
    #[inline]
    pub fn place<'a, M: ?Sized>(m: &'a &mut M) -> Place<'a, M> {
        Place {
            memory: Ok(&**m),
            part: None,
        }
    }

    fn element<'a, B>(place: Place<'a, [B]>, i: usize) -> Place<'a, B> {
        let memory = place.memory.and_then(|all| {
            all.get(i).ok_or_else(|| {
                Box::new(Error::InvalidArgument(format!(
                    "index {i} is out of bounds of {} buffers",
                    all.len()
                )))
            })
        });
        Place { memory, part: None }
    }

    impl<'a, B> Place<'a, [B]> {
        /// Element `i` (`xs[i]`): the elements of a slice borrowed exclusively are.
        pub fn index(self, i: usize) -> Place<'a, B> {
            element(self, i)
        }
    }

    impl<'a, B> Place<'a, Vec<B>> {
        /// Element `i` (`xs[i]`).
        pub fn index(self, i: usize) -> Place<'a, B> {
            let Place { memory, part } = self;
            element(
                Place {
                    memory: memory.map(Vec::as_slice),
                    part,
                },
                i,
            )
        }
    }

    impl<'a, B, const N: usize> Place<'a, [B; N]> {
        /// Element `i` (`xs[i]`).
        pub fn index(self, i: usize) -> Place<'a, B> {
            let Place { memory, part } = self;
            element(
                Place {
                    memory: memory.map(|a| a.as_slice()),
                    part,
                },
                i,
            )
        }
    }

    impl<'a, M: ?Sized> Place<'a, M> {
        /// The elements in `range` (`x.slice_mut(a..b)`, or `x.slice(a..b)` as a write).
        pub fn slice(self, range: impl RangeBounds<usize>) -> Place<'a, M> {
            let range = (range.start_bound().cloned(), range.end_bound().cloned());
            match self.part {
                None => Place {
                    memory: self.memory,
                    part: Some(range),
                },
                Some(_) => Place {
                    memory: Err(Box::new(Error::InvalidArgument(
                        "a written buffer is sliced twice; write one `.slice_mut(a..b)`".into(),
                    ))),
                    part: None,
                },
            }
        }

        /// The memory and the elements `start..end` of it, of `len`.
        fn resolve(self, len: usize) -> Result<(&'a M, usize, usize)> {
            let memory = self.memory.map_err(|e| *e)?;
            let Some(range) = self.part else {
                return Ok((memory, 0, len));
            };
            let (start, end) = resolve(range, len).ok_or_else(|| out_of_bounds(&range, len))?;
            Ok((memory, start, end))
        }

        /// The device memory of the place and the range of it written.
        fn device_range(self) -> Result<(&'a M, DeviceRange)>
        where
            M: DeviceMemoryMut,
        {
            let len = self.memory.as_ref().map_or(0, |m| m.len());
            let (m, start, end) = self.resolve(len)?;
            let whole = m.range();
            let (ptr, n) = sub_range::<M::Elem>(whole.ptr, len, start..end)?;
            let bytes = bytes_of::<M::Elem>(n)?;
            Ok((
                m,
                DeviceRange {
                    ptr,
                    bytes,
                    ..whole
                },
            ))
        }

        /// The device memory of the place, for a fill that writes it.
        pub(crate) fn device(self) -> Result<MemoryMut<'a>>
        where
            M: DeviceMemoryMut,
        {
            let (m, range) = self.device_range()?;
            let size = std::mem::size_of::<M::Elem>();
            Ok(MemoryMut::exclusive(MemoryRef::promised_device(
                range,
                size,
                m.holder(),
            )))
        }

        /// The memory of the place, for a copy into it.
        pub(crate) fn copy_target<T>(self) -> Result<MemoryMut<'a>>
        where
            M: CopyTarget<T>,
        {
            let whole = self.memory.as_ref().ok().map(|m| m.copy_target());
            let len = whole.map_or(0, |w| w.memory().bytes() / w.elem_size().max(1));
            let (m, start, end) = self.resolve(len)?;
            let part = m.copy_target().elements(start, end).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "elements {start}..{end} of a copy destination of {len} elements do not lie \
                     in its memory"
                ))
            })?;
            Ok(MemoryMut::exclusive(part))
        }
    }

    /// `&mut x`, `&mut x.slice_mut(a..b)` or `&mut xs[i]` in launch arguments.
    #[inline]
    pub fn arg_place<M: DeviceMemoryMut + ?Sized>(place: Place<'_, M>) -> Result<KernelArg<'_>> {
        // The whole parameter (`&mut x`, the common case): nothing to resolve or check.
        if let (Ok(m), None) = (&place.memory, &place.part) {
            return Ok(buffer_arg(*m, AccessMode::Write));
        }
        let (m, range) = place.device_range()?;
        Ok(KernelArg::buffer(
            BufferAccess {
                range,
                mode: AccessMode::Write,
            },
            m.holder(),
        ))
    }

    /// `memory`, which must be device memory: generated code passes `DeviceMemory::len` as
    /// `check` at the user's buffer expression, so that memory that is not device memory is
    /// reported there, in the user's terms (the same error at the same place from the call
    /// taking the result is not repeated).
    pub fn device_memory<M: ?Sized>(memory: &M, check: fn(&M) -> usize) -> &M {
        let _ = check;
        memory
    }

    /// Pageable host memory, as [`SourceProbe`] finds a copy source: a slice or `Vec` of
    /// plain data.
    #[derive(Debug)]
    pub struct PageableHost;

    /// Any other copy source, as [`SourceProbe`] finds it: device or page-locked host memory.
    #[derive(Debug)]
    pub struct NotPageable;

    /// A copy source under test. Generated code calls `(&SourceProbe(src)).kind()` with both
    /// [`PageableProbe`] and [`OtherProbe`] in scope, and the rules of method calls pick
    /// [`PageableProbe::kind`] where it applies (a slice or `Vec` of plain data, behind at
    /// most one more reference), [`OtherProbe::kind`], one autoref further, everywhere else:
    /// the answer depends on the type alone, however the user spells or aliases it.
    #[derive(Debug)]
    pub struct SourceProbe<'a, S: ?Sized>(pub &'a S);

    /// [`SourceProbe::kind`] of pageable host memory.
    pub trait PageableProbe {
        /// [`PageableHost`].
        fn kind(&self) -> PageableHost {
            PageableHost
        }
    }

    impl<T: Pod> PageableProbe for SourceProbe<'_, [T]> {}
    impl<T: Pod> PageableProbe for SourceProbe<'_, Vec<T>> {}
    impl<T: Pod> PageableProbe for SourceProbe<'_, &[T]> {}
    impl<T: Pod> PageableProbe for SourceProbe<'_, &mut [T]> {}
    impl<T: Pod> PageableProbe for SourceProbe<'_, &Vec<T>> {}
    impl<T: Pod> PageableProbe for SourceProbe<'_, &mut Vec<T>> {}

    /// [`SourceProbe::kind`] of every other copy source.
    pub trait OtherProbe {
        /// [`NotPageable`].
        fn kind(&self) -> NotPageable {
            NotPageable
        }
    }

    impl<S: ?Sized> OtherProbe for &SourceProbe<'_, S> {}

    /// What [`SourceProbe`] finds of a copy source that a CUDA graph can copy.
    #[diagnostic::on_unimplemented(
        message = "`{S}` is pageable host memory, which a pipeline cannot copy",
        label = "pageable host memory (a slice or `Vec`): a CUDA graph cannot copy it",
        note = "declare the parameter as a `PinnedBuffer<T>` (page-locked host memory), made \
                from the host data with `PinnedBuffer::from_slice(&device, &data)`"
    )]
    pub trait GraphCopySource<S: ?Sized> {}

    // Not offered as the fix: the error speaks of the source, not of the probe's answer.
    #[diagnostic::do_not_recommend]
    impl<S: ?Sized> GraphCopySource<S> for NotPageable {}

    /// The source of a copy, which must be memory a CUDA graph can copy: generated code passes
    /// as `check` a closure that calls [`graph_copyable`] on its argument, at the user's source
    /// expression, so that pageable host memory is refused there at compile time rather than
    /// by the capture (`CaptureFault::PageableMemory`). `check` is never called: it is
    /// type-checked for the source's type, and the source is evaluated once, here.
    pub fn graph_copy_source<S: ?Sized>(source: &S, check: fn(&S)) -> &S {
        let _ = check;
        source
    }

    /// Compiles only when `kind`, what [`SourceProbe`] finds of `source`, is
    /// [`NotPageable`].
    pub fn graph_copyable<S: ?Sized, K: GraphCopySource<S>>(source: &S, kind: K) {
        let _ = (source, kind);
    }

    /// A by-value launch argument, as generated code passes it: `kernel_arg` is
    /// `KernelValue::kernel_arg` at the user's expression, so that a value that cannot be
    /// passed by value is reported there, in the user's terms, rather than as a bound of this
    /// function.
    pub fn value_with<T: ?Sized>(
        value: &T,
        kernel_arg: for<'a> fn(&'a T) -> KernelArg<'a>,
    ) -> KernelArg<'_> {
        kernel_arg(value)
    }

    /// A by-value kernel argument (scalar or `#[repr(C)]` struct).
    pub fn arg_value<T: DeviceRepr>(v: &T) -> KernelArg<'_> {
        KernelArg::by_ref(v, None, Holder::FOREIGN)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operand::FillPattern;

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
