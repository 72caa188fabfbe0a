//! Host functions on a stream: `cuLaunchHostFunc` with a callback that runs a [`HostFn`] once.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use cudarc::driver::sys;
use cudarc::driver::CudaStream;

use super::ensure_current;
use super::status::{refuse_captured, refuse_capturing};
use crate::error::{Error, Result};
use crate::operand::HostFn;

/// Runs a boxed [`HostFn`] once and frees it: the callback of eager `host` statements.
extern "C" fn run_host_fn_once(user_data: *mut c_void) {
    // SAFETY: `user_data` is the `Box<HostFn>` leaked by `launch_host_fn_once`, which launched
    // it only on a stream that was not capturing, and invalidated any capture that began on
    // the stream while it launched (so no graph holds the callback): the driver calls it
    // exactly once, so the box is reclaimed exactly once.
    let f = unsafe { Box::from_raw(user_data.cast::<HostFn>()) };
    // Dropping the closure runs user destructors: keep that inside the unwind guard too.
    let outcome = catch_unwind(AssertUnwindSafe(move || {
        f();
        drop(f);
    }));
    report_host_fn_panic(outcome);
}

/// A panic cannot cross the driver's C frames; the callback returns and the panic is reported
/// on stderr, as the standard library does for panics in threads nobody joins.
pub(super) fn report_host_fn_panic(outcome: std::thread::Result<()>) {
    if let Err(payload) = outcome {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_string());
        eprintln!("streamgraph: a host function panicked: {message}");
    }
}

/// `cuLaunchHostFunc`: runs `f` once on a driver thread after the stream's earlier work.
///
/// Refused ([`Error::StreamCapturing`], naming `what`) while the stream is capturing: a graph
/// would call the one-shot callback on every launch, after its first call freed it. A capture
/// that began while the callback was being launched is invalidated (it yields no graph, and
/// the callback, which then never runs, is leaked rather than freed twice).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html>
pub(crate) fn launch_host_fn_once(
    stream: &CudaStream,
    f: HostFn,
    what: &'static str,
) -> Result<()> {
    refuse_capturing(stream, what)?;
    ensure_current(stream.context()).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let data = Box::into_raw(Box::new(f));
    // SAFETY: the callback reclaims `data` exactly once when the driver runs it (the stream is
    // not capturing, checked above and after); `stream` owns its handle. The closure is
    // `Send + Sync + 'static`, so a driver thread may run it.
    let launched =
        unsafe { sys::cuLaunchHostFunc(stream.cu_stream(), Some(run_host_fn_once), data.cast()) };
    if let Err(e) = launched.result() {
        // SAFETY: the driver refused the callback, so it will never run; reclaim the box here.
        drop(unsafe { Box::from_raw(data) });
        return Err(Error::driver("cuLaunchHostFunc", e));
    }
    refuse_captured(stream, what)
}
