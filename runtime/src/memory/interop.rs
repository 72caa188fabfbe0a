//! cudarc's device memory in pipelines: [`CudaSlice`], [`CudaView`] and [`CudaViewMut`] as
//! kernel arguments and as the sides of copies and fills, and [`DeviceBuffer::from_cudarc`],
//! which moves a `CudaSlice` into a buffer that graphs can keep.
//!
//! A borrowed cudarc slice is live only while it is borrowed, and cudarc frees it in its own
//! stream's order when it is dropped. So work on such memory is ordered with the slice's stream
//! both ways (the stream of the work waits for the slice's stream first, and the slice's stream
//! waits for the work afterwards), and capturing it into a graph is refused: a graph replays
//! after the borrow has ended. Memory moved into a [`DeviceBuffer`] has no such limit.

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DeviceSlice};

use super::{CopySource, CopyTarget, DeviceBuffer, DeviceMemory, DeviceMemoryMut, Pod};
use crate::ffi::device_alloc::DeviceAlloc;
use crate::ffi::memory::{Holder, MemoryRef};
use crate::ffi::status::{stream_capture_status, CaptureStatus};
use crate::operand::DeviceRange;

/// The device range of a cudarc slice or view of `bytes` bytes.
fn range_of<T, S: DevicePtr<T>>(s: &S) -> DeviceRange {
    let own = s.stream();
    let ptr = if matches!(stream_capture_status(own), Ok(CaptureStatus::None)) {
        address(s, own)
    } else {
        // `device_ptr` makes its stream wait for the slice's last write, which would break a
        // capture of the slice's own stream (the event was recorded outside it): ask through a
        // fresh stream instead. Work on the slice is refused while its stream is captured
        // (`cudarc_ordered`), so the address only ever names it.
        match own.context().new_stream() {
            Ok(scratch) => address(s, &scratch),
            Err(_) => 0,
        }
    };
    DeviceRange {
        device: i32::try_from(own.context().ordinal()).unwrap_or(i32::MAX),
        ptr,
        bytes: s.num_bytes(),
    }
}

/// The slice's address, read through `device_ptr` on `stream`, which (when cudarc tracks
/// events) makes `stream` wait for the slice's last write: a no-op on the slice's own stream.
/// The read it would record is not one: the address is only stored.
fn address<T, S: DevicePtr<T>>(s: &S, stream: &CudaStream) -> u64 {
    let (ptr, sync) = s.device_ptr(stream);
    std::mem::forget(sync);
    ptr
}

macro_rules! cudarc_memory {
    ($($ty:ty),*) => {$(
        // SAFETY: the range is the slice's or view's own, allocated while it is borrowed;
        // cudarc frees it in its stream's order, which `Holder::cudarc` hands out so that work
        // on it is ordered before the free and is never captured (`cudarc_ordered`). Elements
        // are `T`s.
        unsafe impl<T: Pod> DeviceMemory for $ty {
            type Elem = T;
            fn range(&self) -> DeviceRange {
                range_of::<T, Self>(self)
            }
            fn holder(&self) -> Holder<'_> {
                Holder::cudarc(self.stream())
            }
            fn len(&self) -> usize {
                DeviceSlice::len(self)
            }
        }

        // SAFETY: as for `DeviceMemory` above.
        unsafe impl<T: Pod> CopySource<T> for $ty {
            fn copy_source(&self) -> MemoryRef<'_> {
                MemoryRef::promised_device(self.range(), std::mem::size_of::<T>(), self.holder())
            }
        }
    )*};
}

cudarc_memory!(CudaSlice<T>, CudaView<'_, T>, CudaViewMut<'_, T>);

macro_rules! cudarc_memory_mut {
    ($($ty:ty),*) => {$(
        // SAFETY: a `CudaSlice` owns its memory and a `CudaViewMut` borrows it exclusively.
        unsafe impl<T: Pod> DeviceMemoryMut for $ty {}

        // SAFETY: as for `DeviceMemory`; device memory, written through an owner or an
        // exclusive borrow.
        unsafe impl<T: Pod> CopyTarget<T> for $ty {
            fn copy_target(&self) -> MemoryRef<'_> {
                MemoryRef::promised_device(self.range(), std::mem::size_of::<T>(), self.holder())
            }
        }
    )*};
}

cudarc_memory_mut!(CudaSlice<T>, CudaViewMut<'_, T>);

impl<T: Pod + Send + Sync> DeviceBuffer<T> {
    /// Moves a cudarc allocation into a buffer: graphs that capture it keep it alive, and it
    /// is freed (by dropping the `CudaSlice`) once the buffer and every such graph are gone and
    /// the context has finished its work. [`DeviceBuffer::into_cudarc`] gives it back.
    ///
    /// Waits until the work cudarc queued on the slice has finished (on the slice's stream, and
    /// the reads and writes cudarc recorded on other streams), so that work on the buffer, on
    /// any stream, follows it. Refused with [`crate::Error::StreamCapturing`] while the slice's
    /// stream is being captured; the slice is dropped then.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::cudarc::driver::CudaContext;
    /// use streamgraph::DeviceBuffer;
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let stream = CudaContext::new(0)?.default_stream(); // a cudarc program's stream
    ///     let slice = stream.clone_htod(&[1.0f32, 2.0, 3.0])?; // a `CudaSlice<f32>`
    ///     let x = DeviceBuffer::from_cudarc(slice)?; // waits for cudarc's copy into it
    ///     assert_eq!(x.to_vec()?, [1.0, 2.0, 3.0]);
    ///     Ok(())
    /// }
    /// ```
    pub fn from_cudarc(slice: CudaSlice<T>) -> crate::error::Result<DeviceBuffer<T>> {
        let len = DeviceSlice::len(&slice);
        let ordinal = i32::try_from(slice.context().ordinal()).unwrap_or(i32::MAX);
        Ok(DeviceBuffer::from_parts(
            DeviceAlloc::from_cudarc(slice)?,
            len,
            ordinal,
        ))
    }

    /// The `CudaSlice` of a buffer made by [`DeviceBuffer::from_cudarc`], to pass to cudarc
    /// code (read-only: views and reads; `None` for the runtime's own allocations).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::cudarc::driver::CudaContext;
    /// use streamgraph::DeviceBuffer;
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let stream = CudaContext::new(0)?.default_stream(); // a cudarc program's stream
    ///     let x = DeviceBuffer::from_cudarc(stream.clone_htod(&[1u32, 2, 3])?)?;
    ///     assert_eq!(stream.clone_dtoh(x.as_cudarc().ok_or("not from cudarc")?)?, [1, 2, 3]);
    ///     assert!(DeviceBuffer::<u32>::for_planning(3)?.as_cudarc().is_none()); // not from cudarc
    ///     Ok(())
    /// }
    /// ```
    pub fn as_cudarc(&self) -> Option<&CudaSlice<T>> {
        self.allocation().cudarc()?.get()
    }

    /// Gives the `CudaSlice` of a buffer made by [`DeviceBuffer::from_cudarc`] back, after the
    /// context has finished the work queued so far (every stream's, so cudarc's work on the
    /// slice afterwards follows all of streamgraph's). `Err(self)` while a graph still keeps the
    /// memory (drop it first), when waiting for the context fails, or when the buffer was not
    /// made from cudarc.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::cudarc::driver::CudaContext;
    /// use streamgraph::DeviceBuffer;
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let stream = CudaContext::new(0)?.default_stream(); // a cudarc program's stream
    ///     let x = DeviceBuffer::from_cudarc(stream.clone_htod(&[1u32, 2, 3])?)?;
    ///     // ... pipelines and graphs use `x`; drop the graphs ...
    ///     let slice = x.into_cudarc().map_err(|_| "still kept by a graph, or not from cudarc")?;
    ///     assert_eq!(stream.clone_dtoh(&slice)?, [1, 2, 3]);
    ///     Ok(())
    /// }
    /// ```
    pub fn into_cudarc(self) -> Result<CudaSlice<T>, DeviceBuffer<T>> {
        let (alloc, len, ordinal) = self.into_parts();
        DeviceAlloc::into_cudarc(alloc)
            .map_err(|alloc| DeviceBuffer::from_parts(alloc, len, ordinal))
    }
}
