//! CUDA graphs: [`OwnedGraph`], an owned `CUgraph` that holds the [`Keep`] of what its nodes
//! touch, and the queries of its nodes and edges.
//!
//! Node handles ([`NodeHandle`]) are only meaningful while the graph that holds them lives,
//! which their users guarantee by keeping the [`OwnedGraph`] next to them.

use std::cell::OnceCell;
use std::ffi::CStr;
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, DriverError};

use super::ensure_current;
use super::keep::Keep;
use super::launch::FunctionHandle;
use crate::error::Result;

/// A `CUgraph` handed out for interop ([`crate::Graph::as_raw`]): valid while its graph
/// lives; passing it to the driver is the caller's `unsafe` business.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphHandle(pub sys::CUgraph);

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

    /// Whether the node is marked as belonging to `graph`.
    pub(super) fn is_in(self, graph: sys::CUgraph) -> bool {
        self.graph == graph as usize
    }
}

// SAFETY: a node handle is an opaque driver handle that Rust never dereferences; the driver
// accepts it from any thread. Its graph is kept alive by whoever holds the handle.
unsafe impl Send for NodeHandle {}
// SAFETY: as above; sharing only lets threads pass the handle to the driver, and the types
// that call the driver with it are themselves not `Sync`.
unsafe impl Sync for NodeHandle {}

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
    /// A memory allocation, of memory at this address.
    MemAlloc(u64),
    /// A memory release, of memory at this address.
    MemFree(u64),
    /// Anything else.
    Other,
}

/// An owned `CUgraph`, destroyed on drop, or once an executable graph was made from it,
/// when the last of them is gone.
#[derive(Debug)]
pub(crate) struct OwnedGraph {
    raw: sys::CUgraph,
    ctx: Arc<CudaContext>,
    /// Made when the first executable graph is, whose node handles address the graph's nodes:
    /// until then the graph is this value's alone (a capture that an update only reads, or
    /// that is dropped, allocates no shared owner).
    shared: OnceCell<Arc<RawGraph>>,
    /// What the nodes touch; dropped after the graph (fields drop in order, after `drop`).
    keep: Arc<Keep>,
}

/// A `CUgraph`, destroyed when the last owner drops it.
#[derive(Debug)]
pub(super) struct RawGraph {
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

impl RawGraph {
    /// The driver's handle.
    pub(super) fn raw(&self) -> sys::CUgraph {
        self.raw
    }
}

impl Drop for RawGraph {
    fn drop(&mut self) {
        // SAFETY: the graph's last owner (its `OwnedGraph` or an executable graph made from
        // it) is gone.
        unsafe { destroy(self.raw, &self.ctx) }
    }
}

impl Drop for OwnedGraph {
    fn drop(&mut self) {
        if self.shared.get().is_none() {
            // SAFETY: no executable graph was made from the graph: this value is its only
            // owner, and it is going.
            unsafe { destroy(self.raw, &self.ctx) }
        }
    }
}

/// `cuGraphDestroy` of `raw`, a graph of `ctx` (after any global capture: see
/// [`super::after_global_capture`]); a failure is recorded in `ctx`.
///
/// # Safety
///
/// `raw` is a live graph whose last owner is gone; it is destroyed once, here.
unsafe fn destroy(raw: sys::CUgraph, ctx: &Arc<CudaContext>) {
    let destroyed = super::after_global_capture(|| {
        ensure_current(ctx).and_then(|()| {
            // SAFETY: `raw` is live and owned by nothing else now (this function's contract).
            unsafe { sys::cuGraphDestroy(raw) }.result()
        })
    });
    if let Err(e) = destroyed {
        ctx.record_err::<()>(Err(e));
    }
}

// SAFETY: a `CUgraph` may be used from any thread as long as calls on it are not concurrent;
// `OwnedGraph` is only reached through `&mut`-guarded or non-`Sync` owners (`Graph`,
// `GraphExec`), so moving it between threads is fine.
unsafe impl Send for OwnedGraph {}

impl OwnedGraph {
    /// Takes ownership of `raw`, a graph of `ctx` whose nodes touch what `keep` holds.
    ///
    /// # Safety
    ///
    /// `raw` is a live graph of `ctx` that nothing else owns (it is destroyed once the last
    /// owner is gone), and `keep` holds everything its nodes touch.
    pub(super) unsafe fn from_raw(
        raw: sys::CUgraph,
        ctx: &Arc<CudaContext>,
        keep: Keep,
    ) -> OwnedGraph {
        OwnedGraph {
            raw,
            ctx: ctx.clone(),
            shared: OnceCell::new(),
            keep: Arc::new(keep),
        }
    }

    pub(super) fn raw(&self) -> sys::CUgraph {
        self.raw
    }

    /// The graph itself, as the executable graphs made from it share it: from the first
    /// call on, the last of its owners destroys it.
    pub(super) fn shared(&self) -> &Arc<RawGraph> {
        self.shared.get_or_init(|| {
            Arc::new(RawGraph {
                raw: self.raw,
                ctx: self.ctx.clone(),
            })
        })
    }

    /// The context the graph belongs to.
    pub(super) fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// What the graph's nodes touch.
    pub(super) fn keep(&self) -> &Arc<Keep> {
        &self.keep
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
        if !node.is_in(self.raw()) {
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
            T::CU_GRAPH_NODE_TYPE_MEM_ALLOC => {
                // SAFETY: all-zero is a valid value of this plain C struct; the driver fills
                // it. Only `dptr` is read (`accessDescs` points into the driver's storage).
                let mut p: sys::CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { std::mem::zeroed() };
                // SAFETY: `node` is an allocation node of this live graph; `p` is a valid
                // out-pointer.
                unsafe { sys::cuGraphMemAllocNodeGetParams(node.node, &mut p) }.result()?;
                NodeKind::MemAlloc(p.dptr)
            }
            T::CU_GRAPH_NODE_TYPE_MEM_FREE => {
                let mut dptr: sys::CUdeviceptr = 0;
                // SAFETY: `node` is a free node of this live graph; `dptr` is a valid
                // out-pointer.
                unsafe { sys::cuGraphMemFreeNodeGetParams(node.node, &mut dptr) }.result()?;
                NodeKind::MemFree(dptr)
            }
            _ => NodeKind::Other,
        }))
    }

    /// `cuGraphNodeGetType` of `node`, a node of this graph, as a `call`'s added nodes are
    /// judged (`None` for a node of another graph).
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn added_kind(&self, node: NodeHandle) -> Result<Option<AddedKind>, DriverError> {
        if !node.is_in(self.raw()) {
            return Ok(None);
        }
        let mut kind = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: `node` belongs to this graph (checked above), which is alive; `kind` is a
        // valid out-pointer.
        unsafe { sys::cuGraphNodeGetType(node.node, &mut kind) }.result()?;
        Ok(Some(AddedKind::of(kind)))
    }

    /// Appends to `out` the nodes `node`, a node of this graph, depends on (none for a node
    /// of another graph).
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn dependencies_of(
        &self,
        node: NodeHandle,
        out: &mut Vec<NodeHandle>,
    ) -> Result<(), DriverError> {
        if !node.is_in(self.raw()) {
            return Ok(());
        }
        // Most nodes have few dependencies: one driver call into room for `ROOM`, counted
        // first only when they do not fit.
        const ROOM: usize = 8;
        let mut deps: [sys::CUgraphNode; ROOM] = [std::ptr::null_mut(); ROOM];
        let mut data: [sys::CUgraphEdgeData; ROOM] = [EMPTY_EDGE; ROOM];
        let mut count = ROOM;
        // SAFETY: `node` belongs to this graph (checked above), which is alive; both arrays
        // have room for `count` entries.
        unsafe {
            sys::cuGraphNodeGetDependencies_v2(
                node.node,
                deps.as_mut_ptr(),
                data.as_mut_ptr(),
                &mut count,
            )
        }
        .result()?;
        let graph = self.raw();
        if count < ROOM {
            out.extend(deps[..count].iter().map(|&n| NodeHandle::new(n, graph)));
        } else {
            // SAFETY: as above.
            let all = unsafe { dependencies(node.node) }?;
            out.extend(all.into_iter().map(|n| NodeHandle::new(n, graph)));
        }
        Ok(())
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

    /// [`OwnedGraph::nodes`] of a graph expected to hold about `expected` nodes: one driver
    /// call when it holds fewer than `expected + 1` (the count is asked first otherwise).
    pub(crate) fn nodes_expecting(&self, expected: usize) -> Result<Vec<NodeHandle>, DriverError> {
        ensure_current(&self.ctx)?;
        let room = expected + 1;
        let mut nodes: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); room];
        let mut count = room;
        // SAFETY: the graph is alive (owned by `self`); `nodes` has room for `count` handles.
        unsafe { sys::cuGraphGetNodes(self.raw(), nodes.as_mut_ptr(), &mut count) }.result()?;
        if count >= room {
            // Perhaps more than the room: listed again, counted first.
            return self.nodes();
        }
        nodes.truncate(count);
        Ok(nodes
            .into_iter()
            .map(|n| NodeHandle::new(n, self.raw()))
            .collect())
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

/// `count` default edge data entries, for the driver to fill in.
fn edge_data(count: usize) -> Vec<sys::CUgraphEdgeData> {
    vec![EMPTY_EDGE; count]
}

/// The data of a default edge.
const EMPTY_EDGE: sys::CUgraphEdgeData = sys::CUgraphEdgeData {
    from_port: 0,
    to_port: 0,
    type_: 0,
    reserved: [0; 5],
};

/// The number of nodes of `graph` (`cuGraphGetNodes` with a null array).
///
/// # Safety
///
/// `graph` is alive for the call.
pub(super) unsafe fn node_count(graph: sys::CUgraph) -> std::result::Result<usize, DriverError> {
    let mut count: usize = 0;
    // SAFETY: `graph` is alive (the caller's promise); a null array asks for the count only.
    unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut count) }.result()?;
    Ok(count)
}

/// `cuGraphGetNodes`: the nodes of `graph`, in the order they were added.
///
/// # Safety
///
/// `graph` is alive for the call (a graph an [`OwnedGraph`] owns, one of its bodies, or the
/// graph of a capture under way).
pub(super) unsafe fn graph_nodes(
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

/// The nodes `node` depends on.
///
/// # Safety
///
/// `node` is a node of a live graph (one a capture is under way into, or an owned one).
pub(super) unsafe fn dependencies(
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

/// What a node added by work of other code is, for the refusal of nodes a graph of its
/// statement cannot hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddedKind {
    /// A kernel, a memset, a copy or an empty node: legal everywhere, bodies included.
    Plain,
    /// A host function node.
    Host,
    /// A child graph.
    Graph,
    /// A memory allocation or free node.
    Memory,
    /// An event record or wait node (or an external semaphore's).
    Event,
    /// A conditional node, or any other kind.
    Other,
}

impl AddedKind {
    /// The kind of a node of type `kind`.
    pub(super) fn of(kind: sys::CUgraphNodeType) -> AddedKind {
        use sys::CUgraphNodeType as T;
        match kind {
            T::CU_GRAPH_NODE_TYPE_KERNEL
            | T::CU_GRAPH_NODE_TYPE_MEMSET
            | T::CU_GRAPH_NODE_TYPE_MEMCPY
            | T::CU_GRAPH_NODE_TYPE_EMPTY => AddedKind::Plain,
            T::CU_GRAPH_NODE_TYPE_HOST => AddedKind::Host,
            T::CU_GRAPH_NODE_TYPE_GRAPH => AddedKind::Graph,
            T::CU_GRAPH_NODE_TYPE_MEM_ALLOC | T::CU_GRAPH_NODE_TYPE_MEM_FREE => AddedKind::Memory,
            T::CU_GRAPH_NODE_TYPE_EVENT_RECORD
            | T::CU_GRAPH_NODE_TYPE_WAIT_EVENT
            | T::CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL
            | T::CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT => AddedKind::Event,
            _ => AddedKind::Other,
        }
    }
}
