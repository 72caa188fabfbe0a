//! Stream capture: beginning a capture, ending it in an [`OwnedGraph`], and reading what it
//! has recorded so far (the graph a stream captures into, the nodes the stream depends on).

use cudarc::driver::sys;
use cudarc::driver::{CudaStream, DriverError};

use super::ensure_current;
use super::graph::{NodeHandle, OwnedGraph};
use super::keep::Keep;
use super::status::CaptureStatus;
use crate::error::{CaptureFault, Error, Result};

/// `cuStreamBeginCapture_v2` of `stream` in `mode`; the capture's id, which
/// [`end_capture`] checks.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn begin_capture(stream: &CudaStream, mode: CaptureModeRaw) -> Result<u64, DriverError> {
    ensure_current(stream.context())?;
    // SAFETY: `stream` owns its live handle; no pointer is passed.
    unsafe { sys::cuStreamBeginCapture_v2(stream.cu_stream(), mode.raw()) }.result()?;
    Ok(capture_id(stream)?.1)
}

/// The capture status of `stream` and, while it is active, the capture's id
/// (`cuStreamGetCaptureInfo_v3`; unique in the process; 0 otherwise: the driver returns
/// nothing but the status of a capture that is not active). The context is current.
fn capture_id(stream: &CudaStream) -> Result<(CaptureStatus, u64), DriverError> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let mut id: u64 = 0;
    // SAFETY: `stream` owns its live handle; `status` and `id` are valid out-pointers; the
    // outputs not wanted are null, which the driver allows.
    unsafe {
        sys::cuStreamGetCaptureInfo_v3(
            stream.cu_stream(),
            &mut status,
            &mut id,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
    .result()?;
    let status = CaptureStatus::from(status);
    Ok((
        status,
        if status == CaptureStatus::Active {
            id
        } else {
            0
        },
    ))
}

/// The capture modes of `cuStreamBeginCapture`, without naming `sys` outside `ffi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaptureModeRaw {
    ThreadLocal,
    Global,
    Relaxed,
}

impl CaptureModeRaw {
    /// The driver's capture mode.
    pub(super) fn raw(self) -> sys::CUstreamCaptureMode {
        match self {
            CaptureModeRaw::ThreadLocal => {
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
            }
            CaptureModeRaw::Global => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
            CaptureModeRaw::Relaxed => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
        }
    }
}

/// How [`end_capture`] failed.
#[derive(Debug)]
pub(crate) enum EndFailed {
    /// The driver's error.
    Driver(DriverError),
    /// The capture [`begin_capture`] began was not the stream's any more: other code ended it
    /// (and perhaps began another, which is ended here); what it collected was given up.
    EndedElsewhere,
}

/// `cuStreamEndCapture`: ends the capture begun on `stream` (the one of id `id`, where given)
/// and returns its graph, which keeps `keep`.
///
/// On failure the capture is over as well (the driver ends it and drops what it recorded);
/// a partial graph the driver still hands back is destroyed here. Where the stream is not in
/// capture `id` any more, other code ended it, and a graph of that code may hold the nodes
/// `keep` keeps alive: `keep` is given up for good ([`Keep::abandon`]), and a capture of
/// that code the stream is in now is ended and its graph destroyed. So is `keep` where the
/// capture is invalidated: the driver names no invalidated capture's id, so this one may be
/// another that other code began after ending this one.
///
/// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
pub(crate) fn end_capture(
    stream: &CudaStream,
    mut keep: Keep,
    id: Option<u64>,
) -> Result<OwnedGraph, EndFailed> {
    let ctx = stream.context();
    ensure_current(ctx).map_err(EndFailed::Driver)?;
    let ours = id.map(|id| match capture_id(stream) {
        Ok((CaptureStatus::Active, now)) if now == id => Ok(()),
        Ok((CaptureStatus::Invalidated, _)) | Err(_) => Err(None),
        Ok(_) => Err(Some(EndFailed::EndedElsewhere)),
    });
    if let Some(Err(failed)) = ours {
        keep.abandon();
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: `stream` owns its live handle; `graph` is a valid out-pointer. Whatever the
        // stream is capturing now is ended; a graph handed back is destroyed (owned by nothing).
        let ended = unsafe { sys::cuStreamEndCapture(stream.cu_stream(), &mut graph) }.result();
        if !graph.is_null() {
            // SAFETY: as above: the graph the driver just handed over, owned by nothing else.
            drop(unsafe { OwnedGraph::from_raw(graph, ctx, Keep::default()) });
        }
        return Err(failed.unwrap_or(EndFailed::Driver(match ended {
            Err(e) => e,
            Ok(()) => DriverError(sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
        })));
    }
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: `stream` owns its live handle; `graph` is a valid out-pointer for the call.
    let ended = unsafe { sys::cuStreamEndCapture(stream.cu_stream(), &mut graph) }.result();
    let owned = (!graph.is_null()).then(|| {
        // The host functions launched during the capture are nodes of this graph now.
        keep.mark_captured();
        // SAFETY: `graph` is the live graph of `ctx` the driver just handed over for this
        // capture, owned by nothing else; `keep` is what the capture collected for its nodes.
        unsafe { OwnedGraph::from_raw(graph, ctx, keep) }
    });
    match (ended, owned) {
        (Ok(()), Some(g)) => Ok(g),
        (Ok(()), None) => Err(EndFailed::Driver(DriverError(
            sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
        ))),
        // Dropping the partial graph destroys it.
        (Err(e), _) => Err(EndFailed::Driver(e)),
    }
}

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

/// What `cuStreamGetCaptureInfo_v3` says of a stream: its capture status, the graph it captures
/// into, and its current dependencies as the driver returned them (an array valid until the
/// next driver call on the stream).
struct RawInfo {
    status: CaptureStatus,
    graph: sys::CUgraph,
    deps: *const sys::CUgraphNode,
    count: usize,
}

impl RawInfo {
    /// `cuStreamGetCaptureInfo_v3` of `stream`, asked without checking first that its context
    /// is current (made current and asked again only if the query fails otherwise).
    ///
    /// <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html>
    fn of(stream: &CudaStream) -> Result<RawInfo, DriverError> {
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        let mut deps: *const sys::CUgraphNode = std::ptr::null();
        let mut count: usize = 0;
        super::in_context(stream.context(), || {
            // SAFETY: `stream` owns its live handle; every out-pointer is valid for the call;
            // the outputs not wanted (id, edge data) are null, which the driver allows.
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
            .result()
        })?;
        Ok(RawInfo {
            status: status.into(),
            graph,
            deps,
            count,
        })
    }

    /// The dependencies, read at once (before the next driver call on the stream).
    fn deps(&self) -> &[sys::CUgraphNode] {
        if self.count == 0 || self.deps.is_null() {
            return &[];
        }
        // SAFETY: the driver returned an array of `count` nodes at `deps`, valid until the next
        // driver call on the stream; callers read it before making one.
        unsafe { std::slice::from_raw_parts(self.deps, self.count) }
    }
}

/// `cuStreamGetCaptureInfo_v3` of `stream`: the capture status and the stream's current
/// dependency set. Right after an operation was issued, that set is exactly the node the
/// operation created.
///
/// No context check on this per-operation path (see [`RawInfo::of`]).
pub(crate) fn capture_tip(stream: &CudaStream) -> Result<CaptureTip, DriverError> {
    let info = RawInfo::of(stream)?;
    // The node belongs to the capture's graph, which `OwnedGraph::bind` names once it ends.
    let single = match info.deps() {
        [node] => Some(NodeHandle::new(*node, std::ptr::null_mut())),
        _ => None,
    };
    Ok(CaptureTip {
        status: info.status,
        single,
        count: info.count,
    })
}

/// Appends to `out` the nodes a capturing `stream` depends on now (none where it depends on
/// none, or is not capturing): where a `call`'s work starts when [`capture_tip`] found several.
/// One `cuStreamGetCaptureInfo_v3`.
pub(crate) fn capture_deps(
    stream: &CudaStream,
    out: &mut Vec<NodeHandle>,
) -> Result<(), DriverError> {
    let info = RawInfo::of(stream)?;
    // The nodes belong to the capture's graph, which `OwnedGraph::bind` names once it ends.
    out.extend(
        info.deps()
            .iter()
            .map(|&node| NodeHandle::new(node, std::ptr::null_mut())),
    );
    Ok(())
}

/// Where a `call`'s work left a capturing stream (see [`call_exit`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallExit {
    /// The one node the stream depends on now; `None` where it depends on none.
    pub(crate) node: Option<NodeHandle>,
    /// Whether `node` is an empty join node added here after the op's several tips.
    pub(crate) joined: bool,
}

/// Where a `call`'s work left `stream`, a capturing stream of this thread's current context,
/// right after the op issued it: the one node the stream depends on now (an empty join node
/// added after the op's nodes where it left several), `None` where it depends on none. One
/// `cuStreamGetCaptureInfo_v3`; the call's nodes themselves are found when the capture has
/// ended (`graph/call.rs`), so a call costs no more driver calls than this and the tip
/// before it.
pub(crate) fn call_exit(stream: &CudaStream) -> Result<CallExit> {
    let info = RawInfo::of(stream).map_err(|e| Error::driver("cuStreamGetCaptureInfo", e))?;
    match info.status {
        CaptureStatus::Active => {}
        CaptureStatus::Invalidated => return Err(Error::capture(CaptureFault::Invalidated)),
        CaptureStatus::None => return Err(Error::capture(CaptureFault::Unjoined)),
    }
    let (exit, joined) = match info.deps() {
        [] => {
            return Ok(CallExit {
                node: None,
                joined: false,
            })
        }
        [node] => (*node, false),
        // SAFETY: `stream` is capturing into `info.graph` (status active, just asked), and
        // `deps` are the nodes of it the stream depends on, read before any other call on it.
        several => (unsafe { join_into_one(stream, info.graph, several) }?, true),
    };
    Ok(CallExit {
        node: Some(NodeHandle::new(exit, std::ptr::null_mut())),
        joined,
    })
}

/// Makes the capturing `stream` depend on one empty node that depends on `deps`; returns it.
///
/// # Safety
///
/// `stream` is capturing into `graph`, a live graph, and `deps` are nodes of `graph`.
pub(super) unsafe fn join_into_one(
    stream: &CudaStream,
    graph: sys::CUgraph,
    deps: &[sys::CUgraphNode],
) -> Result<sys::CUgraphNode> {
    let mut node: sys::CUgraphNode = std::ptr::null_mut();
    // SAFETY: `graph` is live and `deps` are `deps.len()` nodes of it (the caller's promise).
    unsafe { sys::cuGraphAddEmptyNode(&mut node, graph, deps.as_ptr(), deps.len()) }
        .result()
        .map_err(|e| Error::driver("cuGraphAddEmptyNode", e))?;
    let mut set = [node];
    // SAFETY: `stream` is capturing into `graph` (the caller's promise), of which `node` is a
    // node now.
    unsafe {
        sys::cuStreamUpdateCaptureDependencies_v2(
            stream.cu_stream(),
            set.as_mut_ptr(),
            std::ptr::null(),
            1,
            sys::CUstreamUpdateCaptureDependencies_flags::CU_STREAM_SET_CAPTURE_DEPENDENCIES as u32,
        )
    }
    .result()
    .map_err(|e| Error::driver("cuStreamUpdateCaptureDependencies", e))?;
    Ok(node)
}

/// The graph `stream` is capturing into, and the stream's current dependencies.
pub(super) fn capture_state(
    stream: &CudaStream,
) -> std::result::Result<(CaptureStatus, sys::CUgraph, Vec<sys::CUgraphNode>), DriverError> {
    let info = RawInfo::of(stream)?;
    Ok((info.status, info.graph, info.deps().to_vec()))
}
