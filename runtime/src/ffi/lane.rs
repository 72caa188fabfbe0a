//! Lanes for work queued outside pipelines ([`on_lane`]): `Stream::copy`, `Stream::fill`,
//! `Kernel::launch_on`, host functions, reading memory back, uploads.
//!
//! A capture that other code begins on the caller's stream (another thread may hold its
//! cudarc handle) takes whatever is queued there while it lasts, and checks of that stream
//! before and after the work cannot see one begun right after the first and ended right before
//! the second. So the work goes to a lane: a stream of this thread's own, never handed out,
//! on the caller's stream's context at its priority, which waits for the caller's stream first
//! (fork) and which the caller's stream waits for afterwards (join). A capture can reach the
//! lane only through the fork, and cannot end before the lane is joined back, which happens
//! only after the lane was asked: one exact question. A lane found capturing has that capture
//! invalidated and is given up (never destroyed: it is in a capture the runtime cannot end);
//! the work is refused with [`Error::StreamCapturing`]. A caller's stream found capturing at
//! the join is not joined (the wait would break that capture, which holds none of the work):
//! the lane is waited for on the host instead, and the work is refused the same way, done.

use std::cell::RefCell;
use std::sync::Arc;

use cudarc::driver::{sys, CudaEvent, CudaStream};

use super::status::{refuse_captured, refuse_capturing, stream_capture_status, CaptureStatus};
use super::{event_record, new_stream, stream_priority, stream_synchronize, stream_wait_event};
use crate::error::{Error, Result};

/// A lane: its stream, the caller's context and priority it was made for, the fork and join
/// events.
struct Lane {
    stream: Arc<CudaStream>,
    ctx: sys::CUcontext,
    priority: i32,
    fork: CudaEvent,
    join: CudaEvent,
}

thread_local! {
    /// This thread's idle lanes. One in use is taken out, so that work queued from inside
    /// another's gets a lane of its own.
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
    if let Err(e) =
        event_record(&lane.fork, stream).and_then(|()| stream_wait_event(&lane.stream, &lane.fork))
    {
        put_back(lane);
        return Err(Error::driver("cuEventRecord/cuStreamWaitEvent", e));
    }
    let issued = issue(&lane.stream);
    if let Err(e) = refuse_captured(&lane.stream, what) {
        std::mem::forget(lane);
        return Err(e);
    }
    let joined = match stream_capture_status(stream) {
        Ok(CaptureStatus::None) => event_record(&lane.join, &lane.stream)
            .and_then(|()| stream_wait_event(stream, &lane.join))
            // A capture begun since the question: the wait failed (and broke it).
            .map_err(|_| Error::StreamCapturing { what }),
        Ok(_) => Err(Error::StreamCapturing { what }),
        Err(e) => Err(Error::driver("cuStreamIsCapturing", e)),
    };
    let joined = match joined {
        Ok(()) => Ok(()),
        // Nothing orders later work on `stream` after the work: it has finished before the
        // error comes back.
        Err(e) => stream_synchronize(&lane.stream)
            .map_err(|s| Error::driver("cuStreamSynchronize", s))
            .and(Err(e)),
    };
    put_back(lane);
    issued.and_then(|out| joined.map(|()| out))
}

/// An idle lane of this thread for `stream`'s context and priority, or a new one.
fn take(stream: &Arc<CudaStream>) -> Result<Lane> {
    let ctx = stream.context();
    let priority = stream_priority(stream).map_err(|e| Error::driver("cuStreamGetPriority", e))?;
    let found = LANES.with(|lanes| {
        let mut lanes = lanes.borrow_mut();
        let i = lanes
            .iter()
            .position(|l| l.ctx == ctx.cu_ctx() && l.priority == priority)?;
        Some(lanes.swap_remove(i))
    });
    if let Some(lane) = found {
        return Ok(lane);
    }
    let made = new_stream(ctx, priority).and_then(|lane| {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
        Ok(Lane {
            stream: lane,
            ctx: ctx.cu_ctx(),
            priority,
            fork: ctx.new_event(flags)?,
            join: ctx.new_event(flags)?,
        })
    });
    made.map_err(|e| Error::driver("cuStreamCreateWithPriority", e))
}

/// Returns `lane` to this thread's idle lanes (dropped when the thread is ending).
fn put_back(lane: Lane) {
    let _ = LANES.try_with(|lanes| {
        if let Ok(mut lanes) = lanes.try_borrow_mut() {
            lanes.push(lane);
        }
    });
}
