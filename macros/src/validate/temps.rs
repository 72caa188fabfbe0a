//! Temporaries are written before they are read: their contents are undefined when each run
//! allocates them.

use crate::model::{Errors, Kind, Mode, Node, Program};

/// A statement that reads a temporary without writing it, with no write of the temporary
/// earlier in source order, reads what no run defined: an error on the read. With earlier
/// writes that all sit in a host `for`/`if` or a device block that does not also hold the
/// read (a loop may run no iteration, a branch may not be taken), the read may come first: a
/// warning.
pub(super) fn temps_are_written_before_read(program: &Program, errors: &mut Errors) {
    if program.temps.is_empty() {
        return;
    }
    let scopes = scopes(program);
    for temp in &program.temps {
        let mut writes: Vec<usize> = Vec::new();
        for stmt in &program.statements {
            if matches!(stmt.kind, Kind::Alloc { .. } | Kind::Free { .. }) {
                continue;
            }
            let mine: Vec<_> = stmt
                .accesses
                .iter()
                .filter(|a| a.buffer == temp.name)
                .collect();
            if mine.is_empty() {
                continue;
            }
            if mine.iter().any(|a| a.mode == Mode::Write) {
                writes.push(stmt.id);
                continue;
            }
            let Some(read) = mine.first() else { continue };
            if writes.is_empty() {
                errors.spanned(
                    &read.at,
                    format!(
                        "temporary `{}` is read here before anything writes it: its contents are \
                         undefined when a run allocates it; write it first (`fill {} = …`, a \
                         `copy` into it, or a kernel or `call` given `&mut {}`)",
                        temp.name, temp.name, temp.name
                    ),
                );
                continue;
            }
            let within = |w: &usize| {
                let (outer, inner) = (&scopes[*w], &scopes[stmt.id]);
                outer.len() <= inner.len() && inner[..outer.len()] == outer[..]
            };
            if !writes.iter().any(within) {
                errors.warn(
                    stmt.first,
                    "temporary_may_be_read_before_written",
                    format!(
                        "`{}` may read temporary `{}` before anything writes it: every earlier \
                         write of it is inside a `for`, an `if` or a device block that does \
                         not hold this read, so a run may skip them; write it unconditionally \
                         first",
                        stmt.text, temp.name
                    ),
                );
            }
        }
    }
}

/// For every statement, the host `for`/`if` branches and device block bodies that hold it,
/// outermost first, each numbered once.
fn scopes(program: &Program) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); program.statements.len()];
    let mut next = 0;
    walk(program, &program.body, &mut Vec::new(), &mut next, &mut out);
    out
}

fn walk(
    program: &Program,
    nodes: &[Node],
    path: &mut Vec<usize>,
    next: &mut usize,
    out: &mut [Vec<usize>],
) {
    let scope = |nodes: &[Node], path: &mut Vec<usize>, next: &mut usize, out: &mut [_]| {
        *next += 1;
        path.push(*next);
        walk(program, nodes, path, next, out);
        path.pop();
    };
    for node in nodes {
        match node {
            Node::Stmt(i) => {
                let range = match program.statements[*i].kind {
                    Kind::Collective { first, count, .. } if first == *i => first..first + count,
                    _ => *i..*i + 1,
                };
                for j in range {
                    if let Some(slot) = out.get_mut(j) {
                        slot.clone_from(path);
                    }
                }
            }
            Node::For { body, .. } => scope(body, path, next, out),
            Node::If {
                then, otherwise, ..
            } => {
                scope(then, path, next, out);
                scope(otherwise.as_deref().unwrap_or_default(), path, next, out);
            }
            Node::Block { stmt, bodies } => {
                if let Some(slot) = out.get_mut(*stmt) {
                    slot.clone_from(path);
                }
                for body in bodies {
                    scope(body, path, next, out);
                }
            }
        }
    }
}
