//! Captured CUDA graphs ([`Graph`]) and their executable form ([`GraphExec`]): capture,
//! verify, draw, instantiate, replay, update.
//!
//! A graph is made by capturing, and capture lives here: [`Capture`] (`capture.rs`) issues a
//! pipeline through [`crate::Eager`]'s issuing path with a recorder of its own
//! (`recorder.rs`), which fills the node book (`book.rs`) with what the graph will own
//! (`recorded.rs`) and captures device blocks (`blocks.rs`) and collectives
//! (`collective.rs`). A graph is checked against its plan in `verify.rs` and drawn in
//! `dot.rs`; `exec.rs`, `executable.rs` and `args.rs` launch and update its executable form;
//! `set.rs` holds one executable graph per key of a [`GraphSet`] (`buckets.rs` picks the key).
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
//! replay; an executable graph with host functions waits for the launches that may still run
//! (on the streams it was launched on) before it frees them.
//!
//! # Threads
//!
//! The driver does not synchronise calls on one `CUgraph` or `CUgraphExec`: two threads
//! launching, updating or reading one graph at the same time are a data race in the driver.
//! So [`Graph`] and [`GraphExec`] are `Send` when `P` is (one thread at a time may own them)
//! but never `Sync`.
//!
//! ```no_run
//! use streamgraph::{capture, OpRef, Pipeline, Stream};
//!
//! fn run<P: Pipeline>(origin: &Stream, pipeline: P, next: P) -> streamgraph::Result<()> {
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

use std::cell::{Cell, OnceCell};
use std::collections::BTreeSet;
use std::ffi::CString;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ffi::arena::TempArena;
use crate::ffi::graph::{NodeHandle, OwnedGraph};
use crate::issue::Pipeline;
use crate::operand::DeviceRange;
use crate::plan::Plan;
use crate::program::{OpRef, Program, Statement};
use crate::stream::Stream;
use recorded::{CapturedOp, LaunchShape, Recorded};

mod arg_state;
mod args;
mod blocks;
mod book;
mod buckets;
mod call;
mod capture;
mod collective;
mod dot;
mod exec;
mod executable;
mod outcome;
mod pending;
mod placement;
mod recorded;
mod recorder;
mod set;
mod temps;
mod verify;

pub use crate::ffi::graph::GraphHandle;
pub use crate::ffi::graph_exec::GraphExecHandle;

pub use buckets::{Bucket, Buckets};
use capture::CaptureSettings;
pub use capture::{Capture, CaptureMode};
#[cfg(feature = "testing")]
pub use dot::captured_dot;
pub use dot::side_by_side_dot;
pub use exec::GraphExec;
pub use executable::GraphStats;
pub use outcome::{capture, CaptureOutcome};
pub use set::{GraphSet, KeyStats, Prepare, Prepared};
pub use verify::VerifyReport;
#[cfg(feature = "testing")]
pub use verify::{verify_body_edges, verify_edges};

/// A captured graph without its pipeline value: the driver graph (which keeps what its nodes
/// touch) and what its capture recorded, whole.
#[derive(Debug)]
pub(crate) struct GraphCore {
    raw: OwnedGraph,
    program: &'static Program,
    origin: Stream,
    /// The operations, their shapes, values, memory and known nodes, as captured.
    recorded: Recorded,
    /// The memory the temporaries are placed in (a graph set's, or the graph's own), which a
    /// capture of the pipeline again reuses; `None`: memory nodes.
    arena: Option<Arc<TempArena>>,
    /// Tables made from the above when first needed (captures that never need them do not
    /// pay for them, nor for the allocation that holds them).
    derived: OnceCell<Box<Derived>>,
}

/// What a [`GraphCore`] works out from its operations on first use.
#[derive(Debug, Default)]
struct Derived {
    /// Statement id `s` → its operations, in occurrence order:
    /// `by_statement[starts[s]..starts[s + 1]]`.
    index: OnceCell<(Vec<u32>, Vec<u32>)>,
    /// `touched` merged into disjoint `(device, start, end)` intervals in order, for a binary
    /// search per buffer argument of `set_kernel_args`.
    memory: OnceCell<Vec<(i32, u64, u64)>>,
    /// Per graph part (0: the graph, `k + 1`: body graph `k` of a device block), the indices
    /// of its operations in `ops`, in issue order.
    parts: OnceCell<Vec<Vec<usize>>>,
}

impl GraphCore {
    /// The graph `raw` of a capture of `program` on `origin`, which recorded `recorded`.
    fn new(
        raw: OwnedGraph,
        program: &'static Program,
        origin: Stream,
        recorded: Recorded,
        arena: Option<Arc<TempArena>>,
    ) -> GraphCore {
        GraphCore {
            raw,
            program,
            origin,
            recorded,
            arena,
            derived: OnceCell::new(),
        }
    }

    /// The tables made on first use.
    #[inline]
    fn derived(&self) -> &Derived {
        self.derived.get_or_init(Box::default)
    }

    /// The body graphs of device blocks.
    fn bodies(&self) -> &[recorded::CapturedBody] {
        self.recorded.bodies()
    }

    /// The node of every operation: the graph's nodes as `cuGraphGetNodes` lists them, in
    /// creation order, given in turn to the operations that made one (the capture checked that
    /// their numbers are equal).
    #[inline]
    pub(super) fn node_map(&self) -> Result<&[Option<NodeHandle>]> {
        match self.recorded.nodes.get() {
            Some(map) => Ok(map),
            None => self.read_node_map(),
        }
    }

    /// Makes [`GraphCore::node_map`] on its first use.
    #[cold]
    fn read_node_map(&self) -> Result<&[Option<NodeHandle>]> {
        let listed = self
            .raw
            .nodes()
            .map_err(|e| Error::driver("cuGraphGetNodes", e))?;
        let map = recorded::node_map(&self.recorded.ops, &self.recorded.known, &listed);
        Ok(self.recorded.nodes.get_or_init(|| map))
    }

    /// The shape of operation `i`, if it is a launch.
    #[inline]
    pub(super) fn launch_shape(&self, i: usize) -> Option<LaunchShape> {
        self.recorded.ops.get(i)?.shape
    }

    /// The operations of the graph itself (not of block bodies), in issue order.
    fn outer(&self) -> impl Iterator<Item = &CapturedOp> + '_ {
        self.recorded.ops.iter().filter(|op| op.part == 0)
    }

    /// The indices in `ops` of the operations of graph part `part` (see [`Derived::parts`]).
    fn members(&self, part: usize) -> &[usize] {
        let parts = self.derived().parts.get_or_init(|| {
            let mut parts = vec![Vec::new(); self.bodies().len() + 1];
            for (i, op) in self.recorded.ops.iter().enumerate() {
                if let Some(members) = parts.get_mut(op.part()) {
                    members.push(i);
                }
            }
            parts
        });
        parts.get(part).map_or(&[], Vec::as_slice)
    }

    /// The operations of each statement (see [`Derived::index`]).
    #[inline]
    fn statement_index(&self) -> &(Vec<u32>, Vec<u32>) {
        match self.derived().index.get() {
            Some(index) => index,
            None => self.make_statement_index(),
        }
    }

    /// Makes [`GraphCore::statement_index`] on its first use.
    #[cold]
    fn make_statement_index(&self) -> &(Vec<u32>, Vec<u32>) {
        self.derived().index.get_or_init(|| {
            // Counting sort of the operations by statement (ids are below
            // `statements.len()`, as `NodeBook::note` checked).
            let mut starts = vec![0u32; self.program.statements.len() + 1];
            for op in &self.recorded.ops {
                if let Some(count) = starts.get_mut(op.statement.id + 1) {
                    *count += 1;
                }
            }
            for s in 1..starts.len() {
                starts[s] += starts[s - 1];
            }
            let mut fill = starts.clone();
            let mut by_statement = vec![0u32; self.recorded.ops.len()];
            for (i, op) in self.recorded.ops.iter().enumerate() {
                if let Some(next) = fill.get_mut(op.statement.id) {
                    by_statement[*next as usize] = i as u32;
                    *next += 1;
                }
            }
            (starts, by_statement)
        })
    }

    /// The memory the pipeline uses, as merged intervals.
    #[inline]
    fn memory(&self) -> &[(i32, u64, u64)] {
        match self.derived().memory.get() {
            Some(memory) => memory,
            None => self.merge_memory(),
        }
    }

    /// Makes [`GraphCore::memory`] on its first use.
    #[cold]
    fn merge_memory(&self) -> &[(i32, u64, u64)] {
        self.derived().memory.get_or_init(|| {
            let mut ranges = self.recorded.touched.clone();
            ranges.sort_unstable();
            ranges.dedup();
            merged_intervals(&ranges)
        })
    }

    /// The statement whose node is `node`.
    fn statement_of(&self, node: NodeHandle) -> Option<&'static Statement> {
        let map = self.node_map().ok()?;
        let i = map.iter().position(|n| *n == Some(node))?;
        self.recorded.ops.get(i).map(|op| op.statement)
    }

    /// The index of operation `op`, checked to be one of this program's.
    #[inline]
    fn op_index(&self, op: OpRef) -> Result<usize> {
        let stmt = op.statement;
        let ours = self
            .program
            .statements
            .get(stmt.id)
            .is_some_and(|s| s.same(stmt));
        if !ours {
            return Err(self.foreign_statement(stmt));
        }
        let (starts, by_statement) = self.statement_index();
        let (first, end) = match (starts.get(stmt.id), starts.get(stmt.id + 1)) {
            (Some(&a), Some(&b)) => (a as usize, b as usize),
            _ => (0, 0),
        };
        let at = (op.occurrence as usize)
            .checked_sub(1)
            .map(|k| first + k)
            .filter(|&at| at < end);
        match at.and_then(|at| by_statement.get(at)) {
            Some(&i) => Ok(i as usize),
            None => Err(Error::InvalidArgument(format!(
                "statement `{}` at {} was issued {} time(s) in the captured graph, so it has no occurrence {}",
                stmt.text,
                stmt.location,
                end - first,
                op.occurrence
            ))),
        }
    }

    /// `stmt` is no statement of this graph's pipeline.
    #[cold]
    fn foreign_statement(&self, stmt: &Statement) -> Error {
        Error::InvalidArgument(format!(
            "statement `{}` at {} is not part of pipeline `{}`",
            stmt.text, stmt.location, self.program.name
        ))
    }

    /// Whether `range` lies inside memory the captured pipeline uses.
    #[inline]
    fn covers(&self, range: &DeviceRange) -> bool {
        let end = range.ptr.saturating_add(range.bytes as u64);
        let memory = self.memory();
        let after =
            memory.partition_point(|&(d, start, _)| (d, start) <= (range.device, range.ptr));
        after > 0 && {
            let (d, start, stop) = memory[after - 1];
            d == range.device && start <= range.ptr && end <= stop
        }
    }
}

/// `ranges` (sorted by device, then address) merged into disjoint `(device, start, end)`
/// intervals.
fn merged_intervals(ranges: &[DeviceRange]) -> Vec<(i32, u64, u64)> {
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

/// A pipeline captured into a CUDA graph. Made by [`Capture::capture`] or [`crate::capture`].
///
/// It **owns the pipeline value** it was captured from. A pipeline holds borrows of its
/// buffers (`&'a mut DeviceBuffer<_>` for what it writes), so while a graph or executable
/// graph lives, the borrow checker refuses to free those buffers or to touch them mutably
/// anywhere else. Take the pipeline back with [`Graph::into_pipeline`] or
/// [`GraphExec::into_pipeline`] (or swap it with [`GraphExec::update`]).
///
/// The driver does not synchronise calls on one graph, so [`Graph`] and [`GraphExec`] are
/// `Send` when `P` is (one thread at a time may own them) but never `Sync`.
///
/// ```no_run
/// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
///
/// pipeline! {
///     /// `side` fills `x`; `main` waits for that, then copies `x` into `y`.
///     pipeline FillCopy(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>) {
///         stream main;
///         stream side;
///         event filled;
///         side: fill x = 2.0f32;
///         side: record filled;
///         main: wait filled;
///         main: copy y <- x;
///     }
/// }
///
/// let stream = Stream::on(None, 0)?;
/// let mut x = DeviceBuffer::zeros(&stream.device(), 1000)?;
/// let mut y = DeviceBuffer::zeros(&stream.device(), 1000)?;
///
/// let graph = capture(&stream, FillCopy::new(&mut x, &mut y))?;
/// let report = graph.verify()?;      // the captured edges are exactly the plan's
/// assert_eq!((report.operations, report.edges), (2, 1));
/// println!("{}", graph.to_dot()?);   // the driver's graph, nodes named by statement
/// let exec = graph.instantiate()?;
/// exec.replay(&stream, 3)?;
/// stream.synchronize()?;
/// drop(exec);                        // gives `x` and `y` back
/// assert_eq!(y.to_vec()?, vec![2.0; 1000]);
/// # Ok::<(), streamgraph::Error>(())
/// ```
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
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>, v: f32) { stream s; s: fill x = v; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let graph = capture(&stream, Fill::new(&mut x, 1.0))?;
    /// assert_eq!((graph.pipeline().x.len(), graph.pipeline().v), (1024, 1.0)); // public fields
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn pipeline(&self) -> &P {
        &self.pipeline
    }

    /// Gives the pipeline back (and with it the borrows of its buffers); the graph is
    /// destroyed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Eager, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let graph = capture(&stream, Fill::new(&mut x))?;
    /// let fill = graph.into_pipeline(); // the graph is destroyed, the pipeline value lives on
    /// Eager::new(&stream).run(&fill)?;
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn into_pipeline(self) -> P {
        self.pipeline
    }

    /// The number of operations (graph nodes) captured; a device block counts as one (its
    /// bodies' operations are in its body graphs).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; event e;
    ///     a: fill x = 1.0f32; a: record e; b: wait e; b: fill x = 2.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// assert_eq!(capture(&stream, P::new(&mut x))?.len(), 2); // the fills (records, waits: edges)
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.core.outer().count()
    }

    /// Whether the pipeline issued no operation.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// assert!(!capture(&stream, Fill::new(&mut x))?.is_empty());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.core.outer().next().is_none()
    }

    /// The operations captured, in issue order; a device block is one operation (the
    /// operations of its bodies are not listed).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>, n: u32) {
    ///     stream s; for _ in 0..n { s: fill x = 1.0f32; } } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let ops = capture(&stream, P::new(&mut x, 3))?.ops();
    /// assert_eq!(ops.iter().map(|op| op.occurrence).collect::<Vec<_>>(), [1, 2, 3]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn ops(&self) -> Vec<OpRef> {
        self.core
            .outer()
            .map(|op| OpRef {
                statement: op.statement,
                occurrence: op.occurrence,
            })
            .collect()
    }

    /// The captured graph's dependency edges between operations, numbered as in
    /// [`Graph::ops`] (the plan's numbering): `(from, to)` means `to` waits for `from`. Read
    /// back from the driver ([`cuGraphGetEdges`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)),
    /// so tools can compare it with a [`Plan`]'s [`Plan::edges`] or draw it their own way.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Plan, Stream};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; event e;
    ///     a: fill x = 1.0f32; a: record e; b: wait e; b: fill x = 2.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let graph = capture(&stream, P::new(&mut x))?;
    /// assert!(graph.edges()?.into_iter().eq([(0, 1)])); // `b`'s fill waits for `a`'s
    /// assert_eq!(graph.edges()?, Plan::build(graph.pipeline())?.edges());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn edges(&self) -> Result<BTreeSet<(usize, usize)>> {
        Ok(self.core.captured_edges()?.0)
    }

    /// The graph's handle, for interop with code that calls the driver directly (e.g.
    /// `cuGraphClone`, `cuGraphDebugDotPrint` with other flags). It stays valid while `self`
    /// lives; using it is `unsafe` on the caller's side (a raw handle passed to the driver).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let graph = capture(&stream, Fill::new(&mut x))?;
    /// let raw = graph.as_raw().0; // a `CUgraph`, for the driver API (valid while `graph` lives)
    /// assert!(!raw.is_null());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn as_raw(&self) -> GraphHandle {
        self.core.raw.as_raw()
    }

    /// The graph in Graphviz DOT, nodes named by their statements, one cluster per stream. The
    /// body graphs of device blocks are dashed clusters of their own (recursively, a block
    /// inside a body inside its body's cluster), with a dotted edge from the block to each
    /// operation its body starts with; the built-in kernels are not drawn.
    ///
    /// Reads the graph back with [`cuGraphGetEdges`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let dot = capture(&stream, Fill::new(&mut x))?.to_dot()?;
    /// assert!(dot.starts_with("digraph")); // e.g. `dot -Tsvg` draws it
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn to_dot(&self) -> Result<String> {
        self.core.to_dot()
    }

    /// Whether the graph's nodes have been listed (`cuGraphGetNodes`) to map them to its
    /// operations: a capture lists them only where the node count cannot account for them (a
    /// `call` whose nodes are not found back from its exit, a cross-checked capture); a graph
    /// lists them when first asked for its nodes (`verify`, DOT, `set_kernel_args`). A test
    /// hook: only with the `testing` feature.
    #[cfg(feature = "testing")]
    pub fn nodes_listed(&self) -> bool {
        self.core.recorded.nodes.get().is_some()
    }

    /// Writes the driver's own DOT picture of the graph (verbose) to `path`.
    ///
    /// See [`cuGraphDebugDotPrint`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let graph = capture(&stream, Fill::new(&mut x))?;
    /// graph.debug_dot_print(std::env::temp_dir().join("fill.dot"))?; // every node's parameters
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
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

    /// Instantiates the graph for launching (`cuGraphInstantiateWithFlags`). Each kernel node
    /// runs at the priority of the stream it was captured on (a pipeline's `stream s(priority =
    /// …)`), as the same launch runs eagerly, not at the priority of the stream the graph is
    /// launched into (`CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY`).
    ///
    /// See [`cuGraphInstantiateWithFlags`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let exec = capture(&stream, Fill::new(&mut x))?.instantiate()?; // takes the pipeline along
    /// exec.launch(&stream)?;
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn instantiate(self) -> Result<GraphExec<P>> {
        Ok(GraphExec {
            run: executable::Executable::instantiate(self.core, self.settings)?,
            pipeline: self.pipeline,
        })
    }
}

impl<P: Pipeline> Graph<P> {
    /// Reads the graph's nodes and edges back from the driver and compares them with the
    /// pipeline's plan ([`Plan::build`]): the edge sets must be equal and so must the
    /// happens-before relations. The body graph of each device block is compared with its
    /// nested plan ([`Plan::bodies`]) the same way, and the built-in kernel that ends a body
    /// must follow all of the body's work, directly from operations of the body's join or
    /// through others of them. A difference is an [`Error::GraphMismatch`] listing each
    /// differing edge by statement and `file:line:col`.
    ///
    /// See [`cuGraphGetNodes`, `cuGraphGetEdges`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; event e;
    ///     a: fill x = 1.0f32; a: record e; b: wait e; b: fill x = 2.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let report = capture(&stream, P::new(&mut x))?.verify()?;
    /// assert_eq!((report.pipeline, report.operations, report.edges), ("P", 2, 1));
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn verify(&self) -> Result<VerifyReport> {
        let plan = Plan::build(&self.pipeline)?;
        self.core.verify_against(&plan)
    }

    /// The plan and the captured graph side by side in one DOT picture
    /// (edges that only one side has drawn red).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; event e;
    ///     a: fill x = 1.0f32; a: record e; b: wait e; b: fill x = 2.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let graph = capture(&stream, P::new(&mut x))?;
    /// print!("{}", graph.to_dot_beside_plan()?); // no red edge: the capture has the plan's edges
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn to_dot_beside_plan(&self) -> Result<String> {
        let plan = Plan::build(&self.pipeline)?;
        let (edges, _) = self.core.captured_edges()?;
        Ok(side_by_side_dot(&plan, &edges))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_merges_into_disjoint_intervals_per_device() {
        let r = |device, ptr, bytes| DeviceRange { device, ptr, bytes };
        let set = [r(0, 100, 50), r(0, 120, 100), r(0, 400, 8), r(1, 100, 10)];
        assert_eq!(
            merged_intervals(&set),
            [(0, 100, 220), (0, 400, 408), (1, 100, 110)]
        );
    }
}
