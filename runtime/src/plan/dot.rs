//! Graphviz DOT of a plan.

use std::fmt::Write as _;

use super::{Plan, Via};

/// One cluster per stream with its operations in issue order; program-order edges solid,
/// edges made by waits dashed and labelled; the final join as a point on the origin. The
/// bodies of device blocks are clusters of their own (drawn the same way, recursively), with
/// a dotted edge from the block to each operation its body starts with.
pub(super) fn render(plan: &Plan) -> String {
    let program = plan.program();
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quote(program.name));
    out.push_str("  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n");
    body(plan, "", "  ", &mut out);
    out.push_str("}\n");
    out
}

/// The streams, edges and nested bodies of `plan`, its nodes named `{prefix}n{i}`.
fn body(plan: &Plan, prefix: &str, indent: &str, out: &mut String) {
    let program = plan.program();
    let stream_count = program
        .streams
        .len()
        .max(plan.ops().iter().map(|o| o.stream + 1).max().unwrap_or(0));
    for s in 0..stream_count {
        let name = program.streams.get(s).map_or("?", |d| d.name);
        let _ = writeln!(out, "{indent}subgraph cluster_{prefix}{s} {{");
        let _ = writeln!(out, "{indent}  label={};", quote(&format!("stream {name}")));
        for (i, op) in plan.ops().iter().enumerate().filter(|(_, o)| o.stream == s) {
            let loc = op.statement.location;
            let _ = writeln!(
                out,
                "{indent}  {prefix}n{i} [label={}];",
                quote(&format!("{}\n{}:{}", op.label, loc.file, loc.line))
            );
        }
        if s == 0 && !plan.final_frontier().is_empty() {
            let _ = writeln!(out, "{indent}  {prefix}join [label=\"join\", shape=point];");
        }
        let _ = writeln!(out, "{indent}}}");
    }
    for (&(a, b), via) in &plan.edges {
        match *via {
            Via::Stream => {
                let _ = writeln!(out, "{indent}{prefix}n{a} -> {prefix}n{b};");
            }
            Via::Event { event, .. } => {
                let name = program.events.get(event).map_or("?", |e| e.name);
                let _ = writeln!(
                    out,
                    "{indent}{prefix}n{a} -> {prefix}n{b} [style=dashed, color=blue, label={}];",
                    quote(&format!("wait {name}"))
                );
            }
            Via::WaitStream { stream, .. } => {
                let name = program.streams.get(stream).map_or("?", |s| s.name);
                let _ = writeln!(
                    out,
                    "{indent}{prefix}n{a} -> {prefix}n{b} [style=dashed, color=darkgreen, label={}];",
                    quote(&format!("wait_stream {name}"))
                );
            }
        }
    }
    for &f in plan.final_frontier() {
        let _ = writeln!(out, "{indent}{prefix}n{f} -> {prefix}join [style=dotted];");
    }
    for (k, nested) in plan.bodies().iter().enumerate() {
        let inner = format!("{prefix}b{k}_");
        let block = plan
            .ops()
            .get(nested.block)
            .map_or("?", |op| op.label.as_str());
        let which = match (
            nested.branch,
            plan.ops().get(nested.block).map(|o| o.statement.kind),
        ) {
            (_, Some(crate::program::StatementKind::While { .. })) => "body",
            (0, _) => "then",
            _ => "else",
        };
        let _ = writeln!(out, "{indent}subgraph cluster_{inner}body {{");
        let _ = writeln!(
            out,
            "{indent}  label={};",
            quote(&format!("{which} of {block}"))
        );
        let _ = writeln!(out, "{indent}  style=dashed;");
        body(&nested.plan, &inner, &format!("{indent}  "), out);
        let _ = writeln!(out, "{indent}}}");
        for i in 0..nested.plan.len() {
            if nested.plan.predecessors(i).is_empty() {
                let _ = writeln!(
                    out,
                    "{indent}{prefix}n{} -> {inner}n{i} [style=dotted, label={}];",
                    nested.block,
                    quote(which)
                );
            }
        }
    }
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
