//! Stream capture and CUDA graphs: every driver call of the capture issuer, [`crate::Graph`]
//! and [`crate::GraphExec`].
//!
//! Handles are owned by the types here ([`OwnedGraph`], [`OwnedExec`]) and destroyed on drop;
//! node handles ([`NodeHandle`]) are only meaningful while the graph that holds them lives,
//! which their users guarantee by keeping the [`OwnedGraph`] next to them.

use std::ffi::{c_void, CStr};
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, DriverError};

use super::{ensure_current, shared_host_fn_callback, CUstream};
use crate::issue::HostFn;

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
pub(crate) fn stream_capture_status(
    ctx: &CudaContext,
    stream: CUstream,
) -> Result<CaptureStatus, DriverError> {
    ensure_current(ctx)?;
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: `stream` is alive (owned by the calling `Stream`); `status` is a valid
    // out-pointer for the call.
    unsafe { sys::cuStreamIsCapturing(stream, &mut status) }.result()?;
    Ok(status.into())
}

/// `cuStreamBeginCapture_v2` of `stream` in `mode`.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn begin_capture(
    ctx: &CudaContext,
    stream: CUstream,
    mode: sys::CUstreamCaptureMode,
) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    // SAFETY: `stream` is alive (owned by the calling `Stream`); no pointer is passed.
    unsafe { sys::cuStreamBeginCapture_v2(stream, mode) }.result()
}

/// `cuStreamEndCapture`: ends the capture begun on `stream` and returns its graph.
///
/// On failure the capture is over as well (the driver ends it and drops what it recorded);
/// a partial graph the driver still hands back is destroyed here.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn end_capture(
    ctx: &Arc<CudaContext>,
    stream: CUstream,
) -> Result<OwnedGraph, DriverError> {
    ensure_current(ctx)?;
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: `stream` is alive; `graph` is a valid out-pointer for the call.
    let ended = unsafe { sys::cuStreamEndCapture(stream, &mut graph) }.result();
    let owned = (!graph.is_null()).then(|| OwnedGraph {
        raw: graph,
        ctx: ctx.clone(),
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
pub(crate) struct NodeHandle(sys::CUgraphNode);

impl NodeHandle {
    /// The handle as a number, to key maps with.
    pub(crate) fn key(self) -> usize {
        self.0 as usize
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

/// `cuStreamGetCaptureInfo_v3` of `stream`: the capture status and the stream's current
/// dependency set. Right after an operation was issued, that set is exactly the node the
/// operation created.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
///
/// Called right after an operation was issued on `stream` from this thread, so `ctx` is
/// current already: no second context check on this per-operation path.
pub(crate) fn capture_tip(ctx: &CudaContext, stream: CUstream) -> Result<CaptureTip, DriverError> {
    debug_assert!(super::current_context().is_ok_and(|c| c == ctx.cu_ctx()));
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let mut deps: *const sys::CUgraphNode = std::ptr::null();
    let mut count: usize = 0;
    // SAFETY: `stream` is alive; every out-pointer is valid for the call; the optional
    // outputs we do not want (id, graph, edge data) are null, which the driver allows.
    unsafe {
        sys::cuStreamGetCaptureInfo_v3(
            stream,
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
        Some(NodeHandle(unsafe { *deps }))
    } else {
        None
    };
    Ok(CaptureTip {
        status: status.into(),
        single,
        count,
    })
}

/// Launches `f` as a host function on the capturing `stream`, keeping it alive in `keep`:
/// the graph calls it on every replay, so it may never be freed while the graph (or an
/// executable graph made from it) can still run.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html>
#[allow(clippy::vec_box)] // the box is the point: the driver holds each function's address
pub(crate) fn launch_kept_host_fn(
    ctx: &CudaContext,
    stream: CUstream,
    f: HostFn,
    keep: &mut Vec<Box<HostFn>>,
) -> Result<(), DriverError> {
    ensure_current(ctx)?;
    let boxed = Box::new(f);
    let (callback, data) = shared_host_fn_callback(&boxed);
    // SAFETY: `data` points into the heap allocation of `boxed`, which is moved into `keep`
    // below; moving a `Box` does not move its contents, and the owner of `keep` (a graph's
    // host functions) outlives every launch of the graph (see `Graph` and `GraphExec`).
    let launched = unsafe { sys::cuLaunchHostFunc(stream, callback, data) }.result();
    keep.push(boxed);
    launched
}

/// An owned `CUgraph`, destroyed on drop.
#[derive(Debug)]
pub(crate) struct OwnedGraph {
    raw: sys::CUgraph,
    ctx: Arc<CudaContext>,
}

// SAFETY: a `CUgraph` may be used from any thread as long as calls on it are not concurrent;
// `OwnedGraph` is only reached through `&mut`-guarded or non-`Sync` owners (`Graph`,
// `GraphExec`), so moving it between threads is fine.
unsafe impl Send for OwnedGraph {}

impl OwnedGraph {
    /// `cuGraphGetNodes`: every node of the graph.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn nodes(&self) -> Result<Vec<NodeHandle>, DriverError> {
        ensure_current(&self.ctx)?;
        let mut count: usize = 0;
        // SAFETY: the graph is alive (owned by `self`); a null array asks for the count only.
        unsafe { sys::cuGraphGetNodes(self.raw, std::ptr::null_mut(), &mut count) }.result()?;
        if count == 0 {
            return Ok(Vec::new());
        }
        let mut nodes: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); count];
        // SAFETY: `nodes` has room for `count` handles, the number the driver reported.
        unsafe { sys::cuGraphGetNodes(self.raw, nodes.as_mut_ptr(), &mut count) }.result()?;
        nodes.truncate(count);
        Ok(nodes.into_iter().map(NodeHandle).collect())
    }

    /// `cuGraphGetEdges_v2`: every edge `(from, to)` of the graph.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn edges(&self) -> Result<Vec<(NodeHandle, NodeHandle)>, DriverError> {
        ensure_current(&self.ctx)?;
        let mut count: usize = 0;
        // SAFETY: the graph is alive; null arrays ask for the count only.
        unsafe {
            sys::cuGraphGetEdges_v2(
                self.raw,
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
        let empty = sys::CUgraphEdgeData {
            from_port: 0,
            to_port: 0,
            type_: 0,
            reserved: [0; 5],
        };
        let mut data = vec![empty; count];
        // SAFETY: the three arrays have room for `count` entries, the number reported; edge
        // data is asked for so that the driver never reports a lossy query.
        unsafe {
            sys::cuGraphGetEdges_v2(
                self.raw,
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
            .map(|(a, b)| (NodeHandle(a), NodeHandle(b)))
            .collect())
    }

    /// `cuGraphInstantiateWithFlags` (no flags).
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn instantiate(&self) -> Result<OwnedExec, DriverError> {
        ensure_current(&self.ctx)?;
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: the graph is alive; `exec` is a valid out-pointer.
        unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, self.raw, 0) }.result()?;
        Ok(OwnedExec {
            raw: exec,
            ctx: self.ctx.clone(),
        })
    }

    /// `cuGraphDebugDotPrint` with verbose output to `path`.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn debug_dot_print(&self, path: &CStr) -> Result<(), DriverError> {
        ensure_current(&self.ctx)?;
        let flags = sys::CUgraphDebugDot_flags::CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE as u32;
        // SAFETY: the graph is alive; `path` is NUL-terminated and outlives the call.
        unsafe { sys::cuGraphDebugDotPrint(self.raw, path.as_ptr(), flags) }.result()
    }
}

impl Drop for OwnedGraph {
    fn drop(&mut self) {
        let destroyed = ensure_current(&self.ctx).and_then(|()| {
            // SAFETY: the graph was created by the driver for us and is destroyed once, here.
            // Executable graphs made from it are independent of it.
            unsafe { sys::cuGraphDestroy(self.raw) }.result()
        });
        if let Err(e) = destroyed {
            self.ctx.record_err::<()>(Err(e));
        }
    }
}

/// A kernel node's parameters (`CUDA_KERNEL_NODE_PARAMS`): function, grid, block, shared
/// memory; the argument array is swapped in by [`OwnedExec::set_kernel_args`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct KernelParams(sys::CUDA_KERNEL_NODE_PARAMS);

// SAFETY: the struct holds opaque driver handles (function, kernel, context) and pointers
// that are never dereferenced by Rust; the driver accepts them from any thread.
unsafe impl Send for KernelParams {}

impl KernelParams {
    /// The parameters of a launch of `func` with `config` (the argument array is filled in
    /// when the parameters are applied).
    pub(crate) fn for_launch(
        func: crate::ffi::FunctionHandle,
        config: &crate::issue::LaunchConfig,
    ) -> KernelParams {
        let mut p = KernelParams::empty();
        p.0.func = func.0;
        p.0.gridDimX = config.grid.x;
        p.0.gridDimY = config.grid.y;
        p.0.gridDimZ = config.grid.z;
        p.0.blockDimX = config.block.x;
        p.0.blockDimY = config.block.y;
        p.0.blockDimZ = config.block.z;
        p.0.sharedMemBytes = config.shared_mem_bytes;
        p
    }

    fn empty() -> KernelParams {
        KernelParams(sys::CUDA_KERNEL_NODE_PARAMS {
            func: std::ptr::null_mut(),
            gridDimX: 0,
            gridDimY: 0,
            gridDimZ: 0,
            blockDimX: 0,
            blockDimY: 0,
            blockDimZ: 0,
            sharedMemBytes: 0,
            kernelParams: std::ptr::null_mut(),
            extra: std::ptr::null_mut(),
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        })
    }
}

/// What `cuGraphExecUpdate_v2` reported.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UpdateInfo {
    /// The result code.
    pub(crate) result: sys::CUgraphExecUpdateResult,
    /// The node of the new graph the update failed at, if any.
    pub(crate) error_node: Option<NodeHandle>,
    /// For a changed topology, the other end of the edge that differs, if any.
    pub(crate) error_from_node: Option<NodeHandle>,
}

/// An owned `CUgraphExec`, destroyed on drop.
#[derive(Debug)]
pub(crate) struct OwnedExec {
    raw: sys::CUgraphExec,
    ctx: Arc<CudaContext>,
}

// SAFETY: as for `OwnedGraph`: usable from any thread, never concurrently (its owner
// `GraphExec` is not `Sync`).
unsafe impl Send for OwnedExec {}

impl OwnedExec {
    /// The context the executable graph belongs to.
    pub(crate) fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// `cuGraphLaunch` on `stream`.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    #[inline]
    pub(crate) fn launch(&self, stream: CUstream) -> Result<(), DriverError> {
        ensure_current(&self.ctx)?;
        // SAFETY: the executable graph and `stream` are alive (owned by the callers); the
        // memory and host functions the graph uses are kept alive by `GraphExec`.
        unsafe { sys::cuGraphLaunch(self.raw, stream) }.result()
    }

    /// `cuGraphUpload` on `stream`.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn upload(&self, stream: CUstream) -> Result<(), DriverError> {
        ensure_current(&self.ctx)?;
        // SAFETY: the executable graph and `stream` are alive.
        unsafe { sys::cuGraphUpload(self.raw, stream) }.result()
    }

    /// `cuGraphExecUpdate_v2` with `graph`: `Ok` with the driver's verdict whether or not
    /// the update was accepted, `Err` for other failures.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn update(&mut self, graph: &OwnedGraph) -> Result<UpdateInfo, DriverError> {
        ensure_current(&self.ctx)?;
        let mut info = sys::CUgraphExecUpdateResultInfo {
            result: sys::CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR,
            errorNode: std::ptr::null_mut(),
            errorFromNode: std::ptr::null_mut(),
        };
        // SAFETY: both graphs are alive; `info` is a valid out-pointer; `&mut self` excludes
        // concurrent use of the executable graph.
        let r = unsafe { sys::cuGraphExecUpdate_v2(self.raw, graph.raw, &mut info) };
        match r {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE => {
                Ok(UpdateInfo {
                    result: info.result,
                    error_node: (!info.errorNode.is_null()).then_some(NodeHandle(info.errorNode)),
                    error_from_node: (!info.errorFromNode.is_null())
                        .then_some(NodeHandle(info.errorFromNode)),
                })
            }
            other => Err(DriverError(other)),
        }
    }

    /// `cuGraphExecKernelNodeSetParams_v2`: `node`'s launch keeps `params` (function, grid,
    /// block, shared memory) with the argument values at `args`, one pointer per kernel
    /// parameter.
    ///
    /// The caller passes a kernel node of the graph this executable graph was instantiated
    /// from and upholds the `Module::kernel` promise for `args`: exactly the kernel's
    /// parameters, each pointing at a live value of the C type it expects. The driver copies
    /// the values before returning.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    #[inline]
    pub(crate) fn set_kernel_args(
        &self,
        node: NodeHandle,
        params: &KernelParams,
        args: &mut [*mut c_void],
    ) -> Result<(), DriverError> {
        ensure_current(&self.ctx)?;
        let mut p = params.0;
        p.kernelParams = args.as_mut_ptr();
        p.extra = std::ptr::null_mut();
        // SAFETY: the executable graph is alive and its owner is not `Sync`, so no other call
        // on it runs concurrently; `node` belongs to
        // its original graph (caller's contract); `p` is the node's own parameter set with
        // only the argument array replaced by `args`, whose pointers reference live values of
        // the kernel's parameter types (caller's contract) that the driver copies now.
        unsafe { sys::cuGraphExecKernelNodeSetParams_v2(self.raw, node.0, &p) }.result()
    }
}

impl Drop for OwnedExec {
    fn drop(&mut self) {
        let destroyed = ensure_current(&self.ctx).and_then(|()| {
            // SAFETY: the executable graph was instantiated for us and is destroyed once,
            // here; launches still in flight complete (the driver defers the release).
            unsafe { sys::cuGraphExecDestroy(self.raw) }.result()
        });
        if let Err(e) = destroyed {
            self.ctx.record_err::<()>(Err(e));
        }
    }
}
