//! The happens-before plan of a pipeline: which operations must finish before which, built
//! without a GPU.
//!
//! A pipeline is a sequence of host-issued commands in program order. Each stream `s` has a
//! **frontier** `F(s)`, the operations the next operation on `s` must follow; each event `e`
//! has a **snapshot** `E(e)`. The [`Planner`] applies, command by command:
//!
//! | command | effect |
//! | --- | --- |
//! | `op(s)` (launch, copy, fill, host) | new node `n` with an edge from every node of `F(s)`; then `F(s) := {n}` |
//! | `record(e, s)` | `E(e) := F(s)` (a later record overwrites; earlier waits keep the old snapshot) |
//! | `wait(s, e)` | `F(s) := F(s) ∪ E(e)` (an event never recorded is an empty snapshot) |
//! | `wait_stream(s, t)` | `F(s) := F(s) ∪ F(t)` |
//!
//! Run as a unit, a pipeline behaves like one operation on its origin stream (the first
//! declared): at the start every stream's frontier is the origin's, empty within the
//! pipeline (fork); at the end the origin waits for every stream (join), which
//! [`Plan::final_frontier`] keeps.
//!
//! These rules are the CUDA driver's own: a captured CUDA graph has exactly these edges,
//! redundant ones included (no transitive reduction), so a capture can be checked edge for
//! edge against [`Plan::edges`], and two programs are equivalent when their happens-before
//! relations ([`Reach`]) are equal.
//!
//! Happens-before is kept as vector clocks: per operation and stream, the latest operation of
//! that stream it follows. Planning, ordering queries and the race check take time and memory
//! proportional to the operations times the streams (plus the races found), not to the square
//! of the operations, so plans of millions of operations are checked in seconds.
//!
//! On the model a [`Plan`] answers [`happens_before`](Plan::happens_before) queries, finds
//! [data races](Plan::races) on real address ranges — two operations on different streams
//! touching overlapping bytes, one writing, with no path between them — and draws itself as
//! Graphviz [DOT](Plan::to_dot). [`Plan`]'s documentation has an example.
//!
//! Tools that issue statements themselves drive a [`Planner`] directly (it is an [`Issuer`](crate::Issuer)).
//!
//! A pipeline type made by `pipeline!` is planned in one call: [`Plan::build`].

use std::collections::{BTreeMap, BTreeSet};

use petgraph::graph::{DiGraph, NodeIndex};

use crate::error::{Error, Result};
use crate::issue::Pipeline;
use crate::operand::{BufferAccess, LaunchConfig};
use crate::program::{Program, Statement};

use adjacency::Adjacency;

mod adjacency;
mod builder;
pub(crate) mod dot;
mod planner;
mod race;
mod reach;
mod temps;

pub use crate::error::{Race, RaceSide};
pub use builder::ProgramBuilder;
pub use planner::Planner;
pub use reach::Reach;
pub use temps::PlanTemp;
pub use temps::TempLayout;

/// One operation (a node of the model): one issue of a launch, copy, fill or host statement.
#[derive(Debug, Clone)]
pub struct PlanOp {
    /// The statement issued.
    pub statement: &'static Statement,
    /// Which issue of the statement this is, from 1 (statements in loops are issued often).
    pub occurrence: u32,
    /// The stream it was issued on (index into [`Program::streams`]).
    pub stream: usize,
    /// The memory it touches: launch arguments' buffers, a copy's destination (write) and
    /// source (read; host memory on [`DeviceRange::HOST`](crate::DeviceRange::HOST)), a
    /// fill's target. Host functions touch none.
    pub accesses: Vec<BufferAccess>,
    /// A launch's grid, block and shared memory as issued; `None` for other operations.
    pub config: Option<LaunchConfig>,
    /// A short name for pictures and messages, like `launch k.scale #2`.
    pub label: String,
}

impl PlanOp {
    /// A launch's arguments as written, like `(&mut x, 2.0f32, n)`: the statement's text
    /// after the launch configuration. `None` for other operations.
    pub fn arguments(&self) -> Option<&'static str> {
        dot::arguments_of(self.statement)
    }
}

/// The nested plan of one body of a device `while` or `if` block (README "Loops and branches on the device"): in the
/// enclosing plan the block is one operation on its stream; its body is planned as a pipeline
/// of its own, forked from that stream at the body's start and joined at its end.
#[derive(Debug)]
pub struct PlanBody {
    /// The block's operation index in the enclosing plan.
    pub block: usize,
    /// 0 for a `while` body or an `if`'s `then`, 1 for an `if`'s `else`.
    pub branch: usize,
    /// The body's plan (its operation indices are its own).
    pub plan: Plan,
}

/// Why an edge exists: how its source operation came into the frontier of the target's stream.
#[derive(Debug, Clone, Copy)]
pub enum Via {
    /// Program order: the source is an earlier operation on the same stream.
    Stream,
    /// A `wait EVENT` merged the event's snapshot into the stream's frontier.
    Event {
        /// The event (index into [`Program::events`]).
        event: usize,
        /// The `wait` statement.
        wait: &'static Statement,
    },
    /// A `wait_stream OTHER` merged the other stream's frontier.
    WaitStream {
        /// The stream waited for (index into [`Program::streams`]).
        stream: usize,
        /// The `wait_stream` statement.
        wait: &'static Statement,
    },
    /// A device block inside a body follows the body's previous block, issued on `stream`:
    /// its stream waited for that stream first, as a `wait_stream` would (conditional nodes
    /// running side by side in one body graph can hang on the GPU; see
    /// README "Loops and branches on the device").
    Block {
        /// The stream of the body's previous block (index into [`Program::streams`]).
        stream: usize,
        /// The block statement that waited.
        block: &'static Statement,
    },
    /// A collective's completion: the source is earlier work of another participant's
    /// stream. Never an edge of [`Plan::edges`] (a graph holds no such edge: NCCL
    /// synchronises inside its kernels); a pair of [`Plan::sync_edges`].
    Collective {
        /// The participant's statement whose completion ordered the source.
        statement: &'static Statement,
    },
}

/// The happens-before model of one issue of a pipeline.
///
/// Each stream `s` has a frontier `F(s)` (what the next operation on `s` must follow), each
/// event `e` a snapshot `E(e)`. An operation on `s` gets an edge from every node of `F(s)`,
/// then `F(s) := {op}`; `record e` on `s` sets `E(e) := F(s)`; `wait e` on `s` merges
/// `E(e)` into `F(s)`; `wait_stream t` on `s` merges `F(t)` into `F(s)`. These are the CUDA
/// driver's own rules during capture, redundant edges included, so a captured graph can be
/// checked edge for edge against [`Plan::edges`].
///
/// Operations are numbered in issue order; every edge goes from a lower to a higher number,
/// so issue order is a topological order.
///
/// A plan needs no GPU: kernels and buffers made with [`Kernel::for_planning`](crate::Kernel::for_planning)
/// and [`DeviceBuffer::for_planning`](crate::DeviceBuffer::for_planning) stand in for real ones.
///
/// ```
/// use streamgraph::{pipeline, DeviceBuffer, Kernel, Plan};
///
/// pipeline! {
///     pipeline Diamond(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &Kernel) {
///         stream main;
///         stream side;
///         event ready;
///         main: launch k<<<4, 256>>>(&mut x);     // scale
///         main: record ready;
///         side: wait ready;
///         side: launch k<<<4, 256>>>(&mut y, &x); // axpy
///         main: wait_stream side;
///         main: launch k<<<4, 256>>>(&x, &y);     // sum
///     }
/// }
///
/// let k = Kernel::for_planning("k");
/// let (mut x, mut y) = (DeviceBuffer::for_planning(1024)?, DeviceBuffer::for_planning(1024)?);
/// let plan = Plan::build(&Diamond::new(&mut x, &mut y, &k))?;
/// assert_eq!(plan.len(), 3); // three launches
/// // scale → axpy (through `ready`), scale → sum (program order), axpy → sum (wait_stream).
/// assert!(plan.edges().into_iter().eq([(0, 1), (0, 2), (1, 2)]));
/// assert!(plan.happens_before(0, 2));
/// // The join takes every stream's frontier, `axpy` included although `sum` follows it.
/// assert_eq!(plan.final_frontier(), [1, 2]);
/// plan.check_races()?;           // on the buffers' address ranges
/// print!("{plan}");              // the op table, one line per operation
/// println!("{}", plan.to_dot()); // Graphviz
/// # Ok::<(), streamgraph::Error>(())
/// ```
#[derive(Debug)]
pub struct Plan {
    program: &'static Program,
    ops: Vec<PlanOp>,
    edges: BTreeMap<(usize, usize), Via>,
    final_frontier: Vec<usize>,
    successors: Adjacency,
    predecessors: Adjacency,
    reach: Reach,
    /// The happens-before pairs of collectives that are no graph edge ([`Plan::sync_edges`]).
    sync: BTreeSet<(usize, usize)>,
    /// The relation of [`Plan::edges`] alone, when collectives make it differ from `reach`.
    graph_reach: Option<Reach>,
    /// The nested plans of the device blocks' bodies, in issue order.
    bodies: Vec<PlanBody>,
    /// Every statement issued, in issue order, with the operations it made: what a checked run
    /// must issue again (`exec::expect`).
    pub(crate) log: Vec<Logged>,
    /// The temporaries, in allocation order.
    pub(crate) temps: Vec<PlanTemp>,
}

/// One statement as the plan saw it issued: the operations it made (none for records and
/// waits; one per participant for a collective; one for a device block, whose bodies are
/// plans of their own).
#[derive(Debug, Clone)]
pub(crate) struct Logged {
    pub(crate) statement: &'static Statement,
    pub(crate) ops: std::ops::Range<usize>,
}

impl Plan {
    /// Builds the model of `pipeline` by issuing it through the GPU-free [`Planner`].
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(256)?))?; // no GPU memory
    /// assert_eq!(plan.len(), 1);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn build<P: Pipeline + ?Sized>(pipeline: &P) -> Result<Plan, Error> {
        let _traced = crate::trace::pipeline(pipeline.program(), crate::trace::Mode::Plan);
        let mut planner = Planner::new(pipeline.program());
        pipeline.issue(&mut planner)?;
        planner.finish_checked()
    }

    pub(crate) fn new(
        program: &'static Program,
        ops: Vec<PlanOp>,
        edges: BTreeMap<(usize, usize), Via>,
        final_frontier: Vec<usize>,
    ) -> Plan {
        let n = ops.len();
        let successors = Adjacency::new(n, edges.keys().copied());
        let mut incoming: Vec<(usize, usize)> = edges.keys().map(|&(a, b)| (b, a)).collect();
        incoming.sort_unstable();
        let predecessors = Adjacency::new(n, incoming.into_iter());
        let streams: Vec<usize> = ops.iter().map(|o| o.stream).collect();
        let reach = Reach::new(&streams, edges.keys());
        Plan {
            program,
            ops,
            edges,
            final_frontier,
            successors,
            predecessors,
            reach,
            sync: BTreeSet::new(),
            graph_reach: None,
            bodies: Vec::new(),
            log: Vec::new(),
            temps: Vec::new(),
        }
    }

    /// Adds the collectives' synchronisation pairs to the happens-before relation, keeping
    /// the relation of the edges alone for [`Plan::graph_reach`].
    pub(crate) fn synchronise(&mut self, sync: BTreeSet<(usize, usize)>) {
        if sync.is_empty() {
            return;
        }
        let streams: Vec<usize> = self.ops.iter().map(|o| o.stream).collect();
        let reach = Reach::new(&streams, self.edges.keys().chain(sync.iter()));
        self.graph_reach = Some(std::mem::replace(&mut self.reach, reach));
        self.sync = sync;
    }

    /// The happens-before pairs `(a, b)` that collectives add beyond [`Plan::edges`].
    ///
    /// A collective is one operation per participating stream, each after its own stream's
    /// frontier (graph edges). No participant completes before every participant has started
    /// (for `broadcast`: before the root has started), so whatever follows a participant —
    /// on its stream, or through an event or `wait_stream` taken after it — also follows the
    /// work that was in the other participants' frontiers (the root's) when the collective
    /// was issued. `a` is such work, `b` the first operation that follows the participant.
    /// The participants themselves are not ordered after the other streams' work (a rank may
    /// start, and touch its own buffers, before the others arrive) nor after each other.
    ///
    /// No CUDA graph holds these as edges (NCCL synchronises inside its kernels), so they
    /// are kept apart: [`Plan::happens_before`], [`Plan::reach`] and the race check include
    /// them; verifying a captured graph compares it with [`Plan::graph_reach`].
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, Communicator, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(c: &Communicator, xs: &mut [DeviceBuffer<f32>]) { stream a; stream b;
    ///     a: fill xs[0] = 1.0f32; all_reduce(c, sum) { a: &mut xs[0], b: &mut xs[1] };
    ///     b: fill xs[1] = 0.0f32; } }
    /// let mut xs = [DeviceBuffer::for_planning(4)?, DeviceBuffer::for_planning(4)?];
    /// let plan = Plan::build(&P::new(&Communicator::for_planning(2), &mut xs))?;
    /// assert!(plan.sync_edges().iter().eq(&[(0, 3)])); // `b`'s fill follows `a`'s, but no edge
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn sync_edges(&self) -> &BTreeSet<(usize, usize)> {
        &self.sync
    }

    /// The relation of [`Plan::edges`] alone (without [`Plan::sync_edges`]): what a
    /// captured graph's edges must give.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; event e;
    ///     a: fill x = 1.0f32; a: record e; b: wait e; b: fill x = 2.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert!(plan.graph_reach().reaches(0, 1)); // without collectives, the same as `reach()`
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn graph_reach(&self) -> &Reach {
        self.graph_reach.as_ref().unwrap_or(&self.reach)
    }

    /// The nested plans of the bodies of the device `while`/`if` blocks of this plan (not of
    /// blocks nested in those: each body plan lists its own), in issue order.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, DeviceFlag, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>, go: &mut DeviceFlag) {
    ///     stream s; s: fill x = 0.0f32; s: while go { s: fill x = 1.0f32; } } }
    /// let (mut x, mut go) = (DeviceBuffer::for_planning(4)?, DeviceFlag::for_planning()?);
    /// let plan = Plan::build(&P::new(&mut x, &mut go))?;
    /// assert_eq!((plan.bodies()[0].block, plan.bodies()[0].plan.len()), (1, 1)); // the `while`'s
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn bodies(&self) -> &[PlanBody] {
        &self.bodies
    }

    /// The nested plan of body `branch` of the block that is operation `block`.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, DeviceFlag, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>, go: &mut DeviceFlag) {
    ///     stream s; s: if go { s: fill x = 1.0f32; } else { s: fill x = 2.0f32; } } }
    /// let (mut x, mut go) = (DeviceBuffer::for_planning(4)?, DeviceFlag::for_planning()?);
    /// let plan = Plan::build(&P::new(&mut x, &mut go))?;
    /// assert!(plan.body(0, 1).is_some_and(|b| b.len() == 1)); // the `else` branch
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn body(&self, block: usize, branch: usize) -> Option<&Plan> {
        self.bodies
            .iter()
            .find(|b| b.block == block && b.branch == branch)
            .map(|b| &b.plan)
    }

    /// The program this plan models.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert_eq!((plan.program().name, plan.program().streams[0].name), ("P", "s"));
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn program(&self) -> &'static Program {
        self.program
    }

    /// The operations, in issue order; an operation's index is its node number.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert_eq!(plan.ops()[0].label, "s: fill x = 1.0f32 #1"); // the statement, its issue
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn ops(&self) -> &[PlanOp] {
        &self.ops
    }

    /// The number of operations.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; event e;
    ///     a: fill x = 1.0f32; a: record e; b: wait e; b: fill x = 2.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert_eq!(plan.len(), 2); // the fills: records and waits are no operations
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the pipeline issued no operation.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>, n: u32) {
    ///     stream s; for _ in 0..n { s: fill x = 1.0f32; } } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?, 0))?;
    /// assert!(plan.is_empty()); // the loop ran no time
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The stream operation `op` was issued on, if it exists.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; event e;
    ///     a: fill x = 1.0f32; a: record e; b: wait e; b: fill x = 2.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert_eq!((plan.stream_of(1), plan.stream_of(2)), (Some(1), None)); // `b`; no such op
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn stream_of(&self, op: usize) -> Option<usize> {
        self.ops.get(op).map(|o| o.stream)
    }

    /// Every edge `(from, to)` of the model, by operation index: exactly the dependencies a
    /// CUDA graph capture of the pipeline has, redundant ones included.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; a: fill x = 1.0f32;
    ///     b: wait_stream a; b: fill x = 2.0f32; a: wait_stream b; a: fill x = 3.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert!(plan.edges().into_iter().eq([(0, 1), (0, 2), (1, 2)])); // (0, 2) is redundant
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn edges(&self) -> BTreeSet<(usize, usize)> {
        self.edges.keys().copied().collect()
    }

    /// Why the edge `from → to` exists, or `None` when there is no such edge.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan, Via};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; event e;
    ///     a: fill x = 1.0f32; a: record e; b: wait e; b: fill x = 2.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert!(matches!(plan.edge_via(0, 1), Some(Via::Event { event: 0, .. })));
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn edge_via(&self, from: usize, to: usize) -> Option<Via> {
        self.edges.get(&(from, to)).copied()
    }

    /// The operations that directly precede `op` (its incoming edges), in increasing order.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; a: fill x = 1.0f32;
    ///     b: wait_stream a; b: fill x = 2.0f32; a: wait_stream b; a: fill x = 3.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert_eq!(plan.predecessors(2), [0, 1]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn predecessors(&self, op: usize) -> Vec<usize> {
        self.predecessors.of(op).to_vec()
    }

    /// The operations that directly follow `op`, in increasing order.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; a: fill x = 1.0f32;
    ///     b: wait_stream a; b: fill x = 2.0f32; a: wait_stream b; a: fill x = 3.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert_eq!(plan.successors(0), [1, 2]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn successors(&self, op: usize) -> &[usize] {
        self.successors.of(op)
    }

    /// Whether `a` must finish before `b` starts: a path of edges leads from `a` to `b`.
    /// False when `a == b` or either is out of range. One lookup in `b`'s vector clock.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; event e;
    ///     a: fill x = 1.0f32; a: record e; b: wait e; b: fill x = 2.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert!(plan.happens_before(0, 1) && !plan.happens_before(1, 0));
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn happens_before(&self, a: usize, b: usize) -> bool {
        self.reach.reaches(a, b)
    }

    /// Whether `a` and `b` are ordered one way or the other (or are the same operation).
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; event e;
    ///     a: fill x = 1.0f32; a: record e; b: wait e; b: fill x = 2.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert!(plan.ordered(1, 0) && !plan.happens_before(1, 0)); // either way round
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn ordered(&self, a: usize, b: usize) -> bool {
        self.reach.ordered(a, b)
    }

    /// The happens-before relation as a whole (the operations' vector clocks, one chain per
    /// stream), to compare with another graph's.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; event e;
    ///     a: fill x = 1.0f32; a: record e; b: wait e; b: fill x = 2.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert!(plan.reach().len() == 2 && plan.reach().descendants(0).eq([1]));
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn reach(&self) -> &Reach {
        &self.reach
    }

    /// Whether the graph on nodes `0..n` with `edges` orders operations exactly as this plan
    /// does (node `i` standing for operation `i`): the equivalence of two programs. With
    /// collectives, the plan's relation of its edges alone ([`Plan::graph_reach`]).
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; a: fill x = 1.0f32;
    ///     b: wait_stream a; b: fill x = 2.0f32; a: wait_stream b; a: fill x = 3.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert!(plan.same_happens_before(&[(0, 1), (1, 2)].into(), 3)); // (0, 2) follows from these
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn same_happens_before(&self, edges: &BTreeSet<(usize, usize)>, n: usize) -> bool {
        n == self.len()
            && edges.iter().all(|&(a, b)| a < n && b < n)
            && self
                .graph_reach()
                .compare(&self.graph_reach().of_edges(edges), 0)
                .is_equal()
    }

    /// The fewest edges with the same happens-before relation: `a → b` is dropped when
    /// another path of edges leads from `a` to `b` (collectives' [`Plan::sync_edges`] are
    /// not edges and not counted).
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; a: fill x = 1.0f32;
    ///     b: wait_stream a; b: fill x = 2.0f32; a: wait_stream b; a: fill x = 3.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert!(plan.transitive_reduction().into_iter().eq([(0, 1), (1, 2)])); // (0, 2) dropped
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn transitive_reduction(&self) -> BTreeSet<(usize, usize)> {
        let mut kept = BTreeSet::new();
        for a in 0..self.len() {
            let succ = self.successors(a);
            for &b in succ {
                if !succ
                    .iter()
                    .any(|&c| c != b && self.graph_reach().reaches(c, b))
                {
                    kept.insert((a, b));
                }
            }
        }
        kept
    }

    /// The operations in an order that respects every edge (petgraph's toposort; issue
    /// order is one such order, and the fallback should the graph ever have a cycle).
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; a: fill x = 1.0f32;
    ///     b: wait_stream a; b: fill x = 2.0f32; a: wait_stream b; a: fill x = 3.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert_eq!(plan.topological_order(), [0, 1, 2]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn topological_order(&self) -> Vec<usize> {
        let mut graph = DiGraph::<usize, ()>::with_capacity(self.len(), self.edges.len());
        for i in 0..self.len() {
            graph.add_node(i);
        }
        for &(a, b) in self.edges.keys() {
            graph.add_edge(NodeIndex::new(a), NodeIndex::new(b), ());
        }
        match petgraph::algo::toposort(&graph, None) {
            Ok(order) => order.into_iter().map(NodeIndex::index).collect(),
            Err(_) => (0..self.ops.len()).collect(),
        }
    }

    /// The origin's frontier after the final join: the operations that work issued on the
    /// origin after the pipeline must follow. Every operation happens before one of them or
    /// is one of them.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b; a: fill x = 1.0f32;
    ///     b: wait_stream a; b: fill x = 2.0f32; a: wait_stream b; a: fill x = 3.0f32; } }
    /// let plan = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?;
    /// assert_eq!(plan.final_frontier(), [1, 2]); // `b`'s fill too, although `a`'s last follows it
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn final_frontier(&self) -> &[usize] {
        &self.final_frontier
    }

    /// Every pair of operations on different streams that touch overlapping memory, at least
    /// one writing, with no happens-before path either way; sorted by the operations' indices.
    ///
    /// Each buffer's accesses are compared per stream through the vector clocks, so the time
    /// grows with the accesses times the streams, plus the races found.
    ///
    /// The races inside the bodies of device blocks follow, each body's with operation
    /// indices of its own plan ([`Plan::bodies`]).
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b;
    ///     a: fill x.slice_mut(0..3) = 1.0f32; b: fill x.slice_mut(2..4) = 2.0f32; } }
    /// let races = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?.races();
    /// assert!(races.len() == 1 && races[0].overlap().bytes == 4); // both write `x[2]`
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn races(&self) -> Vec<Race> {
        let mut races = race::find(self);
        for body in &self.bodies {
            races.extend(body.plan.races());
        }
        races
    }

    /// Fails with [`Error::Race`] listing every race [`races`](Self::races) finds.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Error, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>, n: usize) { stream a; stream b;
    ///     a: fill x.slice_mut(0..n) = 1.0f32; b: fill x.slice_mut(2..4) = 2.0f32; } }
    /// let mut x = DeviceBuffer::for_planning(4)?;
    /// Plan::build(&P::new(&mut x, 2))?.check_races()?; // [0, 2) and [2, 4): apart
    /// assert!(matches!(Plan::build(&P::new(&mut x, 3))?.check_races(), Err(Error::Race(_))));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn check_races(&self) -> Result<(), Error> {
        let races = self.races();
        if races.is_empty() {
            Ok(())
        } else {
            Err(Error::Race(races))
        }
    }

    /// The model in Graphviz DOT: one cluster per stream, nodes labelled with the operation,
    /// a launch's arguments as written and its grid and block as issued (so two launches of
    /// one kernel are told apart), and its `file:line`; waits drawn as dashed edges labelled
    /// with the event or stream.
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let dot = Plan::build(&P::new(&mut DeviceBuffer::for_planning(4)?))?.to_dot();
    /// assert!(dot.starts_with("digraph")); // e.g. `dot -Tsvg` draws it
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn to_dot(&self) -> String {
        dot::render(self)
    }
}
