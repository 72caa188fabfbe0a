//! Page-locked host allocations ([`PinnedAlloc`]) and the DMA protocol that guards them.
//!
//! Page-locked host memory *is* Rust memory: a DMA engine writing it while a `&[T]` to it
//! lives is a data race. [`PinnedAlloc`] therefore carries a small lock-protected state:
//! how many Rust borrows exist, and per stream an event recorded after the last DMA issued
//! there. A DMA that writes the buffer is refused while any Rust borrow lives; one that reads
//! it is refused while a mutable borrow lives; a borrow first waits for the DMA it would race
//! with. Eager copies and graph launches both go through [`PinnedAlloc::dma`].

use std::alloc::Layout;
use std::ffi::c_void;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, DriverError};

use super::ensure_current;
use crate::error::{Error, Result};

/// Where a host allocation's bytes come from.
#[derive(Debug)]
enum HostKind {
    /// `cuMemHostAlloc` in this context.
    Pinned(Arc<CudaContext>),
    /// The global allocator, for plan-only buffers (copies treat it as pageable memory).
    Heap(Layout),
}

/// A host allocation the driver may DMA into or out of, with the protocol of the module docs.
pub(crate) struct PinnedAlloc {
    pub(super) ptr: NonNull<u8>,
    pub(super) bytes: usize,
    /// Unique in the process, unlike `ptr` (every empty allocation has the same dangling
    /// one): the order in which [`PinnedAlloc::dma`] takes the locks of several allocations.
    id: u64,
    kind: HostKind,
    state: Mutex<PinnedState>,
}

/// The next [`PinnedAlloc::id`].
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A fresh [`PinnedAlloc::id`].
fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

// SAFETY: the allocation is plain bytes owned like a `Box<[u8]>`; every access to them goes
// through `state`'s lock (borrow counts) and the DMA protocol, so sharing between threads
// cannot race. The driver frees page-locked memory from any thread.
unsafe impl Send for PinnedAlloc {}
// SAFETY: as above.
unsafe impl Sync for PinnedAlloc {}

impl fmt::Debug for PinnedAlloc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedAlloc")
            .field("ptr", &self.ptr)
            .field("bytes", &self.bytes)
            .field("id", &self.id)
            .field("planning", &self.is_planning())
            .finish()
    }
}

#[derive(Default)]
struct PinnedState {
    /// Live shared Rust borrows.
    readers: usize,
    /// Whether a mutable Rust borrow lives.
    writer: bool,
    /// Per stream, the event recorded after the last DMA issued there; pruned of finished
    /// ones as it grows (see [`super::prune_finished`]), so that it holds no stream for long
    /// after its DMA is done.
    pending: Vec<Pending>,
    /// When `pending` is pruned next.
    prune_at: usize,
    /// Whether a graph of other code may copy to or from it at any time (see
    /// [`PinnedAlloc::abandon`]): then no Rust borrow is handed out and it is never freed.
    abandoned: bool,
}

struct Pending {
    /// Held, so that its handle cannot be reused by another stream while it is tracked.
    stream: Arc<CudaStream>,
    event: CudaEvent,
    /// Whether a DMA recorded under this event may still run.
    busy: bool,
    /// Whether one of them writes the buffer.
    writes: bool,
}

impl PinnedState {
    /// Waits for the pending DMA that writes the buffer (`all`: every pending DMA).
    fn settle(&mut self, all: bool) -> Result<()> {
        for p in self
            .pending
            .iter_mut()
            .filter(|p| p.busy && (all || p.writes))
        {
            super::event_synchronize(&p.event)
                .map_err(|e| Error::driver("cuEventSynchronize", e))?;
            p.busy = false;
            p.writes = false;
        }
        Ok(())
    }
}

impl PinnedAlloc {
    /// `cuMemHostAlloc` (portable: pinned for every context) of `bytes` bytes aligned for
    /// `align`, filled by `init` (which gets all the bytes, zeroed).
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
    pub(crate) fn pinned(
        ctx: &Arc<CudaContext>,
        bytes: usize,
        init: impl FnOnce(&mut [u8]),
    ) -> Result<Arc<PinnedAlloc>> {
        let ptr = if bytes == 0 {
            NonNull::<u64>::dangling().cast()
        } else {
            ensure_current(ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
            let mut raw: *mut c_void = std::ptr::null_mut();
            // SAFETY: `raw` is a valid out-pointer; the context is current. The memory is
            // page-aligned, which satisfies the alignment of every element type.
            super::unsafe_during_capture(|| {
                // SAFETY: as above.
                unsafe { sys::cuMemHostAlloc(&mut raw, bytes, sys::CU_MEMHOSTALLOC_PORTABLE) }
                    .result()
            })
            .map_err(|e| Error::driver("cuMemHostAlloc", e))?;
            NonNull::new(raw.cast::<u8>()).ok_or(Error::driver(
                "cuMemHostAlloc",
                DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY),
            ))?
        };
        let alloc = PinnedAlloc {
            ptr,
            bytes,
            id: next_id(),
            kind: HostKind::Pinned(ctx.clone()),
            state: Mutex::new(PinnedState::default()),
        };
        alloc.fill(init);
        Ok(Arc::new(alloc))
    }

    /// `bytes` bytes from the global allocator, aligned for `align`, for plan-only buffers;
    /// `None` when the layout is impossible or the allocation fails.
    pub(crate) fn heap(
        bytes: usize,
        align: usize,
        init: impl FnOnce(&mut [u8]),
    ) -> Option<Arc<PinnedAlloc>> {
        let layout = Layout::from_size_align(bytes, align.max(1)).ok()?;
        let ptr = if bytes == 0 {
            NonNull::<u64>::dangling().cast()
        } else {
            // SAFETY: the layout has a non-zero size. `Drop` frees it with the same layout.
            NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })?
        };
        let alloc = PinnedAlloc {
            ptr,
            bytes,
            id: next_id(),
            kind: HostKind::Heap(layout),
            state: Mutex::new(PinnedState::default()),
        };
        alloc.fill(init);
        Some(Arc::new(alloc))
    }

    /// Zeroes the fresh allocation and lets `init` write it, before anyone else can see it.
    fn fill(&self, init: impl FnOnce(&mut [u8])) {
        if self.bytes == 0 {
            return;
        }
        // SAFETY: the allocation holds `bytes` bytes at `ptr`, owned by `self` alone (it is
        // not shared yet); writing zeroes first makes every byte initialised.
        let bytes = unsafe {
            self.ptr.as_ptr().write_bytes(0, self.bytes);
            std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.bytes)
        };
        init(bytes);
    }

    /// Whether this is ordinary heap memory of a plan-only buffer.
    pub(crate) fn is_planning(&self) -> bool {
        matches!(self.kind, HostKind::Heap(_))
    }

    /// The first byte's address, for messages.
    pub(crate) fn addr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    fn state(&self) -> MutexGuard<'_, PinnedState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A shared Rust borrow of the bytes: waits for DMA that writes them; while the guard
    /// lives, DMA that writes them is refused.
    pub(crate) fn read(&self) -> Result<PinnedRead<'_>> {
        let mut state = self.state();
        if state.abandoned {
            return Err(Error::PinnedAbandoned { action: "read it" });
        }
        if state.writer {
            return Err(Error::PinnedBusy {
                action: "read it",
                holder: "a mutable borrow",
            });
        }
        state.settle(false)?;
        state.readers += 1;
        Ok(PinnedRead { alloc: self })
    }

    /// A mutable Rust borrow of the bytes: waits for every DMA on them; while the guard
    /// lives, every DMA on them is refused.
    pub(crate) fn write(&self) -> Result<PinnedWrite<'_>> {
        let mut state = self.state();
        if state.abandoned {
            return Err(Error::PinnedAbandoned { action: "write it" });
        }
        if state.writer || state.readers > 0 {
            return Err(Error::PinnedBusy {
                action: "write it",
                holder: "another borrow",
            });
        }
        state.settle(true)?;
        state.writer = true;
        Ok(PinnedWrite { alloc: self })
    }

    /// Issues DMA touching the host allocations `sides` (`true`: written) on `stream` with
    /// `issue`, under their protocol: refused while a Rust borrow it would race with lives;
    /// with `track`, an event recorded after it on `stream` makes later borrows wait for it.
    /// Without `track` (inside a capture, where nothing runs yet) only the refusal applies.
    pub(crate) fn dma<R>(
        sides: &[(&PinnedAlloc, bool)],
        stream: &Arc<CudaStream>,
        track: bool,
        issue: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        let (order, mut guards) = lock_all(sides);
        for (state, (_, write)) in guards.iter().zip(&order) {
            if state.writer || (*write && state.readers > 0) {
                return Err(Error::PinnedBusy {
                    action: if *write {
                        "copy into it"
                    } else {
                        "copy from it"
                    },
                    holder: if state.writer {
                        "a mutable borrow"
                    } else {
                        "a shared borrow"
                    },
                });
            }
        }
        let out = issue()?;
        if track && let Err(e) = track_dma(&mut guards, &order, stream) {
            // The DMA is queued but not tracked: wait for it here, so that no borrow can
            // race with it. Should even that fail, the context is unusable and runs no DMA.
            let _ = super::stream_synchronize(stream);
            return Err(e);
        }
        Ok(out)
    }
}

impl PinnedAlloc {
    /// Gives the allocation up to DMA nothing tracks: a graph that other code captured may
    /// copy to or from it whenever it is launched. From here on no Rust borrow is handed out
    /// and the bytes are never freed.
    pub(crate) fn abandon(&self) {
        self.state().abandoned = true;
    }
}

/// The allocations of `sides`, each once (written when any side writes it), in lock order.
type Sides<'a> = Vec<(&'a PinnedAlloc, bool)>;

/// Takes the locks of the allocations of `sides` in the order of their ids, so that two DMA
/// calls naming the same allocations, in whatever order, cannot deadlock (the addresses of
/// their bytes would not do: every empty allocation has the same one).
fn lock_all<'a>(
    sides: &[(&'a PinnedAlloc, bool)],
) -> (Sides<'a>, Vec<MutexGuard<'a, PinnedState>>) {
    let order = lock_order(sides);
    let guards = order.iter().map(|(a, _)| a.state()).collect();
    (order, guards)
}

/// The allocations of `sides`, each once, in the order [`lock_all`] locks them.
fn lock_order<'a>(sides: &[(&'a PinnedAlloc, bool)]) -> Sides<'a> {
    let mut order: Sides<'a> = Vec::with_capacity(sides.len());
    for &(alloc, write) in sides {
        match order.iter_mut().find(|(a, _)| a.id == alloc.id) {
            Some(entry) => entry.1 |= write,
            None => order.push((alloc, write)),
        }
    }
    order.sort_unstable_by_key(|(a, _)| a.id);
    order
}

/// Records, per host allocation of a DMA just issued on `stream`, that it may still run.
fn track_dma(
    guards: &mut [MutexGuard<'_, PinnedState>],
    order: &[(&PinnedAlloc, bool)],
    stream: &Arc<CudaStream>,
) -> Result<()> {
    for (state, (_, write)) in guards.iter_mut().zip(order) {
        let slot = match state.pending.iter().position(|p| {
            Arc::ptr_eq(&p.stream, stream) || p.stream.cu_stream() == stream.cu_stream()
        }) {
            Some(i) => i,
            None => {
                // Entries whose DMA is done are not needed any more: borrows need not wait
                // for them. The DMA a busy entry's event stands for is done when it is.
                let PinnedState {
                    pending, prune_at, ..
                } = &mut **state;
                super::prune_finished(pending, prune_at, |p| {
                    !p.busy || super::event_query(&p.event) == Ok(true)
                });
                let event = stream
                    .context()
                    .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                    .map_err(|e| Error::driver("cuEventCreate", e))?;
                state.pending.push(Pending {
                    stream: stream.clone(),
                    event,
                    busy: false,
                    writes: false,
                });
                state.pending.len() - 1
            }
        };
        let p = &mut state.pending[slot];
        p.writes = (p.busy && p.writes) || *write;
        p.busy = true;
        p.event
            .record(stream)
            .map_err(|e| Error::driver("cuEventRecord", e))?;
    }
    Ok(())
}

impl Drop for PinnedAlloc {
    fn drop(&mut self) {
        super::after_global_capture(|| self.release());
    }
}

impl PinnedAlloc {
    /// Waits for the DMA on the allocation and frees it (or leaks it when waiting fails).
    fn release(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if state.abandoned || state.settle(true).is_err() {
            // A DMA may still be running on bytes we cannot prove idle: leaking them is safe,
            // freeing them is not.
            return;
        }
        if self.bytes == 0 {
            return;
        }
        match &self.kind {
            HostKind::Heap(layout) => {
                // SAFETY: allocated by `heap` with this layout, freed once, here.
                unsafe { std::alloc::dealloc(self.ptr.as_ptr(), *layout) };
            }
            HostKind::Pinned(ctx) => {
                let freed = ensure_current(ctx).and_then(|()| {
                    // SAFETY: the pointer came from `cuMemHostAlloc` and is freed once, here;
                    // no DMA on it is pending (settled above) and no borrow outlives `self`.
                    unsafe { sys::cuMemFreeHost(self.ptr.as_ptr().cast()) }.result()
                });
                if let Err(e) = freed {
                    ctx.record_err::<()>(Err(e));
                }
            }
        }
    }
}

/// A shared Rust borrow of a host allocation (see [`PinnedAlloc::read`]).
pub(crate) struct PinnedRead<'a> {
    alloc: &'a PinnedAlloc,
}

impl PinnedRead<'_> {
    /// The bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        if self.alloc.bytes == 0 {
            return &[];
        }
        // SAFETY: `bytes` initialised bytes live at `ptr` for as long as the allocation; the
        // protocol refuses DMA that writes them while this guard (a counted reader) lives,
        // and it waited for such DMA before handing the guard out.
        unsafe { std::slice::from_raw_parts(self.alloc.ptr.as_ptr(), self.alloc.bytes) }
    }
}

impl Drop for PinnedRead<'_> {
    fn drop(&mut self) {
        self.alloc.state().readers -= 1;
    }
}

/// A mutable Rust borrow of a host allocation (see [`PinnedAlloc::write`]).
pub(crate) struct PinnedWrite<'a> {
    alloc: &'a PinnedAlloc,
}

impl PinnedWrite<'_> {
    /// The bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        if self.alloc.bytes == 0 {
            return &[];
        }
        // SAFETY: as for `PinnedRead::bytes`; the writer flag excludes DMA and other borrows.
        unsafe { std::slice::from_raw_parts(self.alloc.ptr.as_ptr(), self.alloc.bytes) }
    }

    /// The bytes, mutably.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        if self.alloc.bytes == 0 {
            return &mut [];
        }
        // SAFETY: as for `PinnedRead::bytes`; the protocol admits no other borrow and no DMA
        // while the writer flag is set, and `&mut self` makes this the only slice.
        unsafe { std::slice::from_raw_parts_mut(self.alloc.ptr.as_ptr(), self.alloc.bytes) }
    }
}

impl Drop for PinnedWrite<'_> {
    fn drop(&mut self) {
        self.alloc.state().writer = false;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// An empty plan-only allocation: its bytes' address is the dangling one every empty
    /// allocation has, pinned ones too.
    fn empty() -> Arc<PinnedAlloc> {
        PinnedAlloc::heap(0, 4, |_| {}).unwrap()
    }

    #[test]
    fn empty_allocations_share_an_address_but_not_a_place_in_the_lock_order() {
        let (a, b) = (empty(), empty());
        assert_eq!(a.addr(), b.addr());
        let order = |sides: &[(&PinnedAlloc, bool)]| -> Vec<(u64, bool)> {
            lock_order(sides).iter().map(|(x, w)| (x.id, *w)).collect()
        };
        let forward = order(&[(&a, false), (&b, true)]);
        assert_eq!(forward, order(&[(&b, true), (&a, false)]));
        assert_eq!(forward.len(), 2);
        // Each allocation once, written when any side writes it.
        assert_eq!(
            order(&[(&a, false), (&b, false), (&a, true)]),
            order(&[(&b, false), (&a, true)])
        );
    }

    /// The lock protocol of two threads whose DMA names the same two empty allocations in
    /// opposite orders (as two graphs copying from two empty `PinnedBuffer`s may): with a
    /// deadline, so that a deadlock fails the test instead of hanging it.
    #[test]
    fn dma_on_two_empty_allocations_in_opposite_orders_does_not_deadlock() {
        let (a, b) = (empty(), empty());
        let (tx, rx) = mpsc::channel();
        for flip in [false, true] {
            let (a, b, tx) = (a.clone(), b.clone(), tx.clone());
            std::thread::spawn(move || {
                let (first, second) = if flip { (&b, &a) } else { (&a, &b) };
                for _ in 0..20_000 {
                    let (_, guards) = lock_all(&[(&**first, false), (&**second, true)]);
                    std::thread::yield_now();
                    drop(guards);
                }
                let _ = tx.send(());
            });
        }
        for _ in 0..2 {
            rx.recv_timeout(Duration::from_secs(30))
                .expect("two DMA calls on the same two empty allocations deadlocked");
        }
    }
}
