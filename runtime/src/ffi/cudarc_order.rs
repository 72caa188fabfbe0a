//! Work on cudarc memory in cudarc's order ([`cudarc_ordered`]): cudarc frees a slice in its
//! own stream's order, which knows nothing of the runtime's streams.

use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::memory::HolderKind;
use super::status::{stream_capture_status, CaptureStatus};
use crate::error::{Error, Result};

/// Runs `op`, which queues work on `stream` that touches the cudarc memory of `holders`, so
/// that cudarc's own ordering stays sound: `stream` first waits for the work queued so far on
/// each slice's stream (its allocation and earlier uses), and afterwards each slice's stream
/// waits for `stream`, so that cudarc's stream-ordered free (on drop) comes after the work.
///
/// A capture is refused: a graph replays after the borrow of the slice has ended, when cudarc
/// may have freed it. [`crate::DeviceBuffer::from_cudarc`] makes memory graphs can keep.
pub(crate) fn cudarc_ordered<'h, R>(
    stream: &Arc<CudaStream>,
    holders: impl IntoIterator<Item = HolderKind<'h>> + Clone,
    op: impl FnOnce() -> Result<R>,
) -> Result<R> {
    // The common case, no cudarc memory: nothing to order, nothing collected.
    if !holders
        .clone()
        .into_iter()
        .any(|h| matches!(h, HolderKind::Cudarc(_)))
    {
        return op();
    }
    let owners: Vec<&Arc<CudaStream>> = holders
        .into_iter()
        .filter_map(|h| match h {
            HolderKind::Cudarc(s) => Some(s),
            _ => None,
        })
        .collect();
    if owners.is_empty() {
        return op();
    }
    // Refused whichever stream allocated the slice: the graph would outlive the borrow. And
    // refused while a slice's own stream is captured (by other code): the ordering below
    // records an event on it, which would join that capture.
    let capturing = |s: &CudaStream| {
        stream_capture_status(s)
            .map(|status| status != CaptureStatus::None)
            .map_err(|e| Error::driver("cuStreamIsCapturing", e))
    };
    let mut any_capturing = capturing(stream)?;
    for owner in &owners {
        any_capturing |= capturing(owner)?;
    }
    if any_capturing {
        return Err(Error::InvalidArgument(
            "cudarc memory (a `CudaSlice`, `CudaView` or `CudaViewMut`) cannot be captured into \
             a graph: the graph replays after the borrow ends, when cudarc may have freed it; \
             move the slice into a `DeviceBuffer::from_cudarc(slice)`, which graphs keep alive"
                .into(),
        ));
    }
    // Work on the slice's own stream is in its order already.
    let owners: Vec<_> = owners
        .into_iter()
        .filter(|s| s.cu_stream() != stream.cu_stream())
        .collect();
    let order = |waiter: &CudaStream, after: &CudaStream| -> Result<_> {
        let event = after
            .record_event(None)
            .map_err(|e| Error::driver("cuEventRecord", e))?;
        waiter
            .wait(&event)
            .map_err(|e| Error::driver("cuStreamWaitEvent", e))?;
        Ok(event)
    };
    for owner in &owners {
        let event = order(stream, owner)?;
        // A capture other code began on the slice's stream since the check above took the
        // record, and `stream` may have joined it by the wait: nothing is issued (the caller's
        // lane is asked, and given up if so, `ffi/lane.rs`).
        if super::lane::recorded_in_capture(&event) != Ok(false) {
            return Err(Error::StreamCapturing {
                what: "work on cudarc memory",
            });
        }
    }
    let result = op();
    for owner in &owners {
        if let Err(e) = order(owner, stream) {
            // The free would not wait for the work: wait for it here instead.
            stream
                .synchronize()
                .map_err(|e| Error::driver("cuStreamSynchronize", e))?;
            return Err(e);
        }
    }
    result
}
