//! Drawing captured graphs in Graphviz DOT: a graph with its device blocks' body graphs as
//! nested clusters ([`GraphCore::to_dot`]), and a captured edge set beside its plan.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::verify::EdgeSet;
use super::GraphCore;
use crate::error::Result;
use crate::plan::dot::quote;
use crate::plan::Plan;
use crate::program::{Program, StatementKind};

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
    pub(super) which: String,
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
                    quote(&body.which)
                );
            }
        }
    }
}

impl GraphCore {
    /// The graph in DOT (see [`Graph::to_dot`](super::Graph::to_dot)).
    pub(super) fn to_dot(&self) -> Result<String> {
        let top = self.dot_part(0)?;
        let mut out = String::new();
        let _ = writeln!(out, "digraph {} {{", quote(self.program.name));
        out.push_str("  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
        render_part(&mut out, self.program, &top, "c");
        out.push_str("}\n");
        Ok(out)
    }

    /// Graph part `part` (0: the graph; `k + 1`: body graph `k`) for the DOT picture, with
    /// the body graphs of its blocks, recursively.
    fn dot_part(&self, part: usize) -> Result<DotPart> {
        let members = self.members(part);
        let labels = members
            .iter()
            .map(|&i| {
                let op = &self.recorded.ops[i];
                let name = match op.statement.kind {
                    StatementKind::Launch { kernel } => format!("launch {kernel}"),
                    _ => op.statement.text.to_string(),
                };
                // A launch's arguments as written tell two launches of one kernel apart.
                let arguments = crate::plan::dot::arguments_of(op.statement)
                    .map(|a| format!("\n{a}"))
                    .unwrap_or_default();
                let loc = op.statement.location;
                (
                    format!(
                        "{name} #{}{arguments}\n{}:{}",
                        op.occurrence, loc.file, loc.line
                    ),
                    op.stream(),
                )
            })
            .collect();
        let edges = self.part_edges(part)?.edges;
        let mut bodies = Vec::new();
        for (k, body) in self.bodies().iter().enumerate() {
            let Some(block) = members.iter().position(|&i| i == body.block) else {
                continue;
            };
            let which = self.recorded.ops[body.block]
                .statement
                .kind
                .branch_name(body.branch);
            bodies.push(DotBody {
                block,
                which,
                part: self.dot_part(k + 1)?,
            });
        }
        Ok(DotPart {
            labels,
            edges,
            bodies,
        })
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
                    which: "then".into(),
                    part: leaf("yes", s1),
                },
                DotBody {
                    block: 1,
                    which: "else".into(),
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
                which: "body".into(),
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
