//! Graphviz DOT of a plan.

use std::fmt::Write as _;

use super::{Plan, Via};

/// One cluster per stream with its operations in issue order; program-order edges solid,
/// edges made by waits dashed and labelled; the final join as a point on the origin.
pub(super) fn render(plan: &Plan) -> String {
    let program = plan.program();
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quote(program.name));
    out.push_str("  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
    let stream_count = program
        .streams
        .len()
        .max(plan.ops().iter().map(|o| o.stream + 1).max().unwrap_or(0));
    for s in 0..stream_count {
        let name = program.streams.get(s).map_or("?", |d| d.name);
        let _ = writeln!(out, "  subgraph cluster_{s} {{");
        let _ = writeln!(out, "    label={};", quote(&format!("stream {name}")));
        for (i, op) in plan.ops().iter().enumerate().filter(|(_, o)| o.stream == s) {
            let loc = op.statement.location;
            let _ = writeln!(
                out,
                "    n{i} [label={}];",
                quote(&format!("{}\n{}:{}", op.label, loc.file, loc.line))
            );
        }
        if s == 0 && !plan.final_frontier().is_empty() {
            out.push_str("    join [label=\"join\", shape=point];\n");
        }
        out.push_str("  }\n");
    }
    for (&(a, b), via) in &plan.edges {
        match *via {
            Via::Stream => {
                let _ = writeln!(out, "  n{a} -> n{b};");
            }
            Via::Event { event, .. } => {
                let name = program.events.get(event).map_or("?", |e| e.name);
                let _ = writeln!(
                    out,
                    "  n{a} -> n{b} [style=dashed, color=blue, label={}];",
                    quote(&format!("wait {name}"))
                );
            }
            Via::WaitStream { stream, .. } => {
                let name = program.streams.get(stream).map_or("?", |s| s.name);
                let _ = writeln!(
                    out,
                    "  n{a} -> n{b} [style=dashed, color=darkgreen, label={}];",
                    quote(&format!("wait_stream {name}"))
                );
            }
        }
    }
    for &f in plan.final_frontier() {
        let _ = writeln!(out, "  n{f} -> join [style=dotted];");
    }
    out.push_str("}\n");
    out
}

/// `s` as a DOT string literal (shared with the captured graph's pictures).
pub(crate) fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}
