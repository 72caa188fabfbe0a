//! Streams: ordered queues of GPU work, and the current-stream scope.
//!
//! [`Stream`] keeps the contract of `torch.cuda.Stream` (the crate docs' "The stream contract")
//! in Rust idiom:
//!
//! | call | meaning |
//! | --- | --- |
//! | [`Stream::new`], [`Stream::on`] | a new stream; an out-of-range priority is clamped, never rejected |
//! | [`Stream::query`] | `true` when all work submitted so far has completed; never blocks |
//! | [`Stream::record_event`] | records an event (a new one when none is given) and returns it |
//! | [`Stream::synchronize`] | blocks the host until the stream's work has finished |
//! | [`Stream::wait_event`] | later work waits for the event's recorded work; returns at once |
//! | [`Stream::wait_stream`] | later work waits for everything submitted to the other stream so far |
//! | [`Stream::scope`], [`Stream::enter`] | operations that name no stream go to this one |
//!
//! All streams streamgraph creates are non-blocking: they do not synchronize with the legacy
//! default stream ([`Stream::default_stream`]), so every ordering is one you asked for.
//!
//! ```no_run
//! use streamgraph::{Device, Stream};
//!
//! let device = Device::new(None)?;
//! let main = Stream::new(&device, 0)?;
//! let side = Stream::new(&device, -100)?; // clamped to the highest priority
//! // ... issue work on `main` ...
//! let ready = main.record_event(None)?;
//! side.wait_event(&ready)?; // later work on `side` follows `main`'s work so far
//! side.scope(|| {
//!     // kernels launched here with `Kernel::launch` run on `side`
//! });
//! main.wait_stream(&side)?;
//! main.synchronize()?;
//! assert!(main.query()?);
//! # Ok::<(), streamgraph::Error>(())
//! ```

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};

use crate::access::{CopySource, CopyTarget, DeviceMemoryMut, FillValue};
use crate::device::{require_driver, Device};
use crate::error::{CaptureFault, Error, Result};
use crate::ffi;
use crate::ffi::memory::MemoryRef;
use crate::operand::{FillPattern, HostFn};

/// Clamps a requested stream priority into the driver's range `(least, greatest)`.
///
/// CUDA numbers priorities downwards: `least` is the lowest priority (e.g. `0`) and
/// `greatest` the highest (e.g. `-5`). A large positive request becomes `least`, a large
/// negative one `greatest`. The order of the pair does not matter.
///
/// # Examples
///
/// ```
/// use streamgraph::clamp_priority;
/// assert_eq!(clamp_priority(-100, (0, -5)), -5); // the highest priority
/// assert_eq!(clamp_priority(3, (0, -5)), 0); // the lowest
/// assert_eq!(clamp_priority(-2, (-5, 0)), -2);
/// ```
pub fn clamp_priority(requested: i32, (least, greatest): (i32, i32)) -> i32 {
    requested.clamp(least.min(greatest), least.max(greatest))
}

/// A CUDA stream. Cheap to clone (an `Arc` inside); clones are the same stream, and equality
/// compares the driver handle.
///
/// ```no_run
/// use streamgraph::{Device, DeviceBuffer, Stream};
/// # fn main() -> streamgraph::Result<()> {
/// let device = Device::new(None)?;
/// let copy = Stream::new(&device, 0)?;
/// let compute = Stream::new(&device, -1)?; // clamped into the device's priority range
/// let mut x = DeviceBuffer::<f32>::zeros(&device, 1024)?;
/// copy.fill(&mut x, 1.0)?;                 // queued on `copy`; returns at once
/// compute.wait_stream(&copy)?;             // later work on `compute` follows the fill
/// assert_eq!(x.to_vec_on(&compute)?, vec![1.0; 1024]);
/// // Stream-less operations inside the scope use `compute`.
/// let y = compute.scope(|| x.to_vec())?;
/// assert_eq!(y.len(), 1024);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Stream {
    inner: Arc<CudaStream>,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("handle", &self.inner.cu_stream())
            .field("device", &self.inner.context().ordinal())
            .finish()
    }
}

impl PartialEq for Stream {
    fn eq(&self, other: &Self) -> bool {
        self.inner.cu_stream() == other.inner.cu_stream()
            && self.inner.context().cu_ctx() == other.inner.context().cu_ctx()
    }
}

impl Eq for Stream {}

impl Stream {
    /// A new non-blocking stream on `device` with `priority`, clamped to the device's range
    /// (lower number = higher priority).
    ///
    /// See [`cuStreamCreateWithPriority`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Stream};
    /// let device = Device::new(None)?;
    /// let stream = Stream::new(&device, 0)?; // priority 0, the default
    /// let urgent = Stream::new(&device, -100)?; // clamped to the highest priority
    /// assert_eq!(urgent.priority()?, device.stream_priority_range()?.1);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn new(device: &Device, priority: i32) -> Result<Stream> {
        let range = device.stream_priority_range()?;
        let inner = ffi::new_stream(device.ctx(), clamp_priority(priority, range))
            .map_err(|e| Error::driver("cuStreamCreateWithPriority", e))?;
        Ok(Stream { inner })
    }

    /// A new stream on device `device` (`None` or negative: the current device), like
    /// `torch.cuda.Stream(device, priority)`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::Stream;
    /// let stream = Stream::on(Some(0), 0)?; // device 0, priority 0
    /// assert_eq!(stream.device().ordinal(), 0);
    /// let current = Stream::on(None, 0)?; // the current device
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn on(device: Option<i32>, priority: i32) -> Result<Stream> {
        Stream::new(&Device::new(device)?, priority)
    }

    /// The device's legacy default stream (the null stream), which synchronizes with other
    /// blocking streams, not with the non-blocking streams streamgraph creates.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Stream};
    /// let device = Device::new(None)?;
    /// let stream = Stream::new(&device, 0)?;
    /// // Later work on `stream` follows what other code queued on the legacy default stream:
    /// stream.wait_stream(&Stream::default_stream(&device))?;
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn default_stream(device: &Device) -> Stream {
        Stream {
            inner: device.ctx().default_stream(),
        }
    }

    /// The device's per-thread default stream (`CU_STREAM_PER_THREAD`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Stream};
    /// let device = Device::new(None)?;
    /// let mine = Stream::per_thread(&device);
    /// assert_eq!(mine, Stream::per_thread(&device)); // one handle, `CU_STREAM_PER_THREAD`
    /// mine.synchronize()?; // waits for this thread's per-thread stream only
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn per_thread(device: &Device) -> Stream {
        Stream {
            inner: device.ctx().per_thread_stream(),
        }
    }

    /// Wraps a cudarc stream (for interop). cudarc's own settings (its per-buffer event
    /// tracking) are left as they are: streamgraph's work on the stream uses none of them.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::cudarc::driver::CudaContext;
    /// use streamgraph::Stream;
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let cu = CudaContext::new(0)?.new_stream()?; // a cudarc program's stream
    ///     let stream = Stream::from_cudarc(cu.clone());
    ///     assert!(std::sync::Arc::ptr_eq(stream.as_cudarc(), &cu));
    ///     Ok(())
    /// }
    /// ```
    pub fn from_cudarc(stream: Arc<CudaStream>) -> Stream {
        Stream { inner: stream }
    }

    /// The cudarc stream, for interop with code that uses cudarc directly.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::Stream;
    /// let stream = Stream::on(None, 0)?;
    /// let cu = stream.as_cudarc(); // `&Arc<CudaStream>`, for cudarc's API
    /// assert_eq!(Stream::from_cudarc(cu.clone()), stream);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn as_cudarc(&self) -> &Arc<CudaStream> {
        &self.inner
    }

    /// The device the stream belongs to.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Stream};
    /// let device = Device::new(None)?;
    /// assert_eq!(Stream::new(&device, 0)?.device(), device);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn device(&self) -> Device {
        Device::from_ctx(self.inner.context())
    }

    /// The stream's priority as the driver reports it (after clamping).
    ///
    /// See [`cuStreamGetPriority`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Stream};
    /// let device = Device::new(None)?;
    /// let (least, greatest) = device.stream_priority_range()?;
    /// assert_eq!(Stream::new(&device, least)?.priority()?, least);
    /// assert_eq!(Stream::new(&device, i32::MIN)?.priority()?, greatest); // clamped
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn priority(&self) -> Result<i32> {
        ffi::stream_priority(&self.inner).map_err(|e| Error::driver("cuStreamGetPriority", e))
    }

    /// `true` when all work submitted so far has completed; never blocks.
    ///
    /// See [`cuStreamQuery`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html).
    ///
    /// A stream that is being captured has run nothing yet: querying it is an
    /// [`Error::Capture`] ([`crate::CaptureFault::QueryWhileCapturing`]), checked before
    /// the driver is asked (which would invalidate the capture).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::<f32>::zeros(&stream.device(), 1 << 20)?;
    /// stream.fill(&mut x, 1.0)?;
    /// while !stream.query()? {
    ///     std::thread::yield_now(); // the fill is still running; the host is free meanwhile
    /// }
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn query(&self) -> Result<bool> {
        refuse_while_capturing(self, CaptureFault::QueryWhileCapturing)?;
        ffi::stream_query(&self.inner).map_err(|e| Error::driver("cuStreamQuery", e))
    }

    /// Blocks the host until all work submitted to the stream has finished.
    ///
    /// See [`cuStreamSynchronize`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html).
    ///
    /// Synchronizing a stream that is being captured is an [`Error::Capture`]
    /// ([`crate::CaptureFault::SynchronizeWhileCapturing`]), checked before the driver is
    /// asked (which would invalidate the capture).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::<f32>::zeros(&stream.device(), 1 << 20)?;
    /// stream.fill(&mut x, 1.0)?; // queued; returns at once
    /// stream.synchronize()?; // the fill has finished
    /// assert!(stream.query()?);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        refuse_while_capturing(self, CaptureFault::SynchronizeWhileCapturing)?;
        ffi::stream_synchronize(&self.inner).map_err(|e| Error::driver("cuStreamSynchronize", e))
    }

    /// Makes all work submitted later to this stream wait for everything submitted to
    /// `other` **at the time of the call** (not for work `other` receives afterwards).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, DeviceBuffer, Stream};
    /// let device = Device::new(None)?;
    /// let (a, b) = (Stream::new(&device, 0)?, Stream::new(&device, 0)?);
    /// let mut x = DeviceBuffer::<f32>::zeros(&device, 1024)?;
    /// a.fill(&mut x, 2.0)?;
    /// b.wait_stream(&a)?; // later work on `b` follows everything queued on `a` so far
    /// assert_eq!(x.to_vec_on(&b)?, vec![2.0; 1024]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        if self == other {
            return Ok(());
        }
        let snapshot = other.record_event(None)?;
        self.wait_event(&snapshot)
    }

    /// Runs `f` with this stream as the current stream: operations that name no stream
    /// (e.g. [`crate::Kernel::launch`], [`current_stream`]) use it. Restores the previous
    /// current stream afterwards, also when `f` panics.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// let side = Stream::on(None, 0)?;
    /// let x = DeviceBuffer::from_host(&side.device(), &[1.0f32, 2.0])?;
    /// let y = side.scope(|| x.to_vec())?; // `to_vec` names no stream: it copies on `side`
    /// assert_eq!(y, [1.0, 2.0]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.enter();
        f()
    }

    /// Makes this stream the current stream until the returned guard is dropped (the guard
    /// form of [`Stream::scope`]). Scopes nest; they are per thread.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{current_stream, Stream};
    /// let side = Stream::on(None, 0)?;
    /// {
    ///     let _guard = side.enter();
    ///     assert_eq!(current_stream()?, side);
    /// } // dropping the guard restores the previous current stream
    /// assert_ne!(current_stream()?, side);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn enter(&self) -> StreamGuard {
        let depth = SCOPE.with(|stack| {
            let mut stack = stack.borrow_mut();
            stack.push(self.clone());
            stack.len() - 1
        });
        StreamGuard {
            depth,
            _not_send: PhantomData,
        }
    }

    /// Runs `f` on a driver thread once all work submitted so far to this stream has finished.
    /// `f` must not call into CUDA. A panic in `f` is caught and reported on stderr (it cannot
    /// unwind through the driver).
    ///
    /// Refused with [`Error::StreamCapturing`] while the stream is being captured by code
    /// outside streamgraph (`f` runs once; a graph would run it on every launch). In a pipeline,
    /// a `host` statement runs on every replay of its graph.
    ///
    /// See [`cuLaunchHostFunc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use streamgraph::Stream;
    /// let stream = Stream::on(None, 0)?;
    /// let done = Arc::new(AtomicBool::new(false));
    /// let flag = done.clone();
    /// stream.launch_host_fn(Arc::new(move || flag.store(true, Ordering::Release)))?;
    /// stream.synchronize()?; // waits for the host function too
    /// assert!(done.load(Ordering::Acquire));
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn launch_host_fn(&self, f: HostFn) -> Result<()> {
        ffi::launch_host_fn_once(&self.inner, f, "Stream::launch_host_fn")
    }

    /// Queues a copy of `src` into `dst` (same element type and length) on this stream.
    ///
    /// A pageable host source (`&[T]`, `Vec<T>`) is staged by the driver before this returns;
    /// a pinned destination is written later, in stream order, and its `as_slice` waits for
    /// it. A copy into a pinned buffer whose `as_slice` guard is alive is refused
    /// ([`Error::PinnedBusy`]); so is a copy on a stream that code outside streamgraph is
    /// capturing ([`Error::StreamCapturing`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::<f32>::zeros(&stream.device(), 3)?;
    /// stream.copy(&mut x, &[1.0f32, 2.0, 3.0][..])?; // from the host: staged before it returns
    /// let mut y = DeviceBuffer::<f32>::zeros(&stream.device(), 3)?;
    /// stream.copy(&mut y, &x)?; // device to device, in stream order
    /// assert_eq!(y.to_vec_on(&stream)?, [1.0, 2.0, 3.0]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn copy<T, D, S>(&self, dst: &mut D, src: &S) -> Result<()>
    where
        D: CopyTarget<T> + ?Sized,
        S: CopySource<T> + ?Sized,
    {
        copy_checked(self, &dst.copy_target(), &src.copy_source(), "Stream::copy")
    }

    /// Queues a fill of every element of `dst` with `value` on this stream (refused with
    /// [`Error::StreamCapturing`] while code outside streamgraph captures the stream).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::<u32>::zeros(&stream.device(), 4)?;
    /// stream.fill(&mut x, 7)?;
    /// assert_eq!(x.to_vec_on(&stream)?, [7, 7, 7, 7]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn fill<M>(&self, dst: &mut M, value: M::Elem) -> Result<()>
    where
        M: DeviceMemoryMut + ?Sized,
        M::Elem: FillValue,
    {
        let memory =
            MemoryRef::promised_device(dst.range(), std::mem::size_of::<M::Elem>(), dst.holder());
        fill_checked(self, &memory, value.pattern(), "Stream::fill")
    }

    /// Refuses `what` while this stream is capturing (see [`Error::StreamCapturing`]).
    #[inline]
    pub(crate) fn refuse_capturing(&self, what: &'static str) -> Result<()> {
        ffi::status::refuse_capturing(&self.inner, what)
    }

    /// Refuses `what`, issued already, when this stream is capturing now, and invalidates that
    /// capture (see `ffi::status::refuse_captured`).
    #[inline]
    pub(crate) fn refuse_captured(&self, what: &'static str) -> Result<()> {
        ffi::status::refuse_captured(&self.inner, what)
    }

    /// A stream of the runtime's own (a lane, `ffi/lane.rs`) as a `Stream`, for the length of
    /// one call that queues work on it.
    pub(crate) fn lane(inner: &Arc<CudaStream>) -> Stream {
        Stream {
            inner: inner.clone(),
        }
    }

    #[inline]
    pub(crate) fn ctx(&self) -> &Arc<CudaContext> {
        self.inner.context()
    }
}

thread_local! {
    /// The stack of scoped streams of this thread; the innermost is last.
    static SCOPE: RefCell<Vec<Stream>> = const { RefCell::new(Vec::new()) };
}

/// Keeps a stream current (see [`Stream::enter`]); dropping it restores the previous one.
/// Not `Send`: the current stream is per thread.
#[derive(Debug)]
#[must_use = "the stream is current only while the guard lives"]
pub struct StreamGuard {
    depth: usize,
    _not_send: PhantomData<*const ()>,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        // Truncating (rather than popping) also unwinds guards dropped out of order. During
        // thread teardown the stack may be gone already; nothing is left to restore then.
        let _ = SCOPE.try_with(|stack| {
            if let Ok(mut stack) = stack.try_borrow_mut() {
                stack.truncate(self.depth);
            }
        });
    }
}

/// The current stream: the innermost [`Stream::scope`] of this thread, else the current
/// device's legacy default stream.
///
/// # Examples
///
/// ```no_run
/// use streamgraph::{current_stream, Stream};
/// let side = Stream::on(None, 0)?;
/// assert_eq!(side.scope(current_stream)?, side); // inside a scope: the scope's stream
/// // Outside any scope: the current device's legacy default stream.
/// assert_eq!(current_stream()?, Stream::default_stream(&side.device()));
/// # Ok::<(), streamgraph::Error>(())
/// ```
pub fn current_stream() -> Result<Stream> {
    if let Some(stream) = SCOPE.with(|stack| stack.borrow().last().cloned()) {
        return Ok(stream);
    }
    require_driver()?;
    Ok(Stream::default_stream(&Device::new(None)?))
}

/// The stream for synchronous conveniences on `device`: the current stream when it belongs
/// to `device`, else the device's legacy default stream.
pub(crate) fn current_stream_on(device: &Device) -> Stream {
    let scoped = SCOPE.with(|stack| stack.borrow().last().cloned());
    match scoped {
        Some(s) if s.ctx().cu_ctx() == device.ctx().cu_ctx() => s,
        _ => Stream::default_stream(device),
    }
}

/// Refuses `fault` (a synchronize or query) on a stream that is capturing: the driver would
/// invalidate the capture instead of answering.
fn refuse_while_capturing(stream: &Stream, fault: CaptureFault) -> Result<()> {
    match ffi::status::stream_capture_status(&stream.inner) {
        Ok(ffi::status::CaptureStatus::None) => Ok(()),
        Ok(_) => Err(Error::capture(fault)),
        // A capture code (e.g. an implicit dependency in global mode) becomes its fault.
        Err(e) => Err(Error::driver("cuStreamIsCapturing", e)),
    }
}

/// Queues a copy of `src` into `dst` in `stream`'s order for a caller outside a pipeline's
/// statements (which go to `ffi::copy::copy` themselves), on a lane (`ffi/lane.rs`): refused
/// while other code captures the stream.
pub(crate) fn copy_checked(
    stream: &Stream,
    dst: &MemoryRef<'_>,
    src: &MemoryRef<'_>,
    what: &'static str,
) -> Result<()> {
    ffi::lane::on_lane(&stream.inner, what, |lane| {
        ffi::copy::copy(lane, dst, src, true)
    })
}

/// Queues a fill of `dst` in `stream`'s order for a caller outside a pipeline's statements, on
/// a lane: refused while other code captures the stream.
pub(crate) fn fill_checked(
    stream: &Stream,
    dst: &MemoryRef<'_>,
    pattern: FillPattern,
    what: &'static str,
) -> Result<()> {
    ffi::lane::on_lane(&stream.inner, what, |lane| {
        ffi::copy::fill(lane, dst, pattern)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_clamp_to_the_range() {
        let range = (0, -5);
        assert_eq!(clamp_priority(0, range), 0);
        assert_eq!(clamp_priority(-3, range), -3);
        assert_eq!(clamp_priority(-5, range), -5);
        assert_eq!(clamp_priority(100, range), 0);
        assert_eq!(clamp_priority(-100, range), -5);
        assert_eq!(clamp_priority(i32::MIN, range), -5);
        assert_eq!(clamp_priority(i32::MAX, range), 0);
        assert_eq!(clamp_priority(7, (0, 0)), 0);
        assert_eq!(
            clamp_priority(-2, (-5, 0)),
            -2,
            "order of the pair does not matter"
        );
    }
}
