//! Copies and fills outside a pipeline: [`Stream::copy`] and [`Stream::fill`], and the
//! buffers' host copies, each refused while other code captures the stream.

#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::ffi;
use crate::ffi::memory::MemoryRef;
use crate::operand::FillPattern;
use crate::stream::Stream;

use super::{CopySource, CopyTarget, DeviceMemoryMut, FillValue};

impl Stream {
    /// Queues a copy of `src` into `dst` (same element type and length) on this stream.
    ///
    /// A pageable host source (`&[T]`, `Vec<T>`) is staged by the driver before this returns;
    /// a pinned destination is written later, in stream order, and its `as_slice` waits for
    /// it. A copy into a pinned buffer whose `as_slice` guard is alive is refused
    /// ([`Error::PinnedBusy`]); so is a copy on a stream that code outside streamgraph is
    /// capturing ([`Error::StreamCapturing`]).
    pub fn copy<T, D, S>(&self, dst: &mut D, src: &S) -> Result<()>
    where
        D: CopyTarget<T> + ?Sized,
        S: CopySource<T> + ?Sized,
    {
        copy_checked(self, &dst.copy_target(), &src.copy_source(), "Stream::copy")
    }

    /// Queues a fill of every element of `dst` with `value` on this stream (refused with
    /// [`Error::StreamCapturing`] while code outside streamgraph captures the stream).
    pub fn fill<M>(&self, dst: &mut M, value: M::Elem) -> Result<()>
    where
        M: DeviceMemoryMut + ?Sized,
        M::Elem: FillValue,
    {
        let memory =
            MemoryRef::promised_device(dst.range(), std::mem::size_of::<M::Elem>(), dst.holder());
        fill_checked(self, &memory, value.pattern(), "Stream::fill")
    }
}

/// Queues a copy of `src` into `dst` on `stream` for a caller outside a pipeline's statements
/// (which go to `ffi::copy::copy` themselves): refused while other code captures the stream.
pub(crate) fn copy_checked(
    stream: &Stream,
    dst: &MemoryRef<'_>,
    src: &MemoryRef<'_>,
    what: &'static str,
) -> Result<()> {
    let stream = stream.as_cudarc();
    ffi::status::outside_capture(stream, what, || ffi::copy::copy(stream, dst, src, true))
}

/// Queues a fill of `dst` on `stream` for a caller outside a pipeline's statements: refused
/// while other code captures the stream.
pub(crate) fn fill_checked(
    stream: &Stream,
    dst: &MemoryRef<'_>,
    pattern: FillPattern,
    what: &'static str,
) -> Result<()> {
    let stream = stream.as_cudarc();
    ffi::status::outside_capture(stream, what, || ffi::copy::fill(stream, dst, pattern))
}
