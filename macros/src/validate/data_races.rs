//! The data-race rule: the program lowered to [`race`]'s model, the analysis run on the
//! pipeline and on each device block's body, and the diagnostics.

use syn::Ident;

use super::{line_column, race};
use crate::model::{Errors, Kind, Mode, Node, Program, Statement};

/// Conflicting whole-buffer accesses on different streams are ordered by happens-before.
///
/// Conflicting: two statements touch the same whole buffer, at least one writing. Ordered: by a
/// happens-before path (README "The model") on every path through the program. Sub-ranges and
/// uncertain cases are left to the run-time plan.
///
/// At most [`MAX_RACE_DIAGNOSTICS`] races are reported, one per pair of statements and buffer,
/// in source order; one more error counts the rest. When the analysis could not decide every
/// pair, a warning says so: those pairs are left to the run-time plan.
///
/// Not checked while a statement is unresolved (an unknown stream, event or buffer): its
/// placeholders would order or race the wrong statements, and the name error comes first.
pub(super) fn no_static_races(program: &Program, errors: &mut Errors) {
    if program.streams.len() < 2 || program.statements.iter().any(|s| s.unresolved) {
        return;
    }
    let buffers = buffer_names(program);
    // The pipeline, then every device block's body as a pipeline of its own (README "Loops and branches on the device"):
    // in its enclosing code a block is one operation on its stream.
    let scopes = scopes_of(program);
    let mut races = Vec::new();
    let mut complete = true;
    for nodes in scopes {
        let flow = to_flow(nodes, program, &buffers);
        let events = program.events.len() + synthetic_events(program);
        let analysis = race::certain_races(program.streams.len(), events, &flow);
        races.extend(analysis.races);
        complete &= analysis.complete;
    }
    for r in races.iter().take(MAX_RACE_DIAGNOSTICS) {
        let first = &program.statements[r.first];
        let second = &program.statements[r.second];
        let buffer = &buffers[r.buffer];
        report_race(program, first, second, buffer, r, errors);
    }
    if let Some(next) = races.get(MAX_RACE_DIAGNOSTICS) {
        let rest = races.len() - MAX_RACE_DIAGNOSTICS;
        let (line, column) = line_column(program.statements[next.second].first);
        errors.spanned(
            &program.name,
            format!(
                "and {rest} more data race{} in pipeline `{}`, not listed: only the first \
                 {MAX_RACE_DIAGNOSTICS} are reported (the next is on `{}`, at {line}:{column}); \
                 fix those first, or list them all with `Plan::races`",
                if rest == 1 { "" } else { "s" },
                program.name,
                buffers[next.buffer],
            ),
        );
    }
    maybe_races(program, &scopes_of(program), errors);
    if !complete {
        errors.warn(
            program.name.span(),
            "static_race_check_incomplete",
            format!(
                "the static race check of pipeline `{}` is incomplete: its `if`s and loops give \
                 some pairs of statements more distinct orderings than the check follows, so \
                 races between those are not compile errors; `Plan::check_races` catches them \
                 at run time (on by default in debug builds; in release builds with \
                 `STREAMGRAPH_CHECKS=1`, `Eager::check(true)` or `Capture::check(true)`)",
                program.name,
            ),
        );
    }
}

/// The pipeline, then every device block's body as a pipeline of its own (README "Loops and
/// branches on the device"): in its enclosing code a block is one operation on its stream.
fn scopes_of(program: &Program) -> Vec<&[Node]> {
    let mut scopes: Vec<&[Node]> = vec![&program.body];
    let mut i = 0;
    while let Some(nodes) = scopes.get(i).copied() {
        collect_bodies(nodes, &mut scopes);
        i += 1;
    }
    scopes
}

/// Buffers picked from a parameter by a run-time index (`xs[i]`): the check runs again with
/// each such parameter as one buffer (its elements and the indexed access all the same
/// buffer, whole); a race found then that involves an indexed access may be a race or not,
/// depending on the index. A warning names the first such statement and leaves the decision to
/// the run-time check.
fn maybe_races(program: &Program, scopes: &[&[Node]], errors: &mut Errors) {
    let indexed: Vec<&Ident> = program
        .statements
        .iter()
        .flat_map(|s| &s.accesses)
        .filter(|a| a.dynamic)
        .map(|a| &a.buffer)
        .collect();
    if indexed.is_empty() {
        return;
    }
    let merged: Vec<BufferName<'_>> = program
        .params
        .iter()
        .map(|p| BufferName {
            root: &p.name,
            element: None,
            merged: indexed.contains(&&p.name),
        })
        .collect();
    let events = program.events.len() + synthetic_events(program);
    let dynamic_in = |stmt: usize, buffer: usize| {
        program.statements[stmt]
            .accesses
            .iter()
            .any(|a| a.dynamic && a.buffer == *merged[buffer].root)
    };
    for nodes in scopes {
        let flow = to_flow(nodes, program, &merged);
        let analysis = race::certain_races(program.streams.len(), events, &flow);
        let Some(r) = analysis.races.iter().find(|r| {
            merged[r.buffer].merged
                && (dynamic_in(r.first, r.buffer) || dynamic_in(r.second, r.buffer))
        }) else {
            continue;
        };
        let (first, second) = (&program.statements[r.first], &program.statements[r.second]);
        let (stmt, other) = if dynamic_in(r.second, r.buffer) {
            (second, first)
        } else {
            (first, second)
        };
        let (line, column) = line_column(other.first);
        errors.warn(
            stmt.first,
            "indexed_buffer_checked_at_run_time",
            format!(
                "`{}` picks an element of `{}` by a value known only at run time, and `{}` \
                 (at {line}:{column}, on another stream, unordered with it) touches `{}` too: \
                 whether they race depends on the index, so the static check leaves it to \
                 `Plan::check_races` at run time (on by default in debug builds); index with a \
                 constant (`{}[0]`) for a compile-time verdict, or order the two",
                stmt.text,
                merged[r.buffer].root,
                other.text,
                merged[r.buffer].root,
                merged[r.buffer].root,
            ),
        );
        return;
    }
}

/// The bodies of the device blocks directly in `nodes` (through host `for`/`if`, not through
/// other blocks: those are found in their own turn).
fn collect_bodies<'p>(nodes: &'p [Node], out: &mut Vec<&'p [Node]>) {
    for node in nodes {
        match node {
            Node::Stmt(_) => {}
            Node::For { body, .. } => collect_bodies(body, out),
            Node::If {
                then, otherwise, ..
            } => {
                collect_bodies(then, out);
                collect_bodies(otherwise.as_deref().unwrap_or_default(), out);
            }
            Node::Block { bodies, .. } => out.extend(bodies.iter().map(Vec::as_slice)),
        }
    }
}

/// A buffer of the static race check: a parameter, or a constant element of one (`xs[0]`),
/// which is a buffer of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BufferName<'p> {
    pub(super) root: &'p Ident,
    pub(super) element: Option<u64>,
    /// Stands for the parameter and all its elements, an element picked at run time
    /// (`xs[i]`) as a whole one (see [`maybe_races`]).
    pub(super) merged: bool,
}

impl BufferName<'_> {
    /// A name for an event about the buffer: `x`, `xs0`.
    fn stem(&self) -> String {
        match self.element {
            None => self.root.to_string(),
            Some(k) => format!("{}{k}", self.root),
        }
    }
}

impl std::fmt::Display for BufferName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.element {
            None => write!(f, "{}", self.root),
            Some(k) => write!(f, "{}[{k}]", self.root),
        }
    }
}

/// The buffers of the race check: every parameter, then every constant element a statement
/// names.
pub(super) fn buffer_names(program: &Program) -> Vec<BufferName<'_>> {
    let mut names: Vec<BufferName<'_>> = program
        .params
        .iter()
        .map(|p| BufferName {
            root: &p.name,
            element: None,
            merged: false,
        })
        .collect();
    for a in program.statements.iter().flat_map(|s| &s.accesses) {
        if a.element.is_some() {
            let Some(param) = program.param(&a.buffer) else {
                continue;
            };
            let name = BufferName {
                root: &param.name,
                element: a.element,
                merged: false,
            };
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// Every buffer access of the statements in `nodes`, nested blocks' bodies included.
fn touches(
    nodes: &[Node],
    program: &Program,
    buffers: &[BufferName<'_>],
    out: &mut Vec<race::Touch>,
) {
    let add = |stmt: &Statement, out: &mut Vec<race::Touch>| {
        for t in stmt_touches(stmt, buffers) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    };
    for node in nodes {
        match node {
            Node::Stmt(i) => {
                for j in participants(program, *i) {
                    add(&program.statements[j], out);
                }
            }
            Node::For { body, .. } => touches(body, program, buffers, out),
            Node::If {
                then, otherwise, ..
            } => {
                touches(then, program, buffers, out);
                touches(
                    otherwise.as_deref().unwrap_or_default(),
                    program,
                    buffers,
                    out,
                );
            }
            Node::Block { stmt, bodies } => {
                add(&program.statements[*stmt], out);
                for body in bodies {
                    touches(body, program, buffers, out);
                }
            }
        }
    }
}

/// The most data races reported per pipeline; a last error counts the others.
pub const MAX_RACE_DIAGNOSTICS: usize = 20;

/// `nodes` in the race engine's model, buffers numbered by their index in `buffers`.
pub(super) fn to_flow(
    nodes: &[Node],
    program: &Program,
    buffers: &[BufferName<'_>],
) -> Vec<race::Flow> {
    let mut flow = Vec::new();
    for node in nodes {
        if let Node::Stmt(i) = node
            && let Kind::Collective { .. } = program.statements[*i].kind
        {
            collective_flow(program, *i, buffers, &mut flow);
            continue;
        }
        flow.push(match node {
            Node::Stmt(i) => {
                let stmt = &program.statements[*i];
                race::Flow::Cmd(match &stmt.kind {
                    Kind::Record { event, .. } => race::Cmd::Record {
                        stream: stmt.stream,
                        event: *event,
                    },
                    Kind::Wait { event, .. } => race::Cmd::Wait {
                        stream: stmt.stream,
                        event: *event,
                    },
                    Kind::WaitStream { stream, .. } => race::Cmd::WaitStream {
                        stream: stmt.stream,
                        other: *stream,
                    },
                    _ => race::Cmd::Op {
                        stmt: stmt.id,
                        stream: stmt.stream,
                        touches: stmt_touches(stmt, buffers),
                    },
                })
            }
            Node::For { body, .. } => race::Flow::Loop(to_flow(body, program, buffers)),
            Node::Block { stmt, .. } => {
                let block = &program.statements[*stmt];
                let mut all = Vec::new();
                touches(std::slice::from_ref(node), program, buffers, &mut all);
                race::Flow::Cmd(race::Cmd::Op {
                    stmt: block.id,
                    stream: block.stream,
                    touches: all,
                })
            }
            Node::If {
                then, otherwise, ..
            } => race::Flow::If(
                to_flow(then, program, buffers),
                to_flow(otherwise.as_deref().unwrap_or_default(), program, buffers),
            ),
        });
    }
    flow
}

/// The statements a node `Node::Stmt(i)` issues: `i`, or every participant of the collective
/// that `i` starts.
fn participants(program: &Program, i: usize) -> std::ops::Range<usize> {
    match program.statements[i].kind {
        Kind::Collective { first, count, .. } if first == i => first..first + count,
        _ => i..i + 1,
    }
}

/// The events the race model needs beyond the declared ones: one per statement when the
/// program has a collective (see [`collective_flow`]), else none.
fn synthetic_events(program: &Program) -> usize {
    if program
        .statements
        .iter()
        .any(|s| matches!(s.kind, Kind::Collective { .. }))
    {
        program.statements.len()
    } else {
        0
    }
}

/// The buffers `stmt` touches, numbered by their index in `buffers`.
fn stmt_touches(stmt: &Statement, buffers: &[BufferName<'_>]) -> Vec<race::Touch> {
    stmt.accesses
        .iter()
        .filter_map(|a| {
            let buffer = buffers
                .iter()
                .position(|b| *b.root == a.buffer && (b.merged || b.element == a.element))?;
            Some(race::Touch {
                buffer,
                write: a.mode == Mode::Write,
                whole: a.whole || (buffers[buffer].merged && a.dynamic),
            })
        })
        .collect()
}

/// A collective in the race model, exactly as the run-time plan orders it: each
/// participant's stream frontier is snapshotted (an event of its own, numbered after the
/// declared events by statement id), each participant is one operation on its stream
/// touching its own buffers, then each participant's stream waits for the other
/// participants' snapshots (for `broadcast`, the root's): what follows a participant follows
/// the other streams' work from before the collective, but no participant waits for another.
fn collective_flow(
    program: &Program,
    first: usize,
    buffers: &[BufferName<'_>],
    out: &mut Vec<race::Flow>,
) {
    let Kind::Collective { op, count, .. } = program.statements[first].kind else {
        return;
    };
    let base = program.events.len();
    let sources: Vec<usize> = match op {
        crate::model::CollectiveOp::Broadcast { root } => vec![root],
        _ => (0..count).collect(),
    };
    let stream = |k: usize| program.statements[first + k].stream;
    for &j in &sources {
        out.push(race::Flow::Cmd(race::Cmd::Record {
            stream: stream(j),
            event: base + first + j,
        }));
    }
    for k in 0..count {
        let stmt = &program.statements[first + k];
        out.push(race::Flow::Cmd(race::Cmd::Op {
            stmt: stmt.id,
            stream: stmt.stream,
            touches: stmt_touches(stmt, buffers),
        }));
    }
    for k in 0..count {
        for &j in sources.iter().filter(|&&j| j != k) {
            out.push(race::Flow::Cmd(race::Cmd::Wait {
                stream: stream(k),
                event: base + first + j,
            }));
        }
    }
}

/// The data-race diagnostic: on both statements, with the `record`/`wait` pair that fixes it.
fn report_race(
    program: &Program,
    first: &Statement,
    second: &Statement,
    buffer: &BufferName<'_>,
    race: &race::Race,
    errors: &mut Errors,
) {
    if let Some(error) = temp_race(program, first, second, buffer) {
        errors.push(error);
        return;
    }
    let verb = |w: bool| if w { "writes" } else { "reads" };
    let (l1, c1) = line_column(first.first);
    let (l2, c2) = line_column(second.first);
    let suffix = if race.first_writes { "ready" } else { "free" };
    let event = format!("{}_{suffix}", buffer.stem());
    let declared = program.events.iter().any(|e| e.name == event);
    let declare = if declared {
        String::new()
    } else {
        format!(" (declare `event {event};`)")
    };
    let from = &program.streams[first.stream].name;
    let to = &program.streams[second.stream].name;
    let when = if race.loop_carried {
        " in the previous iteration of the loop"
    } else {
        ""
    };
    let message = format!(
        "data race on `{buffer}`: `{}` (at {l2}:{c2}) {} `{buffer}` on stream `{to}` while \
         `{}` (at {l1}:{c1}){when} {} it on stream `{from}`, and nothing orders the two; \
         add `{from}: record {event};` after the {} and `{to}: wait {event};` before this \
         statement{declare}",
        second.text,
        verb(race.second_writes),
        first.text,
        verb(race.first_writes),
        if race.first_writes { "write" } else { "read" },
    );
    let mut error = syn::Error::new_spanned(second.tokens(), message);
    error.combine(syn::Error::new_spanned(
        first.tokens(),
        format!(
            "the other side of the data race on `{buffer}`: `{}` {} `{buffer}` here, on stream \
             `{from}`",
            first.text,
            verb(race.first_writes)
        ),
    ));
    errors.push(error);
}

/// The data race of a use of a temporary with its allocation or release (statements the model
/// placed), worded as such: on the use, with what orders it.
fn temp_race(
    program: &Program,
    first: &Statement,
    second: &Statement,
    buffer: &BufferName<'_>,
) -> Option<syn::Error> {
    let placed = |s: &Statement| matches!(s.kind, Kind::Alloc { .. } | Kind::Free { .. });
    let (placed, usage) = match (placed(first), placed(second)) {
        (true, false) => (first, second),
        (false, true) => (second, first),
        _ => return None,
    };
    let (line, column) = line_column(usage.first);
    let at = &program.streams[placed.stream].name;
    let on = &program.streams[usage.stream].name;
    let message = match placed.kind {
        Kind::Alloc { .. } => format!(
            "`{}` (at {line}:{column}) uses temporary `{buffer}` on stream `{on}`, but nothing \
             orders it after `{buffer}` is allocated on stream `{at}` (before its first use): \
             add `{on}: wait_stream {at};` before this statement (or a `record`/`wait` pair), \
             or use `{buffer}` on `{on}` first",
            usage.text
        ),
        _ => format!(
            "`{}` (at {line}:{column}) uses temporary `{buffer}` on stream `{on}`, but nothing \
             orders it before `{buffer}` is freed on stream `{at}` (after its last use): add \
             `{at}: wait_stream {on};` after this statement",
            usage.text
        ),
    };
    let mut error = syn::Error::new_spanned(usage.tokens(), message);
    error.combine(syn::Error::new_spanned(
        placed.tokens(),
        format!(
            "temporary `{buffer}`, {} on stream `{at}` by `{}`",
            if matches!(placed.kind, Kind::Alloc { .. }) {
                "allocated"
            } else {
                "freed"
            },
            placed.text
        ),
    ));
    Some(error)
}
