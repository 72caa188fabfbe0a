//! `call` statements in a capture: the op's work, issued on the capturing stream, adds nodes
//! to the graph; they are booked as the statement's one operation, ending in one node (an
//! empty join node where the op left several tips), whose operands and op the graph keeps.
//! Nodes a graph of the statement cannot hold are refused. Eagerly the op is issued as it is
//! (`exec/record.rs`).
//!
//! In the captured graph itself a call costs one driver call while it is captured: the node
//! the stream depends on after the op (its exit, [`gffi::call_exit`]). Which nodes are the
//! call's is found when the capture has ended. Mostly a call makes one node, its exit: the
//! stream's tip is asked before the op too, and when every call's exit is new and the graph
//! holds one node more per call than the other statements made, each exit is its call's one
//! node ([`NodeBook::resolve_single_calls`]: one node count, no listing). Otherwise
//! ([`NodeBook::resolve_calls`]) the driver lists the graph's nodes in creation order, so a
//! call's nodes are the ones created after those of the operations before it, up to its exit;
//! their kinds are checked there, and that each of them is one the exit depends on. In a
//! device block's body, where nodes are known as they are made, a call's nodes are found right
//! away, as a collective participant's are (`ffi/collective.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use super::book::{NodeBook, Recording};
use super::recorded::{CapturedOp, NO_SHAPE, OPAQUE};
use crate::call::{BoundCall, CallAccess, CallStream};
use crate::error::{Error, Result};
use crate::exec::record::Issue;
use crate::ffi::capture as gffi;
use crate::ffi::collective::{added_kinds, capture_group, ParticipantNodes};
use crate::ffi::graph::{AddedKind, NodeHandle, OwnedGraph};
use crate::operand::Memory;
use crate::program::{AccessMode, Statement, StatementKind};
use crate::stream::Stream;

/// What the graph keeps of a call besides its operands: the op's handle, workspace, module.
type Owner = Option<Arc<dyn std::any::Any + Send + Sync>>;

/// Captures `call` on `stream`, the capturing stream of `stmt`.
pub(super) fn capture_call(
    issue: &mut Issue<'_, Recording>,
    stmt: &'static Statement,
    stream: &Stream,
    call: &mut dyn BoundCall,
) -> Result<()> {
    if issue.rec.book.current_body().is_some() {
        return capture_call_in_body(issue, stmt, stream, call);
    }
    let current = |s: &Stream| {
        crate::ffi::ensure_current(s.as_cudarc().context())
            .map_err(|e| Error::driver("cuCtxSetCurrent", e))
    };
    current(stream)?;
    let before = gffi::capture_tip(stream.as_cudarc())
        .map_err(|e| Error::driver("cuStreamGetCaptureInfo", e))?
        .single;
    let on = CallStream::new(stream, true);
    call.issue(&on)?;
    let modules = on.into_modules();
    current(stream)?;
    let exit = gffi::call_exit(stream.as_cudarc())?;
    // The op left its stream on one node other than the one before it, not a join of ours:
    // a node it made (an op issues on its stream only), perhaps its only one.
    let single = !exit.joined
        && exit
            .node
            .is_some_and(|e| before.is_none_or(|b| b.key() != e.key()));
    let book = &mut issue.rec.book;
    for module in &modules {
        book.keep.hold_module(module);
    }
    book.note_call(stmt, call.accesses(), exit.node, single, call.keep())
}

/// Captures `call` into the body graph of a device block: its nodes are found at once.
fn capture_call_in_body(
    issue: &mut Issue<'_, Recording>,
    stmt: &'static Statement,
    stream: &Stream,
    call: &mut dyn BoundCall,
) -> Result<()> {
    let what = format!("the op `{}`", call.name());
    let on = CallStream::new(stream, true);
    let mut added = capture_group(&[&**stream.as_cudarc()], &what, || call.issue(&on))?;
    let modules = on.into_modules();
    let Some(nodes) = added.pop() else {
        return Err(Error::Internal {
            invariant: "a capture of one stream's work reports that stream's nodes",
        });
    };
    let kinds = added_kinds(&nodes)?;
    if let Some(why) = kinds.iter().find_map(|&k| refusal(k, true)) {
        return Err(Error::InvalidArgument(format!("{what} added {why}")));
    }
    let owner = call.keep();
    let book = &mut issue.rec.book;
    for module in &modules {
        book.keep.hold_module(module);
    }
    book.note_call_in_body(stmt, call.accesses(), nodes, owner)
}

/// Why a node of `kind` cannot be a call's (in a device block's body when `in_body`), if so.
fn refusal(kind: AddedKind, in_body: bool) -> Option<&'static str> {
    match kind {
        AddedKind::Plain => None,
        AddedKind::Memory => Some(
            "a memory allocation or free node (the op allocated during the capture); allocate what it needs when the op is made, e.g. a workspace it owns",
        ),
        AddedKind::Event => Some(
            "an event record or wait node; an op orders nothing but its own stream's work, the pipeline's `record`/`wait` statements order the rest",
        ),
        AddedKind::Host if in_body => Some(
            "a host function node, which CUDA does not allow in the body of a device `while`/`if`; issue the call before or after the block",
        ),
        AddedKind::Graph if in_body => Some(
            "a child graph node, which CUDA does not allow in the body of a device `while`/`if`; issue the call before or after the block",
        ),
        AddedKind::Other => Some("a node of a kind streamgraph does not capture for a `call`"),
        AddedKind::Host | AddedKind::Graph => None,
    }
}

/// A call's refusal: `what` its op added, named by the statement.
fn refused(stmt: &'static Statement, what: &str) -> Error {
    let op = match stmt.kind {
        StatementKind::Call { op } => op,
        _ => "of the call",
    };
    Error::InvalidArgument(format!("the op `{op}` added {what}")).in_statement(stmt)
}

/// Where `node` is in `listed` at `from` or after, if it is.
fn position(
    listed: &[NodeHandle],
    from: usize,
    node: NodeHandle,
    all: &mut Option<HashMap<usize, usize>>,
) -> Option<usize> {
    // A call's exit is its last node: the first few nodes from `from` hold it unless the call
    // added many nodes, or none (then its exit is an older node).
    const NEAR: usize = 64;
    let near = &listed[from.min(listed.len())..listed.len().min(from + NEAR)];
    if let Some(i) = near.iter().position(|n| n.key() == node.key()) {
        return Some(from + i);
    }
    if from + NEAR >= listed.len() {
        return None;
    }
    let all = all.get_or_insert_with(|| {
        listed
            .iter()
            .enumerate()
            .map(|(i, n)| (n.key(), i))
            .collect()
    });
    all.get(&node.key()).copied().filter(|&i| i >= from)
}

impl NodeBook {
    /// Books a `call` just captured into the graph itself, whose stream depends on `exit`
    /// now: one operation, its nodes found when the capture has ended
    /// ([`NodeBook::resolve_single_calls`], else [`NodeBook::resolve_calls`]); `single`: the
    /// exit is a node the op made. The graph keeps the operands' memory and `owner`.
    pub(crate) fn note_call(
        &mut self,
        stmt: &'static Statement,
        accesses: &[CallAccess<'_>],
        exit: Option<NodeHandle>,
        single: bool,
        owner: Owner,
    ) -> Result<()> {
        self.calls_single &= single;
        let occurrence = self.issued(stmt)?;
        self.hold_call(accesses, owner);
        let index = self.rec.ops.len() as u32;
        self.rec.ops.push(CapturedOp {
            statement: stmt,
            occurrence,
            created: 0,
            values: (self.rec.values.len() as u32, OPAQUE),
            part: 0,
            shape: NO_SHAPE,
        });
        self.pending.push((index, exit));
        Ok(())
    }

    /// Books a `call` just captured into a device block's body: `added` are the nodes its op
    /// added (from [`capture_group`]), one operation known by its last node.
    fn note_call_in_body(
        &mut self,
        stmt: &'static Statement,
        accesses: &[CallAccess<'_>],
        added: ParticipantNodes,
        owner: Owner,
    ) -> Result<()> {
        let occurrence = self.issued(stmt)?;
        self.hold_call(accesses, owner);
        self.book_known(stmt, occurrence, added.exit, added.inner);
        Ok(())
    }

    /// The graph keeps a call's operands (their memory is touched) and its `owner`.
    fn hold_call(&mut self, accesses: &[CallAccess<'_>], owner: Owner) {
        if let Some(owner) = owner {
            self.keep.hold_other(owner);
        }
        for access in accesses {
            if let Memory::Device(r) = access.memory.memory() {
                super::book::remember(&mut self.rec.touched, r);
            }
            self.keep
                .hold(access.memory.holder(), access.mode == AccessMode::Write);
        }
    }

    /// About how many nodes the captured graph holds: the booked ones, and a few per call
    /// whose nodes are not found yet.
    fn expected_nodes(&self) -> usize {
        self.node_count + 4 * self.pending.len()
    }

    /// Accounts for every node of `graph`, the graph just captured: by its node count alone
    /// where that suffices (no cross-check, every call found by
    /// [`NodeBook::resolve_single_calls`]), else by listing the nodes, resolving the calls'
    /// ([`NodeBook::resolve_calls`]) and mapping them all. The inner error says what does not
    /// add up (nodes no statement made).
    pub(crate) fn account_nodes(
        &mut self,
        graph: &OwnedGraph,
    ) -> Result<std::result::Result<(), String>> {
        if !self.cross_checks() && self.calls_single {
            let count = graph
                .node_count()
                .map_err(|e| Error::driver("cuGraphGetNodes", e))?;
            if self.resolve_single_calls(graph, count)? {
                return Ok(self.check_count(count));
            }
        }
        let nodes = graph
            .nodes_expecting(self.expected_nodes())
            .map_err(|e| Error::driver("cuGraphGetNodes", e))?;
        self.resolve_calls(graph, &nodes)?;
        Ok(self.map_nodes(&nodes))
    }

    /// Finds the nodes of the calls captured into `graph` itself, now that the capture has
    /// ended and it holds `count` nodes, without listing them, where that can be known: when
    /// every call's exit is a node its op made and the graph holds the booked nodes and one
    /// more per call, each call made exactly one node, its exit (a call that made none would
    /// have left its stream on the node before it). Its kind is checked as
    /// [`NodeBook::resolve_calls`] checks a listed call's. `true` at once where no call waits;
    /// `false`, with nothing booked, where it cannot be known so: then the nodes are listed
    /// and resolved.
    fn resolve_single_calls(&mut self, graph: &OwnedGraph, count: usize) -> Result<bool> {
        if self.pending.is_empty() {
            return Ok(true);
        }
        if !self.calls_single || count != self.node_count + self.pending.len() {
            return Ok(false);
        }
        for &(index, exit) in &self.pending {
            let Some(exit) = exit else {
                return Ok(false);
            };
            // The exit is a node of this graph: the call's stream was capturing into it when
            // the exit was asked (status active), and an op issues on that stream only.
            let kind = graph
                .added_kind(graph.bind(exit))
                .map_err(|e| Error::driver("cuGraphNodeGetType", e))?;
            if let Some(why) = kind.and_then(|k| refusal(k, false)) {
                return Err(refused(self.rec.ops[index as usize].statement, why));
            }
        }
        for (index, exit) in std::mem::take(&mut self.pending) {
            let Some(exit) = exit else { continue };
            self.rec.ops[index as usize].created = 1;
            self.rec.known.push((index, exit));
            self.node_count += 1;
        }
        // Known nodes are kept in operation order.
        self.rec.known.sort_by_key(|&(i, _)| i);
        Ok(true)
    }

    /// Finds the nodes of the calls captured into `graph` itself, now that the capture has
    /// ended: `listed` are its nodes in creation order. A call's nodes follow those of the
    /// operations before it, up to its exit; each must be of a kind a call may add and one
    /// its exit depends on (else it is work on another stream, left unjoined). Each call
    /// becomes an operation known by its exit, its other nodes internal to it.
    fn resolve_calls(&mut self, graph: &OwnedGraph, listed: &[NodeHandle]) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        let mut all = None;
        let (mut cursor, mut walked) = (0usize, 0usize);
        let kind_of = |n: NodeHandle| {
            graph
                .added_kind(n)
                .map_err(|e| Error::driver("cuGraphNodeGetType", e))
        };
        for &(index, exit) in &pending {
            let index = index as usize;
            cursor += self.rec.ops[walked..index]
                .iter()
                .filter(|op| op.part == 0)
                .map(|op| op.created as usize)
                .sum::<usize>();
            walked = index + 1;
            let stmt = self.rec.ops[index].statement;
            // No exit, or one from before the call: it added no node.
            let Some(end) = exit.and_then(|e| position(listed, cursor, e, &mut all)) else {
                continue;
            };
            let nodes = &listed[cursor..=end];
            for &node in nodes {
                if let Some(why) = kind_of(node)?.and_then(|k| refusal(k, false)) {
                    return Err(refused(stmt, why));
                }
            }
            if nodes.len() > 1 && !all_reach(graph, nodes)? {
                return Err(refused(
                    stmt,
                    "graph nodes its stream does not depend on (work issued on another stream and left unjoined); an op issues its work on the stream it is given",
                ));
            }
            let (exit, inner) = (nodes[nodes.len() - 1], &nodes[..nodes.len() - 1]);
            let op = &mut self.rec.ops[index];
            op.created = nodes.len() as u32;
            self.rec.known.push((index as u32, exit));
            if !inner.is_empty() {
                self.rec
                    .blocks_mut()
                    .internal
                    .extend(inner.iter().map(|&node| super::recorded::InternalNode {
                        part: 0,
                        node,
                        op: index,
                    }));
            }
            self.node_count += nodes.len();
            cursor = end + 1;
        }
        // Known nodes are kept in operation order.
        self.rec.known.sort_by_key(|&(i, _)| i);
        Ok(())
    }
}

/// Whether the last of `nodes` (a call's exit) depends on each of the others.
fn all_reach(graph: &OwnedGraph, nodes: &[NodeHandle]) -> Result<bool> {
    // A call's nodes are few (a library call's kernels): looked up in place, hashed when many.
    let map: Option<HashMap<usize, usize>> = (nodes.len() > 32).then(|| {
        nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.key(), i))
            .collect()
    });
    let local = |key: usize| match &map {
        Some(map) => map.get(&key).copied(),
        None => nodes.iter().position(|n| n.key() == key),
    };
    let mut reached = vec![false; nodes.len()];
    let mut stack = vec![nodes.len() - 1];
    reached[nodes.len() - 1] = true;
    while let Some(i) = stack.pop() {
        let deps = graph
            .dependencies_of(nodes[i])
            .map_err(|e| Error::driver("cuGraphNodeGetDependencies", e))?;
        for d in deps {
            if let Some(j) = local(d.key())
                && !reached[j]
            {
                reached[j] = true;
                stack.push(j);
            }
        }
    }
    Ok(reached.iter().all(|&r| r))
}
