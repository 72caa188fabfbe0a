//! `call` statements in a capture: the op's work, issued on the capturing stream, adds nodes
//! to the graph; they are booked as the statement's one operation, ending in one node (an
//! empty join node where the op left several tips), whose operands and op the graph keeps.
//! Nodes a graph of the statement cannot hold are refused. Eagerly the op is issued as it is
//! (`exec/record.rs`).
//!
//! In the captured graph itself a call costs two driver calls while it is captured: the
//! nodes its stream depends on before the op (where its work starts, [`gffi::capture_tip`])
//! and the node it depends on after (its exit, [`gffi::call_exit`]). Which nodes are the
//! call's is found when the capture has ended, without listing the graph where the node count
//! allows: mostly a call makes one node, its exit, and when every call's exit is new and the
//! graph holds one node more per call than the other statements made, each exit is its call's
//! one node ([`NodeBook::resolve_single_calls`]); else a call's nodes are those its exit
//! depends on back to where it started, and they are all when they and the other statements'
//! add up to the node count ([`NodeBook::resolve_walked_calls`]). Where neither adds up
//! ([`NodeBook::resolve_calls`]) the driver lists the graph's nodes in creation order, so a
//! call's nodes are the ones created after those of the operations before it, up to its exit;
//! their kinds are checked there, and that each of them is one the exit depends on, which
//! names what was left unjoined. In a device block's body, where nodes are known as they are
//! made, a call's nodes are found right away, as a collective participant's are
//! (`ffi/collective.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use super::book::{NodeBook, Recording};
use super::pending::{CallStart, PendingCall};
use super::recorded::{CapturedOp, OPAQUE};
use crate::call::{BoundCall, CallAccess, CallStream};
use crate::error::{Error, Result};
use crate::ffi::capture as gffi;
use crate::ffi::collective::{added_kinds, capture_group, ParticipantNodes};
use crate::ffi::graph::{AddedKind, NodeHandle, OwnedGraph};
use crate::operand::Memory;
use crate::program::{AccessMode, Statement, StatementKind};
use crate::stream::Stream;

/// What the graph keeps of a call besides its operands: the op's handle, workspace, module.
type Owner = Option<Arc<dyn std::any::Any + Send + Sync>>;

/// Captures `call` on `stream`, the capturing stream of `stmt`, whose context is current (as
/// for every statement of a capture: the capture began with it, and each call makes it
/// current again after its op, which may have made another one current).
pub(super) fn capture_call(
    rec: &mut Recording,
    stmt: &'static Statement,
    stream: &Stream,
    call: &mut dyn BoundCall,
) -> Result<()> {
    if rec.book.current_body().is_some() {
        return capture_call_in_body(rec, stmt, stream, call);
    }
    // Booked before the op: a library call walks far more code and data than the statement
    // around it, so what the booking reads (the operands, the book) is still cached here, and
    // after the op only its exit is asked and noted.
    let book = &mut rec.book;
    book.call_starts_from(stream)?;
    book.note_call(stmt, call)?;
    let room = std::mem::take(&mut book.calls.modules);
    let on = CallStream::noting(stream, true, room);
    call.issue(&on)?;
    let mut modules = on.into_modules();
    crate::ffi::ensure_current(stream.as_cudarc().context())
        .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let exit = gffi::call_exit(stream.as_cudarc())?;
    let book = &mut rec.book;
    if !modules.is_empty() {
        for module in &modules {
            book.keep.hold_module(module);
        }
        modules.clear();
    }
    book.calls.modules = modules;
    book.call_ended(exit)
}

/// Captures `call` into the body graph of a device block: its nodes are found at once.
fn capture_call_in_body(
    rec: &mut Recording,
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
    let book = &mut rec.book;
    for module in &modules {
        book.keep.hold_module(module);
    }
    book.note_call_in_body(stmt, call, nodes, owner)
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
    /// Notes where the `call` about to be issued on `stream`, a capturing stream, starts: the
    /// nodes the stream depends on now.
    fn call_starts_from(&mut self, stream: &Stream) -> Result<()> {
        let tip = gffi::capture_tip(stream.as_cudarc())
            .map_err(|e| Error::driver("cuStreamGetCaptureInfo", e))?;
        let start = match tip.single {
            Some(node) => CallStart::One(node),
            None if tip.count == 0 => CallStart::None,
            None => {
                let from = self.calls.starts.len() as u32;
                gffi::capture_deps(stream.as_cudarc(), &mut self.calls.starts)
                    .map_err(|e| Error::driver("cuStreamGetCaptureInfo", e))?;
                CallStart::Many(from, self.calls.starts.len() as u32)
            }
        };
        self.calls.pending.push(PendingCall {
            index: self.rec.ops.len() as u32,
            exit: None,
            start,
        });
        Ok(())
    }

    /// Books the `call` about to be captured into the graph itself, which starts where
    /// [`NodeBook::call_starts_from`] noted: one operation, its nodes found when the capture
    /// has ended ([`NodeBook::account_nodes`]). The graph keeps the operands' memory and what
    /// the op keeps; the call's signature ([`super::recorded::encode_call`]) is its values.
    fn note_call(&mut self, stmt: &'static Statement, call: &dyn BoundCall) -> Result<()> {
        let occurrence = self.issued(stmt)?;
        let owner = call.keep();
        let values = self.call_values(call, owner.as_ref());
        self.hold_call(call.accesses(), owner);
        self.rec.ops.push(CapturedOp {
            statement: stmt,
            occurrence,
            created: 0,
            values,
            part: 0,
            shape: None,
        });
        Ok(())
    }

    /// Notes where the `call` booked last left its stream: on `exit`.
    fn call_ended(&mut self, exit: gffi::CallExit) -> Result<()> {
        let Some(pending) = self.calls.pending.last_mut() else {
            return Err(Error::Internal {
                invariant: "a call's start is noted before it ends",
            });
        };
        pending.exit = exit.node;
        // The op left its stream on one node it did not start from, not a join of ours: a
        // node it made (an op issues on its stream only), perhaps its only one.
        let single = !exit.joined
            && exit.node.is_some_and(|e| match pending.start {
                CallStart::None => true,
                CallStart::One(b) => b.key() != e.key(),
                CallStart::Many(..) => pending
                    .starts(&self.calls.starts)
                    .iter()
                    .all(|b| b.key() != e.key()),
            });
        self.calls.single &= single;
        Ok(())
    }

    /// Books a `call` just captured into a device block's body: `added` are the nodes its op
    /// added (from [`capture_group`]), one operation known by its last node.
    fn note_call_in_body(
        &mut self,
        stmt: &'static Statement,
        call: &dyn BoundCall,
        added: ParticipantNodes,
        owner: Owner,
    ) -> Result<()> {
        let occurrence = self.issued(stmt)?;
        let index = self.book_known(stmt, occurrence, added.exit, added.inner);
        let values = self.call_values(call, owner.as_ref());
        self.set_values(index, values);
        self.hold_call(call.accesses(), owner);
        Ok(())
    }

    /// Books `call`'s signature ([`super::recorded::encode_call`]) as values, for argument
    /// updates to compare; returns their span, [`OPAQUE`] where the op's work cannot be
    /// compared.
    fn call_values(
        &mut self,
        call: &dyn BoundCall,
        owner: Option<&Arc<dyn std::any::Any + Send + Sync>>,
    ) -> (u32, u32) {
        let start = self.rec.values.len();
        if super::recorded::encode_call(call, owner, &mut self.rec.values) {
            (start as u32, (self.rec.values.len() - start) as u32)
        } else {
            self.rec.values.truncate(start);
            (start as u32, OPAQUE)
        }
    }

    /// The graph keeps a call's operands (their memory is touched) and its `owner`.
    fn hold_call(&mut self, accesses: &[CallAccess<'_>], owner: Owner) {
        if let Some(owner) = owner {
            self.keep.hold_other(owner);
        }
        for access in accesses {
            if let Memory::Device(r) = access.memory.memory() {
                super::recorded::remember(&mut self.rec.touched, r);
            }
            self.keep
                .hold(access.memory.holder(), access.mode == AccessMode::Write);
        }
    }

    /// About how many nodes the captured graph holds: the booked ones, and a few per call
    /// whose nodes are not found yet.
    fn expected_nodes(&self) -> usize {
        self.node_count + 4 * self.calls.pending.len()
    }

    /// Accounts for every node of `graph`, the graph just captured: by its node count alone
    /// where that suffices (no cross-check; every call found by
    /// [`NodeBook::resolve_single_calls`] or [`NodeBook::resolve_walked_calls`]), else by
    /// listing the nodes, resolving the calls' ([`NodeBook::resolve_calls`]) and mapping them
    /// all. The inner error says what does not add up (nodes no statement made).
    pub(crate) fn account_nodes(
        &mut self,
        graph: &OwnedGraph,
    ) -> Result<std::result::Result<(), String>> {
        if !self.cross_checks() {
            let count = graph
                .node_count()
                .map_err(|e| Error::driver("cuGraphGetNodes", e))?;
            if self.resolve_single_calls(graph, count)?
                || self.resolve_walked_calls(graph, count)?
            {
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
    /// ended and it holds `count` nodes, without listing them: a call's nodes are those its
    /// exit depends on, directly or through one another, back to the nodes its stream started
    /// from (all of an op's work follows those: it issues on its stream, and a stream it forks
    /// to waits for that one first). When they and the booked nodes add up to `count`, every
    /// node of the graph is accounted for, none left unjoined (a node a call made that its exit
    /// does not depend on, or one made outside the statements, would be over the sum). Their
    /// kinds are checked as [`NodeBook::resolve_calls`] checks a listed call's. `false`, with
    /// nothing booked, where they do not add up or a call made over [`WALK_LIMIT`] nodes:
    /// then the nodes are listed and resolved.
    fn resolve_walked_calls(&mut self, graph: &OwnedGraph, count: usize) -> Result<bool> {
        // Every call's nodes, exit last, one call after the other; where each call's end.
        let mut found = Vec::with_capacity(2 * self.calls.pending.len());
        let mut ends = Vec::with_capacity(self.calls.pending.len());
        let mut deps = Vec::new();
        for call in &self.calls.pending {
            let starts = call.starts(&self.calls.starts);
            if let Some(exit) = call.exit
                && starts.iter().all(|s| s.key() != exit.key())
                && !walk_back(graph, graph.bind(exit), starts, &mut found, &mut deps)?
            {
                return Ok(false);
            }
            ends.push(found.len());
        }
        if count != self.node_count + found.len() {
            return Ok(false);
        }
        let mut from = 0;
        for (call, &end) in self.calls.pending.iter().zip(&ends) {
            for &node in &found[from..end] {
                let kind = graph
                    .added_kind(node)
                    .map_err(|e| Error::driver("cuGraphNodeGetType", e))?;
                if let Some(why) = kind.and_then(|k| refusal(k, false)) {
                    return Err(refused(self.rec.ops[call.index as usize].statement, why));
                }
            }
            from = end;
        }
        let mut from = 0;
        let mut pending = std::mem::take(&mut self.calls.pending);
        for (call, &end) in pending.iter().zip(&ends) {
            if end > from {
                self.book_call_nodes(call.index as usize, &found[from..end]);
            }
            from = end;
        }
        // The list's room serves the next capture.
        pending.clear();
        self.calls.pending = pending;
        // Known nodes are kept in operation order.
        self.rec.known.sort_by_key(|&(i, _)| i);
        Ok(true)
    }

    /// Books `nodes`, the nodes call `index` made (its exit last), as its operation: known by
    /// its exit, the others internal to it.
    fn book_call_nodes(&mut self, index: usize, nodes: &[NodeHandle]) {
        let Some((&exit, inner)) = nodes.split_last() else {
            return;
        };
        self.rec.ops[index].created = nodes.len() as u32;
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
        if self.calls.pending.is_empty() {
            return Ok(true);
        }
        if !self.calls.single || count != self.node_count + self.calls.pending.len() {
            return Ok(false);
        }
        for &PendingCall { index, exit, .. } in &self.calls.pending {
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
        let mut pending = std::mem::take(&mut self.calls.pending);
        for &PendingCall { index, exit, .. } in &pending {
            let Some(exit) = exit else { continue };
            self.rec.ops[index as usize].created = 1;
            self.rec.known.push((index, exit));
            self.node_count += 1;
        }
        // The list's room serves the next capture.
        pending.clear();
        self.calls.pending = pending;
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
        let pending = std::mem::take(&mut self.calls.pending);
        let mut all = None;
        let (mut cursor, mut walked) = (0usize, 0usize);
        let kind_of = |n: NodeHandle| {
            graph
                .added_kind(n)
                .map_err(|e| Error::driver("cuGraphNodeGetType", e))
        };
        for &PendingCall { index, exit, .. } in &pending {
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
            self.book_call_nodes(index, nodes);
            cursor = end + 1;
        }
        // Known nodes are kept in operation order.
        self.rec.known.sort_by_key(|&(i, _)| i);
        Ok(())
    }
}

/// The most nodes a call's walk back from its exit finds before the call is left to the
/// listing ([`NodeBook::resolve_calls`]).
const WALK_LIMIT: usize = 64;

/// Appends to `found` `exit` and the nodes it depends on, directly or through one another,
/// back to `starts` (not included), exit last; `false` where they are over [`WALK_LIMIT`].
/// `deps` is room for a node's dependencies.
fn walk_back(
    graph: &OwnedGraph,
    exit: NodeHandle,
    starts: &[NodeHandle],
    found: &mut Vec<NodeHandle>,
    deps: &mut Vec<NodeHandle>,
) -> Result<bool> {
    let from = found.len();
    found.push(exit);
    let mut next = from;
    while let Some(&node) = found.get(next) {
        next += 1;
        deps.clear();
        graph
            .dependencies_of(node, deps)
            .map_err(|e| Error::driver("cuGraphNodeGetDependencies", e))?;
        for &dep in deps.iter() {
            let key = dep.key();
            if starts.iter().any(|s| s.key() == key) || found[from..].iter().any(|n| n.key() == key)
            {
                continue;
            }
            if found.len() - from == WALK_LIMIT {
                found.truncate(from);
                return Ok(false);
            }
            found.push(dep);
        }
    }
    found[from..].rotate_left(1);
    Ok(true)
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
    let mut deps = Vec::new();
    while let Some(i) = stack.pop() {
        deps.clear();
        graph
            .dependencies_of(nodes[i], &mut deps)
            .map_err(|e| Error::driver("cuGraphNodeGetDependencies", e))?;
        for d in &deps {
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
