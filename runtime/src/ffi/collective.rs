//! Capturing work of other code (an NCCL group; a `call` statement's op in a device block's
//! body): which participant each node it adds to a capture belongs to ([`capture_group`]), so
//! that the node book can map them, and what kinds of node they are ([`added_kinds`]).

use cudarc::driver::sys;
use cudarc::driver::CudaStream;

use super::capture::{capture_state, join_into_one};
use super::ensure_current;
use super::graph::{dependencies, graph_nodes, node_count, AddedKind, NodeHandle};
use super::status::CaptureStatus;
use crate::error::{CaptureFault, Error, Result};

/// The nodes one participant of a collective added to a capture.
#[derive(Debug)]
pub(crate) struct ParticipantNodes {
    /// The node its stream depends on after the collective: its last node, or an empty node
    /// joining what it left the stream depending on (see [`capture_group`]).
    pub(crate) exit: NodeHandle,
    /// Its other nodes.
    pub(crate) inner: Vec<NodeHandle>,
}

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
    what: &str,
    issue: impl FnOnce() -> Result<()>,
) -> Result<Vec<ParticipantNodes>> {
    let Some(first) = streams.first() else {
        return Err(Error::Internal {
            invariant: "captured work of other code has at least one stream",
        });
    };
    ensure_current(first.context()).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let info =
        |s: &CudaStream| capture_state(s).map_err(|e| Error::driver("cuStreamGetCaptureInfo", e));
    let (status, graph, tip_before) = info(first)?;
    if status != CaptureStatus::Active || graph.is_null() {
        return Err(Error::Internal {
            invariant: "captured work of other code is issued on a capturing stream",
        });
    }
    for s in &streams[1..] {
        let (status, g, _) = info(s)?;
        if status != CaptureStatus::Active || g != graph {
            return Err(Error::Internal {
                invariant: "the streams of captured work of other code capture into one graph",
            });
        }
    }
    // SAFETY: `graph` is the graph of the capture under way on `first`.
    let before = unsafe { node_count(graph) }.map_err(|e| Error::driver("cuGraphGetNodes", e))?;
    issue()?;
    // What each stream depends on now (a participant's tips), read once per stream.
    let mut tips = Vec::with_capacity(streams.len());
    for s in streams {
        ensure_current(s.context()).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        match info(s)? {
            (CaptureStatus::Active, g, tip) if g == graph => tips.push(tip),
            (CaptureStatus::Invalidated, ..) => {
                return Err(Error::capture(CaptureFault::Invalidated))
            }
            _ => return Err(Error::capture(CaptureFault::Unjoined)),
        }
    }
    // The common case, one stream whose work added one node, now its one tip. A tip that was
    // not one before is a node the work made the stream depend on, and work issued only on
    // this stream (a `StreamOp`'s promise; NCCL's group likewise) only depends it on nodes it
    // added; with the graph one node larger, the tip is that node. Nothing to list or trace.
    if let [tip] = tips.as_slice()
        && let [t] = tip.as_slice()
        && !tip_before.contains(t)
    {
        // SAFETY: `graph` is the graph of the capture still under way (checked just above).
        let after =
            unsafe { node_count(graph) }.map_err(|e| Error::driver("cuGraphGetNodes", e))?;
        if after == before + 1 {
            return Ok(vec![ParticipantNodes {
                exit: NodeHandle::new(*t, std::ptr::null_mut()),
                inner: Vec::new(),
            }]);
        }
    }
    // The driver lists a graph's nodes in creation order (the node map relies on it too,
    // graph/recorded.rs): the work's nodes are the ones after the first `before`.
    // SAFETY: `graph` is the graph of the capture still under way on every stream (checked
    // just above).
    let mut added: Vec<sys::CUgraphNode> =
        unsafe { graph_nodes(graph) }.map_err(|e| Error::driver("cuGraphGetNodes", e))?;
    added.drain(..before.min(added.len()));
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
    for (k, tip) in tips.iter().enumerate() {
        let mut stack: Vec<usize> = tip
            .iter()
            .filter_map(|n| index.get(&(*n as usize)).copied())
            .collect();
        while let Some(i) = stack.pop() {
            match owner[i] {
                Some(o) if o == k => continue,
                Some(o) => {
                    return Err(Error::InvalidArgument(format!(
                        "{what} added graph nodes that participants {o} and {k} both depend on; its capture cannot be verified against the pipeline's model"
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
    }
    if owner.iter().any(Option::is_none) {
        return Err(Error::InvalidArgument(format!(
            "{what} added graph nodes that no participant's stream depends on (work issued on another stream, left unjoined); its capture cannot be verified against the pipeline's model"
        )));
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
            // SAFETY: `s` is capturing into `graph` (asked once the group's work was issued,
            // above); `tip` are nodes of it (the stream's dependencies then reported).
            unsafe { join_into_one(s, graph, &tip) }?
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

/// The kinds of `nodes` (`cuGraphNodeGetType`), each a node of the capture under way.
pub(crate) fn added_kinds(nodes: &ParticipantNodes) -> Result<Vec<AddedKind>> {
    let mut kinds = Vec::with_capacity(1 + nodes.inner.len());
    for node in std::iter::once(&nodes.exit).chain(&nodes.inner) {
        let mut kind = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: `node` was added to the graph of a capture still under way (the caller asks
        // right after `capture_group`), so it is alive; `kind` is a valid out-pointer.
        unsafe { sys::cuGraphNodeGetType(node.raw(), &mut kind) }
            .result()
            .map_err(|e| Error::driver("cuGraphNodeGetType", e))?;
        kinds.push(AddedKind::of(kind));
    }
    Ok(kinds)
}
