//! Keep-alive: what a graph's launches may touch, held for as long as they may run.
//!
//! A graph names memory, kernels and host functions by address, and replays may run long
//! after the pipeline that was captured has let go of them. So a capture collects a [`Keep`]:
//! the allocations, modules and host functions its nodes use (host functions are launched into
//! the capture through [`launch_kept_host_fn`], which boxes them in the `Keep`). The graph
//! holds it, every executable graph made from the graph holds it, and an executable graph's
//! [`KeptSet`] releases a `Keep` only once the streams it was launched on have finished its
//! launches (on drop, by synchronizing them; after an update, by events recorded on them). It
//! holds those streams, but only while a launch may still run there (a stream whose work has
//! all finished is let go as launches on new streams come). Should waiting fail, the `Keep` is
//! leaked rather than freed under a running replay.

use std::cell::RefCell;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaEvent, CudaStream};

use super::device_alloc::DeviceAlloc;
use super::ensure_current;
use super::host_fn::report_host_fn_panic;
use super::launch::CodeOwner;
use super::memory::HolderKind;
use super::pinned::PinnedAlloc;
use super::status::{stream_capture_status, CaptureStatus};
use crate::error::{Error, Result};
use crate::operand::HostFn;

/// Runs a [`HostFn`] owned by a [`Keep`] (a graph calls it on every replay).
extern "C" fn run_host_fn_shared(user_data: *mut c_void) {
    // SAFETY: `user_data` points at a `HostFn` boxed in a `Keep` that outlives every launch of
    // the graph (see `launch_kept_host_fn`).
    let f = unsafe { &*user_data.cast_const().cast::<HostFn>() };
    report_host_fn_panic(catch_unwind(AssertUnwindSafe(|| f())));
}

/// How many device allocations (or other owners) a [`Keep`] holds as its nodes named them
/// before it sorts them and holds each once.
const UNSORTED: usize = 256;

/// Whether `list` holds `item` among its last few entries, where nodes in a row name the same
/// few owners (a GEMM's three operands, an op called in a loop): those are not pushed again.
#[inline(always)]
fn held_lately<T: ?Sized>(list: &[Arc<T>], item: &Arc<T>) -> bool {
    list.iter()
        .rev()
        .take(4)
        .any(|held| Arc::ptr_eq(held, item))
}

/// Sorts `list` by address and holds each owner once.
fn sort_once<T: ?Sized>(list: &mut Vec<Arc<T>>) {
    list.sort_unstable_by_key(|a| Arc::as_ptr(a).cast::<()>() as usize);
    list.dedup_by(|a, b| Arc::ptr_eq(a, b));
}

/// What a graph's launches may touch: host functions, device and host allocations, modules.
/// Held by the graph and its executable graphs (see the module docs).
#[derive(Default)]
pub(crate) struct Keep {
    /// Boxed so that their addresses, which the driver holds, never move.
    #[allow(clippy::vec_box)]
    host_fns: Vec<Box<HostFn>>,
    /// Held as the nodes name them (an allocation again only when not among the last few),
    /// then, when there are more than [`UNSORTED`], sorted by address with each held once
    /// ([`Keep::mark_captured`]): a capture pays one push per node's buffer, and sorting once
    /// where repeats could add up, instead of a set lookup per node.
    device: Vec<Arc<DeviceAlloc>>,
    /// Whether `device` is sorted by address, each allocation once.
    sorted: bool,
    /// With whether a node writes it.
    pinned: Vec<(Arc<PinnedAlloc>, bool)>,
    modules: Vec<CodeOwner>,
    /// Other owners the graph's nodes need alive (a collective's communicator).
    others: Vec<Arc<dyn std::any::Any + Send + Sync>>,
    /// Whether the host functions belong to a captured graph; until then a failed capture
    /// may have launched them outside it, and they are leaked rather than freed.
    captured: bool,
}

impl std::fmt::Debug for Keep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keep")
            .field("host_fns", &self.host_fns.len())
            .field("device", &self.device.len())
            .field("pinned", &self.pinned.len())
            .field("modules", &self.modules.len())
            .finish()
    }
}

impl Keep {
    /// Keeps the allocation behind `holder` (written by the node when `write`).
    #[inline(always)]
    pub(crate) fn hold(&mut self, holder: HolderKind<'_>, write: bool) {
        match holder {
            HolderKind::Device(a) => {
                if !held_lately(&self.device, a) {
                    self.device.push(a.clone());
                }
            }
            HolderKind::Pinned(a) => {
                match self.pinned.iter_mut().find(|(p, _)| Arc::ptr_eq(p, a)) {
                    Some(entry) => entry.1 |= write,
                    None => self.pinned.push((a.clone(), write)),
                }
            }
            // Cudarc memory never reaches a capture (`cudarc_order::cudarc_ordered` refuses it).
            // A temporary's memory belongs to the graph (its memory nodes).
            HolderKind::Foreign
            | HolderKind::Pageable
            | HolderKind::Temporary
            | HolderKind::Cudarc(_) => {}
        }
    }

    /// Whether it keeps nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.host_fns.is_empty()
            && self.device.is_empty()
            && self.pinned.is_empty()
            && self.modules.is_empty()
            && self.others.is_empty()
    }

    /// Keeps `owner` alive as long as the graph. Held again only when not among the last few
    /// (an op called in a loop gives the same one each time); a list of many, repeats
    /// included, is made one of each when the capture ends ([`Keep::compact`]), so that a
    /// capture of many calls pays a few comparisons a call rather than one per owner held.
    pub(crate) fn hold_other(&mut self, owner: Arc<dyn std::any::Any + Send + Sync>) {
        if !held_lately(&self.others, &owner) {
            self.others.push(owner);
        }
    }

    /// Keeps the module a launched kernel lives in.
    #[inline]
    pub(crate) fn hold_module(&mut self, module: &CodeOwner) {
        // Most launches run a kernel of the module held last: one comparison.
        if self.modules.last().is_some_and(|m| Arc::ptr_eq(m, module)) {
            return;
        }
        self.hold_other_module(module);
    }

    /// [`Keep::hold_module`] of a module other than the one held last.
    fn hold_other_module(&mut self, module: &CodeOwner) {
        if !self.modules.iter().any(|m| Arc::ptr_eq(m, module)) {
            self.modules.push(module.clone());
        }
    }

    /// Notes that the capture that launched the host functions has ended in a graph, whose
    /// nodes they are now: from here on they are freed with the `Keep`.
    pub(super) fn mark_captured(&mut self) {
        self.captured = true;
        self.compact();
    }

    /// Gives up what a capture that other code ended collected: a graph of that code may hold
    /// its nodes and launch them at any time, so nothing of it is ever freed (leaked), and its
    /// pinned allocations refuse Rust borrows from now on ([`PinnedAlloc::abandon`]).
    pub(crate) fn abandon(self) {
        for (alloc, _) in &self.pinned {
            alloc.abandon();
        }
        std::mem::forget(self);
    }

    /// Makes room for `device` allocations (the previous capture's count).
    pub(crate) fn reserve(&mut self, device: usize) {
        self.device.reserve(device);
    }

    /// How many device allocations it holds, counting repeats before [`Keep::compact`].
    pub(crate) fn device_count(&self) -> usize {
        self.device.len()
    }

    /// Sorts the device allocations by address, each held once, where there are more than
    /// [`UNSORTED`] (fewer, repeats included, cost less to keep and to search one by one
    /// than to sort); other owners likewise, each held once.
    fn compact(&mut self) {
        if self.others.len() > UNSORTED {
            sort_once(&mut self.others);
        }
        if self.device.len() > UNSORTED {
            sort_once(&mut self.device);
            self.sorted = true;
        }
    }

    /// Whether it holds the device allocation at `key` (after [`Keep::compact`]).
    fn holds_device(&self, key: usize) -> bool {
        if !self.sorted {
            return self.device.iter().any(|a| Arc::as_ptr(a) as usize == key);
        }
        self.device
            .binary_search_by_key(&key, |a| Arc::as_ptr(a) as usize)
            .is_ok()
    }
}

impl Drop for Keep {
    fn drop(&mut self) {
        if !self.captured && !self.host_fns.is_empty() {
            std::mem::take(&mut self.host_fns)
                .into_iter()
                .for_each(std::mem::forget);
        }
    }
}

/// Launches `f` as a host function on the capturing `stream`; the box lands in `keep`, which
/// the graph of this capture keeps for as long as it or an executable graph made from it can
/// run (see the module docs).
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html>
pub(crate) fn launch_kept_host_fn(stream: &CudaStream, f: HostFn, keep: &mut Keep) -> Result<()> {
    ensure_current(stream.context()).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let boxed = Box::new(f);
    let data = (&*boxed as *const HostFn).cast_mut().cast::<c_void>();
    keep.host_fns.push(boxed);
    // SAFETY: `data` points into the heap allocation of a box now owned by `keep`; moving a
    // `Box` does not move its contents. `keep` becomes the graph's (`end_capture`), which is
    // freed only after every launch of it has finished, or is leaked when the capture fails
    // (its `Drop`), so the callback never sees freed memory. `stream` owns its handle.
    unsafe { sys::cuLaunchHostFunc(stream.cu_stream(), Some(run_host_fn_shared), data) }
        .result()
        .map_err(|e| Error::driver("cuLaunchHostFunc", e))
}

/// The [`Keep`]s an executable graph's launches may still use, and the streams they ran on.
#[derive(Debug)]
pub(super) struct KeptSet {
    /// The streams the graph was launched on where a launch may still run.
    streams: RefCell<LaunchStreams>,
    /// What the current graph touches.
    keep: Arc<Keep>,
    /// What nodes changed in place since (`GraphExec::update_args`) touch: device memory
    /// and modules only, never pinned memory (whose launches run under the DMA protocol of
    /// `keep`).
    extra: Vec<Arc<Keep>>,
    /// What earlier graphs (before updates) touched, until the events recorded at the update
    /// on every stream of `streams` have completed.
    retired: Vec<(Vec<CudaEvent>, Vec<Arc<Keep>>)>,
}

/// The streams an executable graph was launched on where a launch may still run, each once:
/// what dropping or updating it waits for. Each is held, so that no other stream reuses its
/// handle while it is here; one whose work has all finished is let go as launches on new
/// streams come (see [`super::prune_finished`]), so that launching on one fresh stream after
/// another keeps only a few.
#[derive(Debug, Default)]
struct LaunchStreams {
    streams: Vec<Arc<CudaStream>>,
    /// When `streams` is pruned next.
    prune_at: usize,
}

impl LaunchStreams {
    /// Notes a launch on `stream`, before it is queued. No driver call unless `stream` is new
    /// here and the set has grown to its bound.
    #[inline]
    fn note(&mut self, stream: &Arc<CudaStream>) {
        let raw = stream.cu_stream();
        if self.streams.iter().any(|s| s.cu_stream() == raw) {
            return;
        }
        super::prune_finished(&mut self.streams, &mut self.prune_at, |s| stream_idle(s));
        self.streams.push(stream.clone());
    }

    fn iter(&self) -> impl Iterator<Item = &Arc<CudaStream>> {
        self.streams.iter()
    }
}

/// Whether all work queued on `stream` so far, the graph's launches among it, has finished,
/// asked so that no capture is disturbed: a stream being captured (which a query would
/// invalidate), a default stream (whose use while another stream captures invalidates that
/// capture), or one the driver cannot answer for (e.g. during another thread's global
/// capture) counts as busy.
fn stream_idle(stream: &CudaStream) -> bool {
    // The null stream (the legacy default stream), `CU_STREAM_LEGACY` (0x1) and
    // `CU_STREAM_PER_THREAD` (0x2): one each, kept without asking.
    if (stream.cu_stream() as usize) <= 2 {
        return false;
    }
    matches!(stream_capture_status(stream), Ok(CaptureStatus::None))
        && super::stream_query_beside_capture(stream) == Ok(true)
}

impl KeptSet {
    /// The set of an executable graph just instantiated from a graph that keeps `keep`.
    pub(super) fn new(keep: Arc<Keep>) -> KeptSet {
        KeptSet {
            streams: RefCell::new(LaunchStreams::default()),
            keep,
            extra: Vec::new(),
            retired: Vec::new(),
        }
    }

    /// Notes a launch on `stream`, before it is queued (see [`LaunchStreams::note`]).
    #[inline]
    pub(super) fn note_launch(&self, stream: &Arc<CudaStream>) {
        self.streams.borrow_mut().note(stream);
    }

    /// The host allocations the current graph's nodes touch, each with whether a node
    /// writes it: what a launch follows the DMA protocol of.
    pub(super) fn pinned(&self) -> &[(Arc<PinnedAlloc>, bool)] {
        &self.keep.pinned
    }

    /// Keeps `more` for as long as the current graph's own [`Keep`]: what nodes changed in
    /// place touch. Refuses (`false`, nothing kept) a `Keep` with pinned memory or host
    /// functions, which only a captured graph may hold: those are leaked instead, since a
    /// node may already use them.
    /// Allocations and modules held already (by the graph's own `Keep` or an earlier set) are
    /// not held again, so that updates that keep using the same memory add nothing.
    pub(super) fn hold_more(&mut self, mut more: Keep) -> bool {
        if more.is_empty() {
            // An update whose nodes kept their memory: nothing to hold.
            return true;
        }
        if !more.pinned.is_empty() || !more.host_fns.is_empty() {
            std::mem::forget(more);
            return false;
        }
        let sets = || std::iter::once(&self.keep).chain(&self.extra);
        more.compact();
        more.device.retain(|a| {
            let key = Arc::as_ptr(a) as usize;
            !sets().any(|k| k.holds_device(key))
        });
        more.modules
            .retain(|m| !sets().any(|k| k.modules.iter().any(|h| Arc::ptr_eq(h, m))));
        if !more.is_empty() {
            self.extra.push(Arc::new(more));
        }
        true
    }

    /// How many [`KeptSet::hold_more`] sets are held.
    pub(super) fn extra_count(&self) -> usize {
        self.extra.len()
    }

    /// Makes `next` the current [`Keep`]; the previous one waits for the launches so far.
    pub(super) fn retire(&mut self, next: Arc<Keep>) -> Result<()> {
        self.reap();
        let previous = std::mem::replace(&mut self.keep, next);
        let mut kept = std::mem::take(&mut self.extra);
        let mut events = Vec::new();
        for s in self.streams.borrow().iter() {
            let event = s
                .context()
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .and_then(|e| e.record(s).map(|()| e));
            match event {
                Ok(e) => events.push(e),
                Err(e) => {
                    // Without an event the launches cannot be waited for later: never free.
                    std::mem::forget(previous);
                    std::mem::forget(kept);
                    return Err(Error::driver("cuEventRecord", e));
                }
            }
        }
        kept.push(previous);
        self.retired.push((events, kept));
        Ok(())
    }

    /// Releases retired [`Keep`]s whose launches have all finished.
    fn reap(&mut self) {
        self.retired
            .retain(|(events, _)| !events.iter().all(|e| super::event_query(e) == Ok(true)));
    }

    /// Waits for every launch; `false` when that failed.
    fn finish(&self) -> bool {
        self.streams
            .borrow()
            .iter()
            .all(|s| super::stream_synchronize(s).is_ok())
    }

    /// Waits for every launch, before the set is dropped. When waiting fails a launch may
    /// still run: what it touches is then kept forever (each `Keep` leaked) rather than freed.
    pub(super) fn finish_or_leak(&self) {
        if !self.finish() {
            std::mem::forget(self.keep.clone());
            for keep in &self.extra {
                std::mem::forget(keep.clone());
            }
            for (_, kept) in &self.retired {
                for keep in kept {
                    std::mem::forget(keep.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Owner = Arc<dyn std::any::Any + Send + Sync>;

    #[test]
    fn other_owners_are_held_once_each_when_many() {
        let owners: Vec<Owner> = (0..300u32).map(|i| Arc::new(i) as Owner).collect();
        let mut keep = Keep::default();
        // Each owner twice, far apart: repeats are kept until the capture ends.
        for o in owners.iter().chain(&owners) {
            keep.hold_other(o.clone());
        }
        assert_eq!(keep.others.len(), 600);
        keep.mark_captured();
        assert_eq!(keep.others.len(), 300);
        assert!(owners.iter().all(|o| Arc::strong_count(o) == 2));
        drop(keep);
        assert!(owners.iter().all(|o| Arc::strong_count(o) == 1));
    }

    #[test]
    fn an_owner_given_in_a_row_is_held_once() {
        let owner: Owner = Arc::new(1u8);
        let mut keep = Keep::default();
        for _ in 0..10 {
            keep.hold_other(owner.clone());
        }
        assert_eq!((keep.others.len(), Arc::strong_count(&owner)), (1, 2));
    }
}
