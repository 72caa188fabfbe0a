//! Whether a stream is capturing, and the refusal of work that a capture streamgraph did not
//! begin would record.

use cudarc::driver::sys;
use cudarc::driver::{CudaStream, DriverError};

use super::ensure_current;
use crate::error::{Error, Result};

/// Whether a stream is capturing, as `cuStreamIsCapturing` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaptureStatus {
    /// Not capturing.
    None,
    /// Capturing.
    Active,
    /// Capturing, but the capture was invalidated by an illegal call; only ending it is left.
    Invalidated,
}

impl From<sys::CUstreamCaptureStatus> for CaptureStatus {
    fn from(status: sys::CUstreamCaptureStatus) -> Self {
        match status {
            sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE => CaptureStatus::None,
            sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE => CaptureStatus::Active,
            sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_INVALIDATED => {
                CaptureStatus::Invalidated
            }
        }
    }
}

/// `cuStreamIsCapturing`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn stream_capture_status(stream: &CudaStream) -> Result<CaptureStatus, DriverError> {
    ensure_current(stream.context())?;
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: `stream` owns its live handle; `status` is a valid out-pointer for the call.
    unsafe { sys::cuStreamIsCapturing(stream.cu_stream(), &mut status) }.result()?;
    Ok(status.into())
}

/// Refuses `what` while `stream` is capturing ([`Error::StreamCapturing`]).
///
/// Public entry points that issue work onto a stream call this first: a capture streamgraph
/// did not begin would record the work into a graph that keeps nothing it names alive (and
/// runs a one-shot host function once per launch). Streamgraph's own captures issue through
/// the pipeline's statements, which never come here.
pub(crate) fn refuse_capturing(stream: &CudaStream, what: &'static str) -> Result<()> {
    match stream_capture_status(stream) {
        Ok(CaptureStatus::None) => Ok(()),
        Ok(_) => Err(Error::StreamCapturing { what }),
        Err(e) => Err(Error::driver("cuStreamIsCapturing", e)),
    }
}

/// After `what` was issued on `stream`: refuses it, and invalidates the capture, when
/// `stream` is capturing now.
///
/// A capture that began while the work was being issued (another thread's, or one begun by a
/// pipeline's own code in the middle of an eager run) may hold the work. Querying a capturing
/// stream is illegal and invalidates its capture, so that ending it yields no graph that
/// could replay the work after what it names is gone.
pub(crate) fn refuse_captured(stream: &CudaStream, what: &'static str) -> Result<()> {
    match stream_capture_status(stream) {
        Ok(CaptureStatus::None) => Ok(()),
        Ok(CaptureStatus::Invalidated) => Err(Error::StreamCapturing { what }),
        Ok(CaptureStatus::Active) => {
            // SAFETY: `stream` owns its live handle; no pointer is passed. The call fails (and
            // invalidates the capture), which is its purpose here.
            let _invalid = unsafe { sys::cuStreamQuery(stream.cu_stream()) };
            Err(Error::StreamCapturing { what })
        }
        Err(e) => Err(Error::driver("cuStreamIsCapturing", e)),
    }
}
