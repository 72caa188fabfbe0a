//! Stream capture and CUDA graphs: every driver call of the capture issuer, [`crate::Graph`]
//! and [`crate::GraphExec`].
//!
//! Handles are owned by the types here ([`OwnedGraph`], [`OwnedExec`]) and destroyed on drop;
//! node handles ([`NodeHandle`]) are only meaningful while the graph that holds them lives,
//! which their users guarantee by keeping the [`OwnedGraph`] next to them.
//!
//! A graph names memory, kernels and host functions by address, and replays may run long
//! after the pipeline that was captured has let go of them. So a capture collects a [`Keep`]:
//! the allocations, modules and host functions its nodes use. The graph holds it, every
//! executable graph made from the graph holds it, and an [`OwnedExec`] releases a `Keep` only
//! once the streams it was launched on have finished its launches (on drop, by synchronizing
//! them; after an update, by events recorded on them). It holds those streams, but only while
//! a launch may still run there (a stream whose work has all finished is let go as launches on
//! new streams come). Should waiting fail, the `Keep` is leaked rather than freed under a
//! running replay.

use std::cell::RefCell;
use std::collections::HashSet;
use std::ffi::{c_void, CStr};
use std::hash::{BuildHasherDefault, DefaultHasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, DriverError};

use super::device_alloc::DeviceAlloc;
use super::ensure_current;
use super::host_fn::report_host_fn_panic;
use super::launch::{with_param_array, CodeOwner, FunctionHandle, KernelArg, LoadedFunction};
use super::memory::HolderKind;
use super::pinned::PinnedAlloc;
use super::status::{stream_capture_status, CaptureStatus};
use crate::error::{CaptureFault, Error, Result, UpdateRejection};
use crate::operand::{HostFn, LaunchConfig};

/// A `CUgraph` handed out for interop ([`crate::Graph::as_raw`]): valid while its graph
/// lives; passing it to the driver is the caller's `unsafe` business.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphHandle(pub sys::CUgraph);

/// A `CUgraphExec` handed out for interop ([`crate::GraphExec::as_raw`]), like
/// [`GraphHandle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphExecHandle(pub sys::CUgraphExec);

/// `cuStreamBeginCapture_v2` of `stream` in `mode`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn begin_capture(stream: &CudaStream, mode: CaptureModeRaw) -> Result<(), DriverError> {
    ensure_current(stream.context())?;
    let mode = match mode {
        CaptureModeRaw::ThreadLocal => {
            sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        }
        CaptureModeRaw::Global => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        CaptureModeRaw::Relaxed => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
    };
    // SAFETY: `stream` owns its live handle; no pointer is passed.
    unsafe { sys::cuStreamBeginCapture_v2(stream.cu_stream(), mode) }.result()
}

/// The capture modes of `cuStreamBeginCapture`, without naming `sys` outside this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaptureModeRaw {
    ThreadLocal,
    Global,
    Relaxed,
}

/// `cuStreamEndCapture`: ends the capture begun on `stream` and returns its graph.
///
/// On failure the capture is over as well (the driver ends it and drops what it recorded);
/// a partial graph the driver still hands back is destroyed here.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn end_capture(stream: &CudaStream, mut keep: Keep) -> Result<OwnedGraph, DriverError> {
    let ctx = stream.context();
    ensure_current(ctx)?;
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: `stream` owns its live handle; `graph` is a valid out-pointer for the call.
    let ended = unsafe { sys::cuStreamEndCapture(stream.cu_stream(), &mut graph) }.result();
    let owned = (!graph.is_null()).then(|| {
        // The host functions launched during the capture are nodes of this graph now.
        keep.captured = true;
        OwnedGraph {
            graph: Arc::new(RawGraph {
                raw: graph,
                ctx: ctx.clone(),
            }),
            ctx: ctx.clone(),
            keep: Arc::new(keep),
        }
    });
    match (ended, owned) {
        (Ok(()), Some(g)) => Ok(g),
        (Ok(()), None) => Err(DriverError(
            sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
        )),
        // Dropping the partial graph destroys it.
        (Err(e), _) => Err(e),
    }
}

/// A graph node handle. Only meaningful while the graph holding the node lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct NodeHandle {
    node: sys::CUgraphNode,
    /// The graph the node belongs to, as an identity.
    graph: usize,
}

impl NodeHandle {
    pub(super) fn new(node: sys::CUgraphNode, graph: sys::CUgraph) -> NodeHandle {
        NodeHandle {
            node,
            graph: graph as usize,
        }
    }

    /// A handle that names no node, for tests of the code that maps nodes.
    #[cfg(test)]
    pub(crate) fn for_test(n: usize) -> NodeHandle {
        NodeHandle {
            node: n as sys::CUgraphNode,
            graph: 0,
        }
    }

    /// The handle as a number, to key maps with.
    pub(crate) fn key(self) -> usize {
        self.node as usize
    }

    /// The driver's handle.
    pub(super) fn raw(self) -> sys::CUgraphNode {
        self.node
    }
}

// SAFETY: a node handle is an opaque driver handle that Rust never dereferences; the driver
// accepts it from any thread. Its graph is kept alive by whoever holds the handle.
unsafe impl Send for NodeHandle {}
// SAFETY: as above; sharing only lets threads pass the handle to the driver, and the types
// that call the driver with it are themselves not `Sync`.
unsafe impl Sync for NodeHandle {}

/// What a capturing stream's capture looks like right after an operation was issued on it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CaptureTip {
    /// The capture's status.
    pub(crate) status: CaptureStatus,
    /// The stream's current dependency set has exactly one node: this one.
    pub(crate) single: Option<NodeHandle>,
    /// How many nodes the dependency set holds.
    pub(crate) count: usize,
}

/// The one node a capturing `stream` depends on right after `what` (e.g. "the operation") was
/// issued on it: the node `what` created. Errors name an invalidated or ended capture, or a
/// stream that other code used meanwhile.
pub(crate) fn tip_node(stream: &CudaStream, what: &str) -> Result<NodeHandle> {
    let tip = capture_tip(stream).map_err(|e| Error::driver("cuStreamGetCaptureInfo", e))?;
    match tip.status {
        CaptureStatus::Active => {}
        CaptureStatus::Invalidated => return Err(Error::capture(CaptureFault::Invalidated)),
        CaptureStatus::None => return Err(Error::capture(CaptureFault::Unjoined)),
    }
    tip.single.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "after {what} the capturing stream depends on {} nodes instead of the one it created; the stream was used by other code during the capture",
            tip.count
        ))
    })
}

/// `cuStreamGetCaptureInfo_v3` of `stream`: the capture status and the stream's current
/// dependency set. Right after an operation was issued, that set is exactly the node the
/// operation created.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
///
/// Called right after an operation was issued on `stream` from this thread, so `ctx` is
/// current already: no second context check on this per-operation path.
pub(crate) fn capture_tip(stream: &CudaStream) -> Result<CaptureTip, DriverError> {
    debug_assert!(super::current_context().is_ok_and(|c| c == stream.context().cu_ctx()));
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let mut deps: *const sys::CUgraphNode = std::ptr::null();
    let mut count: usize = 0;
    // SAFETY: `stream` owns its live handle; every out-pointer is valid for the call; the
    // optional outputs we do not want (id, graph, edge data) are null, which the driver allows.
    unsafe {
        sys::cuStreamGetCaptureInfo_v3(
            stream.cu_stream(),
            &mut status,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut deps,
            std::ptr::null_mut(),
            &mut count,
        )
    }
    .result()?;
    let single = if count == 1 && !deps.is_null() {
        // SAFETY: the driver returned an array of `count` (= 1) nodes at `deps`, valid until
        // the next driver call on this stream; it is read at once.
        // The node belongs to the capture's graph, which `OwnedGraph::bind` names once it ends.
        Some(NodeHandle::new(unsafe { *deps }, std::ptr::null_mut()))
    } else {
        None
    };
    Ok(CaptureTip {
        status: status.into(),
        single,
        count,
    })
}

/// What a graph node does, as [`OwnedGraph::node_kind`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeKind {
    /// A kernel node running this function.
    Kernel(FunctionHandle),
    /// A copy.
    Memcpy,
    /// A memset.
    Memset,
    /// A host function.
    Host,
    /// Anything else.
    Other,
}

/// Runs a [`HostFn`] owned by a [`Keep`] (a graph calls it on every replay).
extern "C" fn run_host_fn_shared(user_data: *mut c_void) {
    // SAFETY: `user_data` points at a `HostFn` boxed in a `Keep` that outlives every launch of
    // the graph (see `launch_kept_host_fn`).
    let f = unsafe { &*user_data.cast_const().cast::<HostFn>() };
    report_host_fn_panic(catch_unwind(AssertUnwindSafe(|| f())));
}

/// What a graph's launches may touch: host functions, device and host allocations, modules.
/// Held by the graph and its executable graphs (see the module docs).
#[derive(Default)]
pub(crate) struct Keep {
    /// Boxed so that their addresses, which the driver holds, never move.
    #[allow(clippy::vec_box)]
    host_fns: Vec<Box<HostFn>>,
    device: Vec<Arc<DeviceAlloc>>,
    /// The addresses of `device`'s allocations, to hold each once. Pointer keys need no
    /// randomly seeded hasher, whose seeding would cost every capture a thread-local read.
    device_seen: HashSet<usize, BuildHasherDefault<DefaultHasher>>,
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
    #[inline]
    pub(crate) fn hold(&mut self, holder: HolderKind<'_>, write: bool) {
        match holder {
            HolderKind::Device(a) => {
                let key = Arc::as_ptr(a) as usize;
                if self
                    .device
                    .last()
                    .is_some_and(|l| Arc::as_ptr(l) as usize == key)
                {
                    return;
                }
                if self.device_seen.insert(key) {
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
            HolderKind::Foreign | HolderKind::Pageable | HolderKind::Cudarc(_) => {}
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

    /// Keeps `owner` alive as long as the graph (once however often it is given).
    #[cfg(feature = "nccl")]
    pub(crate) fn hold_other(&mut self, owner: Arc<dyn std::any::Any + Send + Sync>) {
        if !self.others.iter().any(|o| Arc::ptr_eq(o, &owner)) {
            self.others.push(owner);
        }
    }

    /// Keeps the module a launched kernel lives in.
    #[inline]
    pub(crate) fn hold_module(&mut self, module: &CodeOwner) {
        if !self.modules.iter().any(|m| Arc::ptr_eq(m, module)) {
            self.modules.push(module.clone());
        }
    }
}

impl Drop for Keep {
    fn drop(&mut self) {
        if !self.captured {
            for f in self.host_fns.drain(..) {
                std::mem::forget(f);
            }
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

/// An owned `CUgraph`, destroyed on drop.
#[derive(Debug)]
pub(crate) struct OwnedGraph {
    /// Shared with the executable graphs made from it: their node handles address its nodes.
    graph: Arc<RawGraph>,
    ctx: Arc<CudaContext>,
    /// What the nodes touch; dropped after `graph` (fields drop in order).
    keep: Arc<Keep>,
}

/// A `CUgraph`, destroyed when the last owner drops it.
#[derive(Debug)]
struct RawGraph {
    raw: sys::CUgraph,
    ctx: Arc<CudaContext>,
}

// SAFETY: a `CUgraph` may be used from any thread as long as calls on it are not concurrent;
// it is only reached through `OwnedGraph` (not `Sync`) and, read-only for node identity, by
// `OwnedExec`.
unsafe impl Send for RawGraph {}
// SAFETY: shared only to keep the graph alive; no call on it goes through a shared reference
// from two threads (its owners are not `Sync`).
unsafe impl Sync for RawGraph {}

impl Drop for RawGraph {
    fn drop(&mut self) {
        let destroyed = super::after_global_capture(|| {
            ensure_current(&self.ctx).and_then(|()| {
                // SAFETY: the graph was created by the driver for us and is destroyed once,
                // here, when its last owner (a graph or an executable graph made from it) is
                // gone.
                unsafe { sys::cuGraphDestroy(self.raw) }.result()
            })
        });
        if let Err(e) = destroyed {
            self.ctx.record_err::<()>(Err(e));
        }
    }
}

// SAFETY: a `CUgraph` may be used from any thread as long as calls on it are not concurrent;
// `OwnedGraph` is only reached through `&mut`-guarded or non-`Sync` owners (`Graph`,
// `GraphExec`), so moving it between threads is fine.
unsafe impl Send for OwnedGraph {}

impl OwnedGraph {
    pub(super) fn raw(&self) -> sys::CUgraph {
        self.graph.raw
    }

    /// The driver's handle, for interop.
    pub(crate) fn as_raw(&self) -> GraphHandle {
        GraphHandle(self.raw())
    }

    /// `node`, captured into this graph, marked as belonging to it.
    pub(crate) fn bind(&self, node: NodeHandle) -> NodeHandle {
        NodeHandle::new(node.node, self.raw())
    }

    /// `cuGraphNodeGetType` of `node` (and for kernel nodes `cuGraphKernelNodeGetParams_v2`,
    /// for the function): what the node does, to check the node map against. `None` for a
    /// node of another graph.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn node_kind(&self, node: NodeHandle) -> Result<Option<NodeKind>, DriverError> {
        if node.graph != self.raw() as usize {
            return Ok(None);
        }
        ensure_current(&self.ctx)?;
        let mut kind = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: `node` belongs to this graph (checked above), which is alive; `kind` is a
        // valid out-pointer.
        unsafe { sys::cuGraphNodeGetType(node.node, &mut kind) }.result()?;
        use sys::CUgraphNodeType as T;
        Ok(Some(match kind {
            T::CU_GRAPH_NODE_TYPE_KERNEL => {
                // SAFETY: all-zero is a valid value of this plain C struct of pointers and
                // integers; the driver fills it.
                let mut p: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
                // SAFETY: `node` is a kernel node of this live graph; `p` is a valid
                // out-pointer. Only `func` is read afterwards (the argument pointers point
                // into the driver's own storage and are not touched).
                unsafe { sys::cuGraphKernelNodeGetParams_v2(node.node, &mut p) }.result()?;
                NodeKind::Kernel(FunctionHandle::of_raw(p.func))
            }
            T::CU_GRAPH_NODE_TYPE_MEMCPY => NodeKind::Memcpy,
            T::CU_GRAPH_NODE_TYPE_MEMSET => NodeKind::Memset,
            T::CU_GRAPH_NODE_TYPE_HOST => NodeKind::Host,
            _ => NodeKind::Other,
        }))
    }

    /// `cuGraphGetNodes` with a null array: how many nodes the graph has.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn node_count(&self) -> Result<usize, DriverError> {
        ensure_current(&self.ctx)?;
        let mut count: usize = 0;
        // SAFETY: the graph is alive (owned by `self`); a null array asks for the count only.
        unsafe { sys::cuGraphGetNodes(self.raw(), std::ptr::null_mut(), &mut count) }.result()?;
        Ok(count)
    }

    /// `cuGraphGetNodes`: every node of the graph.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn nodes(&self) -> Result<Vec<NodeHandle>, DriverError> {
        // SAFETY: the graph itself, alive while `self` is.
        unsafe { self.nodes_in(self.raw()) }
    }

    /// `cuGraphGetNodes` of `graph`: this graph or one of its conditional nodes' bodies.
    ///
    /// # Safety
    ///
    /// `graph` is this graph or a body graph of one of its conditional nodes (alive with it).
    pub(super) unsafe fn nodes_in(
        &self,
        graph: sys::CUgraph,
    ) -> Result<Vec<NodeHandle>, DriverError> {
        ensure_current(&self.ctx)?;
        // SAFETY: `graph` is alive (the caller's promise).
        let nodes = unsafe { graph_nodes(graph) }?;
        Ok(nodes
            .into_iter()
            .map(|n| NodeHandle::new(n, graph))
            .collect())
    }

    /// `cuGraphGetEdges_v2`: every edge `(from, to)` of the graph.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn edges(&self) -> Result<Vec<(NodeHandle, NodeHandle)>, DriverError> {
        // SAFETY: the graph itself, alive while `self` is.
        unsafe { self.edges_in(self.raw()) }
    }

    /// `cuGraphGetEdges_v2` of `graph`: this graph or one of its conditional nodes' bodies.
    ///
    /// # Safety
    ///
    /// As for [`OwnedGraph::nodes_in`].
    pub(super) unsafe fn edges_in(
        &self,
        graph: sys::CUgraph,
    ) -> Result<Vec<(NodeHandle, NodeHandle)>, DriverError> {
        ensure_current(&self.ctx)?;
        let mut count: usize = 0;
        // SAFETY: the graph is alive; null arrays ask for the count only.
        unsafe {
            sys::cuGraphGetEdges_v2(
                graph,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut count,
            )
        }
        .result()?;
        if count == 0 {
            // The driver refuses a second query with empty arrays.
            return Ok(Vec::new());
        }
        let mut from: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); count];
        let mut to: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); count];
        let mut data = edge_data(count);
        // SAFETY: the three arrays have room for `count` entries, the number reported; edge
        // data is asked for so that the driver never reports a lossy query.
        unsafe {
            sys::cuGraphGetEdges_v2(
                graph,
                from.as_mut_ptr(),
                to.as_mut_ptr(),
                data.as_mut_ptr(),
                &mut count,
            )
        }
        .result()?;
        Ok(from
            .into_iter()
            .zip(to)
            .take(count)
            .map(|(a, b)| (NodeHandle::new(a, graph), NodeHandle::new(b, graph)))
            .collect())
    }

    /// `cuGraphInstantiateWithFlags` (no flags).
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn instantiate(&self) -> Result<OwnedExec, DriverError> {
        ensure_current(&self.ctx)?;
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        super::unsafe_during_capture(|| {
            // SAFETY: the graph is alive; `exec` is a valid out-pointer.
            unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, self.raw(), 0) }.result()
        })?;
        Ok(OwnedExec {
            raw: exec,
            ctx: self.ctx.clone(),
            source: self.graph.clone(),
            live: KeptSet {
                streams: RefCell::new(LaunchStreams::default()),
                keep: self.keep.clone(),
                extra: Vec::new(),
                retired: Vec::new(),
            },
        })
    }

    /// `cuGraphDebugDotPrint` with verbose output to `path`.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn debug_dot_print(&self, path: &CStr) -> Result<(), DriverError> {
        ensure_current(&self.ctx)?;
        let flags = sys::CUgraphDebugDot_flags::CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE as u32;
        // SAFETY: the graph is alive; `path` is NUL-terminated and outlives the call.
        unsafe { sys::cuGraphDebugDotPrint(self.raw(), path.as_ptr(), flags) }.result()
    }
}

/// What `cuGraphExecUpdate_v2` reported.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UpdateInfo {
    /// Why the update was refused; `None` when it was applied.
    pub(crate) rejection: Option<UpdateRejection>,
    /// The node of the new graph the update failed at, if any.
    pub(crate) error_node: Option<NodeHandle>,
    /// For a changed topology, the other end of the edge that differs, if any.
    pub(crate) error_from_node: Option<NodeHandle>,
}

/// An owned `CUgraphExec`, destroyed on drop; releases what its launches touch only once they
/// have finished (see the module docs).
#[derive(Debug)]
pub(crate) struct OwnedExec {
    raw: sys::CUgraphExec,
    ctx: Arc<CudaContext>,
    /// The graph it was instantiated from, whose node handles address its nodes.
    source: Arc<RawGraph>,
    live: KeptSet,
}

/// The [`Keep`]s an executable graph's launches may still use, and the streams they ran on.
#[derive(Debug)]
struct KeptSet {
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
        && super::stream_query(stream) == Ok(true)
}

// SAFETY: as for `OwnedGraph`: usable from any thread, never concurrently (its owner
// `GraphExec` is not `Sync`, and `RefCell` keeps this type `!Sync`). The kept allocations,
// modules and host functions are themselves `Send + Sync`.
unsafe impl Send for OwnedExec {}

impl OwnedExec {
    /// The driver's handle, for interop.
    pub(crate) fn as_raw(&self) -> GraphExecHandle {
        GraphExecHandle(self.raw)
    }

    /// The context the executable graph belongs to.
    pub(crate) fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// `cuGraphLaunch` on `stream`, under the DMA protocol of the host memory the graph
    /// touches (a launch that would race with a live Rust borrow of it is refused).
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    #[inline]
    pub(crate) fn launch(&self, stream: &Arc<CudaStream>) -> Result<()> {
        ensure_current(&self.ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        self.live.streams.borrow_mut().note(stream);
        let raw = || {
            // SAFETY: the executable graph and `stream` are alive; everything the graph's
            // nodes touch is held in `self.live` until this launch has finished (module docs).
            unsafe { sys::cuGraphLaunch(self.raw, stream.cu_stream()) }
                .result()
                .map_err(|e| Error::driver("cuGraphLaunch", e))
        };
        let pinned = &self.live.keep.pinned;
        if pinned.is_empty() {
            return raw();
        }
        let sides: Vec<(&PinnedAlloc, bool)> = pinned.iter().map(|(a, w)| (&**a, *w)).collect();
        PinnedAlloc::dma(&sides, stream, true, raw)
    }

    /// `cuGraphUpload` on `stream`.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn upload(&self, stream: &CudaStream) -> Result<(), DriverError> {
        ensure_current(&self.ctx)?;
        // SAFETY: the executable graph and `stream` are alive; an upload runs no node.
        unsafe { sys::cuGraphUpload(self.raw, stream.cu_stream()) }.result()
    }

    /// `cuGraphExecUpdate_v2` with `graph`: `Ok` with the driver's verdict whether or not
    /// the update was accepted, `Err` for other failures. When accepted, `graph`'s [`Keep`]
    /// is held from now on, and the previous one until the launches before the update finish.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn update(&mut self, graph: &OwnedGraph) -> Result<UpdateInfo> {
        ensure_current(&self.ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        let mut info = sys::CUgraphExecUpdateResultInfo {
            result: sys::CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR,
            errorNode: std::ptr::null_mut(),
            errorFromNode: std::ptr::null_mut(),
        };
        // SAFETY: both graphs are alive; `info` is a valid out-pointer; `&mut self` excludes
        // concurrent use of the executable graph.
        let r = unsafe { sys::cuGraphExecUpdate_v2(self.raw, graph.raw(), &mut info) };
        let info = match r {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE => {
                UpdateInfo {
                    rejection: rejection_of(info.result),
                    error_node: (!info.errorNode.is_null())
                        .then(|| NodeHandle::new(info.errorNode, graph.raw())),
                    error_from_node: (!info.errorFromNode.is_null())
                        .then(|| NodeHandle::new(info.errorFromNode, graph.raw())),
                }
            }
            other => return Err(Error::driver("cuGraphExecUpdate", DriverError(other))),
        };
        if info.rejection.is_none() {
            self.live.retire(graph.keep.clone())?;
        }
        Ok(info)
    }

    /// Keeps `more` for as long as the current graph's own [`Keep`]: what nodes changed in
    /// place touch. Refuses (`false`, nothing kept) a `Keep` with pinned memory or host
    /// functions, which only a captured graph may hold: those are leaked instead, since a
    /// node may already use them.
    /// Allocations and modules held already (by the graph's own `Keep` or an earlier set) are
    /// not held again, so that updates that keep using the same memory add nothing.
    pub(crate) fn hold_more(&mut self, mut more: Keep) -> bool {
        if !more.pinned.is_empty() || !more.host_fns.is_empty() {
            std::mem::forget(more);
            return false;
        }
        let live = &self.live;
        let sets = || std::iter::once(&live.keep).chain(&live.extra);
        more.device.retain(|a| {
            let key = Arc::as_ptr(a) as usize;
            !sets().any(|k| k.device_seen.contains(&key))
        });
        more.device_seen = more
            .device
            .iter()
            .map(|a| Arc::as_ptr(a) as usize)
            .collect();
        more.modules
            .retain(|m| !sets().any(|k| k.modules.iter().any(|h| Arc::ptr_eq(h, m))));
        if !more.is_empty() {
            self.live.extra.push(Arc::new(more));
        }
        true
    }

    /// How many [`OwnedExec::hold_more`] sets are held.
    pub(crate) fn extra_keeps(&self) -> usize {
        self.live.extra.len()
    }

    /// `cuGraphExecKernelNodeSetParams_v2`: `node` launches `func` with `config` and the
    /// argument values `args` from the next launch on.
    ///
    /// The node must belong to the graph this executable graph was instantiated from (else
    /// `CUDA_ERROR_INVALID_VALUE`, nothing is called). `args` are arguments for `func`, under
    /// the `Module::kernel` promise of the kernel they were given for; the function is set
    /// together with them, so the node never runs them with another kernel. The driver copies
    /// the values before returning.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    #[inline]
    pub(crate) fn set_kernel_args(
        &self,
        node: NodeHandle,
        func: &LoadedFunction,
        config: &LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<(), DriverError> {
        if node.graph != self.source.raw as usize {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        super::in_context(&self.ctx, || {
            let (g, b) = (config.grid, config.block);
            let set = |params: *mut *mut c_void| {
                let p = sys::CUDA_KERNEL_NODE_PARAMS {
                    func: func.func,
                    gridDimX: g.x,
                    gridDimY: g.y,
                    gridDimZ: g.z,
                    blockDimX: b.x,
                    blockDimY: b.y,
                    blockDimZ: b.z,
                    sharedMemBytes: config.shared_mem_bytes,
                    kernelParams: params,
                    extra: std::ptr::null_mut(),
                    kern: std::ptr::null_mut(),
                    ctx: std::ptr::null_mut(),
                };
                // SAFETY: the executable graph is alive and not shared between threads;
                // `node` belongs to the graph it was instantiated from (checked above), which
                // `source` keeps alive; `func` is a function its `LoadedFunction` keeps
                // loaded, set together with null (no arguments) or one pointer per argument,
                // each at a live value of its parameter type (the `KernelArg` lifetimes and
                // the `Module::kernel` promise), which the driver copies now.
                unsafe { sys::cuGraphExecKernelNodeSetParams_v2(self.raw, node.node, &p) }.result()
            };
            with_param_array(args, set)
        })
    }
}

impl KeptSet {
    /// Makes `next` the current [`Keep`]; the previous one waits for the launches so far.
    fn retire(&mut self, next: Arc<Keep>) -> Result<()> {
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
}

impl Drop for OwnedExec {
    fn drop(&mut self) {
        super::after_global_capture(|| self.release());
    }
}

impl OwnedExec {
    /// Destroys the executable graph and releases what its launches touch once they finished.
    fn release(&mut self) {
        let destroyed = ensure_current(&self.ctx).and_then(|()| {
            // SAFETY: the executable graph was instantiated for us and is destroyed once,
            // here; launches still in flight complete (the driver defers the release).
            unsafe { sys::cuGraphExecDestroy(self.raw) }.result()
        });
        if let Err(e) = destroyed {
            self.ctx.record_err::<()>(Err(e));
        }
        if !self.live.finish() {
            // A launch may still run: keep what it touches forever rather than free it.
            std::mem::forget(self.live.keep.clone());
            for keep in &self.live.extra {
                std::mem::forget(keep.clone());
            }
            for (_, kept) in &self.live.retired {
                for keep in kept {
                    std::mem::forget(keep.clone());
                }
            }
        }
    }
}

/// The rejection a driver update result stands for; `None` for success.
fn rejection_of(result: sys::CUgraphExecUpdateResult) -> Option<UpdateRejection> {
    use sys::CUgraphExecUpdateResult as R;
    Some(match result {
        R::CU_GRAPH_EXEC_UPDATE_SUCCESS => return None,
        R::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED => UpdateRejection::TopologyChanged,
        R::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED => UpdateRejection::NodeTypeChanged,
        R::CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED => UpdateRejection::FunctionChanged,
        R::CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED => UpdateRejection::ParametersChanged,
        R::CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED => UpdateRejection::NotSupported,
        R::CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE => {
            UpdateRejection::UnsupportedFunctionChange
        }
        R::CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED => UpdateRejection::AttributesChanged,
        R::CU_GRAPH_EXEC_UPDATE_ERROR => UpdateRejection::Other,
    })
}

/// The nodes one participant of a collective added to a capture.
#[cfg(feature = "nccl")]
#[derive(Debug)]
pub(crate) struct ParticipantNodes {
    /// The node its stream depends on after the collective: its last node, or an empty node
    /// joining what it left the stream depending on (see [`capture_group`]).
    pub(crate) exit: NodeHandle,
    /// Its other nodes.
    pub(crate) inner: Vec<NodeHandle>,
}

/// `count` default edge data entries, for the driver to fill in.
fn edge_data(count: usize) -> Vec<sys::CUgraphEdgeData> {
    let empty = sys::CUgraphEdgeData {
        from_port: 0,
        to_port: 0,
        type_: 0,
        reserved: [0; 5],
    };
    vec![empty; count]
}

/// The graph `stream` is capturing into, and the stream's current dependencies.
pub(super) fn capture_state(
    stream: &CudaStream,
) -> std::result::Result<(CaptureStatus, sys::CUgraph, Vec<sys::CUgraphNode>), DriverError> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    let mut deps: *const sys::CUgraphNode = std::ptr::null();
    let mut count: usize = 0;
    // SAFETY: `stream` owns its live handle; every out-pointer is valid for the call; the
    // outputs not wanted (id, edge data) are null, which the driver allows.
    unsafe {
        sys::cuStreamGetCaptureInfo_v3(
            stream.cu_stream(),
            &mut status,
            std::ptr::null_mut(),
            &mut graph,
            &mut deps,
            std::ptr::null_mut(),
            &mut count,
        )
    }
    .result()?;
    let deps = if count == 0 || deps.is_null() {
        Vec::new()
    } else {
        // SAFETY: the driver returned an array of `count` nodes at `deps`, valid until the
        // next driver call on this stream; it is copied at once.
        unsafe { std::slice::from_raw_parts(deps, count) }.to_vec()
    };
    Ok((status.into(), graph, deps))
}

/// `cuGraphGetNodes`: the nodes of `graph`, in the order they were added.
///
/// # Safety
///
/// `graph` is alive for the call (a graph an [`OwnedGraph`] owns, one of its bodies, or the
/// graph of a capture under way).
unsafe fn graph_nodes(
    graph: sys::CUgraph,
) -> std::result::Result<Vec<sys::CUgraphNode>, DriverError> {
    let mut count: usize = 0;
    // SAFETY: `graph` is alive (the caller's promise); a null array asks for the count only.
    unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut count) }.result()?;
    if count == 0 {
        return Ok(Vec::new());
    }
    let mut nodes: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); count];
    // SAFETY: `nodes` has room for `count` handles, the number the driver reported.
    unsafe { sys::cuGraphGetNodes(graph, nodes.as_mut_ptr(), &mut count) }.result()?;
    nodes.truncate(count);
    Ok(nodes)
}

#[cfg(feature = "nccl")]
/// The nodes `node` depends on.
///
/// # Safety
///
/// `node` is a node of the graph of a capture under way.
unsafe fn dependencies(
    node: sys::CUgraphNode,
) -> std::result::Result<Vec<sys::CUgraphNode>, DriverError> {
    let mut count: usize = 0;
    // SAFETY: `node` is alive (the caller's promise); null arrays ask for the count only.
    unsafe {
        sys::cuGraphNodeGetDependencies_v2(
            node,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut count,
        )
    }
    .result()?;
    if count == 0 {
        return Ok(Vec::new());
    }
    let mut deps: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); count];
    let mut data = edge_data(count);
    // SAFETY: both arrays have room for `count` entries, the number reported.
    unsafe {
        sys::cuGraphNodeGetDependencies_v2(node, deps.as_mut_ptr(), data.as_mut_ptr(), &mut count)
    }
    .result()?;
    deps.truncate(count);
    Ok(deps)
}

#[cfg(feature = "nccl")]
/// Runs `issue`, the NCCL group of a collective whose participants are `streams` (all
/// capturing into one graph, in participant order), and finds what it added to the capture:
/// each new node belongs to the one participant whose stream's dependencies it leads to.
/// A participant that is not left depending on exactly one node of its own gets an empty node
/// joining what its stream depends on, so that every participant ends in one node.
///
/// Refuses (an error, the group issued) nodes that lead to no participant's stream or to
/// several: NCCL's graph would then order participants in ways the pipeline's model does not
/// say, and the graph could not be verified exactly.
pub(crate) fn capture_group(
    streams: &[&CudaStream],
    issue: impl FnOnce() -> Result<()>,
) -> Result<Vec<ParticipantNodes>> {
    let Some(first) = streams.first() else {
        return Err(Error::InvalidArgument(
            "a collective without participants".into(),
        ));
    };
    ensure_current(first.context()).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let info =
        |s: &CudaStream| capture_state(s).map_err(|e| Error::driver("cuStreamGetCaptureInfo", e));
    let (status, graph, _) = info(first)?;
    if status != CaptureStatus::Active || graph.is_null() {
        return Err(Error::InvalidArgument(
            "a collective's first participant is not capturing".into(),
        ));
    }
    for s in &streams[1..] {
        let (status, g, _) = info(s)?;
        if status != CaptureStatus::Active || g != graph {
            return Err(Error::InvalidArgument(
                "a collective's participants are not capturing into one graph".into(),
            ));
        }
    }
    // SAFETY: `graph` is the graph of the capture under way on `first`.
    let before: HashSet<usize> = unsafe { graph_nodes(graph) }
        .map_err(|e| Error::driver("cuGraphGetNodes", e))?
        .into_iter()
        .map(|n| n as usize)
        .collect();
    issue()?;
    ensure_current(first.context()).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    // `graph` is read again only while the capture that owns it is still under way.
    match info(first)? {
        (CaptureStatus::Active, g, _) if g == graph => {}
        (CaptureStatus::Invalidated, ..) => return Err(Error::capture(CaptureFault::Invalidated)),
        _ => return Err(Error::capture(CaptureFault::Unjoined)),
    }
    // SAFETY: `graph` is the graph of the capture still under way on `first` (checked just
    // above).
    let added: Vec<sys::CUgraphNode> = unsafe { graph_nodes(graph) }
        .map_err(|e| Error::driver("cuGraphGetNodes", e))?
        .into_iter()
        .filter(|n| !before.contains(&(*n as usize)))
        .collect();
    let index: std::collections::HashMap<usize, usize> = added
        .iter()
        .enumerate()
        .map(|(i, &n)| (n as usize, i))
        .collect();
    let mut deps = Vec::with_capacity(added.len());
    for &n in &added {
        // SAFETY: `n` is a node of the capture's graph, alive while the capture runs.
        deps.push(
            unsafe { dependencies(n) }
                .map_err(|e| Error::driver("cuGraphNodeGetDependencies", e))?,
        );
    }
    let mut owner: Vec<Option<usize>> = vec![None; added.len()];
    let mut tips = Vec::with_capacity(streams.len());
    for (k, s) in streams.iter().enumerate() {
        ensure_current(s.context()).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        let (status, _, tip) = info(s)?;
        if status != CaptureStatus::Active {
            return Err(Error::capture(CaptureFault::Invalidated));
        }
        let mut stack: Vec<usize> = tip
            .iter()
            .filter_map(|n| index.get(&(*n as usize)).copied())
            .collect();
        while let Some(i) = stack.pop() {
            match owner[i] {
                Some(o) if o == k => continue,
                Some(o) => {
                    return Err(Error::InvalidArgument(format!(
                        "NCCL added graph nodes that participants {o} and {k} both depend on; this NCCL's capture of the group cannot be verified against the pipeline's model"
                    )))
                }
                None => owner[i] = Some(k),
            }
            stack.extend(
                deps[i]
                    .iter()
                    .filter_map(|d| index.get(&(*d as usize)).copied()),
            );
        }
        tips.push(tip);
    }
    if owner.iter().any(Option::is_none) {
        return Err(Error::InvalidArgument(
            "NCCL added graph nodes that no participant's stream depends on; this NCCL's capture of the group cannot be verified against the pipeline's model".into(),
        ));
    }
    let mut out = Vec::with_capacity(streams.len());
    for (k, (s, tip)) in streams.iter().zip(tips).enumerate() {
        let own: Vec<sys::CUgraphNode> = added
            .iter()
            .zip(&owner)
            .filter(|(_, o)| **o == Some(k))
            .map(|(&n, _)| n)
            .collect();
        let single_own = tip.len() == 1 && own.contains(&tip[0]);
        let exit = if single_own {
            tip[0]
        } else {
            ensure_current(s.context()).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
            let mut node: sys::CUgraphNode = std::ptr::null_mut();
            // SAFETY: `graph` is the capture's live graph; `tip` are nodes of it (the stream's
            // dependencies just reported), `tip.len()` of them.
            unsafe { sys::cuGraphAddEmptyNode(&mut node, graph, tip.as_ptr(), tip.len()) }
                .result()
                .map_err(|e| Error::driver("cuGraphAddEmptyNode", e))?;
            let mut set = [node];
            // SAFETY: `s` is capturing into `graph`, of which `node` is a node.
            unsafe {
                sys::cuStreamUpdateCaptureDependencies_v2(
                    s.cu_stream(),
                    set.as_mut_ptr(),
                    std::ptr::null(),
                    1,
                    sys::CUstreamUpdateCaptureDependencies_flags::CU_STREAM_SET_CAPTURE_DEPENDENCIES
                        as u32,
                )
            }
            .result()
            .map_err(|e| Error::driver("cuStreamUpdateCaptureDependencies", e))?;
            node
        };
        out.push(ParticipantNodes {
            exit: NodeHandle::new(exit, std::ptr::null_mut()),
            inner: own
                .into_iter()
                .filter(|&n| n != exit)
                .map(|n| NodeHandle::new(n, std::ptr::null_mut()))
                .collect(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_results_map_to_rejections() {
        use sys::CUgraphExecUpdateResult as R;
        assert_eq!(rejection_of(R::CU_GRAPH_EXEC_UPDATE_SUCCESS), None);
        let cases = [
            (
                R::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
                UpdateRejection::TopologyChanged,
            ),
            (
                R::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED,
                UpdateRejection::NodeTypeChanged,
            ),
            (
                R::CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED,
                UpdateRejection::FunctionChanged,
            ),
            (
                R::CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED,
                UpdateRejection::ParametersChanged,
            ),
            (
                R::CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED,
                UpdateRejection::NotSupported,
            ),
            (
                R::CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE,
                UpdateRejection::UnsupportedFunctionChange,
            ),
            (
                R::CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED,
                UpdateRejection::AttributesChanged,
            ),
            (R::CU_GRAPH_EXEC_UPDATE_ERROR, UpdateRejection::Other),
        ];
        for (code, reason) in cases {
            assert_eq!(rejection_of(code), Some(reason));
        }
    }
}
