//! Events: markers recorded into a stream, to wait on from other streams, to query, or to time.
//!
//! An event holds a *snapshot*: recording it captures the work submitted to the stream so far,
//! and a later record replaces the snapshot without changing the waits already issued.
//! Events are created with timing disabled by default, which makes them cheaper dependency
//! edges; [`Event::with_timing`] creates one that [`Event::elapsed_time`] accepts.
//!
//! ```no_run
//! use streamgraph::{Device, Event, Stream};
//!
//! let device = Device::new(None)?;
//! let stream = Stream::new(&device, 0)?;
//! let (start, end) = (Event::with_timing(&device)?, Event::with_timing(&device)?);
//! start.record(&stream)?;
//! // ... issue work on `stream` ...
//! end.record(&stream)?;
//! println!("took {} ms", start.elapsed_time(&end)?);
//! # Ok::<(), streamgraph::Error>(())
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cudarc::driver::CudaEvent;

use crate::device::Device;
use crate::error::{Error, Result};
use crate::ffi;
use crate::stream::Stream;

/// A CUDA event. Cheap to clone (an `Arc` inside); clones are the same event.
///
/// ```no_run
/// use streamgraph::{Device, DeviceBuffer, Event, Stream};
/// # fn main() -> streamgraph::Result<()> {
/// let device = Device::new(None)?;
/// let (a, b) = (Stream::new(&device, 0)?, Stream::new(&device, 0)?);
/// let (start, end) = (Event::with_timing(&device)?, Event::with_timing(&device)?);
/// let mut x = DeviceBuffer::<u32>::zeros(&device, 1 << 20)?;
/// start.record(&a)?;
/// a.fill(&mut x, 7)?;
/// end.record(&a)?;
/// b.wait_event(&end)?; // work queued on `b` from now on follows the fill
/// end.synchronize()?;
/// println!("the fill took {:.3} ms", start.elapsed_time(&end)?);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Event {
    inner: Arc<EventInner>,
}

struct EventInner {
    cuda: CudaEvent,
    timing: bool,
    recorded: AtomicBool,
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("handle", &self.inner.cuda.cu_event())
            .field("device", &self.inner.cuda.context().ordinal())
            .field("timing", &self.inner.timing)
            .finish()
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.inner.cuda.cu_event() == other.inner.cuda.cu_event()
    }
}

impl Eq for Event {}

impl Event {
    /// A new event on `device` with timing disabled (the cheaper kind, for dependencies).
    ///
    /// See [`cuEventCreate`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Event};
    /// let device = Device::new(None)?;
    /// let event = Event::new(&device)?;
    /// assert!(!event.is_timing());
    /// assert!(event.query()?); // never recorded: already complete
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn new(device: &Device) -> Result<Event> {
        Event::create(device, false)
    }

    /// A new event on `device` that records timestamps, for [`Event::elapsed_time`].
    ///
    /// See [`cuEventCreate`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Event};
    /// let device = Device::new(None)?;
    /// let start = Event::with_timing(&device)?;
    /// assert!(start.is_timing());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn with_timing(device: &Device) -> Result<Event> {
        Event::create(device, true)
    }

    fn create(device: &Device, timing: bool) -> Result<Event> {
        let cuda =
            ffi::new_event(device.ctx(), timing).map_err(|e| Error::driver("cuEventCreate", e))?;
        Ok(Event {
            inner: Arc::new(EventInner {
                cuda,
                timing,
                recorded: AtomicBool::new(false),
            }),
        })
    }

    /// The device the event belongs to.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Event};
    /// let device = Device::new(None)?;
    /// assert_eq!(Event::new(&device)?.device(), device);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn device(&self) -> Device {
        Device::from_ctx(self.inner.cuda.context())
    }

    /// Whether the event belongs to `stream`'s device (asked without making [`Device`]
    /// values).
    pub(crate) fn on_device_of(&self, stream: &Stream) -> bool {
        self.inner.cuda.context().cu_ctx() == stream.ctx().cu_ctx()
    }

    /// Whether the event records timestamps.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Event};
    /// let device = Device::new(None)?;
    /// assert!(Event::with_timing(&device)?.is_timing());
    /// assert!(!Event::new(&device)?.is_timing());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn is_timing(&self) -> bool {
        self.inner.timing
    }

    /// Captures the work submitted to `stream` so far; replaces an earlier snapshot (waits
    /// issued before keep the old one). The stream must belong to the event's device.
    ///
    /// See [`cuEventRecord`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Event, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let filled = Event::new(&stream.device())?;
    /// let mut x = DeviceBuffer::<f32>::zeros(&stream.device(), 1024)?;
    /// stream.fill(&mut x, 1.0)?;
    /// filled.record(&stream)?; // snapshots the work queued on `stream` so far: the fill
    /// filled.synchronize()?;
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn record(&self, stream: &Stream) -> Result<()> {
        let ctx = self.inner.cuda.context();
        if ctx.cu_ctx() != stream.ctx().cu_ctx() {
            return Err(Error::DeviceMismatch {
                what: "recording an event on a stream of another device",
                left: self.device().ordinal(),
                right: stream.device().ordinal(),
            });
        }
        ffi::event_record(&self.inner.cuda, stream.as_cudarc())
            .map_err(|e| Error::driver("cuEventRecord", e))?;
        self.inner.recorded.store(true, Ordering::Release);
        Ok(())
    }

    /// `true` when the recorded work has completed (also when nothing was recorded); never
    /// blocks.
    ///
    /// See [`cuEventQuery`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::<f32>::zeros(&stream.device(), 1 << 20)?;
    /// stream.fill(&mut x, 1.0)?;
    /// let filled = stream.record_event(None)?;
    /// while !filled.query()? {
    ///     std::thread::yield_now(); // the fill is still running; the host is free meanwhile
    /// }
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn query(&self) -> Result<bool> {
        ffi::event_query(&self.inner.cuda).map_err(|e| Error::driver("cuEventQuery", e))
    }

    /// Blocks the host until the recorded work has completed.
    ///
    /// See [`cuEventSynchronize`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::<f32>::zeros(&stream.device(), 1 << 20)?;
    /// stream.fill(&mut x, 1.0)?;
    /// let filled = stream.record_event(None)?;
    /// filled.synchronize()?; // blocks until the fill has finished
    /// assert!(filled.query()?);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        ffi::event_synchronize(&self.inner.cuda).map_err(|e| Error::driver("cuEventSynchronize", e))
    }

    /// Milliseconds between this event and `end` (`end - self`). Waits for `end` to complete.
    ///
    /// Errors: [`Error::TimingDisabled`] when either event was created without timing,
    /// [`Error::EventNotRecorded`] when either was never recorded.
    ///
    /// See [`cuEventElapsedTime`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{DeviceBuffer, Error, Event, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let device = stream.device();
    /// let (start, end) = (Event::with_timing(&device)?, Event::with_timing(&device)?);
    /// let mut x = DeviceBuffer::<f32>::zeros(&device, 1 << 20)?;
    /// start.record(&stream)?;
    /// stream.fill(&mut x, 1.0)?;
    /// end.record(&stream)?;
    /// assert!(start.elapsed_time(&end)? >= 0.0); // milliseconds; waits for `end`
    /// assert!(matches!(Event::new(&device)?.elapsed_time(&end), Err(Error::TimingDisabled)));
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn elapsed_time(&self, end: &Event) -> Result<f32> {
        if !self.inner.timing || !end.inner.timing {
            return Err(Error::TimingDisabled);
        }
        if !self.inner.recorded.load(Ordering::Acquire)
            || !end.inner.recorded.load(Ordering::Acquire)
        {
            return Err(Error::EventNotRecorded);
        }
        self.synchronize()?;
        end.synchronize()?;
        ffi::event_elapsed_ms(&self.inner.cuda, &end.inner.cuda)
            .map_err(|e| Error::driver("cuEventElapsedTime", e))
    }

    /// The cudarc event: for the driver calls of streams, and for cudarc code (e.g.
    /// `CudaStream::wait`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::Stream;
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let stream = Stream::on(None, 0)?;
    ///     let event = stream.record_event(None)?;
    ///     let other = stream.as_cudarc().context().new_stream()?; // a cudarc stream
    ///     other.wait(event.as_cudarc())?; // cudarc's later work on `other` follows `stream`'s
    ///     Ok(())
    /// }
    /// ```
    #[inline]
    pub fn as_cudarc(&self) -> &CudaEvent {
        &self.inner.cuda
    }
}

/// A stream's calls that take events. (They live beside [`Event`] so that streams, the lower
/// floor, name no event type.)
impl Stream {
    /// Records `event` (a new timing-disabled one when `None`) on this stream and returns it.
    ///
    /// See [`cuEventRecord`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EVENT.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, Stream};
    /// let device = Device::new(None)?;
    /// let (a, b) = (Stream::new(&device, 0)?, Stream::new(&device, 0)?);
    /// let ready = a.record_event(None)?; // a new event: `a`'s work so far
    /// b.wait_event(&ready)?;
    /// let again = a.record_event(Some(&ready))?; // records `ready` again and returns it
    /// assert_eq!(again, ready);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn record_event(&self, event: Option<&Event>) -> Result<Event> {
        let event = match event {
            Some(e) => e.clone(),
            None => Event::new(&self.device())?,
        };
        event.record(self)?;
        Ok(event)
    }

    /// Makes all work submitted **later** to this stream wait for `event`'s recorded work.
    /// Returns at once; work already queued is unaffected, and recording `event` again later
    /// does not change what this wait waits for. An event never recorded is already complete.
    ///
    /// See [`cuStreamWaitEvent`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Device, DeviceBuffer, Stream};
    /// let device = Device::new(None)?;
    /// let (a, b) = (Stream::new(&device, 0)?, Stream::new(&device, 0)?);
    /// let mut x = DeviceBuffer::<f32>::zeros(&device, 1024)?;
    /// a.fill(&mut x, 1.0)?;
    /// let filled = a.record_event(None)?;
    /// b.wait_event(&filled)?; // returns at once; later work on `b` follows the fill
    /// assert_eq!(x.to_vec_on(&b)?, vec![1.0; 1024]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        ffi::stream_wait_event(self.as_cudarc(), event.as_cudarc())
            .map_err(|e| Error::driver("cuStreamWaitEvent", e))
    }
}
