//! Checking a captured graph against its plan: the edges of each graph part (the graph and
//! its device blocks' body graphs) read back from the driver and compared with the plan's,
//! edge for edge and by happens-before ([`check_edges`]).

use std::collections::{BTreeSet, HashMap};

use super::recorded::{decode_range, CapturedOp};
use super::GraphCore;
use crate::error::{Error, OpEdge, OpInfo, Result};
use crate::ffi::graph::NodeKind;
use crate::plan::{Plan, Reach};
use crate::program::{OpRef, StatementKind};

/// What a successful [`Graph::verify`](super::Graph::verify) checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyReport {
    /// The pipeline's name.
    pub pipeline: &'static str,
    /// Operations (graph nodes) compared.
    pub operations: usize,
    /// Edges compared (equal in both).
    pub edges: usize,
}

/// The end of a device block's body graph: the built-in kernel the capture issues on the
/// block's stream after the body's join (the `while` body's `next` kernel, or the empty kernel
/// of an empty branch), and the operations it follows directly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BodyEnd {
    /// The block's index among the operations of the whole capture (for messages).
    pub(crate) block: Option<usize>,
    /// The body's operations (local indices) with an edge into the end.
    pub(crate) follows: BTreeSet<usize>,
}

/// Compares a captured graph's edges (by operation index) with `plan`: exact edge-set
/// equality and equal happens-before relations (reachability). `problems` are differences
/// already found (unknown nodes, counts); any of them fails the check too. For the body graph
/// of a device block, `end` is what its closing kernel follows (see [`end_problems`]).
///
/// The captured graph's vector clocks are computed from its edges in issue order, as the
/// plan's are, and compared operation by operation: where two clocks differ on a stream, the
/// operations of that stream between the two entries are ordered differently.
///
/// Operations in `nodeless` made no graph node (a `call` whose op issued nothing, a copy of
/// no bytes): such an operation leaves its stream where it was, so what follows it in the
/// plan follows what it followed. The plan's edges are compared with those operations
/// contracted ([`contracted`]), and so are the orderings; they are not checked themselves.
pub(crate) fn check_edges(
    plan: &Plan,
    captured: &BTreeSet<(usize, usize)>,
    end: Option<&BodyEnd>,
    nodeless: &BTreeSet<usize>,
    mut problems: Vec<String>,
) -> Result<VerifyReport> {
    let program = plan.program();
    let model = contracted(plan.edges(), nodeless);
    let info = |i: usize| -> Option<OpInfo> {
        plan.ops().get(i).map(|op| OpInfo {
            index: i,
            op: OpRef {
                statement: op.statement,
                occurrence: op.occurrence,
            },
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
    if let Some(end) = end {
        let reach = plan.graph_reach().of_edges(captured.iter());
        problems.extend(end_problems(plan, &reach, end, nodeless));
    }
    let differing = if nodeless.is_empty() {
        let reach = plan.graph_reach().of_edges(captured.iter());
        plan.graph_reach().compare(&reach, 8)
    } else {
        // Compared on the operations with nodes: those without order nothing in either graph
        // (the plan's edges are contracted around them, the capture has none).
        let (target, kept) = plan.graph_reach().restricted(nodeless, model.iter());
        let (reach, _) = plan.graph_reach().restricted(nodeless, captured.iter());
        let mut differing = target.compare(&reach, 8);
        for pair in &mut differing.examples {
            *pair = (kept[pair.0], kept[pair.1]);
        }
        differing
    };
    if !differing.is_equal() {
        let pairs: Vec<String> = differing
            .examples
            .iter()
            .map(|&(a, b)| match (info(a), info(b)) {
                (Some(x), Some(y)) => format!("{x} / {y}"),
                _ => format!("{a} / {b}"),
            })
            .collect();
        problems.push(format!(
            "{}{} pair(s) of operations are ordered differently (happens-before differs), e.g. {}",
            if differing.at_least { "at least " } else { "" },
            differing.count,
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

/// What is wrong with the end of a body graph whose edges have the relation `reach`, compared
/// with the body's plan: the body is a nested pipeline, joined into the block's stream before
/// the end, so every operation of the body must happen before the end (through the edges into
/// it), and the end may follow directly only operations of the plan's join.
///
/// The end need not follow every operation of the plan's join directly, as the model's join
/// (the block's stream waiting for every other stream) would add edges from all of them: the
/// capture's join leaves out a stream whose whole work the block's stream waited for already
/// (the stream's last command recorded an event that the block's stream then waited on), so
/// an operation of that stream which the block's stream has run past since (by issuing an
/// operation after the wait) reaches the end through that operation instead. Either way the
/// next iteration starts after all of the body; only an operation that does not reach the end
/// at all races with it.
///
/// Operations in `nodeless` made no node: none of them is expected before the end, and one of
/// the plan's join stands for the operations it followed (as in [`contracted`]).
fn end_problems(
    plan: &Plan,
    reach: &Reach,
    end: &BodyEnd,
    nodeless: &BTreeSet<usize>,
) -> Vec<String> {
    let mut join: BTreeSet<usize> = BTreeSet::new();
    let preds = adjacency(&plan.edges(), nodeless, true);
    for &op in plan.final_frontier() {
        if nodeless.contains(&op) {
            beyond_nodeless(op, &preds, nodeless, &mut join);
        } else {
            join.insert(op);
        }
    }
    let body = match end.block {
        Some(b) => format!("the end of the body of block {b}"),
        None => "the end of the body".to_owned(),
    };
    let mut problems = Vec::new();
    let unordered: BTreeSet<usize> = (0..plan.len())
        .filter(|&op| {
            !nodeless.contains(&op)
                && !end.follows.contains(&op)
                && !end.follows.iter().any(|&f| reach.reaches(op, f))
        })
        .collect();
    if !unordered.is_empty() {
        problems.push(format!(
            "{body} follows operations {:?}, which leaves operations {:?} unordered before it (the plan's join is {:?}): the next iteration could start before they end",
            end.follows, unordered, join
        ));
    }
    let stray: BTreeSet<usize> = end.follows.difference(&join).copied().collect();
    if !stray.is_empty() {
        problems.push(format!(
            "{body} follows operations {:?}, of which {:?} are not in the plan's join {:?}",
            end.follows, stray, join
        ));
    }
    problems
}

/// Checks a captured graph's edges, given by operation index, against `plan`: the edge sets
/// must be equal and so must the happens-before relations.
/// [`Graph::verify`](super::Graph::verify) reads the edges back from the driver and calls
/// this; it is public so that the comparison can be tested (and used) without a GPU.
#[cfg(feature = "testing")]
pub fn verify_edges(plan: &Plan, captured: &BTreeSet<(usize, usize)>) -> Result<VerifyReport> {
    check_edges(plan, captured, None, &BTreeSet::new(), Vec::new())
}

/// Checks the body graph of a device block as [`Graph::verify`](super::Graph::verify) does,
/// given by hand: its edges by operation index against the body's plan `plan` (as
/// [`verify_edges`]), and the operations `end` that the body's closing built-in kernel follows
/// directly. Every operation of the body must happen before that kernel, and it may follow
/// only operations of the plan's join ([`Plan::final_frontier`]), but not necessarily all of
/// them: one that reaches another it follows is ordered before it all the same.
#[cfg(feature = "testing")]
pub fn verify_body_edges(
    plan: &Plan,
    captured: &BTreeSet<(usize, usize)>,
    end: &BTreeSet<usize>,
) -> Result<VerifyReport> {
    let end = BodyEnd {
        block: None,
        follows: end.clone(),
    };
    check_edges(plan, captured, Some(&end), &BTreeSet::new(), Vec::new())
}

/// Edges by operation index.
pub(super) type EdgeSet = BTreeSet<(usize, usize)>;

/// `edges` with the operations in `nodeless` contracted: an edge into one of them becomes
/// edges to whatever it leads to past it (through others of them too), the edges out of it
/// go. An operation that made no graph node leaves its stream depending on what it depended
/// on, so the driver's edges are these.
pub(crate) fn contracted(edges: EdgeSet, nodeless: &BTreeSet<usize>) -> EdgeSet {
    if nodeless.is_empty() {
        return edges;
    }
    let succs = adjacency(&edges, nodeless, false);
    let mut out = EdgeSet::new();
    for &(a, b) in &edges {
        if nodeless.contains(&a) {
            continue;
        }
        if !nodeless.contains(&b) {
            out.insert((a, b));
            continue;
        }
        let mut past = BTreeSet::new();
        beyond_nodeless(b, &succs, nodeless, &mut past);
        out.extend(past.into_iter().map(|c| (a, c)));
    }
    out
}

/// The successors (`backward`: predecessors) along `edges` of each operation in `nodeless`.
fn adjacency(
    edges: &EdgeSet,
    nodeless: &BTreeSet<usize>,
    backward: bool,
) -> HashMap<usize, Vec<usize>> {
    let mut next: HashMap<usize, Vec<usize>> = HashMap::new();
    for &(a, b) in edges {
        let (from, to) = if backward { (b, a) } else { (a, b) };
        if nodeless.contains(&from) {
            next.entry(from).or_default().push(to);
        }
    }
    next
}

/// Adds to `out` the operations not in `nodeless` that `op` (in it) leads to along `next`
/// ([`adjacency`]) through operations in `nodeless` only.
fn beyond_nodeless(
    op: usize,
    next: &HashMap<usize, Vec<usize>>,
    nodeless: &BTreeSet<usize>,
    out: &mut BTreeSet<usize>,
) {
    let mut seen = BTreeSet::from([op]);
    let mut stack = vec![op];
    while let Some(x) = stack.pop() {
        for &y in next.get(&x).map_or(&[][..], Vec::as_slice) {
            if !nodeless.contains(&y) {
                out.insert(y);
            } else if seen.insert(y) {
                stack.push(y);
            }
        }
    }
}

/// The edges of one graph part by its operations' local indices, what else was found, and
/// which operations lead straight into a body's closing built-in kernel.
pub(super) struct PartEdges {
    pub(super) edges: EdgeSet,
    problems: Vec<String>,
    into_sink: BTreeSet<usize>,
    /// The operations that made no graph node (see [`check_edges`]).
    pub(super) nodeless: BTreeSet<usize>,
}

impl GraphCore {
    /// The graph's edges by operation index, plus problems (nodes that are no operation).
    pub(super) fn captured_edges(&self) -> Result<(EdgeSet, Vec<String>)> {
        let part = self.part_edges(0)?;
        Ok((part.edges, part.problems))
    }

    /// The edges of graph part `part` (0: the graph; `k + 1`: body graph `k`) by the local
    /// indices of its operations. A block's built-in kernel (and second `IF` node) counts as
    /// the block's operation; the closing kernel of a body is no operation (edges into it are
    /// reported apart).
    pub(super) fn part_edges(&self, part: usize) -> Result<PartEdges> {
        let mut problems = Vec::new();
        let map = self.node_map()?;
        let members = self.members(part);
        let local: HashMap<usize, usize> =
            members.iter().enumerate().map(|(l, &i)| (i, l)).collect();
        let mut index: HashMap<usize, usize> = HashMap::new();
        let mut nodeless = BTreeSet::new();
        for (l, &i) in members.iter().enumerate() {
            let op = &self.recorded.ops[i];
            match (map.get(i).copied().flatten(), op.statement.kind) {
                (Some(n), _) => {
                    index.insert(n.key(), l);
                }
                // A call whose op issued nothing, a copy of no bytes, a temporary placed in a
                // graph set's memory.
                (None, StatementKind::Call { .. } | StatementKind::Copy) => {
                    nodeless.insert(l);
                }
                (None, StatementKind::Alloc { .. } | StatementKind::Free { .. })
                    if op.created == 0 =>
                {
                    nodeless.insert(l);
                }
                (None, _) => problems.push(format!(
                    "operation {l} (`{}` #{} at {}) made no graph node",
                    op.statement.text, op.occurrence, op.statement.location
                )),
            }
        }
        for n in self.recorded.internal().iter().filter(|n| n.part == part) {
            if let Some(&l) = local.get(&n.op) {
                index.insert(n.node.key(), l);
            }
        }
        let body = part.checked_sub(1).and_then(|k| self.bodies().get(k));
        let sink = body.and_then(|b| b.sink).map(|n| n.key());
        let filler = body.and_then(|b| b.filler).map(|n| n.key());
        let (nodes, edges) = match body {
            None => (
                self.raw
                    .nodes()
                    .map_err(|e| Error::driver("cuGraphGetNodes", e))?,
                self.raw
                    .edges()
                    .map_err(|e| Error::driver("cuGraphGetEdges", e))?,
            ),
            Some(b) => (
                self.raw
                    .body_nodes(b.graph)
                    .map_err(|e| Error::driver("cuGraphGetNodes", e))?,
                self.raw
                    .body_edges(b.graph)
                    .map_err(|e| Error::driver("cuGraphGetEdges", e))?,
            ),
        };
        let unknown = nodes
            .iter()
            .filter(|n| {
                !index.contains_key(&n.key()) && Some(n.key()) != sink && Some(n.key()) != filler
            })
            .count();
        // The node map came from the creation order: check that each node does what its
        // operation did (kind, and the function of a launch). Blocks' nodes are conditional.
        for &i in members {
            let op = &self.recorded.ops[i];
            if op.node_known() {
                continue; // a block's or a collective's nodes are its own kinds
            }
            let Some(node) = map.get(i).copied().flatten() else {
                continue;
            };
            let kind = self
                .raw
                .node_kind(node)
                .map_err(|e| Error::driver("cuGraphNodeGetType", e))?;
            let fits = match (op.statement.kind, kind) {
                (StatementKind::Launch { .. }, Some(NodeKind::Kernel(f))) => {
                    self.launch_shape(i).is_none_or(|shape| shape.func == f)
                }
                (StatementKind::Copy, Some(NodeKind::Memcpy))
                | (StatementKind::Fill, Some(NodeKind::Memset))
                | (StatementKind::Host, Some(NodeKind::Host)) => true,
                // A temporary's node holds the memory its statement was given.
                (StatementKind::Alloc { .. }, Some(NodeKind::MemAlloc(ptr)))
                | (StatementKind::Free { .. }, Some(NodeKind::MemFree(ptr))) => {
                    let (start, len) = op.values;
                    self.recorded
                        .values
                        .get(start as usize..(start as usize).saturating_add(len as usize))
                        .and_then(decode_range)
                        .is_some_and(|r| r.ptr == ptr)
                }
                _ => false,
            };
            if !fits {
                problems.push(format!(
                    "operation {i} (`{}` #{} at {}) is mapped to a graph node of another kind ({kind:?}): the node map is wrong",
                    op.statement.text, op.occurrence, op.statement.location
                ));
            }
        }
        if unknown > 0 {
            problems.push(format!(
                "{unknown} node(s) of the graph{} belong to no statement: work was issued into the capture by code outside the pipeline's statements",
                if part == 0 { "" } else { "'s block body" }
            ));
        }
        let mut set = BTreeSet::new();
        let mut into_sink = BTreeSet::new();
        for (a, b) in edges {
            match (index.get(&a.key()), index.get(&b.key())) {
                (Some(&x), Some(&y)) if x != y => {
                    set.insert((x, y));
                }
                (Some(&x), None) if Some(b.key()) == sink => {
                    into_sink.insert(x);
                }
                _ => {}
            }
        }
        Ok(PartEdges {
            edges: set,
            problems,
            into_sink,
            nodeless,
        })
    }

    /// Checks the graph and, recursively, its blocks' body graphs against `plan` (what
    /// [`Graph::verify`](super::Graph::verify) does).
    pub(crate) fn verify_against(&self, plan: &Plan) -> Result<VerifyReport> {
        self.verify_part(0, plan)
    }

    /// Checks graph part `part` against `plan`, then each of its blocks' bodies against the
    /// plan's nested plans.
    fn verify_part(&self, part: usize, plan: &Plan) -> Result<VerifyReport> {
        let PartEdges {
            edges,
            mut problems,
            into_sink,
            nodeless,
        } = self.part_edges(part)?;
        let members = self.members(part);
        let ops: Vec<&CapturedOp> = members.iter().map(|&i| &self.recorded.ops[i]).collect();
        if plan.len() != ops.len() {
            problems.push(format!(
                "the plan has {} operation(s), the capture {}: the pipeline issued different work",
                plan.len(),
                ops.len()
            ));
        } else if let Some((i, (p, c))) =
            plan.ops().iter().zip(&ops).enumerate().find(|(_, (p, c))| {
                p.statement.id != c.statement.id || p.occurrence != c.occurrence
            })
        {
            problems.push(format!(
                "operation {i} is `{}` in the plan but `{}` in the capture: the pipeline issued different work",
                p.statement.text, c.statement.text
            ));
        }
        let body = part.checked_sub(1).and_then(|k| self.bodies().get(k));
        let end = body.filter(|b| b.sink.is_some()).map(|b| BodyEnd {
            block: Some(b.block),
            follows: into_sink,
        });
        let mut report = check_edges(plan, &edges, end.as_ref(), &nodeless, problems)?;
        for nested in plan.bodies() {
            let Some(&flat) = members.get(nested.block) else {
                continue;
            };
            let found = self
                .bodies()
                .iter()
                .position(|b| b.block == flat && b.branch == nested.branch);
            let Some(k) = found else {
                return Err(Error::GraphMismatch {
                    pipeline: self.program.name,
                    missing: Vec::new(),
                    extra: Vec::new(),
                    problems: vec![format!(
                        "the plan has body {} of block `{}`, the capture none",
                        nested.branch,
                        plan.ops()[nested.block].statement.text
                    )],
                });
            };
            let inner = self.verify_part(k + 1, &nested.plan)?;
            report.operations += inner.operations;
            report.edges += inner.edges;
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(edges: &[(usize, usize)]) -> EdgeSet {
        edges.iter().copied().collect()
    }

    #[test]
    fn operations_that_made_no_node_are_contracted() {
        // 0 -> 1 -> 2 -> 3 on a stream, 4 -> 2 from another: 1 and 2 made no node.
        let edges = set(&[(0, 1), (1, 2), (2, 3), (4, 2)]);
        let nodeless = BTreeSet::from([1, 2]);
        assert_eq!(contracted(edges.clone(), &nodeless), set(&[(0, 3), (4, 3)]));
        // None: the edges as they are.
        assert_eq!(contracted(edges.clone(), &BTreeSet::new()), edges);
        // One with nothing before it leaves what follows it a root.
        let first = set(&[(0, 1), (1, 2), (3, 2)]);
        assert_eq!(
            contracted(first, &BTreeSet::from([0])),
            set(&[(1, 2), (3, 2)])
        );
        // One at the end takes its incoming edges with it.
        let last = set(&[(0, 1), (1, 2)]);
        assert_eq!(contracted(last, &BTreeSet::from([2])), set(&[(0, 1)]));
    }
}
