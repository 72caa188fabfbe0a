//! Pictures of a plan: Graphviz DOT, and the op table of its `Display`.

use std::fmt::{self, Write as _};

use super::{Plan, PlanOp, Via};
use crate::operand::{BufferAccess, DeviceRange, Dim3, LaunchConfig};
use crate::program::{AccessMode, Statement, StatementKind};

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
            let _ = writeln!(
                out,
                "{indent}  {prefix}n{i} [label={}];",
                quote(&node_label(op))
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
            Via::Collective { .. } => {
                let _ = writeln!(
                    out,
                    "{indent}{prefix}n{a} -> {prefix}n{b} [style=dotted, color=purple];"
                );
            }
            Via::WaitStream { stream, .. } | Via::Block { stream, .. } => {
                let name = program.streams.get(stream).map_or("?", |s| s.name);
                let _ = writeln!(
                    out,
                    "{indent}{prefix}n{a} -> {prefix}n{b} [style=dashed, color=darkgreen, label={}];",
                    quote(&format!("wait_stream {name}"))
                );
            }
        }
    }
    for &(a, b) in plan.sync_edges() {
        let _ = writeln!(
            out,
            "{indent}{prefix}n{a} -> {prefix}n{b} [style=dotted, color=purple, label=\"collective\"];"
        );
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
        let which = plan.ops().get(nested.block).map_or_else(
            || "body".to_owned(),
            |o| o.statement.kind.branch_name(nested.branch),
        );
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
                    quote(&which)
                );
            }
        }
    }
}

/// A node's label: the operation, a launch's arguments as written and its grid and block as
/// issued, and `file:line`, one per line.
pub(crate) fn node_label(op: &PlanOp) -> String {
    let mut label = op.label.clone();
    if let Some(args) = op.arguments() {
        label.push('\n');
        label.push_str(args);
    }
    if let Some(config) = op.config {
        let _ = write!(label, "\n{}", Shape(config));
    }
    let loc = op.statement.location;
    let _ = write!(label, "\n{}:{}", loc.file, loc.line);
    label
}

/// A launch statement's arguments as written, like `(&mut x, 2.0f32, n)`: its text after the
/// launch configuration. `None` for other statements.
pub(crate) fn arguments_of(stmt: &'static Statement) -> Option<&'static str> {
    let StatementKind::Launch { kernel } = stmt.kind else {
        return None;
    };
    let text = stmt.text;
    let after = match text.rfind(">>>") {
        Some(i) => &text[i + 3..],
        None => &text[text.find(kernel).map_or(0, |i| i + kernel.len())..],
    };
    let after = after.trim();
    after.starts_with('(').then_some(after)
}

/// `<<<grid, block>>>` (and the dynamic shared memory when there is some).
struct Shape(LaunchConfig);

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.0;
        write!(f, "<<<{}, {}", Dims(c.grid), Dims(c.block))?;
        if c.shared_mem_bytes > 0 {
            write!(f, ", {}", c.shared_mem_bytes)?;
        }
        f.write_str(">>>")
    }
}

/// `x`, `(x, y)` or `(x, y, z)`, as short as the dimensions allow.
struct Dims(Dim3);

impl fmt::Display for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Dim3 { x, y: 1, z: 1 } => write!(f, "{x}"),
            Dim3 { x, y, z: 1 } => write!(f, "({x}, {y})"),
            Dim3 { x, y, z } => write!(f, "({x}, {y}, {z})"),
        }
    }
}

/// `writes device 0 [0x7000..+1024]`.
struct Access(BufferAccess);

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let BufferAccess { range, mode } = self.0;
        let verb = match mode {
            AccessMode::Read => "reads",
            AccessMode::Write => "writes",
        };
        let DeviceRange { device, ptr, bytes } = range;
        match device {
            DeviceRange::HOST => write!(f, "{verb} host")?,
            DeviceRange::PLANNING => write!(f, "{verb} plan-only")?,
            d => write!(f, "{verb} device {d}")?,
        }
        write!(f, " [{ptr:#x}+{bytes}]")
    }
}

/// The op table: a header line, then one line per operation — index, stream, statement text
/// (with the occurrence when the statement was issued more than once), a launch's grid and
/// block, source location, and the memory it touches.
impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let program = self.program();
        writeln!(
            f,
            "plan of `{}`: {} operation(s) on {} stream(s), {} edge(s)",
            program.name,
            self.len(),
            program.streams.len(),
            self.edges.len()
        )?;
        let stream_name = |s: usize| program.streams.get(s).map_or("?", |d| d.name);
        let index_width = self.len().saturating_sub(1).to_string().len();
        let stream_width = self
            .ops()
            .iter()
            .map(|o| stream_name(o.stream).len())
            .max()
            .unwrap_or(0);
        let mut issued = vec![0u32; program.statements.len()];
        for op in self.ops() {
            if let Some(n) = issued.get_mut(op.statement.id) {
                *n = (*n).max(op.occurrence);
            }
        }
        for (i, op) in self.ops().iter().enumerate() {
            write!(
                f,
                "{i:>index_width$}  {:<stream_width$}  {}",
                stream_name(op.stream),
                op.statement.text
            )?;
            if issued.get(op.statement.id).is_some_and(|&n| n > 1) {
                write!(f, " #{}", op.occurrence)?;
            }
            if let Some(config) = op.config {
                write!(f, "  {}", Shape(config))?;
            }
            write!(f, "  at {}", op.statement.location)?;
            for (k, access) in op.accesses.iter().enumerate() {
                f.write_str(if k == 0 { "  " } else { ", " })?;
                write!(f, "{}", Access(*access))?;
            }
            writeln!(f)?;
        }
        Ok(())
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
