//! The node book of a capture: which graph node each operation made, and what the graph must
//! keep for its replays. The capture's recorder ([`Recording`]) fills it after each statement
//! that [`crate::Eager`]'s issuing path issued.
//!
//! Nodes are mapped to operations once, when the capture has ended: the driver adds a
//! captured operation's node to the graph as the operation is issued, and `cuGraphGetNodes`
//! lists a graph's nodes in the order they were added, so the `i`-th node listed is the node
//! of the `i`-th operation that made one ([`NodeBook::map_nodes`]). That costs one driver call
//! per capture instead of one per operation. The exact route — asking the driver after each
//! operation which node it created (`cuStreamGetCaptureInfo_v3`: right after an operation the
//! stream's dependency set is exactly its node) — stays as a cross-check
//! ([`crate::Capture::cross_check_nodes`]): both maps are made and must be equal; the
//! random-program GPU suite captures every program that way.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::exec::record::Issued;
use crate::ffi::conditional::{BodyGraph, CondKernels, Conditional};
use crate::ffi::graph::{self as gffi, CaptureModeRaw, Keep, NodeHandle};
use crate::ffi::KernelArg;
use crate::memory::{device_ref, DeviceBuffer, DeviceFlag};
use crate::module::Kernel;
use crate::operand::{DeviceRange, FillPattern, HostFn, LaunchConfig, Memory};
use crate::program::{AccessMode, Program, Statement};
use crate::stream::Stream;

/// One captured operation: the statement issue it came from, what it made and where its
/// values and launch shape are kept. 32 bytes, written once per operation on a capture's hot
/// path; its node is kept apart ([`NodeBook::known_nodes`], or mapped by creation order when
/// the capture has ended).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CapturedOp {
    /// The statement.
    pub(crate) statement: &'static Statement,
    /// Which issue of the statement, from 1.
    pub(crate) occurrence: u32,
    /// How many nodes of its graph the operation created: 1 (0 for an empty copy or fill); a
    /// device block its built-in kernel and its conditional node(s).
    pub(crate) created: u32,
    /// Where the operation's values (see [`encode`]) lie in [`NodeBook::values`];
    /// [`OPAQUE`] as length when they cannot be compared.
    pub(crate) values: (u32, u32),
    /// The graph it is a node of: 0 for the captured graph, `k + 1` for
    /// [`NodeBook::bodies`]`[k]`. Nodes of bodies, and of blocks, are known as they are made
    /// ([`NodeBook::known_nodes`]); only the captured graph's other nodes are mapped in
    /// creation order.
    pub(crate) part: u32,
    /// For launches: the index of its shape in [`NodeBook::shapes`] (the kernel, its
    /// configuration and number of arguments, from which `GraphExec::set_kernel_args`
    /// rebuilds the node's parameters without asking the driver); [`NO_SHAPE`] for other
    /// operations.
    pub(crate) shape: u32,
}

/// [`CapturedOp::shape`] of an operation that is no launch.
pub(crate) const NO_SHAPE: u32 = u32::MAX;

impl CapturedOp {
    /// The graph part it is a node of (see [`CapturedOp::part`]).
    pub(crate) fn part(&self) -> usize {
        self.part as usize
    }

    /// The stream index it was issued on (its statement's).
    pub(crate) fn stream(&self) -> usize {
        self.statement.stream
    }

    /// Whether the operation made a graph node (not an empty copy or fill).
    pub(crate) fn makes_node(&self) -> bool {
        self.created > 0
    }

    /// Whether its nodes were known as they were made (a device block's, a collective
    /// participant's), so that the creation-order map skips the `created` nodes it made.
    pub(crate) fn node_known(&self) -> bool {
        matches!(
            self.statement.kind,
            crate::program::StatementKind::Collective { .. }
        ) || self.statement.kind.is_block()
    }
}

/// A body graph of a captured device block.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CapturedBody {
    /// The body graph.
    pub(crate) graph: BodyGraph,
    /// The block's index in [`NodeBook::ops`].
    pub(crate) block: usize,
    /// 0 for a `while` body or `then`, 1 for `else`.
    pub(crate) branch: usize,
    /// The built-in kernel at the end of a `while` body, which follows all of the body's
    /// work, or the empty built-in kernel of a body that captured nothing.
    pub(crate) sink: Option<NodeHandle>,
    /// The empty built-in kernel before `sink` in a `while` body that captured nothing.
    pub(crate) filler: Option<NodeHandle>,
}

/// A node the runtime added that is no statement's and is part of a block's operation: the
/// built-in kernel before its conditional node, or the second `IF` node of an `if`/`else`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InternalNode {
    pub(crate) part: usize,
    pub(crate) node: NodeHandle,
    /// The operation (a block) it belongs to.
    pub(crate) op: usize,
}

/// The length of [`CapturedOp::values`] for values that cannot be compared.
pub(crate) const OPAQUE: u32 = u32::MAX;

/// Appends what a launch's node is made of — its argument values, one after the other — to
/// `out`, in a form that two issues of one statement compare by bytes. `false` when a value
/// cannot be compared (an argument whose type is not primitive), with what was appended of it
/// left for the caller to cut.
#[inline]
pub(crate) fn encode_launch(args: &[KernelArg<'_>], out: &mut Vec<u8>) -> bool {
    args.iter().all(|a| a.encode_value(out))
}

/// Appends what a copy's or a fill's node is made of — its operands — to `out`, in a form
/// that two issues of one statement compare by bytes (see [`encode_launch`]). Host functions
/// are not compared (a graph keeps the ones it captured).
#[inline]
pub(crate) fn encode(issued: &Issued<'_>, out: &mut Vec<u8>) -> bool {
    match issued {
        Issued::Copy(dst, src) => {
            memory_signature(dst.memory(), out);
            memory_signature(src.memory(), out);
        }
        Issued::Fill(dst, pattern) => {
            memory_signature(dst.memory(), out);
            match *pattern {
                FillPattern::U8(v) => out.extend_from_slice(&[1, v]),
                FillPattern::U16(v) => {
                    out.push(2);
                    out.extend_from_slice(&v.to_le_bytes());
                }
                FillPattern::U32(v) => {
                    out.push(4);
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
        Issued::Host => {}
    }
    true
}

fn memory_signature(m: Memory, out: &mut Vec<u8>) {
    let (kind, device, ptr, bytes) = match m {
        Memory::Device(r) => (0u8, r.device, r.ptr, r.bytes),
        Memory::PinnedHost { ptr, bytes } => (1, DeviceRange::HOST, ptr as u64, bytes),
        Memory::PageableHost { ptr, bytes } => (2, DeviceRange::HOST, ptr as u64, bytes),
    };
    out.push(kind);
    out.extend_from_slice(&device.to_le_bytes());
    out.extend_from_slice(&ptr.to_le_bytes());
    out.extend_from_slice(&(bytes as u64).to_le_bytes());
}

/// Notes that an operation touches `range` (nothing for an empty range, once for a range the
/// previous operation touched too).
#[inline]
fn remember(memory: &mut Vec<DeviceRange>, range: DeviceRange) {
    if range.bytes > 0 && memory.last() != Some(&range) {
        memory.push(range);
    }
}

/// The id of every statement issued, in issue order: the operations' statements `ops`, with
/// the ordering statements `orderings` (see [`NodeBook::orderings`]) between them.
pub(crate) fn sequence(ops: &[CapturedOp], orderings: &[(u32, u32)]) -> Vec<u32> {
    let mut out = Vec::with_capacity(ops.len() + orderings.len());
    let mut pending = orderings.iter().peekable();
    for (i, op) in ops.iter().enumerate() {
        while let Some(&(_, id)) = pending.next_if(|&&(at, _)| at as usize <= i) {
            out.push(id);
        }
        out.push(op.statement.id as u32);
    }
    out.extend(pending.map(|&(_, id)| id));
    out
}

/// The node of every operation in `ops`: those in `known` (`(operation index, node)` in
/// operation order: nodes known as they were made) have theirs; the captured graph's other
/// operations that made a node get `listed` (its nodes as `cuGraphGetNodes` lists them, in
/// creation order) in turn, past the nodes that known operations created.
pub(crate) fn node_map(
    ops: &[CapturedOp],
    known: &[(u32, NodeHandle)],
    listed: &[NodeHandle],
) -> Vec<Option<NodeHandle>> {
    let mut known = known.iter().peekable();
    let mut next = listed.iter().copied();
    ops.iter()
        .enumerate()
        .map(|(i, op)| {
            let own = known
                .next_if(|&&(at, _)| at as usize == i)
                .map(|&(_, node)| node);
            if op.part != 0 {
                // A body graph's node.
                own
            } else if op.node_known() {
                // Its nodes are skipped in the creation order.
                for _ in 0..op.created {
                    next.next();
                }
                own
            } else if op.makes_node() {
                next.next()
            } else {
                None
            }
        })
        .collect()
}

/// The captured shape of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaunchShape {
    pub(crate) func: crate::ffi::FunctionHandle,
    pub(crate) config: crate::operand::LaunchConfig,
    pub(crate) args: usize,
}

/// How much a node book holds: the room the next capture's book starts with.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BookSizes {
    pub(crate) ops: usize,
    pub(crate) shapes: usize,
    pub(crate) values: usize,
    pub(crate) orderings: usize,
}

/// The recorder of a capture (see `exec/record.rs`; its hooks are in `graph/recorder.rs`):
/// the book it fills, and what captured device blocks need.
pub(crate) struct Recording {
    pub(crate) book: Box<NodeBook>,
    /// The built-in kernels of captured device blocks, loaded before a capture that needs them.
    pub(crate) kernels: Option<Arc<CondKernels>>,
    /// The iteration counters of this capture, one word per statement (a `while` statement's
    /// `limit` counts in its own word): allocated before each capture of a pipeline with
    /// `while` blocks and kept by its graph, so that no two loops (nested, or in two graphs of
    /// one pipeline, or sharing a flag) share a count.
    pub(crate) counters: Option<DeviceBuffer<u32>>,
}

/// What a capture learns while the pipeline is issued: the node of every operation, and
/// what the graph must keep (memory, modules, host functions) for its replays.
#[derive(Debug)]
pub(crate) struct NodeBook {
    pub(crate) ops: Vec<CapturedOp>,
    /// The shapes of the launches ([`CapturedOp::shape`]), one per launch in issue order.
    pub(crate) shapes: Vec<LaunchShape>,
    /// `(operation index, node)` of the operations whose nodes were known as they were made
    /// (a block's, a body's, a collective participant's), in operation order.
    pub(crate) known_nodes: Vec<(u32, NodeHandle)>,
    /// Cross-check mode: the node map [`NodeBook::map_nodes`] made and checked.
    pub(crate) mapped: Option<Vec<Option<NodeHandle>>>,
    occurrences: Vec<u32>,
    pub(crate) keep: Keep,
    /// The device memory the operations touch, unsorted, each range once in a row (sorted and
    /// merged when the graph is made).
    pub(crate) memory: Vec<DeviceRange>,
    pub(crate) last: Option<&'static Statement>,
    /// The values of every operation (see [`encode`]), one after the other.
    pub(crate) values: Vec<u8>,
    /// The ordering statements (record, wait, wait_stream) issued: `(position, id)`, where
    /// `position` is the number of operations booked before it. With `ops` it gives the id of
    /// every statement issued, in order ([`sequence`]): two issues with equal sequences build
    /// graphs of one topology.
    pub(crate) orderings: Vec<(u32, u32)>,
    /// How many operations made a graph node.
    nodes: usize,
    /// Cross-check mode: the node the driver reported after each operation that made one.
    exact: Option<Vec<NodeHandle>>,
    /// The body graphs of device blocks, in the order captured.
    pub(crate) bodies: Vec<CapturedBody>,
    /// The built-in kernels before conditional nodes, and second `IF` nodes.
    pub(crate) internal: Vec<InternalNode>,
    /// The graph being captured into now (see [`CapturedOp::part`]), and the enclosing ones;
    /// empty while that is the captured graph itself (part 0).
    parts: Vec<usize>,
    /// The capture's mode, which body captures use too.
    pub(crate) mode: CaptureModeRaw,
}

impl NodeBook {
    /// An empty book for a capture of `program`, with room for `sizes` (the previous
    /// capture's, see [`NodeBook::sizes`]); `exact` asks for the per-operation cross-check.
    pub(crate) fn new(
        program: &'static Program,
        sizes: BookSizes,
        exact: bool,
        mode: CaptureModeRaw,
    ) -> NodeBook {
        let mut book = NodeBook {
            ops: Vec::new(),
            shapes: Vec::new(),
            known_nodes: Vec::new(),
            mapped: None,
            occurrences: Vec::new(),
            keep: Keep::default(),
            memory: Vec::new(),
            last: None,
            values: Vec::new(),
            orderings: Vec::new(),
            nodes: 0,
            exact: None,
            bodies: Vec::new(),
            internal: Vec::new(),
            parts: Vec::new(),
            mode,
        };
        book.reset(program, sizes, exact, mode);
        book
    }

    /// Makes a book that served an earlier capture (its graph took what it keeps) an empty
    /// one for a capture of `program`, as [`NodeBook::new`] would, keeping the allocations
    /// it still has.
    pub(crate) fn reset(
        &mut self,
        program: &'static Program,
        sizes: BookSizes,
        exact: bool,
        mode: CaptureModeRaw,
    ) {
        self.ops.clear();
        self.ops.reserve(sizes.ops);
        self.shapes.clear();
        self.shapes.reserve(sizes.shapes);
        self.known_nodes.clear();
        self.mapped = None;
        self.occurrences.clear();
        self.occurrences.resize(program.statements.len(), 0);
        if !self.keep.is_empty() {
            // (The capture that used the book gave its graph what it keeps.)
            self.keep = Keep::default();
        }
        self.memory.clear();
        self.last = None;
        self.values.clear();
        self.values.reserve(sizes.values);
        self.orderings.clear();
        self.orderings.reserve(sizes.orderings);
        self.nodes = 0;
        self.exact = exact.then(|| Vec::with_capacity(sizes.ops));
        self.bodies.clear();
        self.internal.clear();
        self.parts.clear();
        self.mode = mode;
    }

    /// What the book holds, as room for the next capture's book.
    pub(crate) fn sizes(&self) -> BookSizes {
        BookSizes {
            ops: self.ops.len(),
            shapes: self.shapes.len(),
            values: self.values.len(),
            orderings: self.orderings.len(),
        }
    }

    /// Refuses a graph of `count` nodes unless that is the number of booked nodes: more are
    /// work issued into the capture by code outside the statements, whose memory the graph
    /// would not keep.
    pub(crate) fn check_count(&self, count: usize) -> std::result::Result<(), String> {
        if count != self.nodes {
            return Err(format!(
                "holds {count} graph node(s) but its statements issued {}: work was issued into the capture by code outside the pipeline's statements (e.g. a launch or a graph launch on the capturing stream inside `issue`); issue all work through the issuer",
                self.nodes
            ));
        }
        Ok(())
    }

    /// Whether the capture asks the driver for each operation's node (cross-check mode).
    pub(crate) fn cross_checks(&self) -> bool {
        self.exact.is_some()
    }

    /// Gives every operation that made a node its node: `listed` are the graph's nodes in the
    /// order `cuGraphGetNodes` lists them, which is the order they were created in. Refuses a
    /// graph whose node count is not the number of booked nodes (work issued into the capture
    /// by code outside the statements), and, in cross-check mode, a map that differs from the
    /// one the driver reported operation by operation.
    pub(crate) fn map_nodes(&mut self, listed: &[NodeHandle]) -> std::result::Result<(), String> {
        self.check_count(listed.len())?;
        let map = node_map(&self.ops, &self.known_nodes, listed);
        if let Some(exact) = &self.exact {
            let cheap = self
                .ops
                .iter()
                .zip(&map)
                .filter(|(op, _)| op.part == 0 && !op.node_known())
                .filter_map(|(_, node)| *node);
            if let Some((i, _)) = cheap
                .zip(exact)
                .enumerate()
                .find(|(_, (a, b))| a.key() != b.key())
            {
                return Err(format!(
                    "maps its nodes in creation order differently from the driver's report after each operation (first at node {i}); the creation-order map is wrong on this driver"
                ));
            }
        }
        self.mapped = Some(map);
        Ok(())
    }

    /// Books the operation `stmt` just issued on `stream`.
    #[inline]
    pub(crate) fn note(
        &mut self,
        stmt: &'static Statement,
        stream: &Stream,
        issued: Issued<'_>,
    ) -> Result<()> {
        if self.book(stmt, issued)? {
            self.node_made(stream)?;
        }
        Ok(())
    }

    /// Books a launch of `kernel` with `config` and `args` that `stmt` just issued on
    /// `stream`, on the hot path of a capture (one call per launch, one pass over the
    /// arguments).
    #[inline]
    pub(crate) fn note_launch(
        &mut self,
        stmt: &'static Statement,
        stream: &Stream,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        self.book_launch(stmt, kernel, config, args)?;
        self.node_made(stream)
    }

    /// The operation just booked made a node on `stream`: a body graph's is known right away;
    /// the captured graph's is asked for only in cross-check mode (else it is mapped by
    /// creation order when the capture has ended).
    #[inline]
    fn node_made(&mut self, stream: &Stream) -> Result<()> {
        if self.part() > 0 {
            self.known_now(stream)
        } else if let Some(exact) = self.exact.as_mut() {
            exact.push(gffi::tip_node(stream.as_cudarc(), "the operation")?);
            Ok(())
        } else {
            Ok(())
        }
    }

    /// Books a launch: its statement issue, shape and values, and what the graph must keep
    /// (the kernel's module, the buffers of its arguments).
    #[inline]
    fn book_launch(
        &mut self,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        let occurrence = self.issued(stmt)?;
        if let Some(module) = kernel.cuda_module() {
            self.keep.hold_module(module);
        }
        // One pass over the arguments: their values (see `encode_launch`), and the memory of
        // buffers.
        let start = self.values.len();
        let mut comparable = true;
        for arg in args {
            comparable = comparable && arg.encode_value(&mut self.values);
            if let Some(access) = arg.access() {
                remember(&mut self.memory, access.range);
                self.keep
                    .hold(arg.holder(), access.mode == AccessMode::Write);
            }
        }
        let values = if comparable {
            (start as u32, (self.values.len() - start) as u32)
        } else {
            self.values.truncate(start);
            (start as u32, OPAQUE)
        };
        let shape = LaunchShape {
            func: kernel.handle(),
            config,
            args: args.len(),
        };
        self.shapes.push(shape);
        let part = self.part();
        self.ops.push(CapturedOp {
            statement: stmt,
            occurrence,
            created: 1,
            values,
            part: part as u32,
            shape: (self.shapes.len() - 1) as u32,
        });
        if part == 0 {
            self.nodes += 1;
        }
        Ok(())
    }

    /// The operation just booked into a body graph: its node is the stream's capture tip,
    /// known right away (never mapped by creation order).
    fn known_now(&mut self, stream: &Stream) -> Result<()> {
        let node = gffi::tip_node(stream.as_cudarc(), "the operation")?;
        if let Some(last) = self.ops.len().checked_sub(1) {
            self.known_nodes.push((last as u32, node));
        }
        Ok(())
    }

    /// The graph being captured into now.
    fn part(&self) -> usize {
        self.parts.last().copied().unwrap_or(0)
    }

    /// The body graph being captured into now, if any.
    pub(crate) fn current_body(&self) -> Option<BodyGraph> {
        self.part()
            .checked_sub(1)
            .and_then(|k| self.bodies.get(k))
            .map(|b| b.graph)
    }

    /// Books a device block just added on its stream: its conditional node(s) and the
    /// built-in kernel before them (all known already); the graph keeps the flag and the
    /// kernels' module. Returns the block's operation index.
    pub(crate) fn note_block(
        &mut self,
        stmt: &'static Statement,
        added: &Conditional,
        flag: &DeviceFlag,
        counters: Option<&DeviceBuffer<u32>>,
        module: &crate::ffi::CodeOwner,
    ) -> Result<usize> {
        let occurrence = self.issued(stmt)?;
        let whole = flag.whole();
        if let Memory::Device(r) = whole.memory() {
            remember(&mut self.memory, r);
        }
        // The built-in kernels read the flag and write the capture's counter of a `while`.
        self.keep.hold(whole.holder(), false);
        if let Some(counters) = counters {
            self.keep.hold(device_ref(counters).holder(), true);
        }
        self.keep.hold_module(module);
        // The conditional node, after the built-in kernel (and the second `IF` node).
        let inner = std::iter::once(added.begin).chain(added.second);
        Ok(self.book_known(stmt, occurrence, added.node, inner))
    }

    /// Books the participants of a collective just captured (`parts` in participant order,
    /// `nodes` what each added, from [`crate::ffi::graph::capture_group`]): one operation per
    /// participant, known by its last node, the others internal to it. The graph keeps the
    /// buffers and `comm` (the communicator's ranks) alive.
    #[cfg(feature = "nccl")]
    pub(crate) fn note_collective(
        &mut self,
        parts: &[crate::issue::CollectivePart<'_>],
        nodes: Vec<crate::ffi::graph::ParticipantNodes>,
        comm: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    ) -> Result<()> {
        // Never inside a block's body: the capture refuses that before NCCL is called.
        self.keep.hold_other(comm);
        for (part, added) in parts.iter().zip(nodes) {
            let stmt = part.statement;
            let occurrence = self.issued(stmt)?;
            for (side, write) in [(part.send, false), (part.recv.memory_ref(), true)] {
                if let Memory::Device(r) = side.memory() {
                    remember(&mut self.memory, r);
                }
                self.keep.hold(side.holder(), write);
            }
            self.book_known(stmt, occurrence, added.exit, added.inner);
        }
        Ok(())
    }

    /// Books an operation whose nodes the capture knows as they are made (a device block, a
    /// collective participant): `node` stands for it, `inner` are its other nodes. Its values
    /// are no kernel node's, never updated in place. Returns its index.
    fn book_known(
        &mut self,
        stmt: &'static Statement,
        occurrence: u32,
        node: NodeHandle,
        inner: impl IntoIterator<Item = NodeHandle>,
    ) -> usize {
        let part = self.part();
        let index = self.ops.len();
        let before = self.internal.len();
        self.internal
            .extend(inner.into_iter().map(|node| InternalNode {
                part,
                node,
                op: index,
            }));
        let created = 1 + (self.internal.len() - before) as u32;
        if part == 0 {
            self.nodes += created as usize;
        }
        let start = self.values.len() as u32;
        self.known_nodes.push((index as u32, node));
        self.ops.push(CapturedOp {
            statement: stmt,
            occurrence,
            created,
            values: (start, OPAQUE),
            part: part as u32,
            shape: NO_SHAPE,
        });
        index
    }

    /// Body `branch` of block `block` is captured into `graph` from now on; returns the
    /// body's index in [`NodeBook::bodies`].
    pub(crate) fn enter_body(&mut self, graph: BodyGraph, block: usize, branch: usize) -> usize {
        self.bodies.push(CapturedBody {
            graph,
            block,
            branch,
            sink: None,
            filler: None,
        });
        self.parts.push(self.bodies.len());
        self.bodies.len() - 1
    }

    /// Whether body `index` captured no node so far.
    pub(crate) fn is_empty(&self, index: usize) -> bool {
        let part = index + 1;
        !self
            .ops
            .iter()
            .any(|op| op.part() == part && op.makes_node())
            && !self.internal.iter().any(|n| n.part == part)
    }

    /// The built-in kernel at the end of the body being captured.
    pub(crate) fn note_sink(&mut self, node: NodeHandle) {
        if let Some(body) = self
            .part()
            .checked_sub(1)
            .and_then(|k| self.bodies.get_mut(k))
        {
            body.sink = Some(node);
        }
    }

    /// The empty built-in kernel before the sink of a `while` body that captured nothing.
    pub(crate) fn note_filler(&mut self, node: NodeHandle) {
        if let Some(body) = self
            .part()
            .checked_sub(1)
            .and_then(|k| self.bodies.get_mut(k))
        {
            body.filler = Some(node);
        }
    }

    /// The body being captured is complete.
    pub(crate) fn leave_body(&mut self) {
        self.parts.pop();
    }

    /// Books an operation; `true` when it made a graph node.
    #[inline]
    fn book(&mut self, stmt: &'static Statement, issued: Issued<'_>) -> Result<bool> {
        let occurrence = self.issued(stmt)?;
        let start = self.values.len();
        let values = if encode(&issued, &mut self.values) {
            (start as u32, (self.values.len() - start) as u32)
        } else {
            self.values.truncate(start);
            (start as u32, OPAQUE)
        };
        let mut empty = false;
        let memory = &mut self.memory;
        match issued {
            Issued::Copy(dst, src) => {
                empty = dst.memory().bytes() == 0;
                for (side, write) in [(dst, true), (src, false)] {
                    if let Memory::Device(r) = side.memory() {
                        remember(memory, r);
                    }
                    self.keep.hold(side.holder(), write);
                }
            }
            Issued::Fill(dst, _) => {
                empty = dst.memory().bytes() == 0;
                if let Memory::Device(r) = dst.memory() {
                    remember(memory, r);
                }
                self.keep.hold(dst.holder(), true);
            }
            Issued::Host => {}
        }
        let part = self.part();
        if !empty && part == 0 {
            self.nodes += 1;
        }
        self.ops.push(CapturedOp {
            statement: stmt,
            occurrence,
            created: u32::from(!empty),
            values,
            part: part as u32,
            shape: NO_SHAPE,
        });
        Ok(!empty)
    }

    /// Notes that `stmt` was issued (a fault after it names it; the sequence compares issues);
    /// returns which issue of it this is, from 1.
    #[inline]
    fn issued(&mut self, stmt: &'static Statement) -> Result<u32> {
        self.last = Some(stmt);
        match self.occurrences.get_mut(stmt.id) {
            Some(count) => {
                *count += 1;
                Ok(*count)
            }
            None => Err(Error::InvalidArgument(format!(
                "statement id {} is not part of the pipeline being captured",
                stmt.id
            ))),
        }
    }

    /// Notes an ordering statement (record, wait, wait_stream): a fault after it names it.
    #[inline]
    pub(crate) fn note_ordering(&mut self, stmt: &'static Statement) {
        self.last = Some(stmt);
        self.orderings.push((self.ops.len() as u32, stmt.id as u32));
    }

    /// Launches a host function the graph keeps alive.
    #[inline]
    pub(crate) fn launch_host_fn(&mut self, stream: &Stream, f: HostFn) -> Result<()> {
        gffi::launch_kept_host_fn(stream.as_cudarc(), f, &mut self.keep)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ffi::memory::Holder;
    use crate::plan::ProgramBuilder;

    fn book_with(makes: &[bool], exact: Option<Vec<NodeHandle>>) -> NodeBook {
        let mut b = ProgramBuilder::new("Book");
        let s = b.stream("s");
        b.launch(s, "k", &[]);
        let program = b.build();
        let mut book = NodeBook::new(
            program,
            BookSizes::default(),
            false,
            CaptureModeRaw::ThreadLocal,
        );
        for &m in makes {
            book.ops.push(CapturedOp {
                statement: &program.statements[0],
                occurrence: 1,
                created: u32::from(m),
                values: (0, 0),
                part: 0,
                shape: NO_SHAPE,
            });
            book.nodes += usize::from(m);
        }
        book.exact = exact;
        book
    }

    #[test]
    fn nodes_map_in_creation_order_skipping_empty_operations() {
        let nodes: Vec<_> = (1..=3).map(NodeHandle::for_test).collect();
        let mut book = book_with(&[true, false, true, true], None);
        book.map_nodes(&nodes).unwrap();
        let got: Vec<_> = book
            .mapped
            .unwrap()
            .iter()
            .map(|n| n.map(|n| n.key()))
            .collect();
        assert_eq!(got, [Some(1), None, Some(2), Some(3)]);

        // A node more than the statements made: work from outside the pipeline.
        let mut book = book_with(&[true, true], None);
        let e = book.map_nodes(&nodes).unwrap_err();
        assert!(
            e.contains("holds 3 graph node(s) but its statements issued 2"),
            "{e}"
        );

        // Cross-check: equal maps pass, different ones fail.
        let mut book = book_with(&[true, true, true], Some(nodes.clone()));
        book.map_nodes(&nodes).unwrap();
        let swapped = vec![nodes[0], nodes[2], nodes[1]];
        let mut book = book_with(&[true, true, true], Some(swapped));
        let e = book.map_nodes(&nodes).unwrap_err();
        assert!(e.contains("first at node 1"), "{e}");
    }

    #[test]
    fn the_sequence_puts_ordering_statements_between_the_operations() {
        let mut b = ProgramBuilder::new("Sequence");
        let s = b.stream("s");
        b.launch(s, "k", &[]);
        b.launch(s, "k", &[]);
        let program = b.build();
        let op = |id: usize| CapturedOp {
            statement: &program.statements[id],
            occurrence: 1,
            created: 1,
            values: (0, 0),
            part: 0,
            shape: NO_SHAPE,
        };
        let ops = [op(0), op(1), op(0)];
        // Ordering statements (ids 7, 8, 9) before the first operation, between the second
        // and the third, and after the last.
        let orderings = [(0, 7), (2, 8), (3, 9)];
        assert_eq!(sequence(&ops, &orderings), [7, 0, 1, 8, 0, 9]);
        assert_eq!(sequence(&ops, &[]), [0, 1, 0]);
        assert_eq!(sequence(&[], &[(0, 7), (0, 8)]), [7, 8]);
    }

    /// Not a benchmark (performance claims come from `benches/harness`): a bound that catches
    /// a booking cost growing far beyond a few dozen nanoseconds per operation.
    #[test]
    fn booking_an_operation_costs_little() {
        let mut b = ProgramBuilder::new("Cost");
        let s = b.stream("s");
        b.launch(s, "k", &[]);
        let program = b.build();
        let k = Kernel::for_planning("k");
        let config = LaunchConfig {
            grid: 1u32.into(),
            block: 1u32.into(),
            shared_mem_bytes: 0,
        };
        let v = 5u32;
        let n = 100_000;
        let mut best = f64::MAX;
        for _ in 0..5 {
            let sizes = BookSizes {
                ops: n,
                ..BookSizes::default()
            };
            let mut book = NodeBook::new(program, sizes, false, CaptureModeRaw::ThreadLocal);
            let t = std::time::Instant::now();
            for _ in 0..n {
                let args = [KernelArg::by_ref(&v, None, Holder::FOREIGN)];
                book.book_launch(&program.statements[0], &k, config, &args)
                    .unwrap();
            }
            best = best.min(t.elapsed().as_secs_f64() * 1e9 / n as f64);
            assert_eq!(book.ops.len(), n);
        }
        eprintln!("booking: {best:.1} ns per launch");
        assert!(best < 2_000.0, "{best} ns per launch");
    }

    #[test]
    fn values_encode_arguments_and_operands() {
        let encoded = |a: u32, b: f32| {
            let args = [
                KernelArg::by_ref(&a, None, Holder::FOREIGN),
                KernelArg::by_ref(&b, None, Holder::FOREIGN),
            ];
            let mut out = Vec::new();
            assert!(encode_launch(&args, &mut out));
            out
        };
        assert_eq!(encoded(1, 2.0), encoded(1, 2.0));
        assert_ne!(encoded(1, 2.0), encoded(2, 2.0));
        assert_ne!(encoded(1, 2.0), encoded(1, 2.5));
        assert_eq!(encoded(7, 0.0).len(), 2 + 4 + 4);

        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Pair {
            a: u8,
            b: u32,
        }
        let p = Pair { a: 1, b: 2 };
        let args = [KernelArg::by_ref(&p, None, Holder::FOREIGN)];
        assert!(!encode_launch(&args, &mut Vec::new()));
        assert_eq!((p.a, p.b), (1, 2));
    }
}
