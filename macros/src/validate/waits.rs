//! Waits: on events recorded before them, on streams other than their own.

use std::collections::BTreeSet;

use crate::model::{Errors, Kind, Node, Program};

/// A `wait` names an event that some statement may have recorded before it.
///
/// Before means earlier in program order (in any branch), or later in the body of a loop
/// enclosing the wait (recorded by the previous iteration; the first iteration's wait is then a
/// no-op, as CUDA defines it).
pub(super) fn waits_follow_records(program: &Program, errors: &mut Errors) {
    fn records(nodes: &[Node], program: &Program, out: &mut BTreeSet<usize>) {
        for node in nodes {
            match node {
                Node::Stmt(i) => {
                    let stmt = &program.statements[*i];
                    if let (Kind::Record { event, .. }, false) = (&stmt.kind, stmt.unresolved) {
                        out.insert(*event);
                    }
                }
                Node::For { body, .. } => records(body, program, out),
                Node::If {
                    then, otherwise, ..
                } => {
                    records(then, program, out);
                    records(otherwise.as_deref().unwrap_or_default(), program, out);
                }
                Node::Block { bodies, .. } => {
                    for body in bodies {
                        records(body, program, out);
                    }
                }
            }
        }
    }
    fn walk(
        nodes: &[Node],
        program: &Program,
        recorded: &mut BTreeSet<usize>,
        errors: &mut Errors,
    ) {
        for node in nodes {
            match node {
                Node::Stmt(i) => {
                    let stmt = &program.statements[*i];
                    if stmt.unresolved {
                        continue;
                    }
                    match &stmt.kind {
                        Kind::Record { event, .. } => {
                            recorded.insert(*event);
                        }
                        // An element picked at run time may be one not recorded yet: CUDA's
                        // wait for it is a no-op then, as in a loop's first iteration.
                        Kind::Wait { event, name }
                            if !recorded.contains(event) && !stmt.alternative =>
                        {
                            let label = program
                                .events
                                .get(*event)
                                .map_or(name.to_string(), |e| e.label());
                            errors.spanned(
                                name,
                                format!(
                                    "`{}` waits for event `{label}`, which no earlier statement \
                                     records; record it first, e.g. `STREAM: record {label};` \
                                     after the work to wait for",
                                    stmt.text
                                ),
                            );
                        }
                        _ => {}
                    }
                }
                Node::For { body, .. } => {
                    records(body, program, recorded);
                    walk(body, program, recorded, errors);
                }
                Node::If {
                    then, otherwise, ..
                } => {
                    let bodies = [then.as_slice(), otherwise.as_deref().unwrap_or_default()];
                    alternatives(&bodies, program, recorded, errors);
                }
                Node::Block { bodies, .. } => {
                    let bodies: Vec<&[Node]> = bodies.iter().map(Vec::as_slice).collect();
                    alternatives(&bodies, program, recorded, errors);
                }
            }
        }
    }
    /// Bodies of which one runs: each sees what was recorded before; after them, what any
    /// of them records may have been recorded.
    fn alternatives(
        bodies: &[&[Node]],
        program: &Program,
        recorded: &mut BTreeSet<usize>,
        errors: &mut Errors,
    ) {
        let mut after = recorded.clone();
        for body in bodies {
            let mut inside = recorded.clone();
            walk(body, program, &mut inside, errors);
            after.extend(inside);
        }
        *recorded = after;
    }
    walk(&program.body, program, &mut BTreeSet::new(), errors);
}

/// `wait_stream` names a stream other than the one it is issued on.
pub(super) fn wait_stream_names_another_stream(program: &Program, errors: &mut Errors) {
    for stmt in program.statements.iter().filter(|s| !s.unresolved) {
        if let Kind::WaitStream { stream, name } = &stmt.kind
            && *stream == stmt.stream
            && *name == stmt.stream_name
        {
            errors.spanned(
                name,
                format!(
                    "stream `{name}` cannot wait for itself: its work is already in order; \
                         name another stream"
                ),
            );
        }
    }
}
