//! Checking a captured graph against its plan ([`verify_edges`]) and drawing the two in DOT.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::error::{Error, OpEdge, OpInfo, Result};
use crate::plan::dot::quote;
use crate::plan::{Plan, Reach};
use crate::program::OpRef;
use crate::program::Program;

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
pub(crate) fn check_edges(
    plan: &Plan,
    captured: &BTreeSet<(usize, usize)>,
    end: Option<&BodyEnd>,
    mut problems: Vec<String>,
) -> Result<VerifyReport> {
    let program = plan.program();
    let model = plan.edges();
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
    let reach = plan.graph_reach().of_edges(captured.iter());
    if let Some(end) = end {
        problems.extend(end_problems(plan, &reach, end));
    }
    let differing = plan.graph_reach().compare(&reach, 8);
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
fn end_problems(plan: &Plan, reach: &Reach, end: &BodyEnd) -> Vec<String> {
    let join: BTreeSet<usize> = plan.final_frontier().iter().copied().collect();
    let body = match end.block {
        Some(b) => format!("the end of the body of block {b}"),
        None => "the end of the body".to_owned(),
    };
    let mut problems = Vec::new();
    let unordered: BTreeSet<usize> = (0..plan.len())
        .filter(|&op| {
            !end.follows.contains(&op) && !end.follows.iter().any(|&f| reach.reaches(op, f))
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
    check_edges(plan, captured, None, Vec::new())
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
    check_edges(plan, captured, Some(&end), Vec::new())
}

/// The captured graph in Graphviz DOT with `plan`'s operation names: one cluster per stream,
/// edges that the plan lacks in red.
#[cfg(feature = "testing")]
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
        .map(|op| (crate::plan::dot::node_label(op), op.stream))
        .collect()
}

/// Nodes (clustered by stream) and `edges`; edges not in `other` are drawn red.
pub(super) fn render_body(
    out: &mut String,
    program: &Program,
    labels: &[(String, usize)],
    edges: &BTreeSet<(usize, usize)>,
    other: &BTreeSet<(usize, usize)>,
    prefix: &str,
) {
    let streams = labels.iter().map(|l| l.1 + 1).max().unwrap_or(0);
    for s in 0..streams {
        if !labels.iter().any(|l| l.1 == s) {
            continue; // a stream with no operation here (in a body, say) draws nothing
        }
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
pub(super) type EdgeSet = BTreeSet<(usize, usize)>;

/// One graph part of a captured graph for [`render_part`]: its operations' labels and
/// streams, its edges by local index, and the body graphs of its device blocks.
#[derive(Debug, Default)]
pub(super) struct DotPart {
    pub(super) labels: Vec<(String, usize)>,
    pub(super) edges: EdgeSet,
    pub(super) bodies: Vec<DotBody>,
}

/// A body graph of a device block of a [`DotPart`].
#[derive(Debug)]
pub(super) struct DotBody {
    /// The block's local index in the enclosing part.
    pub(super) block: usize,
    /// `body` (a `while`), `then` or `else`.
    pub(super) which: &'static str,
    pub(super) part: DotPart,
}

/// Draws `part` (nodes named `{prefix}{i}`, clustered by stream) and, recursively, each body
/// graph of its device blocks as a dashed cluster of its own (`cluster_{prefix}b{k}_body`,
/// nodes named `{prefix}b{k}_{i}`), with a dotted edge from the block to each operation its
/// body starts with, as [`Plan::to_dot`](crate::Plan::to_dot) draws nested plans.
pub(super) fn render_part(out: &mut String, program: &Program, part: &DotPart, prefix: &str) {
    render_body(out, program, &part.labels, &part.edges, &part.edges, prefix);
    for (k, body) in part.bodies.iter().enumerate() {
        let inner = format!("{prefix}b{k}_");
        let block = part
            .labels
            .get(body.block)
            .map_or("?", |(l, _)| l.lines().next().unwrap_or("?"));
        let _ = writeln!(out, "  subgraph cluster_{inner}body {{");
        let _ = writeln!(
            out,
            "    label={};",
            quote(&format!("{} of {block}", body.which))
        );
        out.push_str("    style=dashed;\n");
        render_part(out, program, &body.part, &inner);
        out.push_str("  }\n");
        for i in 0..body.part.labels.len() {
            if !body.part.edges.iter().any(|&(_, b)| b == i) {
                let _ = writeln!(
                    out,
                    "  {prefix}{} -> {inner}{i} [style=dotted, label={}];",
                    body.block,
                    quote(body.which)
                );
            }
        }
    }
}

#[cfg(test)]
mod dot_tests {
    use super::*;
    use crate::plan::ProgramBuilder;

    /// A `while` on `s0` whose body holds a launch and an `if`/`else` with a launch in each
    /// branch, after a launch on `s1`.
    #[test]
    fn bodies_are_nested_clusters() {
        let mut b = ProgramBuilder::new("Nest");
        let s0 = b.stream("s0");
        let s1 = b.stream("s1");
        b.launch(s1, "first", &[]);
        let program = b.build();
        let leaf = |name: &str, stream| DotPart {
            labels: vec![(format!("launch {name} #1\nf.rs:1"), stream)],
            ..DotPart::default()
        };
        let inner_if = DotPart {
            labels: vec![
                ("launch body #1\nf.rs:3".into(), s0),
                ("s1: if g #1\nf.rs:4".into(), s1),
            ],
            edges: BTreeSet::new(),
            bodies: vec![
                DotBody {
                    block: 1,
                    which: "then",
                    part: leaf("yes", s1),
                },
                DotBody {
                    block: 1,
                    which: "else",
                    part: leaf("no", s0),
                },
            ],
        };
        let top = DotPart {
            labels: vec![
                ("launch first #1\nf.rs:1".into(), s1),
                ("s0: while f #1\nf.rs:2".into(), s0),
            ],
            edges: [(0, 1)].into_iter().collect(),
            bodies: vec![DotBody {
                block: 1,
                which: "body",
                part: inner_if,
            }],
        };
        let mut out = String::new();
        render_part(&mut out, program, &top, "c");
        // The outer graph, its body and the body's two branches, each a cluster.
        assert!(out.contains("subgraph cluster_cb0_body {"), "{out}");
        assert!(out.contains("label=\"body of s0: while f #1\";"), "{out}");
        assert!(out.contains("subgraph cluster_cb0_b0_body {"), "{out}");
        assert!(out.contains("label=\"then of s1: if g #1\";"), "{out}");
        assert!(out.contains("subgraph cluster_cb0_b1_body {"), "{out}");
        assert!(out.contains("label=\"else of s1: if g #1\";"), "{out}");
        // Streams inside a body are clusters of their own, nodes named by their part.
        assert!(out.contains("subgraph cluster_cb0_0 {"), "{out}");
        assert!(
            out.contains("cb0_b0_0 [label=\"launch yes #1\\nf.rs:1\"];"),
            "{out}"
        );
        // The block leads to the operations its bodies start with.
        assert!(out.contains("c0 -> c1;"), "{out}");
        assert!(
            out.contains("c1 -> cb0_0 [style=dotted, label=\"body\"];"),
            "{out}"
        );
        assert!(
            out.contains("c1 -> cb0_1 [style=dotted, label=\"body\"];"),
            "{out}"
        );
        assert!(
            out.contains("cb0_1 -> cb0_b0_0 [style=dotted, label=\"then\"];"),
            "{out}"
        );
        assert!(
            out.contains("cb0_1 -> cb0_b1_0 [style=dotted, label=\"else\"];"),
            "{out}"
        );
        // Braces balance.
        assert_eq!(out.matches('{').count(), out.matches('}').count(), "{out}");
    }
}
