//! Host functions on a stream: `cuLaunchHostFunc` with a callback that runs a [`HostFn`] once.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;
use cudarc::driver::CudaStream;

use super::ensure_current;
use crate::error::{Error, Result};
use crate::operand::HostFn;

/// One-shot host functions launched and not yet run, by the id their callback is given. The
/// driver's `user_data` is that id, never a pointer: a callback that runs more than once (a
/// graph that some other code captured it into behind the runtime's checks, replayed) finds
/// its function gone after the first run and does nothing, so no run sees freed memory.
static PENDING: Mutex<BTreeMap<usize, HostFn>> = Mutex::new(BTreeMap::new());

/// The next id of [`PENDING`] (0 is never one).
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

fn pending() -> std::sync::MutexGuard<'static, BTreeMap<usize, HostFn>> {
    // A panic while the lock is held cannot leave the map half-changed (one insert or remove).
    PENDING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs the [`HostFn`] of [`PENDING`] whose id is `user_data`, once: the callback of eager
/// `host` statements.
extern "C" fn run_host_fn_once(user_data: *mut c_void) {
    let Some(f) = pending().remove(&user_data.addr()) else {
        return;
    };
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
/// would call the one-shot callback on every launch. Launched on a lane of `stream`
/// (`ffi/lane.rs`), which a capture other code begins cannot take it into; should one still
/// replay it (a contract broken elsewhere), the callback's second call does nothing.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html>
pub(crate) fn launch_host_fn_once(
    stream: &Arc<CudaStream>,
    f: HostFn,
    what: &'static str,
) -> Result<()> {
    super::lane::on_lane(stream, what, |lane| launch_on(lane, f))
}

/// [`launch_host_fn_once`] on a stream no other code holds.
fn launch_on(stream: &CudaStream, f: HostFn) -> Result<()> {
    ensure_current(stream.context()).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    pending().insert(id, f);
    // SAFETY: the callback's data is an id, not a pointer (see `PENDING`), so it may run any
    // number of times; `stream` owns its handle. The closure is `Send + Sync + 'static`, so a
    // driver thread may run it.
    let launched = unsafe {
        sys::cuLaunchHostFunc(
            stream.cu_stream(),
            Some(run_host_fn_once),
            std::ptr::without_provenance_mut(id),
        )
    };
    if let Err(e) = launched.result() {
        // The driver refused the callback, so it will never run.
        pending().remove(&id);
        return Err(Error::driver("cuLaunchHostFunc", e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_one_shot_callback_run_twice_runs_its_function_once() {
        let runs = Arc::new(AtomicU32::new(0));
        let counted = runs.clone();
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        pending().insert(
            id,
            Arc::new(move || {
                counted.fetch_add(1, Ordering::Relaxed);
            }),
        );
        let data = std::ptr::without_provenance_mut(id);
        run_host_fn_once(data);
        run_host_fn_once(data);
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        assert!(!pending().contains_key(&id));
        // The function is freed after its run: only this test's handle is left.
        assert_eq!(Arc::strong_count(&runs), 1);
    }
}
