//! Executable graphs: [`OwnedExec`], an owned `CUgraphExec` instantiated from an
//! [`OwnedGraph`], and its launches, uploads, whole-graph updates and kernel-node updates in
//! place. What its launches touch is held in a [`KeptSet`] (see [`super::keep`]), released
//! only once they have finished.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaStream, DriverError};

use super::ensure_current;
use super::graph::{NodeHandle, OwnedGraph, RawGraph};
use super::keep::{Keep, KeptSet};
use super::launch::{with_param_array, KernelArg, LoadedFunction};
use super::pinned::PinnedAlloc;
use crate::error::{Error, Result, UpdateRejection};
use crate::operand::LaunchConfig;

/// A `CUgraphExec` handed out for interop ([`crate::GraphExec::as_raw`]), like
/// [`GraphHandle`](super::graph::GraphHandle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphExecHandle(pub sys::CUgraphExec);

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
/// have finished (see [`super::keep`]).
#[derive(Debug)]
pub(crate) struct OwnedExec {
    raw: sys::CUgraphExec,
    ctx: Arc<CudaContext>,
    /// The graph it was instantiated from, whose node handles address its nodes.
    source: Arc<RawGraph>,
    live: KeptSet,
}

// SAFETY: as for `OwnedGraph`: usable from any thread, never concurrently (its owner
// `GraphExec` is not `Sync`, and the `RefCell` in its `KeptSet` keeps this type `!Sync`). The
// kept allocations, modules and host functions are themselves `Send + Sync`.
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
        self.live.note_launch(stream);
        let raw = || {
            // SAFETY: the executable graph and `stream` are alive; everything the graph's
            // nodes touch is held in `self.live` until this launch has finished (see
            // `super::keep`).
            unsafe { sys::cuGraphLaunch(self.raw, stream.cu_stream()) }
                .result()
                .map_err(|e| Error::driver("cuGraphLaunch", e))
        };
        let pinned = self.live.pinned();
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
            self.live.retire(graph.keep().clone())?;
        }
        Ok(info)
    }

    /// Keeps `more` for as long as the current graph's own [`Keep`]: what nodes changed in
    /// place touch (see [`KeptSet::hold_more`], which may refuse it: `false`).
    pub(crate) fn hold_more(&mut self, more: Keep) -> bool {
        self.live.hold_more(more)
    }

    /// How many [`OwnedExec::hold_more`] sets are held.
    pub(crate) fn extra_keeps(&self) -> usize {
        self.live.extra_count()
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
        if !node.is_in(self.source.raw()) {
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
                unsafe { sys::cuGraphExecKernelNodeSetParams_v2(self.raw, node.raw(), &p) }.result()
            };
            with_param_array(args, set)
        })
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
        self.live.finish_or_leak();
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

impl OwnedGraph {
    /// `cuGraphInstantiateWithFlags`: an executable graph of this graph, which keeps the graph
    /// and what its nodes touch. Its kernel nodes run at their own priorities, those of the
    /// streams they were captured on (`CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY`), as
    /// the same launches run eagerly, rather than all at the priority of the stream the graph
    /// is launched into.
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
    pub(crate) fn instantiate(&self) -> Result<OwnedExec, DriverError> {
        ensure_current(self.ctx())?;
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        let flags = sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
        super::unsafe_during_capture(|| {
            // SAFETY: the graph is alive; `exec` is a valid out-pointer.
            unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, self.raw(), flags.0 as u64) }
                .result()
        })?;
        Ok(OwnedExec {
            raw: exec,
            ctx: self.ctx().clone(),
            source: self.shared().clone(),
            live: KeptSet::new(self.keep().clone()),
        })
    }
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
