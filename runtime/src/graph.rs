//! Captured CUDA graphs ([`Graph`]) and their executable form ([`GraphExec`]): verify,
//! draw, instantiate, replay, update.
//!
//! # Ownership
//!
//! A [`Graph<P>`] and a [`GraphExec<P>`] **own the pipeline value `P`** they were captured
//! from. A pipeline holds borrows of its buffers (`&'a mut DeviceBuffer<_>` for what it
//! writes), so while a graph or executable graph lives, the borrow checker refuses to free
//! those buffers or to touch them mutably anywhere else — exactly the memory a replay reads
//! and writes behind Rust's back. Take the pipeline back with [`GraphExec::into_pipeline`]
//! (or swap it with [`GraphExec::update`]) to use the buffers again.
//!
//! Host functions of `host` statements are kept by the graph as well, since they run on every
//! replay; an executable graph with host functions waits for the streams it was launched on
//! before it frees them.
//!
//! # Threads
//!
//! The driver does not synchronise calls on one `CUgraph` or `CUgraphExec`: two threads
//! launching, updating or reading one graph at the same time are a data race in the driver.
//! So [`Graph`] and [`GraphExec`] are `Send` when `P` is (one thread at a time may own them)
//! but never `Sync`.
//!
//! ```no_run
//! use streamgraph_runtime::{capture, OpRef, Pipeline, Stream};
//!
//! fn run<P: Pipeline>(origin: &Stream, pipeline: P, next: P) -> streamgraph_runtime::Result<()> {
//!     let graph = capture(origin, pipeline)?;
//!     println!("{}", graph.to_dot()?);
//!     let mut exec = graph.instantiate()?;
//!     exec.replay(origin, 100)?;
//!     let _previous = exec.update(next)?; // same topology: no re-instantiation
//!     exec.launch(origin)?;
//!     origin.synchronize()?;
//!     println!("{:?}", exec.stats());
//!     Ok(())
//! }
//! ```

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};
use std::ffi::CString;
use std::fmt::Write as _;
use std::marker::PhantomData;
use std::path::Path;

use crate::device::Device;
use crate::error::{Error, OpEdge, OpInfo, Result};
use crate::exec::book::{CapturedOp, NodeBook};
use crate::exec::capture::{Capture, CaptureSettings};
use crate::ffi::graph::{NodeHandle, OwnedExec, OwnedGraph};
use crate::ffi::KernelArg;
use crate::issue::Pipeline;
use crate::module::Kernel;
use crate::operand::DeviceRange;
use crate::plan::dot::quote;
use crate::plan::{reachability, Plan};
use crate::program::{Program, Statement, StatementKind};
use crate::stream::Stream;

/// One operation of a pipeline: an issue of a statement (statements in loops are issued
/// several times). Statements compare by identity.
#[derive(Debug, Clone, Copy)]
pub struct OpRef {
    /// The statement.
    pub statement: &'static Statement,
    /// Which issue of it, from 1.
    pub occurrence: u32,
}

impl OpRef {
    /// The first (often only) issue of `statement`.
    pub fn new(statement: &'static Statement) -> OpRef {
        OpRef {
            statement,
            occurrence: 1,
        }
    }

    /// The `occurrence`-th issue of the same statement (from 1).
    pub fn occurrence(self, occurrence: u32) -> OpRef {
        OpRef { occurrence, ..self }
    }
}

impl PartialEq for OpRef {
    fn eq(&self, other: &Self) -> bool {
        self.statement.same(other.statement) && self.occurrence == other.occurrence
    }
}

impl Eq for OpRef {}

/// What a successful [`Graph::verify`] checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyReport {
    /// The pipeline's name.
    pub pipeline: &'static str,
    /// Operations (graph nodes) compared.
    pub operations: usize,
    /// Edges compared (equal in both).
    pub edges: usize,
}

/// Compares a captured graph's edges (by operation index) with `plan`: exact edge-set
/// equality and equal happens-before relations (reachability). `problems` are differences
/// already found (unknown nodes, counts); any of them fails the check too.
pub(crate) fn check_edges(
    plan: &Plan,
    captured: &BTreeSet<(usize, usize)>,
    mut problems: Vec<String>,
) -> Result<VerifyReport> {
    let program = plan.program();
    let model = plan.edges();
    let info = |i: usize| -> Option<OpInfo> {
        plan.ops().get(i).map(|op| OpInfo {
            index: i,
            statement: op.statement,
            occurrence: op.occurrence,
        })
    };
    let mut describe = |set: &mut dyn Iterator<Item = &(usize, usize)>| -> Vec<OpEdge> {
        let mut out = Vec::new();
        for &(a, b) in set {
            match (info(a), info(b)) {
                (Some(from), Some(to)) => out.push(OpEdge { from, to }),
                _ => problems.push(format!(
                    "edge {a} -> {b} names an operation the plan does not have ({} operations)",
                    plan.len()
                )),
            }
        }
        out
    };
    let missing = describe(&mut model.difference(captured));
    let extra = describe(&mut captured.difference(&model));
    let reach = reachability(plan.len(), captured.iter());
    let differing = plan.reach().differences(&reach);
    if !differing.is_empty() {
        let pairs: Vec<String> = differing
            .iter()
            .take(8)
            .map(|&(a, b)| match (info(a), info(b)) {
                (Some(x), Some(y)) => format!("{x} / {y}"),
                _ => format!("{a} / {b}"),
            })
            .collect();
        problems.push(format!(
            "{} pair(s) of operations are ordered differently (happens-before differs), e.g. {}",
            differing.len(),
            pairs.join("; ")
        ));
    } else if !missing.is_empty() || !extra.is_empty() {
        problems.push("the orderings (reachability) are equal; only the edge sets differ".into());
    }
    if missing.is_empty() && extra.is_empty() && problems.is_empty() {
        Ok(VerifyReport {
            pipeline: program.name,
            operations: plan.len(),
            edges: model.len(),
        })
    } else {
        Err(Error::GraphMismatch {
            pipeline: program.name,
            missing,
            extra,
            problems,
        })
    }
}

/// Checks a captured graph's edges, given by operation index, against `plan`: the edge sets
/// must be equal and so must the happens-before relations. [`Graph::verify`] reads the edges
/// back from the driver and calls this; it is public so that the comparison can be tested
/// (and used) without a GPU.
pub fn verify_edges(plan: &Plan, captured: &BTreeSet<(usize, usize)>) -> Result<VerifyReport> {
    check_edges(plan, captured, Vec::new())
}

/// The captured graph in Graphviz DOT with `plan`'s operation names: one cluster per stream,
/// edges that the plan lacks in red.
pub fn captured_dot(plan: &Plan, captured: &BTreeSet<(usize, usize)>) -> String {
    let labels = plan_labels(plan);
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quote(plan.program().name));
    out.push_str("  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
    render_body(
        &mut out,
        plan.program(),
        &labels,
        captured,
        &plan.edges(),
        "c",
    );
    out.push_str("}\n");
    out
}

/// The plan (left) and the captured graph (right) side by side in one DOT picture. Edges that
/// only one side has are drawn red (and bold) on that side.
pub fn side_by_side_dot(plan: &Plan, captured: &BTreeSet<(usize, usize)>) -> String {
    let labels = plan_labels(plan);
    let model = plan.edges();
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quote(plan.program().name));
    out.push_str("  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
    out.push_str("  subgraph cluster_plan {\n    label=\"plan\";\n");
    render_body(&mut out, plan.program(), &labels, &model, captured, "p");
    out.push_str("  }\n  subgraph cluster_captured {\n    label=\"captured graph\";\n");
    render_body(&mut out, plan.program(), &labels, captured, &model, "c");
    out.push_str("  }\n}\n");
    out
}

/// `(label, stream)` of each operation of a plan.
fn plan_labels(plan: &Plan) -> Vec<(String, usize)> {
    plan.ops()
        .iter()
        .map(|op| {
            let loc = op.statement.location;
            (
                format!("{}\n{}:{}", op.label, loc.file, loc.line),
                op.stream,
            )
        })
        .collect()
}

/// Nodes (clustered by stream) and `edges`; edges not in `other` are drawn red.
fn render_body(
    out: &mut String,
    program: &Program,
    labels: &[(String, usize)],
    edges: &BTreeSet<(usize, usize)>,
    other: &BTreeSet<(usize, usize)>,
    prefix: &str,
) {
    let streams = labels.iter().map(|l| l.1 + 1).max().unwrap_or(0);
    for s in 0..streams {
        let name = program.streams.get(s).map_or("?", |d| d.name);
        let _ = writeln!(out, "  subgraph cluster_{prefix}{s} {{");
        let _ = writeln!(out, "    label={};", quote(&format!("stream {name}")));
        for (i, (label, _)) in labels.iter().enumerate().filter(|(_, l)| l.1 == s) {
            let _ = writeln!(out, "    {prefix}{i} [label={}];", quote(label));
        }
        out.push_str("  }\n");
    }
    for &(a, b) in edges {
        if other.contains(&(a, b)) {
            let _ = writeln!(out, "  {prefix}{a} -> {prefix}{b};");
        } else {
            let _ = writeln!(out, "  {prefix}{a} -> {prefix}{b} [color=red, penwidth=2];");
        }
    }
}

/// Edges by operation index.
type EdgeSet = BTreeSet<(usize, usize)>;

/// A captured graph without its pipeline value: the driver graph (which keeps what its nodes
/// touch) and the operation of every node.
#[derive(Debug)]
pub(crate) struct GraphCore {
    raw: OwnedGraph,
    program: &'static Program,
    ops: Vec<CapturedOp>,
    /// Statement id → its operations, in occurrence order.
    by_statement: Vec<Vec<usize>>,
    /// The memory the pipeline uses, merged into disjoint `(device, start, end)` intervals in
    /// order, for a binary search per buffer argument of `set_kernel_args`.
    memory: Vec<(i32, u64, u64)>,
    origin: Stream,
}

impl GraphCore {
    /// Captures `pipeline` with `capture` and, when verification is on, checks the graph
    /// against the plan.
    pub(crate) fn capture<P: Pipeline + ?Sized>(
        capture: &mut Capture,
        pipeline: &P,
    ) -> Result<GraphCore> {
        let captured = capture.capture_core(pipeline)?;
        let plan = captured.plan;
        let core = GraphCore::new(
            captured.graph,
            captured.book,
            captured.program,
            captured.origin,
        );
        if let Some(plan) = plan {
            core.verify_against(&plan)?;
        }
        Ok(core)
    }

    fn new(
        raw: OwnedGraph,
        book: NodeBook,
        program: &'static Program,
        origin: Stream,
    ) -> GraphCore {
        let mut by_statement = vec![Vec::new(); program.statements.len()];
        let mut book = book;
        for op in &mut book.ops {
            op.node = op.node.map(|n| raw.bind(n));
        }
        for (i, op) in book.ops.iter().enumerate() {
            if let Some(list) = by_statement.get_mut(op.statement.id) {
                list.push(i);
            }
        }
        GraphCore {
            raw,
            program,
            ops: book.ops,
            by_statement,
            memory: merged_intervals(&book.memory),
            origin,
        }
    }

    /// The graph's edges by operation index, plus problems (nodes that are no operation).
    fn captured_edges(&self) -> Result<(EdgeSet, Vec<String>)> {
        let mut problems = Vec::new();
        let index: HashMap<usize, usize> = self
            .ops
            .iter()
            .enumerate()
            .filter_map(|(i, op)| op.node.map(|n| (n.key(), i)))
            .collect();
        for (i, op) in self.ops.iter().enumerate() {
            if op.node.is_none() {
                problems.push(format!(
                    "operation {i} (`{}` #{} at {}) moves no bytes and made no graph node; its ordering cannot be checked",
                    op.statement.text, op.occurrence, op.statement.location
                ));
            }
        }
        let nodes = self
            .raw
            .nodes()
            .map_err(|e| Error::driver("cuGraphGetNodes", e))?;
        let unknown = nodes
            .iter()
            .filter(|n| !index.contains_key(&n.key()))
            .count();
        if unknown > 0 {
            problems.push(format!(
                "{unknown} node(s) of the graph belong to no statement: work was issued into the capture by code outside the pipeline's statements"
            ));
        }
        let mut edges = BTreeSet::new();
        for (a, b) in self
            .raw
            .edges()
            .map_err(|e| Error::driver("cuGraphGetEdges", e))?
        {
            if let (Some(&x), Some(&y)) = (index.get(&a.key()), index.get(&b.key())) {
                edges.insert((x, y));
            }
        }
        Ok((edges, problems))
    }

    pub(crate) fn verify_against(&self, plan: &Plan) -> Result<VerifyReport> {
        let (edges, mut problems) = self.captured_edges()?;
        if plan.len() != self.ops.len() {
            problems.push(format!(
                "the plan has {} operation(s), the capture {}: the pipeline issued different work",
                plan.len(),
                self.ops.len()
            ));
        } else if let Some((i, (p, c))) = plan
            .ops()
            .iter()
            .zip(&self.ops)
            .enumerate()
            .find(|(_, (p, c))| p.statement.id != c.statement.id || p.occurrence != c.occurrence)
        {
            problems.push(format!(
                "operation {i} is `{}` in the plan but `{}` in the capture: the pipeline issued different work",
                p.statement.text, c.statement.text
            ));
        }
        check_edges(plan, &edges, problems)
    }

    fn to_dot(&self) -> Result<String> {
        let (edges, _) = self.captured_edges()?;
        let labels: Vec<(String, usize)> = self
            .ops
            .iter()
            .map(|op| {
                let name = match op.statement.kind {
                    StatementKind::Launch { kernel } => format!("launch {kernel}"),
                    _ => op.statement.text.to_string(),
                };
                let loc = op.statement.location;
                (
                    format!("{name} #{}\n{}:{}", op.occurrence, loc.file, loc.line),
                    op.stream,
                )
            })
            .collect();
        let mut out = String::new();
        let _ = writeln!(out, "digraph {} {{", quote(self.program.name));
        out.push_str("  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
        render_body(&mut out, self.program, &labels, &edges, &edges, "c");
        out.push_str("}\n");
        Ok(out)
    }

    /// The statement whose node is `node`.
    fn statement_of(&self, node: NodeHandle) -> Option<&'static Statement> {
        self.ops
            .iter()
            .find(|op| op.node == Some(node))
            .map(|op| op.statement)
    }

    /// The index of operation `op`, checked to be one of this program's.
    fn op_index(&self, op: OpRef) -> Result<usize> {
        let stmt = op.statement;
        let ours = self
            .program
            .statements
            .get(stmt.id)
            .is_some_and(|s| s.same(stmt));
        if !ours {
            return Err(Error::InvalidArgument(format!(
                "statement `{}` at {} is not part of pipeline `{}`",
                stmt.text, stmt.location, self.program.name
            )));
        }
        let list = &self.by_statement[stmt.id];
        op.occurrence
            .checked_sub(1)
            .and_then(|i| list.get(i as usize))
            .copied()
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "statement `{}` at {} was issued {} time(s) in the captured graph, so it has no occurrence {}",
                    stmt.text,
                    stmt.location,
                    list.len(),
                    op.occurrence
                ))
            })
    }

    /// Whether `range` lies inside memory the captured pipeline uses.
    fn covers(&self, range: &DeviceRange) -> bool {
        let end = range.ptr.saturating_add(range.bytes as u64);
        let after = self
            .memory
            .partition_point(|&(d, start, _)| (d, start) <= (range.device, range.ptr));
        after > 0 && {
            let (d, start, stop) = self.memory[after - 1];
            d == range.device && start <= range.ptr && end <= stop
        }
    }
}

/// What [`Capture::run`] did.
#[derive(Debug)]
pub enum CaptureOutcome<P> {
    /// The pipeline was captured.
    Captured(Graph<P>),
    /// Capturing failed with `fault` ([`Error::Capture`]); the capture was ended and the
    /// pipeline ran eagerly on the same streams instead (only with
    /// [`Capture::fallback_to_eager`]).
    RanEagerly {
        /// The pipeline, which ran eagerly.
        pipeline: P,
        /// Why capturing failed.
        fault: Error,
    },
}

impl<P> CaptureOutcome<P> {
    /// Whether the pipeline was captured (rather than run eagerly).
    pub fn is_captured(&self) -> bool {
        matches!(self, CaptureOutcome::Captured(_))
    }
}

impl Capture {
    /// Captures `pipeline` into a CUDA graph that owns it.
    ///
    /// Errors: [`Error::Capture`] for capture faults (the capture is ended cleanly),
    /// [`Error::GraphMismatch`] when verification is on and the graph differs from the
    /// plan, [`Error::Race`] when verification is on and the pipeline has races, and the
    /// errors of issuing a statement.
    pub fn capture<P: Pipeline>(&mut self, pipeline: P) -> Result<Graph<P>> {
        let core = GraphCore::capture(self, &pipeline)?;
        Ok(Graph::new(core, pipeline, self.settings()))
    }

    /// Captures `pipeline`, or — with [`Capture::fallback_to_eager`] and a capture fault —
    /// runs it eagerly on the same streams and reports that it did.
    pub fn run<P: Pipeline>(&mut self, pipeline: P) -> Result<CaptureOutcome<P>> {
        match GraphCore::capture(self, &pipeline) {
            Ok(core) => Ok(CaptureOutcome::Captured(Graph::new(
                core,
                pipeline,
                self.settings(),
            ))),
            Err(fault @ Error::Capture { .. }) if self.falls_back() => {
                self.run_eagerly(&pipeline)?;
                Ok(CaptureOutcome::RanEagerly { pipeline, fault })
            }
            Err(e) => Err(e),
        }
    }
}

/// Captures `pipeline` on `origin` with the default options ([`Capture::new`]).
pub fn capture<P: Pipeline>(origin: &Stream, pipeline: P) -> Result<Graph<P>> {
    Capture::new(origin).capture(pipeline)
}

/// `ranges` (sorted by device, then address) merged into disjoint `(device, start, end)`
/// intervals.
fn merged_intervals(ranges: &BTreeSet<DeviceRange>) -> Vec<(i32, u64, u64)> {
    let mut out: Vec<(i32, u64, u64)> = Vec::new();
    for r in ranges {
        let end = r.ptr.saturating_add(r.bytes as u64);
        match out.last_mut() {
            Some(last) if last.0 == r.device && r.ptr <= last.2 => last.2 = last.2.max(end),
            _ => out.push((r.device, r.ptr, end)),
        }
    }
    out
}

/// A pipeline captured into a CUDA graph; owns the pipeline value (see the
/// [module docs](self)). Made by [`Capture::capture`] or [`crate::capture`].
#[derive(Debug)]
pub struct Graph<P> {
    core: GraphCore,
    pipeline: P,
    settings: CaptureSettings,
    /// Not `Sync`: see the module docs.
    _not_sync: PhantomData<Cell<()>>,
}

impl<P> Graph<P> {
    pub(crate) fn new(core: GraphCore, pipeline: P, settings: CaptureSettings) -> Graph<P> {
        Graph {
            core,
            pipeline,
            settings,
            _not_sync: PhantomData,
        }
    }

    /// The pipeline the graph was captured from.
    pub fn pipeline(&self) -> &P {
        &self.pipeline
    }

    /// Gives the pipeline back (and with it the borrows of its buffers); the graph is
    /// destroyed.
    pub fn into_pipeline(self) -> P {
        self.pipeline
    }

    /// The number of operations (graph nodes) captured.
    pub fn len(&self) -> usize {
        self.core.ops.len()
    }

    /// Whether the pipeline issued no operation.
    pub fn is_empty(&self) -> bool {
        self.core.ops.is_empty()
    }

    /// The operations captured, in issue order.
    pub fn ops(&self) -> Vec<OpRef> {
        self.core
            .ops
            .iter()
            .map(|op| OpRef {
                statement: op.statement,
                occurrence: op.occurrence,
            })
            .collect()
    }

    /// The graph in Graphviz DOT, nodes named by their statements, one cluster per stream.
    ///
    /// Reads the graph back with [`cuGraphGetEdges`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    pub fn to_dot(&self) -> Result<String> {
        self.core.to_dot()
    }

    /// Writes the driver's own DOT picture of the graph (verbose) to `path`.
    ///
    /// See [`cuGraphDebugDotPrint`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    pub fn debug_dot_print(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let c = CString::new(path.to_string_lossy().into_owned()).map_err(|_| {
            Error::InvalidArgument(format!(
                "path {} contains a NUL byte; choose another path",
                path.display()
            ))
        })?;
        self.core
            .raw
            .debug_dot_print(&c)
            .map_err(|e| Error::driver("cuGraphDebugDotPrint", e))
    }

    /// Instantiates the graph for launching (`cuGraphInstantiateWithFlags`).
    ///
    /// See [`cuGraphInstantiateWithFlags`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    pub fn instantiate(self) -> Result<GraphExec<P>> {
        let exec = self
            .core
            .raw
            .instantiate()
            .map_err(|e| Error::driver("cuGraphInstantiateWithFlags", e))?;
        Ok(GraphExec {
            exec,
            base: self.core,
            latest: None,
            pipeline: self.pipeline,
            recapture: None,
            settings: self.settings,
            reinstantiate: false,
            launches: Cell::new(0),
            updates: 0,
            reinstantiations: 0,
        })
    }
}

impl<P: Pipeline> Graph<P> {
    /// Reads the graph's nodes and edges back from the driver and compares them with the
    /// pipeline's plan ([`Plan::build`]): the edge sets must be equal and so must the
    /// happens-before relations. A difference is an [`Error::GraphMismatch`] listing each
    /// differing edge by statement and `file:line:col`.
    ///
    /// See [`cuGraphGetNodes`, `cuGraphGetEdges`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    pub fn verify(&self) -> Result<VerifyReport> {
        let plan = Plan::build(&self.pipeline)?;
        self.core.verify_against(&plan)
    }

    /// The plan and the captured graph side by side in one DOT picture
    /// ([`side_by_side_dot`]).
    pub fn to_dot_beside_plan(&self) -> Result<String> {
        let plan = Plan::build(&self.pipeline)?;
        let (edges, _) = self.core.captured_edges()?;
        Ok(side_by_side_dot(&plan, &edges))
    }
}

/// Counts of what an executable graph did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct GraphStats {
    /// Launches (`cuGraphLaunch`).
    pub launches: u64,
    /// Updates applied in place (`cuGraphExecUpdate`), without re-instantiation.
    pub updates: u64,
    /// Re-instantiations after an update was refused.
    pub reinstantiations: u64,
}

/// An instantiated graph, ready to launch on any stream of its device; owns the pipeline
/// value (see the [module docs](self)). `Send` when `P` is, never `Sync`.
///
/// It keeps everything its launches touch — memory, kernels' modules, host functions — until
/// they have finished, whatever happens to the pipeline value: dropping it waits for the
/// streams it was launched on.
#[derive(Debug)]
pub struct GraphExec<P> {
    exec: OwnedExec,
    /// The graph the executable graph was instantiated from: its node handles address the
    /// executable graph's nodes.
    base: GraphCore,
    /// The graph of the latest update: the source of current kernel parameters.
    latest: Option<GraphCore>,
    pipeline: P,
    recapture: Option<Capture>,
    settings: CaptureSettings,
    reinstantiate: bool,
    launches: Cell<u64>,
    updates: u64,
    reinstantiations: u64,
}

impl<P> GraphExec<P> {
    /// Launches the graph on `stream` (any stream of the graph's device); returns once queued.
    ///
    /// When the graph copies to or from a [`crate::PinnedBuffer`] whose `as_slice` /
    /// `as_mut_slice` guard is alive, the launch is refused with [`Error::PinnedBusy`].
    ///
    /// See [`cuGraphLaunch`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    #[inline]
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        if stream.ctx().cu_ctx() != self.exec.ctx().cu_ctx() {
            return Err(Error::DeviceMismatch {
                what: "launching a graph on a stream of another device",
                left: Device::from_ctx(self.exec.ctx()).ordinal(),
                right: stream.device().ordinal(),
            });
        }
        self.exec.launch(stream.as_cudarc())?;
        self.launches.set(self.launches.get() + 1);
        Ok(())
    }

    /// Launches the graph `times` times in a row on `stream`.
    pub fn replay(&self, stream: &Stream, times: usize) -> Result<()> {
        for _ in 0..times {
            self.launch(stream)?;
        }
        Ok(())
    }

    /// Uploads the graph to the device ahead of its first launch, in `stream`'s order.
    ///
    /// See [`cuGraphUpload`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        self.exec
            .upload(stream.as_cudarc())
            .map_err(|e| Error::driver("cuGraphUpload", e))
    }

    /// The pipeline the graph currently runs. Its pinned buffers can be read through it: a
    /// guard waits for the launches that write them, and refuses launches while it lives.
    pub fn pipeline(&self) -> &P {
        &self.pipeline
    }

    /// Gives the pipeline back (and with it the borrows of its buffers); the executable graph
    /// is destroyed once the launches in flight have finished. Synchronize before reading
    /// results from device memory; pinned buffers wait for their copies themselves.
    pub fn into_pipeline(self) -> P {
        self.pipeline
    }

    /// Launch, update and re-instantiation counts.
    pub fn stats(&self) -> GraphStats {
        GraphStats {
            launches: self.launches.get(),
            updates: self.updates,
            reinstantiations: self.reinstantiations,
        }
    }

    /// Whether [`GraphExec::update`] instantiates the new graph when the driver refuses to
    /// update in place (e.g. the topology changed) instead of failing with
    /// [`Error::UpdateRejected`]. Off by default.
    pub fn reinstantiate_on_topology_change(&mut self, on: bool) -> &mut Self {
        self.reinstantiate = on;
        self
    }

    /// Changes only the arguments of one launch operation, in place
    /// (`cuGraphExecKernelNodeSetParams`): the fast path for new scalars. Grid, block and
    /// shared memory stay those of the captured node. Takes effect from the next launch.
    ///
    /// `kernel` must be the kernel the node launches now (a later update may have changed it):
    /// `args` are arguments for it, under its [`crate::Module::kernel`] promise, and their
    /// number is checked against the captured launch. Buffer arguments must lie in memory the
    /// pipeline already uses (the executable graph keeps it allocated); to point a launch at
    /// other buffers, use [`GraphExec::update`]. A later `update` captures the pipeline's own
    /// arguments again.
    ///
    /// See [`cuGraphExecKernelNodeSetParams`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    pub fn set_kernel_args(
        &self,
        op: OpRef,
        kernel: &Kernel,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        let stmt = op.statement;
        if !matches!(stmt.kind, StatementKind::Launch { .. }) {
            return Err(Error::InvalidArgument(format!(
                "statement `{}` at {} is not a launch; only launches take kernel arguments",
                stmt.text, stmt.location
            )));
        }
        let index = self.base.op_index(op)?;
        let record = &self.base.ops[index];
        let source = self.latest.as_ref().unwrap_or(&self.base);
        let Some(shape) = source.ops.get(index).and_then(|o| o.launch) else {
            return Err(Error::InvalidArgument(format!(
                "statement `{}` at {} is not a launch; only launches take kernel arguments",
                stmt.text, stmt.location
            )));
        };
        if kernel.handle() != shape.func {
            return Err(Error::InvalidArgument(format!(
                "launch `{}` at {} runs another kernel than `{}` now; pass the kernel the node launches (an update may have changed it)",
                stmt.text,
                stmt.location,
                kernel.name()
            )));
        }
        let count = shape.args;
        if args.len() != count {
            return Err(Error::InvalidArgument(format!(
                "launch `{}` at {} was captured with {count} argument(s) but {} were given; pass one argument per kernel parameter",
                stmt.text,
                stmt.location,
                args.len()
            )));
        }
        for access in args.iter().filter_map(|a| a.access()) {
            if !source.covers(&access.range) {
                return Err(Error::InvalidArgument(format!(
                    "a buffer argument of launch `{}` at {} is memory the pipeline does not use; to point the launch at other buffers, `update` the graph with a pipeline that borrows them",
                    stmt.text, stmt.location
                )));
            }
        }
        let Some(node) = record.node else {
            return Err(Error::InvalidArgument(format!(
                "launch `{}` at {} has no graph node",
                stmt.text, stmt.location
            )));
        };
        // The node's parameters as captured (the latest update's, which may have changed the
        // configuration): no driver query on this path.
        let Some(func) = kernel.loaded() else {
            return Err(Error::PlanningOnly { what: "kernel" });
        };
        self.exec
            .set_kernel_args(node, func, &shape.config, args)
            .map_err(|e| Error::driver("cuGraphExecKernelNodeSetParams", e))
    }

    /// Applies a newly captured graph: in place, or by re-instantiation when allowed.
    fn apply(&mut self, core: GraphCore, reinstantiate: bool) -> Result<()> {
        let info = self.exec.update(&core.raw)?;
        match info.rejection {
            None => {
                self.latest = Some(core);
                self.updates += 1;
                Ok(())
            }
            Some(reason) => {
                let statement = [info.error_node, info.error_from_node]
                    .into_iter()
                    .flatten()
                    .find_map(|n| core.statement_of(n).or_else(|| self.base.statement_of(n)));
                if !reinstantiate {
                    return Err(Error::UpdateRejected { reason, statement });
                }
                let exec = core
                    .raw
                    .instantiate()
                    .map_err(|e| Error::driver("cuGraphInstantiateWithFlags", e))?;
                // The previous executable graph waits for its launches as it drops.
                self.exec = exec;
                self.latest = None;
                self.base = core;
                self.reinstantiations += 1;
                Ok(())
            }
        }
    }
}

impl<P: Pipeline> GraphExec<P> {
    fn recaptured(&mut self, pipeline: &P) -> Result<GraphCore> {
        GraphCore::capture(
            recapturer(&mut self.recapture, &self.base.origin, self.settings),
            pipeline,
        )
    }

    /// Captures `pipeline` (new arguments, new buffers) into a fresh graph and applies it to
    /// this executable graph in place (`cuGraphExecUpdate`), without re-instantiating.
    /// Returns the previous pipeline (and with it the borrows of its buffers); what the
    /// launches before the update touch stays allocated until they have finished.
    ///
    /// When the driver refuses (the topology or a kernel changed) this fails with
    /// [`Error::UpdateRejected`] naming the reason and the statement, unless
    /// [`GraphExec::reinstantiate_on_topology_change`] is on: then the new graph is
    /// instantiated instead and counted in [`GraphStats::reinstantiations`]. On error the
    /// executable graph keeps running the previous pipeline.
    ///
    /// See [`cuGraphExecUpdate`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    pub fn update(&mut self, pipeline: P) -> Result<P> {
        let core = self.recaptured(&pipeline)?;
        self.apply(core, self.reinstantiate)?;
        Ok(std::mem::replace(&mut self.pipeline, pipeline))
    }

    /// [`GraphExec::update`], re-instantiating when the driver refuses to update in place.
    pub fn update_or_reinstantiate(&mut self, pipeline: P) -> Result<P> {
        let core = self.recaptured(&pipeline)?;
        self.apply(core, true)?;
        Ok(std::mem::replace(&mut self.pipeline, pipeline))
    }

    /// Changes the pipeline in place with `f` (e.g. new scalar arguments) and updates the
    /// executable graph with it, as [`GraphExec::update`] does. On error the pipeline keeps
    /// `f`'s changes but the executable graph still runs the previous arguments — and keeps
    /// their memory allocated, even if `f` dropped the buffers: update again or re-instantiate.
    pub fn update_with(&mut self, f: impl FnOnce(&mut P)) -> Result<()> {
        f(&mut self.pipeline);
        let core = GraphCore::capture(
            recapturer(&mut self.recapture, &self.base.origin, self.settings),
            &self.pipeline,
        )?;
        self.apply(core, self.reinstantiate)
    }

    /// [`Graph::verify`] for the graph this executable graph was instantiated from.
    pub fn verify(&self) -> Result<VerifyReport> {
        let plan = Plan::build(&self.pipeline)?;
        self.latest
            .as_ref()
            .unwrap_or(&self.base)
            .verify_against(&plan)
    }
}

/// The capture issuer for updates, made on first use with the original capture's settings.
fn recapturer<'c>(
    slot: &'c mut Option<Capture>,
    origin: &Stream,
    settings: CaptureSettings,
) -> &'c mut Capture {
    slot.get_or_insert_with(|| {
        Capture::new(origin)
            .mode(settings.mode)
            .check(settings.verify)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_merges_into_disjoint_intervals_per_device() {
        let r = |device, ptr, bytes| DeviceRange { device, ptr, bytes };
        let set: BTreeSet<_> = [r(0, 100, 50), r(0, 120, 100), r(0, 400, 8), r(1, 100, 10)]
            .into_iter()
            .collect();
        assert_eq!(
            merged_intervals(&set),
            [(0, 100, 220), (0, 400, 408), (1, 100, 110)]
        );
    }
}
