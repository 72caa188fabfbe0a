//! Lanes for work queued outside pipelines ([`on_lane`]): `Stream::copy`, `Stream::fill`,
//! `Kernel::launch_on`, host functions, a `DeviceBuffer`'s host copies and read-backs, a
//! device flag's read-back, `ops::Random`'s offset.
//!
//! A capture that other code begins on the caller's stream (another thread may hold its
//! cudarc handle) takes whatever is queued there while it lasts, and checks of that stream
//! before and after the work cannot see one begun right after the first and ended right before
//! the second. So the work goes to a lane: a stream of this thread's own for the caller's
//! stream, never handed out, at that stream's priority, which waits for the caller's stream
//! first (fork) and which the caller's stream waits for afterwards (join). A capture can reach
//! the lane only through the fork; whether the fork's record went into one the driver says of
//! the event (a query of an event recorded in a capture fails, also after that capture ended),
//! asked before anything is queued on the lane: then nothing is, the lane is given up (parked:
//! not destroyed while a capture the runtime cannot end may hold it, [`park`]) and the work is
//! refused with [`Error::StreamCapturing`]. The lane is asked once more after the work, for
//! good measure. A caller's stream found capturing at the join is not joined (the wait would
//! break that capture, which holds none of the work): the lane is waited for on the host
//! instead, and the work is refused the same way, done.
//!
//! A graph's launch needs no lane: the driver refuses `cuGraphLaunch` into a capture.

use std::any::Any;
use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use cudarc::driver::{sys, CudaEvent, CudaStream, DriverError};

use super::ensure_current;
use super::status::{refuse_captured, refuse_capturing, stream_capture_status, CaptureStatus};
use super::{
    event_record, new_stream, stream_priority, stream_wait_event, synchronize_beside_capture,
};
use crate::error::{Error, Result};

/// A lane: its stream, the caller's stream (context and handle) it serves, its priority, the
/// fork and join events.
struct Lane {
    stream: Arc<CudaStream>,
    ctx: sys::CUcontext,
    caller: sys::CUstream,
    priority: i32,
    fork: CudaEvent,
    join: CudaEvent,
}

/// How many idle lanes a thread keeps (the least recently used go first): one per caller's
/// stream, so that work on two streams stays as independent as it was.
const KEPT: usize = 16;

thread_local! {
    /// This thread's idle lanes, the most recently used last. One in use is taken out, so
    /// that work queued from inside another's gets a lane of its own.
    static LANES: RefCell<Vec<Lane>> = const { RefCell::new(Vec::new()) };
}

/// Runs `issue`, which queues `what` on the stream it is given, on a lane of `stream` (see the
/// module docs): refused before anything is queued while `stream` is capturing, and refused
/// after, as the module docs say, when a capture other code began holds the lane or `stream`.
pub(crate) fn on_lane<R>(
    stream: &Arc<CudaStream>,
    what: &'static str,
    issue: impl FnOnce(&Arc<CudaStream>) -> Result<R>,
) -> Result<R> {
    refuse_capturing(stream, what)?;
    let lane = take(stream)?;
    match fork(stream, &lane.stream, &lane.fork, what) {
        Ok(()) => {}
        Err(ForkFailed::Record(e)) => {
            put_back(lane);
            return Err(e);
        }
        Err(ForkFailed::Captured(e)) => {
            lane.park();
            return Err(e);
        }
    }
    let issued = issue(&lane.stream);
    if let Err(e) = refuse_captured(&lane.stream, what) {
        lane.park();
        return Err(e);
    }
    let joined = join_back(stream, &lane.stream, &lane.join, what);
    put_back(lane);
    issued.and_then(|out| joined.map(|()| out))
}

/// How [`fork`] failed.
pub(crate) enum ForkFailed {
    /// The record on the caller's stream failed: nothing happened to the lane.
    Record(Error),
    /// The lane may be in a capture other code began (or the wait failed): give it up.
    Captured(Error),
}

/// The fork of `lane` from `caller`: `fork` recorded on `caller`, waited for on `lane`, then
/// asked whether a capture took the record (module docs).
pub(crate) fn fork(
    caller: &CudaStream,
    lane: &CudaStream,
    fork: &CudaEvent,
    what: &'static str,
) -> Result<(), ForkFailed> {
    event_record(fork, caller)
        .map_err(|e| ForkFailed::Record(Error::driver("cuEventRecord", e)))?;
    let waited = stream_wait_event(lane, fork).map_err(|e| Error::driver("cuStreamWaitEvent", e));
    if waited.is_err() || recorded_in_capture(fork) != Ok(false) {
        let _ = refuse_captured(lane, what);
        return Err(ForkFailed::Captured(
            waited.err().unwrap_or(Error::StreamCapturing { what }),
        ));
    }
    Ok(())
}

/// The join of `lane` (asked already: not capturing) back into `caller`: `join` recorded on
/// `lane`, waited for on `caller`; where `caller` is capturing (or the wait fails), the lane is
/// waited for on the host instead and the work refused, done (module docs).
pub(crate) fn join_back(
    caller: &CudaStream,
    lane: &CudaStream,
    join: &CudaEvent,
    what: &'static str,
) -> Result<()> {
    let joined = match stream_capture_status(caller) {
        Ok(CaptureStatus::None) => event_record(join, lane)
            .and_then(|()| stream_wait_event(caller, join))
            // A capture begun since the question: the wait failed (and broke it).
            .map_err(|_| Error::StreamCapturing { what }),
        Ok(_) => Err(Error::StreamCapturing { what }),
        Err(e) => Err(Error::driver("cuStreamIsCapturing", e)),
    };
    match joined {
        Ok(()) => Ok(()),
        // Nothing orders later work on `caller` after the work: it has finished before the
        // error comes back.
        // A capture this thread began (other code, in global or thread-local mode) forbids it
        // a plain synchronize: the wait is made beside that capture.
        Err(e) => synchronize_beside_capture(lane)
            .map_err(|s| Error::driver("cuStreamSynchronize", s))
            .and(Err(e)),
    }
}

/// This thread's idle lane for `stream`; else, when the thread keeps [`KEPT`] lanes already,
/// the least recently used of them at `stream`'s context and priority whose work has all
/// finished (taken over: waiting for it orders nothing); else a new one at that priority.
fn take(stream: &Arc<CudaStream>) -> Result<Lane> {
    let ctx = stream.context();
    // None during the thread's teardown (the list is gone): a new lane then.
    let found = LANES
        .try_with(|lanes| {
            let mut lanes = lanes.try_borrow_mut().ok()?;
            let i = lanes
                .iter()
                .rposition(|l| l.caller == stream.cu_stream() && l.ctx == ctx.cu_ctx())?;
            Some(lanes.remove(i))
        })
        .ok()
        .flatten();
    if let Some(lane) = found {
        return Ok(lane);
    }
    take_other(stream)
}

/// [`take`] when the thread has no lane for `stream`: an idle one taken over, or a new one.
#[cold]
#[inline(never)]
fn take_other(stream: &Arc<CudaStream>) -> Result<Lane> {
    let ctx = stream.context();
    let (caller, cu_ctx) = (stream.cu_stream(), ctx.cu_ctx());
    let priority = stream_priority(stream).map_err(|e| Error::driver("cuStreamGetPriority", e))?;
    let idle = |lanes: &mut Vec<Lane>| {
        if lanes.len() < KEPT {
            return None;
        }
        let i = lanes.iter().position(|l| {
            l.ctx == cu_ctx
                && l.priority == priority
                && super::stream_query_beside_capture(&l.stream) == Ok(true)
        })?;
        let mut lane = lanes.remove(i);
        lane.caller = caller;
        Some(lane)
    };
    let taken = LANES
        .try_with(|lanes| idle(&mut *lanes.try_borrow_mut().ok()?))
        .ok()
        .flatten();
    if let Some(lane) = taken {
        return Ok(lane);
    }
    let made = new_stream(ctx, priority).and_then(|lane| {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
        Ok(Lane {
            stream: lane,
            ctx: cu_ctx,
            caller,
            priority,
            fork: ctx.new_event(flags)?,
            join: ctx.new_event(flags)?,
        })
    });
    #[cfg(feature = "testing")]
    MADE.with(|m| m.set(m.get() + 1));
    made.map_err(|e| Error::driver("cuStreamCreateWithPriority", e))
}

#[cfg(feature = "testing")]
thread_local! {
    /// Lanes this thread made (tests).
    static MADE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many lanes the calling thread has made for standalone work (`Stream::fill`,
/// `Kernel::launch_on`, …): one per caller's stream, up to 16 kept, idle ones taken over
/// beyond that.
#[cfg(feature = "testing")]
pub fn lanes_made() -> usize {
    MADE.with(|m| m.get())
}

/// Returns `lane` to this thread's idle lanes, dropping the least recently used beyond
/// [`KEPT`] (and `lane` itself when the thread is ending).
fn put_back(lane: Lane) {
    let _ = LANES.try_with(|lanes| {
        if let Ok(mut lanes) = lanes.try_borrow_mut() {
            if lanes.len() >= KEPT {
                lanes.remove(0);
            }
            lanes.push(lane);
        }
    });
}

impl Lane {
    /// Gives the lane up to [`park`].
    fn park(self) {
        let Lane {
            stream, fork, join, ..
        } = self;
        park(vec![stream], Box::new((fork, join)));
    }
}

/// Streams given up while a capture other code began may hold them, with what goes with them
/// (their events, an eager run's resources).
struct Parked {
    streams: Vec<Arc<CudaStream>>,
    /// Dropped with them.
    _with: Box<dyn Any + Send>,
}

/// Every [`Parked`] group of this process.
static PARKED: Mutex<Vec<Parked>> = Mutex::new(Vec::new());

/// Gives up `streams` (with `with`), which a capture that other code began may hold: a stream
/// in a capture is not to be destroyed, and the runtime cannot end that capture. They are
/// parked instead, and dropped at a later parking once none of them is capturing (that
/// capture has ended, whichever way: nothing of it holds them any more). So a program in which
/// such captures keep taking forks does not pile up streams.
pub(crate) fn park(streams: Vec<Arc<CudaStream>>, with: Box<dyn Any + Send>) {
    let Ok(mut parked) = PARKED.lock() else {
        // A panic while the list was held (a driver call cannot panic): never destroyed.
        std::mem::forget((streams, with));
        return;
    };
    parked.push(Parked {
        streams,
        _with: with,
    });
    let free: Vec<Parked> = parked
        .extract_if(.., |p| {
            p.streams
                .iter()
                .all(|s| matches!(stream_capture_status(s), Ok(CaptureStatus::None)))
        })
        .collect();
    drop(parked);
    // Destroyed outside the lock.
    drop(free);
}

/// How many streams are parked: lanes and side streams given up because a capture that other
/// code began may have held them, not destroyed yet. Each is destroyed at a later parking once
/// no capture holds it.
#[cfg(feature = "testing")]
pub fn parked_streams() -> usize {
    PARKED
        .lock()
        .map_or(0, |p| p.iter().map(|g| g.streams.len()).sum())
}

/// Whether `event`'s latest record went into a capture: a query of such an event fails with
/// `CUDA_ERROR_CAPTURED_EVENT` while the capture lasts and `CUDA_ERROR_INVALID_VALUE` after it
/// ended (seen on an H200, driver 580). Asked without the global-capture lock: an `Err` is
/// another failure, which callers take as "perhaps".
pub(crate) fn recorded_in_capture(event: &CudaEvent) -> Result<bool, DriverError> {
    ensure_current(event.context())?;
    // SAFETY: `event` owns its live handle.
    match unsafe { sys::cuEventQuery(event.cu_event()) } {
        sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        sys::CUresult::CUDA_ERROR_CAPTURED_EVENT | sys::CUresult::CUDA_ERROR_INVALID_VALUE => {
            Ok(true)
        }
        other => Err(DriverError(other)),
    }
}
