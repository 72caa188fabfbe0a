//! Cross-statement rules, one function per rule.
//!
//! The data-race rule is built on [`race`], a pure analysis over a tiny model of the program
//! (streams, events, operations with their buffer accesses, records, waits, `wait_stream`s,
//! loops and branches) that follows the happens-before model (README "The model") exactly.

pub mod race;

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod agree_tests;

use std::collections::BTreeSet;

use syn::Ident;

use crate::model::{write_form, Errors, Kind, Mode, Node, ParamKind, Program, Statement};

/// Checks every rule, recording each violation in `errors`.
pub fn validate(program: &Program, errors: &mut Errors) {
    at_least_one_stream(program, errors);
    unique_names(program, errors);
    waits_follow_records(program, errors);
    wait_stream_names_another_stream(program, errors);
    copies_avoid_pageable_memory(program, errors);
    kernels_and_fills_use_device_memory(program, errors);
    writes_go_through_mut_parameters(program, errors);
    bodies_hold_only_device_work(program, errors);
    block_events_stay_in_their_body(program, errors);
    no_static_races(program, errors);
}

/// The body of a device block (`STREAM: while FLAG { … }`, `STREAM: if FLAG { … }`) holds only
/// work the device can run without the host: no `host` function.
fn bodies_hold_only_device_work(program: &Program, errors: &mut Errors) {
    for (ctx, stmt) in contexts(program) {
        if let (Some((block, _)), Kind::Collective { .. }) = (ctx, &stmt.kind) {
            let block = &program.statements[block];
            errors.spanned(
                stmt.tokens(),
                format!(
                    "`{}` cannot be in the body of device block `{}`: a collective runs \
                     across streams and ranks that a device block's body (a conditional node \
                     of one stream's graph) cannot hold; move it before or after the block",
                    stmt.text, block.text
                ),
            );
            continue;
        }
        let (Some((block, _)), Kind::Host { .. }) = (ctx, &stmt.kind) else {
            continue;
        };
        let block = &program.statements[block];
        errors.spanned(
            stmt.tokens(),
            format!(
                "`{}` cannot be in the body of device block `{}`: a host function needs a \
                 round trip to the host, and a device block's body runs on the device alone \
                 (a conditional node of the graph); move it before or after the block",
                stmt.text, block.text
            ),
        );
    }
}

/// A `wait` inside a device block's body waits only for events recorded in that same body,
/// and a `wait` outside it never for an event recorded inside it.
///
/// Each body runs as a nested pipeline (its own graph when captured), so an event cannot
/// carry ordering into or out of it.
fn block_events_stay_in_their_body(program: &Program, errors: &mut Errors) {
    let all = contexts(program);
    for (ctx, stmt) in &all {
        let Kind::Wait { event, name } = &stmt.kind else {
            continue;
        };
        let other = all
            .iter()
            .find(|(c, s)| matches!(&s.kind, Kind::Record { event: e } if e == event) && c != ctx);
        let Some((record_ctx, record)) = other else {
            continue;
        };
        let (line, column) = line_column(record.first);
        let message = match (ctx, record_ctx) {
            (Some((block, _)), _) => format!(
                "`{}` in the body of device block `{}` waits for event `{name}`, which `{}` \
                 (at {line}:{column}) records outside this body; a block's body runs as a \
                 pipeline of its own and cannot wait for events of other code: record `{name}` \
                 in the same body, or order the block's stream itself before the block",
                stmt.text, program.statements[*block].text, record.text
            ),
            (None, Some((block, _))) => format!(
                "`{}` waits for event `{name}`, which `{}` (at {line}:{column}) records inside \
                 the body of device block `{}`; an event recorded in a block's body cannot be \
                 waited outside it: wait for the block's stream instead (e.g. \
                 `{}: wait_stream {};` after the block), which follows all of the body's work",
                stmt.text,
                record.text,
                program.statements[*block].text,
                stmt.stream_name,
                program.statements[*block].stream_name,
            ),
            (None, None) => continue,
        };
        errors.spanned(name, message);
    }
}

/// The innermost device block body around each statement: `(block statement, branch)`.
type BodyContext = Option<(usize, usize)>;

/// Every statement with the innermost device block body it is in.
fn contexts(program: &Program) -> Vec<(BodyContext, &Statement)> {
    fn walk<'p>(
        nodes: &[Node],
        ctx: BodyContext,
        program: &'p Program,
        out: &mut Vec<(BodyContext, &'p Statement)>,
    ) {
        for node in nodes {
            match node {
                Node::Stmt(i) => out.push((ctx, &program.statements[*i])),
                Node::For { body, .. } => walk(body, ctx, program, out),
                Node::If {
                    then, otherwise, ..
                } => {
                    walk(then, ctx, program, out);
                    walk(otherwise.as_deref().unwrap_or_default(), ctx, program, out);
                }
                Node::Block {
                    stmt,
                    body,
                    otherwise,
                } => {
                    out.push((ctx, &program.statements[*stmt]));
                    walk(body, Some((*stmt, 0)), program, out);
                    walk(
                        otherwise.as_deref().unwrap_or_default(),
                        Some((*stmt, 1)),
                        program,
                        out,
                    );
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(&program.body, None, program, &mut out);
    out
}

/// A pipeline declares at least one stream; the first declared is the origin.
fn at_least_one_stream(program: &Program, errors: &mut Errors) {
    if program.streams.is_empty() {
        errors.spanned(
            &program.name,
            format!(
                "pipeline `{}` declares no stream: declare at least one, e.g. `stream main;` \
                 (the first declared stream is the origin)",
                program.name
            ),
        );
    }
}

/// Stream names, event names and parameter names are each unique.
fn unique_names(program: &Program, errors: &mut Errors) {
    fn check<'a>(what: &str, names: impl Iterator<Item = &'a Ident>, errors: &mut Errors) {
        let mut seen: Vec<&Ident> = Vec::new();
        for name in names {
            if seen.contains(&name) {
                errors.spanned(
                    name,
                    format!("{what} `{name}` is declared twice; rename one"),
                );
            } else {
                seen.push(name);
            }
        }
    }
    check("stream", program.streams.iter().map(|s| &s.name), errors);
    check("event", program.events.iter().map(|e| &e.name), errors);
    check("parameter", program.params.iter().map(|p| &p.name), errors);
}

/// A `wait` names an event that some statement may have recorded before it.
///
/// Before means earlier in program order (in any branch), or later in the body of a loop
/// enclosing the wait (recorded by the previous iteration; the first iteration's wait is then a
/// no-op, as CUDA defines it).
fn waits_follow_records(program: &Program, errors: &mut Errors) {
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
                }
                | Node::Block {
                    body: then,
                    otherwise,
                    ..
                } => {
                    records(then, program, out);
                    records(otherwise.as_deref().unwrap_or_default(), program, out);
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
                        Kind::Wait { event, name } if !recorded.contains(event) => {
                            errors.spanned(
                                name,
                                format!(
                                    "`{}` waits for event `{name}`, which no earlier statement \
                                     records; record it first, e.g. `STREAM: record {name};` \
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
                }
                | Node::Block {
                    body: then,
                    otherwise,
                    ..
                } => {
                    let mut in_then = recorded.clone();
                    walk(then, program, &mut in_then, errors);
                    let mut in_else = recorded.clone();
                    walk(
                        otherwise.as_deref().unwrap_or_default(),
                        program,
                        &mut in_else,
                        errors,
                    );
                    recorded.extend(in_then);
                    recorded.extend(in_else);
                }
            }
        }
    }
    walk(&program.body, program, &mut BTreeSet::new(), errors);
}

/// `wait_stream` names a stream other than the one it is issued on.
fn wait_stream_names_another_stream(program: &Program, errors: &mut Errors) {
    for stmt in program.statements.iter().filter(|s| !s.unresolved) {
        if let Kind::WaitStream { stream, name } = &stmt.kind {
            if *stream == stmt.stream && *name == stmt.stream_name {
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
}

/// A `copy` reads and writes device or page-locked host memory, never pageable host memory.
///
/// Pageable host memory cannot be captured into a CUDA graph.
fn copies_avoid_pageable_memory(program: &Program, errors: &mut Errors) {
    for stmt in &program.statements {
        if let Kind::Copy { dst, src } = &stmt.kind {
            for side in [dst, src] {
                if let Some(param) = program.param(&side.root).filter(|p| p.is_pageable_host()) {
                    errors.spanned(
                        &side.expr,
                        format!(
                            "`{}` cannot be captured: parameter `{}` is pageable host memory \
                             (`{}`), which a CUDA graph cannot copy; declare it as a \
                             `PinnedBuffer<T>` (page-locked host memory)",
                            stmt.text,
                            param.name,
                            crate::text::type_text(&param.ty)
                        ),
                    );
                }
            }
        }
    }
}

/// A launch's `&x`/`&mut x` arguments and a `fill` target are device memory, never host memory
/// such as a `Vec` or a slice.
fn kernels_and_fills_use_device_memory(program: &Program, errors: &mut Errors) {
    for stmt in &program.statements {
        if !matches!(stmt.kind, Kind::Launch { .. } | Kind::Fill { .. }) {
            continue;
        }
        for access in &stmt.accesses {
            let Some(param) = program
                .param(&access.buffer)
                .filter(|p| p.is_pageable_host())
            else {
                continue;
            };
            errors.spanned(
                &access.at,
                format!(
                    "`{}` passes `{}` to the device, but parameter `{}` is host memory (`{}`), \
                     which kernels and fills cannot reach: copy the data to the device first, \
                     with `DeviceBuffer::from_host(&device, &data)`, and declare the parameter \
                     as a `&DeviceBuffer<T>` (`&mut` if the pipeline writes it)",
                    stmt.text,
                    access.buffer,
                    param.name,
                    crate::text::type_text(&param.ty)
                ),
            );
        }
    }
}

/// A statement writes a buffer only through a parameter declared `&mut`, whose buffer is
/// borrowed exclusively (not `&mut &DeviceBuffer<T>` nor `&mut DeviceView<'_, T>`), and names
/// it in a shape that generated code writes through that borrow ([`write_form`]).
///
/// Writes are `&mut x` arguments, copy destinations, fill targets and collectives' receive
/// buffers.
fn writes_go_through_mut_parameters(program: &Program, errors: &mut Errors) {
    let mut shared_reported: Vec<&Ident> = Vec::new();
    for stmt in &program.statements {
        for access in stmt.accesses.iter().filter(|a| a.mode == Mode::Write) {
            let Some(param) = program.param(&access.buffer) else {
                continue;
            };
            if param.kind != ParamKind::Mut {
                errors.spanned(
                    &access.at,
                    format!(
                        "`{}` writes `{}`, but parameter `{}` is declared `{}`: writing through a \
                         shared borrow would race with other users of it; declare it `&mut`",
                        stmt.text,
                        access.buffer,
                        param.name,
                        crate::text::type_text(&param.ty)
                    ),
                );
            } else if param.shared_under_mut() && !shared_reported.contains(&&param.name) {
                shared_reported.push(&param.name);
                errors.spanned(
                    &param.ty,
                    format!(
                        "`{}` writes `{}`, but `{}` is declared `{}`: the buffer is borrowed \
                         shared, so the pipeline cannot write it; declare `{}: {}`",
                        stmt.text,
                        access.buffer,
                        param.name,
                        crate::text::type_text(&param.ty),
                        param.name,
                        crate::text::type_text(&param.exclusive_type())
                    ),
                );
            }
        }
        for written in stmt.kind.writes() {
            if write_form(&written.expr).is_none() {
                let text = crate::text::text_of(&written.expr);
                errors.spanned(
                    &written.expr,
                    format!(
                        "`{}` writes `{text}`, which the pipeline cannot write through its \
                         `&mut` borrow of `{}`: a write names the parameter (`{}`), an element \
                         of it (`{}[i]`) or a part of either (`{}.slice_mut(a..b)`)",
                        stmt.text, written.root, written.root, written.root, written.root
                    ),
                );
            }
        }
    }
}

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
fn no_static_races(program: &Program, errors: &mut Errors) {
    if program.streams.len() < 2 || program.statements.iter().any(|s| s.unresolved) {
        return;
    }
    let buffers: Vec<&Ident> = program.params.iter().map(|p| &p.name).collect();
    // The pipeline, then every device block's body as a pipeline of its own (README "Loops and branches on the device"):
    // in its enclosing code a block is one operation on its stream.
    let mut scopes: Vec<&[Node]> = vec![&program.body];
    let mut i = 0;
    while let Some(nodes) = scopes.get(i).copied() {
        collect_bodies(nodes, &mut scopes);
        i += 1;
    }
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
        let buffer = buffers[r.buffer];
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
    if !complete {
        errors.warn(
            program.name.span(),
            "static_race_check_incomplete",
            format!(
                "the static race check of pipeline `{}` is incomplete: its `if`s and loops give \
                 some pairs of statements more distinct orderings than the check follows, so \
                 races between those are not compile errors; `Plan::check_races` catches them \
                 at run time (turn it on with `STREAMGRAPH_CHECKS=1`, `Eager::check(true)` or \
                 `Capture::check(true)`)",
                program.name,
            ),
        );
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
            Node::Block {
                body, otherwise, ..
            } => {
                out.push(body);
                if let Some(o) = otherwise {
                    out.push(o);
                }
            }
        }
    }
}

/// Every buffer access of the statements in `nodes`, nested blocks' bodies included.
fn touches(nodes: &[Node], program: &Program, buffers: &[&Ident], out: &mut Vec<race::Touch>) {
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
            Node::Block {
                stmt,
                body,
                otherwise,
            } => {
                add(&program.statements[*stmt], out);
                touches(body, program, buffers, out);
                touches(
                    otherwise.as_deref().unwrap_or_default(),
                    program,
                    buffers,
                    out,
                );
            }
        }
    }
}

/// The most data races reported per pipeline; a last error counts the others.
pub const MAX_RACE_DIAGNOSTICS: usize = 20;

/// `nodes` in the race engine's model, buffers numbered by their index in `buffers`.
fn to_flow(nodes: &[Node], program: &Program, buffers: &[&Ident]) -> Vec<race::Flow> {
    let mut flow = Vec::new();
    for node in nodes {
        if let Node::Stmt(i) = node {
            if let Kind::Collective { .. } = program.statements[*i].kind {
                collective_flow(program, *i, buffers, &mut flow);
                continue;
            }
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
fn stmt_touches(stmt: &Statement, buffers: &[&Ident]) -> Vec<race::Touch> {
    stmt.accesses
        .iter()
        .filter_map(|a| {
            Some(race::Touch {
                buffer: buffers.iter().position(|b| **b == a.buffer)?,
                write: a.mode == Mode::Write,
                whole: a.whole,
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
fn collective_flow(program: &Program, first: usize, buffers: &[&Ident], out: &mut Vec<race::Flow>) {
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
    buffer: &Ident,
    race: &race::Race,
    errors: &mut Errors,
) {
    let verb = |w: bool| if w { "writes" } else { "reads" };
    let (l1, c1) = line_column(first.first);
    let (l2, c2) = line_column(second.first);
    let suffix = if race.first_writes { "ready" } else { "free" };
    let event = format!("{buffer}_{suffix}");
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

/// `line:column` of a span (1-based column, as the runtime's `Location`).
pub fn line_column(span: proc_macro2::Span) -> (u32, u32) {
    let start = span.start();
    (start.line as u32, start.column as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn errors_of(input: crate::syntax::Input) -> Vec<String> {
        let mut errors = Errors::default();
        let program = Program::from_syntax(input, &mut errors);
        validate(&program, &mut errors);
        errors
            .into_vec()
            .iter()
            .flat_map(|e| e.clone().into_iter())
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn rules_report_on_the_model() {
        let errors = errors_of(parse_quote! {
            pipeline P(x: &mut B, y: &B, h: &[f32], k: &K, x: u32) {
                stream main;
                stream side;
                stream main;
                event e;
                event e;
                side: wait e;
                main: wait_stream main;
                main: launch k.f<<<1, 1>>>(&mut y);
                side: copy x <- h;
                main: record e;
            }
        });
        let has = |s: &str| errors.iter().any(|e| e.contains(s));
        assert!(has("stream `main` is declared twice"), "{errors:#?}");
        assert!(has("event `e` is declared twice"));
        assert!(has("parameter `x` is declared twice"));
        assert!(has(
            "waits for event `e`, which no earlier statement records"
        ));
        assert!(has("stream `main` cannot wait for itself"));
        assert!(has("parameter `y` is declared `& B`") || has("parameter `y` is declared `&B`"));
        assert!(has("pageable host memory"));
    }

    #[test]
    fn waits_may_follow_records_of_a_previous_iteration() {
        let errors = errors_of(parse_quote! {
            pipeline P(n: u32) {
                stream main;
                stream side;
                event e;
                for i in 0..n { side: wait e; main: record e; }
                if n > 1 { main: record e; }
                side: wait e;
            }
        });
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn race_message_names_both_statements_and_the_fix() {
        let errors = errors_of(parse_quote! {
            pipeline P(x: &mut B, k: &K) {
                stream main;
                stream side;
                main: launch k.a<<<1, 1>>>(&mut x);
                side: launch k.b<<<1, 1>>>(&x);
            }
        });
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(errors[0].starts_with("data race on `x`: `side: launch k.b<<<1, 1>>>(&x)`"));
        assert!(errors[0].contains("while `main: launch k.a<<<1, 1>>>(&mut x)`"));
        assert!(errors[0]
            .contains("add `main: record x_ready;` after the write and `side: wait x_ready;`"));
        assert!(errors[1].contains("the other side of the data race on `x`"));
    }

    #[test]
    fn no_stream_is_an_error() {
        let errors = errors_of(parse_quote! { pipeline P() {} });
        assert!(errors[0].contains("declares no stream"));
    }
}
