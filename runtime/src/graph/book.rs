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
//! (`Capture::cross_check_nodes`, with the `testing` feature): both maps are made and must be
//! equal; the random-program GPU suite captures every program that way.

use std::cell::OnceCell;
use std::sync::Arc;

use super::pending::PendingCalls;
use super::recorded::{
    encode, encode_block, node_map, remember, CapturedBody, CapturedOp, InternalNode, LaunchShape,
    Recorded, OPAQUE,
};
use crate::error::{Error, Result};
use crate::exec::record::Issued;
use crate::ffi::capture::{self as gffi, CaptureModeRaw};
use crate::ffi::conditional::{BodyGraph, CondKernels, Conditional};
use crate::ffi::graph::{NodeHandle, OwnedGraph};
use crate::ffi::keep::{launch_kept_host_fn, Keep};
use crate::ffi::KernelArg;
use crate::memory::{device_ref, DeviceBuffer, DeviceFlag};
use crate::module::Kernel;
use crate::operand::{HostFn, LaunchConfig, Memory};
use crate::program::{AccessMode, Program, Statement};
use crate::stream::Stream;

/// How much a node book holds: the room the next capture's book starts with.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BookSizes {
    pub(crate) ops: usize,
    pub(crate) values: usize,
    pub(crate) orderings: usize,
    /// The ranges of device memory the operations touch.
    pub(crate) touched: usize,
    /// The nodes known as they were made.
    pub(crate) known: usize,
    /// Device allocations the graph keeps, counted as held during the capture.
    pub(crate) kept: usize,
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
    /// Where the temporaries go in a capture into a graph set's memory; `None`: memory nodes.
    pub(crate) placement: Option<Box<super::placement::TempPlacement>>,
}

/// What a capture learns while the pipeline is issued: the node of every operation, and
/// what the graph must keep (memory, modules, host functions) for its replays.
#[derive(Debug)]
pub(crate) struct NodeBook {
    /// What the graph will own ([`NodeBook::finish`]).
    pub(super) rec: Recorded,
    occurrences: Vec<u32>,
    pub(crate) keep: Keep,
    pub(crate) last: Option<&'static Statement>,
    /// How many nodes of the captured graph the operations made.
    pub(super) node_count: usize,
    /// The `call`s captured into the graph itself whose nodes are found when it has ended.
    pub(super) calls: PendingCalls,
    /// Device allocations the last capture's graph kept, counted as they were held.
    kept: usize,
    /// Cross-check mode: the node the driver reported after each operation that made one.
    exact: Option<Vec<NodeHandle>>,
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
            rec: Recorded::default(),
            occurrences: Vec::new(),
            keep: Keep::default(),
            last: None,
            node_count: 0,
            calls: PendingCalls::default(),
            kept: 0,
            exact: None,
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
        let rec = &mut self.rec;
        rec.ops.clear();
        rec.ops.reserve(sizes.ops);
        rec.known.clear();
        rec.known.reserve(sizes.known);
        rec.touched.clear();
        rec.touched.reserve(sizes.touched);
        rec.values.clear();
        rec.values.reserve(sizes.values);
        rec.orderings.clear();
        rec.orderings.reserve(sizes.orderings);
        rec.memory_nodes = false;
        rec.blocks = None;
        rec.nodes = OnceCell::new();
        self.occurrences.clear();
        self.occurrences.resize(program.statements.len(), 0);
        // The capture that used the book gave its graph what it keeps (`take_keep`).
        if !self.keep.is_empty() {
            self.keep = Keep::default();
        }
        self.keep.reserve(sizes.kept);
        self.last = None;
        self.node_count = 0;
        self.calls.clear();
        self.exact = exact.then(|| Vec::with_capacity(sizes.ops));
        self.parts.clear();
        self.mode = mode;
    }

    /// What the book holds, as room for the next capture's book.
    pub(crate) fn sizes(&self) -> BookSizes {
        BookSizes {
            ops: self.rec.ops.len(),
            values: self.rec.values.len(),
            orderings: self.rec.orderings.len(),
            touched: self.rec.touched.len(),
            known: self.rec.known.len(),
            kept: self.kept,
        }
    }

    /// What the graph keeps, handed over when the capture ends.
    pub(crate) fn take_keep(&mut self) -> Keep {
        self.kept = self.keep.device_count();
        std::mem::take(&mut self.keep)
    }

    /// Hands what the capture recorded to its graph `raw`, whole, with the nodes known from
    /// the capture (and in cross-check mode the node map) marked as `raw`'s. The graph takes
    /// the lists themselves, not copies; the next capture's book reserves as much room again
    /// ([`NodeBook::reset`], from [`NodeBook::sizes`] taken before), so that it allocates
    /// each list once before it issues and never copies it.
    pub(crate) fn finish(&mut self, raw: &OwnedGraph) -> Recorded {
        let mut rec = std::mem::take(&mut self.rec);
        for (_, node) in &mut rec.known {
            *node = raw.bind(*node);
        }
        if let Some(map) = rec.nodes.get_mut() {
            for node in map.iter_mut().flatten() {
                *node = raw.bind(*node);
            }
        }
        rec
    }

    /// Refuses a graph of `count` nodes unless that is the number of booked nodes: more are
    /// work issued into the capture by code outside the statements, whose memory the graph
    /// would not keep.
    pub(crate) fn check_count(&self, count: usize) -> std::result::Result<(), String> {
        if count != self.node_count {
            return Err(format!(
                "holds {count} graph node(s) but its statements issued {}: work was issued into the capture by code outside the pipeline's statements (e.g. a launch or a graph launch on the capturing stream inside `issue`); issue all work through the issuer",
                self.node_count
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
        let map = node_map(&self.rec.ops, &self.rec.known, listed);
        if let Some(exact) = &self.exact {
            let cheap = self
                .rec
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
        self.rec.nodes = OnceCell::from(map);
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
    #[inline(always)]
    fn node_made(&mut self, stream: &Stream) -> Result<()> {
        if self.part() == 0 && self.exact.is_none() {
            return Ok(());
        }
        self.node_made_here(stream)
    }

    /// [`NodeBook::node_made`] in a body or in cross-check mode: off the common launch path.
    #[cold]
    #[inline(never)]
    fn node_made_here(&mut self, stream: &Stream) -> Result<()> {
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
        let start = self.rec.values.len();
        let mut comparable = true;
        for arg in args {
            comparable = comparable && arg.encode_value(&mut self.rec.values);
            if let Some(access) = arg.access() {
                remember(&mut self.rec.touched, access.range);
                self.keep
                    .hold(arg.holder(), access.mode == AccessMode::Write);
            }
        }
        let values = if comparable {
            (start as u32, (self.rec.values.len() - start) as u32)
        } else {
            self.rec.values.truncate(start);
            (start as u32, OPAQUE)
        };
        let shape = LaunchShape {
            func: kernel.handle(),
            config,
            args: args.len() as u32,
        };
        let part = self.part();
        self.rec.ops.push(CapturedOp {
            statement: stmt,
            occurrence,
            created: 1,
            values,
            part: part as u32,
            shape: Some(shape),
        });
        if part == 0 {
            self.node_count += 1;
        }
        Ok(())
    }

    /// The operation just booked into a body graph: its node is the stream's capture tip,
    /// known right away (never mapped by creation order).
    fn known_now(&mut self, stream: &Stream) -> Result<()> {
        let node = gffi::tip_node(stream.as_cudarc(), "the operation")?;
        if let Some(last) = self.rec.ops.len().checked_sub(1) {
            self.rec.known.push((last as u32, node));
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
            .and_then(|k| self.rec.bodies().get(k))
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
        limit: Option<u32>,
        module: &crate::ffi::CodeOwner,
    ) -> Result<usize> {
        let occurrence = self.issued(stmt)?;
        let whole = flag.whole();
        if let Memory::Device(r) = whole.memory() {
            remember(&mut self.rec.touched, r);
        }
        // The built-in kernels read the flag and write the capture's counter of a `while`.
        self.keep.hold(whole.holder(), false);
        if let Some(counters) = counters {
            self.keep.hold(device_ref(counters).holder(), true);
        }
        self.keep.hold_module(module);
        // The conditional node, after the built-in kernel (and the block's other `IF` nodes).
        let inner = std::iter::once(added.begin).chain(added.others.iter().copied());
        let index = self.book_known(stmt, occurrence, added.node, inner);
        // Its values, for argument updates: what the block's built-in kernels read.
        let start = self.rec.values.len();
        encode_block(flag, limit, &mut self.rec.values);
        let len = self.rec.values.len() - start;
        self.set_values(index, (start as u32, len as u32));
        Ok(index)
    }

    /// `node`, made on the block's stream after block operation `block` and its bodies (the
    /// memset that clears a signalled loop's handle), is the block's too.
    pub(crate) fn note_block_tail(&mut self, block: usize, node: NodeHandle) {
        let part = self.part();
        self.rec.blocks_mut().internal.push(InternalNode {
            part,
            node,
            op: block,
        });
        if let Some(op) = self.rec.ops.get_mut(block) {
            op.created += 1;
        }
        if part == 0 {
            self.node_count += 1;
        }
    }

    /// Operation `index` has `values`, a span of the book's values.
    pub(super) fn set_values(&mut self, index: usize, values: (u32, u32)) {
        if let Some(op) = self.rec.ops.get_mut(index) {
            op.values = values;
        }
    }

    /// Books the participants of a collective just captured (`parts` in participant order,
    /// `nodes` what each added, from [`crate::ffi::collective::capture_group`]): one operation per
    /// participant, known by its last node, the others internal to it. The graph keeps the
    /// buffers and `comm` (the communicator's ranks) alive.
    #[cfg(feature = "nccl")]
    pub(crate) fn note_collective(
        &mut self,
        parts: &[crate::issue::CollectivePart<'_>],
        nodes: Vec<crate::ffi::collective::ParticipantNodes>,
        comm: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    ) -> Result<()> {
        // Never inside a block's body: the capture refuses that before NCCL is called.
        self.keep.hold_other(comm);
        for (part, added) in parts.iter().zip(nodes) {
            let stmt = part.statement;
            let occurrence = self.issued(stmt)?;
            for (side, write) in [(part.send, false), (part.recv.memory_ref(), true)] {
                if let Memory::Device(r) = side.memory() {
                    remember(&mut self.rec.touched, r);
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
    pub(super) fn book_known(
        &mut self,
        stmt: &'static Statement,
        occurrence: u32,
        node: NodeHandle,
        inner: impl IntoIterator<Item = NodeHandle>,
    ) -> usize {
        let part = self.part();
        let index = self.rec.ops.len();
        let mut inner = inner.into_iter().peekable();
        let mut created = 1;
        if inner.peek().is_some() {
            let internal = &mut self.rec.blocks_mut().internal;
            let before = internal.len();
            internal.extend(inner.map(|node| InternalNode {
                part,
                node,
                op: index,
            }));
            created += (internal.len() - before) as u32;
        }
        if part == 0 {
            self.node_count += created as usize;
        }
        let start = self.rec.values.len() as u32;
        self.rec.known.push((index as u32, node));
        self.rec.ops.push(CapturedOp {
            statement: stmt,
            occurrence,
            created,
            values: (start, OPAQUE),
            part: part as u32,
            shape: None,
        });
        index
    }

    /// Body `branch` of block `block` is captured into `graph` from now on; returns the
    /// body's index in [`Recorded::bodies`].
    pub(crate) fn enter_body(&mut self, graph: BodyGraph, block: usize, branch: usize) -> usize {
        let bodies = &mut self.rec.blocks_mut().bodies;
        bodies.push(CapturedBody {
            graph,
            block,
            branch,
            sink: None,
            filler: None,
        });
        let count = bodies.len();
        self.parts.push(count);
        count - 1
    }

    /// Whether body `index` captured no node so far.
    pub(crate) fn is_empty(&self, index: usize) -> bool {
        let part = index + 1;
        !self
            .rec
            .ops
            .iter()
            .any(|op| op.part() == part && op.makes_node())
            && !self.rec.internal().iter().any(|n| n.part == part)
    }

    /// The built-in kernel at the end of the body being captured.
    pub(crate) fn note_sink(&mut self, node: NodeHandle) {
        if let Some(body) = self.part().checked_sub(1).and_then(|k| self.body_mut(k)) {
            body.sink = Some(node);
        }
    }

    /// The empty built-in kernel before the sink of a `while` body that captured nothing.
    pub(crate) fn note_filler(&mut self, node: NodeHandle) {
        if let Some(body) = self.part().checked_sub(1).and_then(|k| self.body_mut(k)) {
            body.filler = Some(node);
        }
    }

    /// Body graph `k`, being captured.
    fn body_mut(&mut self, k: usize) -> Option<&mut CapturedBody> {
        self.rec.blocks.as_deref_mut()?.bodies.get_mut(k)
    }

    /// The body being captured is complete.
    pub(crate) fn leave_body(&mut self) {
        self.parts.pop();
    }

    /// Books an operation; `true` when it made a graph node.
    #[inline]
    fn book(&mut self, stmt: &'static Statement, issued: Issued<'_>) -> Result<bool> {
        let occurrence = self.issued(stmt)?;
        let start = self.rec.values.len();
        let values = if encode(&issued, &mut self.rec.values) {
            (start as u32, (self.rec.values.len() - start) as u32)
        } else {
            self.rec.values.truncate(start);
            (start as u32, OPAQUE)
        };
        let mut empty = false;
        let memory = &mut self.rec.touched;
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
            // The graph owns a temporary's memory (its memory nodes, or the lease on the
            // memory it was placed in): nothing to keep; its range is memory the pipeline
            // uses. A placed temporary's allocation and release make no node.
            Issued::Alloc(range, placed) => {
                empty = placed;
                self.rec.memory_nodes |= !placed;
                remember(memory, range);
            }
            Issued::Free(_, placed) => empty = placed,
        }
        let part = self.part();
        if !empty && part == 0 {
            self.node_count += 1;
        }
        self.rec.ops.push(CapturedOp {
            statement: stmt,
            occurrence,
            created: u32::from(!empty),
            values,
            part: part as u32,
            shape: None,
        });
        Ok(!empty)
    }

    /// Notes that `stmt` was issued (a fault after it names it; the sequence compares issues);
    /// returns which issue of it this is, from 1.
    #[inline]
    pub(super) fn issued(&mut self, stmt: &'static Statement) -> Result<u32> {
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
        self.rec
            .orderings
            .push((self.rec.ops.len() as u32, stmt.id as u32));
    }

    /// Launches a host function the graph keeps alive.
    #[inline]
    pub(crate) fn launch_host_fn(&mut self, stream: &Stream, f: HostFn) -> Result<()> {
        launch_kept_host_fn(stream.as_cudarc(), f, &mut self.keep)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
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
            book.rec.ops.push(CapturedOp {
                statement: &program.statements[0],
                occurrence: 1,
                created: u32::from(m),
                values: (0, 0),
                part: 0,
                shape: None,
            });
            book.node_count += usize::from(m);
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
            .rec
            .nodes
            .get()
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
}
