//! Cross-statement rules, one function per rule.
//!
//! The data-race rule is built on [`race`], a pure analysis over a tiny model of the program
//! (streams, events, operations with their buffer accesses, records, waits, `wait_stream`s,
//! loops and branches) that follows DESIGN.md §2 exactly.

use std::collections::BTreeSet;

use syn::Ident;

use crate::model::{Errors, Kind, Mode, Node, ParamKind, Program, Statement};

/// Checks every rule, recording each violation in `errors`.
pub fn validate(program: &Program, errors: &mut Errors) {
    at_least_one_stream(program, errors);
    unique_names(program, errors);
    waits_follow_records(program, errors);
    wait_stream_names_another_stream(program, errors);
    copies_avoid_pageable_memory(program, errors);
    writes_go_through_mut_parameters(program, errors);
    no_static_races(program, errors);
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

/// A `wait` names an event that some statement may have recorded before it: earlier in program
/// order (in any branch), or later in the body of a loop enclosing the wait (recorded by the
/// previous iteration; the first iteration's wait is then a no-op, as CUDA defines it).
fn waits_follow_records(program: &Program, errors: &mut Errors) {
    fn records(nodes: &[Node], program: &Program, out: &mut BTreeSet<usize>) {
        for node in nodes {
            match node {
                Node::Stmt(i) => {
                    if let Kind::Record { event, .. } = program.statements[*i].kind {
                        out.insert(event);
                    }
                }
                Node::For { body, .. } => records(body, program, out),
                Node::If {
                    then, otherwise, ..
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
    for stmt in &program.statements {
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

/// A `copy` reads and writes device or page-locked host memory, never pageable host memory,
/// which cannot be captured into a CUDA graph.
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

/// A statement writes a buffer (`&mut x`, copy destination, fill target) only through a
/// parameter declared `&mut`.
fn writes_go_through_mut_parameters(program: &Program, errors: &mut Errors) {
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
            }
        }
    }
}

/// Two statements on different streams that touch the same whole buffer, at least one
/// writing, are ordered by a happens-before path (DESIGN.md §2) on every path through the
/// program; sub-ranges and uncertain cases are left to the run-time plan.
fn no_static_races(program: &Program, errors: &mut Errors) {
    if program.streams.len() < 2 {
        return;
    }
    let buffers: Vec<&Ident> = program.params.iter().map(|p| &p.name).collect();
    let flow = to_flow(&program.body, program, &buffers);
    for r in race::certain_races(program.streams.len(), program.events.len(), &flow) {
        let first = &program.statements[r.first];
        let second = &program.statements[r.second];
        let buffer = buffers[r.buffer];
        report_race(program, first, second, buffer, &r, errors);
    }
}

fn to_flow(nodes: &[Node], program: &Program, buffers: &[&Ident]) -> Vec<race::Flow> {
    nodes
        .iter()
        .map(|node| match node {
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
                        touches: stmt
                            .accesses
                            .iter()
                            .filter_map(|a| {
                                Some(race::Touch {
                                    buffer: buffers.iter().position(|b| **b == a.buffer)?,
                                    write: a.mode == Mode::Write,
                                    whole: a.whole,
                                })
                            })
                            .collect(),
                    },
                })
            }
            Node::For { body, .. } => race::Flow::Loop(to_flow(body, program, buffers)),
            Node::If {
                then, otherwise, ..
            } => race::Flow::If(
                to_flow(then, program, buffers),
                to_flow(otherwise.as_deref().unwrap_or_default(), program, buffers),
            ),
        })
        .collect()
}

/// `line:column` of a span (1-based column, as the runtime's `Location`).
pub fn line_column(span: proc_macro2::Span) -> (u32, u32) {
    let start = span.start();
    (start.line as u32, start.column as u32 + 1)
}

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

pub mod race {
    //! The static race analysis: a pure function over a tiny model of a program.
    //!
    //! Straight-line programs follow DESIGN.md §2 exactly (frontiers per stream, snapshots per
    //! event; at the start every stream's frontier is empty, as after the fork from the
    //! origin). [`straight_line_races`] reports every unordered conflicting pair.
    //!
    //! Control flow is handled by enumerating the executions the program can take:
    //! each `if` instance takes either branch; each `for` instance runs 0, 1, …, `streams + 2`
    //! times (more iterations cannot change which earlier operation reaches which stream: the
    //! "reaches" bits of streams only grow and each event copies a stream's bit, so they settle
    //! within `streams + 1` iterations). [`certain_races`] reports a pair of statements only
    //! when it races in **every** enumerated execution in which both run, counting only runs in
    //! which each enclosing loop iterates at least twice (so a loop body is checked against its
    //! own next iteration, and a loop that happens to run once does not excuse a loop-carried
    //! race). When the enumeration would be too large the analysis reports nothing and leaves
    //! the program to the run-time plan check. Accesses to sub-ranges (`whole == false`) are
    //! never reported: only the run-time plan knows their addresses.

    use std::collections::{BTreeMap, BTreeSet};

    /// One buffer access of an operation.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct Touch {
        /// Buffer identity (the parameter's index).
        pub buffer: usize,
        /// `true` for a write.
        pub write: bool,
        /// `true` for the whole buffer, `false` for a sub-range.
        pub whole: bool,
    }

    /// A command of the model (DESIGN.md §2).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Cmd {
        /// `op(stream)`: statement `stmt`, touching `touches`.
        Op {
            stmt: usize,
            stream: usize,
            touches: Vec<Touch>,
        },
        /// `record(event, stream)`.
        Record { stream: usize, event: usize },
        /// `wait(stream, event)`.
        Wait { stream: usize, event: usize },
        /// `wait_stream(stream, other)`.
        WaitStream { stream: usize, other: usize },
    }

    /// Control flow over commands.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Flow {
        /// One command.
        Cmd(Cmd),
        /// A `for` loop's body.
        Loop(Vec<Flow>),
        /// An `if` with its two branches (the second empty without `else`).
        If(Vec<Flow>, Vec<Flow>),
    }

    /// Two unordered conflicting operations: `first` was issued before `second`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub struct Race {
        /// Statement issued first.
        pub first: usize,
        /// Statement issued second.
        pub second: usize,
        /// The buffer both touch.
        pub buffer: usize,
        /// Whether `first` writes it.
        pub first_writes: bool,
        /// Whether `second` writes it.
        pub second_writes: bool,
        /// Whether `first` comes from an earlier loop iteration than `second` (its statement
        /// is not before `second`'s in the source).
        pub loop_carried: bool,
    }

    /// A set of operation occurrences, as a bit set.
    #[derive(Clone, Default)]
    struct Bits(Vec<u64>);

    impl Bits {
        fn insert(&mut self, i: usize) {
            if self.0.len() <= i / 64 {
                self.0.resize(i / 64 + 1, 0);
            }
            self.0[i / 64] |= 1 << (i % 64);
        }
        fn contains(&self, i: usize) -> bool {
            self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
        }
        fn union(&mut self, other: &Bits) {
            if self.0.len() < other.0.len() {
                self.0.resize(other.0.len(), 0);
            }
            for (a, b) in self.0.iter_mut().zip(&other.0) {
                *a |= b;
            }
        }
    }

    /// Every pair of operations of `program` on different streams that touch the same whole
    /// buffer, at least one writing, with no happens-before path between them. Pairs are
    /// reported as indices into `program` (first issued first).
    pub fn straight_line_pairs(
        streams: usize,
        events: usize,
        program: &[Cmd],
    ) -> Vec<(usize, usize, Touch, Touch)> {
        let mut frontier = vec![Bits::default(); streams];
        let mut snapshot = vec![Bits::default(); events];
        let mut before: Vec<Bits> = Vec::with_capacity(program.len());
        let mut ops: Vec<usize> = Vec::new();
        let mut pairs = Vec::new();
        for (i, cmd) in program.iter().enumerate() {
            match cmd {
                Cmd::Op {
                    stream, touches, ..
                } => {
                    let Some(f) = frontier.get(*stream).cloned() else {
                        before.push(Bits::default());
                        continue;
                    };
                    for &j in &ops {
                        let Cmd::Op {
                            stream: s2,
                            touches: t2,
                            ..
                        } = &program[j]
                        else {
                            continue;
                        };
                        if s2 == stream || f.contains(j) {
                            continue;
                        }
                        for a in t2 {
                            for b in touches {
                                if a.buffer == b.buffer
                                    && a.whole
                                    && b.whole
                                    && (a.write || b.write)
                                {
                                    pairs.push((j, i, *a, *b));
                                }
                            }
                        }
                    }
                    let mut mine = f;
                    mine.insert(i);
                    frontier[*stream] = mine.clone();
                    before.push(mine);
                    ops.push(i);
                }
                Cmd::Record { stream, event } => {
                    if let (Some(f), Some(_)) = (frontier.get(*stream), snapshot.get(*event)) {
                        snapshot[*event] = f.clone();
                    }
                    before.push(Bits::default());
                }
                Cmd::Wait { stream, event } => {
                    if let (Some(_), Some(e)) = (frontier.get(*stream), snapshot.get(*event)) {
                        let e = e.clone();
                        frontier[*stream].union(&e);
                    }
                    before.push(Bits::default());
                }
                Cmd::WaitStream { stream, other } => {
                    if let (Some(_), Some(t)) = (frontier.get(*stream), frontier.get(*other)) {
                        let t = t.clone();
                        frontier[*stream].union(&t);
                    }
                    before.push(Bits::default());
                }
            }
        }
        pairs
    }

    /// [`straight_line_pairs`] by statement: for straight-line programs, where each statement
    /// runs once, these are exactly the static races.
    pub fn straight_line_races(streams: usize, events: usize, program: &[Cmd]) -> Vec<Race> {
        let stmt = |i: usize| match &program[i] {
            Cmd::Op { stmt, .. } => *stmt,
            _ => usize::MAX,
        };
        let mut races: Vec<Race> = straight_line_pairs(streams, events, program)
            .into_iter()
            .map(|(i, j, a, b)| Race {
                first: stmt(i),
                second: stmt(j),
                buffer: a.buffer,
                first_writes: a.write,
                second_writes: b.write,
                loop_carried: stmt(i) >= stmt(j),
            })
            .collect();
        races.sort();
        races.dedup();
        races
    }

    /// How many executions and commands the enumeration may build before giving up.
    const MAX_TRACES: usize = 4096;
    const MAX_COMMANDS: usize = 1 << 20;

    /// One command of an execution; `short` when an enclosing loop instance runs fewer than
    /// two iterations.
    #[derive(Clone)]
    struct Occ<'a> {
        cmd: &'a Cmd,
        short: bool,
    }

    fn expand<'a>(flow: &'a [Flow], short: bool, max_iter: usize) -> Option<Vec<Vec<Occ<'a>>>> {
        let mut traces: Vec<Vec<Occ<'a>>> = vec![Vec::new()];
        for node in flow {
            let options: Vec<Vec<Occ<'a>>> = match node {
                Flow::Cmd(cmd) => vec![vec![Occ { cmd, short }]],
                Flow::If(then, otherwise) => {
                    let mut o = expand(then, short, max_iter)?;
                    o.extend(expand(otherwise, short, max_iter)?);
                    o
                }
                Flow::Loop(body) => {
                    let mut o = Vec::new();
                    for count in 0..=max_iter {
                        let once = expand(body, short || count < 2, max_iter)?;
                        let mut runs: Vec<Vec<Occ<'a>>> = vec![Vec::new()];
                        for _ in 0..count {
                            runs = product(&runs, &once)?;
                        }
                        o.extend(runs);
                        if o.len() > MAX_TRACES {
                            return None;
                        }
                    }
                    o
                }
            };
            traces = product(&traces, &options)?;
        }
        Some(traces)
    }

    fn product<'a>(a: &[Vec<Occ<'a>>], b: &[Vec<Occ<'a>>]) -> Option<Vec<Vec<Occ<'a>>>> {
        if a.len().saturating_mul(b.len()) > MAX_TRACES {
            return None;
        }
        let mut out = Vec::with_capacity(a.len() * b.len());
        let mut total = 0usize;
        for x in a {
            for y in b {
                total += x.len() + y.len();
                if total > MAX_COMMANDS {
                    return None;
                }
                let mut t = x.clone();
                t.extend(y.iter().cloned());
                out.push(t);
            }
        }
        Some(out)
    }

    /// The races certain on every execution of `program` in which both statements run (see
    /// the module documentation for the executions considered).
    pub fn certain_races(streams: usize, events: usize, program: &[Flow]) -> Vec<Race> {
        let Some(traces) = expand(program, false, streams + 2) else {
            return Vec::new();
        };
        // Key: (lower statement, higher statement, buffer).
        let mut relevant: BTreeMap<(usize, usize, usize), usize> = BTreeMap::new();
        let mut racing: BTreeMap<(usize, usize, usize), (usize, Race)> = BTreeMap::new();
        for trace in &traces {
            let cmds: Vec<Cmd> = trace.iter().map(|o| o.cmd.clone()).collect();
            let full: BTreeSet<usize> = trace
                .iter()
                .filter(|o| !o.short)
                .filter_map(|o| match o.cmd {
                    Cmd::Op { stmt, .. } => Some(*stmt),
                    _ => None,
                })
                .collect();
            let mut seen_here = BTreeSet::new();
            for r in straight_line_races(streams, events, &cmds) {
                let key = (r.first.min(r.second), r.first.max(r.second), r.buffer);
                if !full.contains(&key.0) || !full.contains(&key.1) || !seen_here.insert(key) {
                    continue;
                }
                let entry = racing.entry(key).or_insert((0, r));
                entry.0 += 1;
                if entry.1.loop_carried && !r.loop_carried {
                    entry.1 = r;
                }
            }
            relevant_update(&mut relevant, &full, &cmds);
        }
        racing
            .into_iter()
            .filter(|(key, (count, _))| relevant.get(key) == Some(count))
            .map(|(_, (_, r))| r)
            .collect()
    }

    /// Counts the trace as relevant for every conflicting pair (by buffer) of statements that
    /// both run in it with full loops.
    fn relevant_update(
        relevant: &mut BTreeMap<(usize, usize, usize), usize>,
        full: &BTreeSet<usize>,
        cmds: &[Cmd],
    ) {
        let mut touches: BTreeMap<usize, (usize, Vec<Touch>)> = BTreeMap::new();
        for cmd in cmds {
            if let Cmd::Op {
                stmt,
                stream,
                touches: t,
            } = cmd
            {
                if full.contains(stmt) {
                    touches.entry(*stmt).or_insert_with(|| (*stream, t.clone()));
                }
            }
        }
        let mut keys = BTreeSet::new();
        for (&a, (sa, ta)) in &touches {
            for (&b, (sb, tb)) in touches.range(a + 1..) {
                if sa == sb {
                    continue;
                }
                for x in ta {
                    for y in tb {
                        if x.buffer == y.buffer && x.whole && y.whole && (x.write || y.write) {
                            keys.insert((a, b, x.buffer));
                        }
                    }
                }
            }
        }
        for key in keys {
            *relevant.entry(key).or_default() += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::race::{certain_races, straight_line_races, Cmd, Flow, Race, Touch};
    use super::*;
    use crate::model::Program;
    use syn::parse_quote;

    fn op(stmt: usize, stream: usize, touches: &[(usize, bool)]) -> Cmd {
        Cmd::Op {
            stmt,
            stream,
            touches: touches
                .iter()
                .map(|&(buffer, write)| Touch {
                    buffer,
                    write,
                    whole: true,
                })
                .collect(),
        }
    }

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
    fn unordered_write_and_read_race() {
        let p = [op(0, 0, &[(0, true)]), op(1, 1, &[(0, false)])];
        let races = straight_line_races(2, 0, &p);
        assert_eq!(
            races,
            [Race {
                first: 0,
                second: 1,
                buffer: 0,
                first_writes: true,
                second_writes: false,
                loop_carried: false
            }]
        );
    }

    #[test]
    fn record_and_wait_order_the_pair() {
        let p = [
            op(0, 0, &[(0, true)]),
            Cmd::Record {
                stream: 0,
                event: 0,
            },
            Cmd::Wait {
                stream: 1,
                event: 0,
            },
            op(1, 1, &[(0, false)]),
        ];
        assert!(straight_line_races(2, 1, &p).is_empty());
    }

    #[test]
    fn wait_before_the_record_does_not_order() {
        let p = [
            Cmd::Record {
                stream: 0,
                event: 0,
            },
            op(0, 0, &[(0, true)]),
            Cmd::Wait {
                stream: 1,
                event: 0,
            },
            op(1, 1, &[(0, false)]),
        ];
        assert_eq!(straight_line_races(2, 1, &p).len(), 1);
    }

    #[test]
    fn re_record_overwrites_the_snapshot() {
        let p = [
            op(0, 0, &[(0, true)]),
            Cmd::Record {
                stream: 0,
                event: 0,
            },
            Cmd::Record {
                stream: 2,
                event: 0,
            },
            Cmd::Wait {
                stream: 1,
                event: 0,
            },
            op(1, 1, &[(0, false)]),
        ];
        assert_eq!(straight_line_races(3, 1, &p).len(), 1);
    }

    #[test]
    fn wait_stream_and_transitive_paths_order() {
        let p = [
            op(0, 0, &[(0, true)]),
            Cmd::WaitStream {
                stream: 2,
                other: 0,
            },
            op(1, 2, &[]),
            Cmd::WaitStream {
                stream: 1,
                other: 2,
            },
            op(2, 1, &[(0, true)]),
        ];
        assert!(straight_line_races(3, 0, &p).is_empty());
    }

    #[test]
    fn reads_do_not_race_and_sub_ranges_are_not_decided() {
        let p = [op(0, 0, &[(0, false)]), op(1, 1, &[(0, false)])];
        assert!(straight_line_races(2, 0, &p).is_empty());
        let sub = Cmd::Op {
            stmt: 1,
            stream: 1,
            touches: vec![Touch {
                buffer: 0,
                write: true,
                whole: false,
            }],
        };
        assert!(straight_line_races(2, 0, &[op(0, 0, &[(0, true)]), sub]).is_empty());
    }

    #[test]
    fn loop_body_is_checked_against_its_next_iteration() {
        // for _ { main: write x; main: record e; side: wait e; side: read x; }
        // Iteration k+1's write is not ordered after iteration k's read.
        let body = vec![
            Flow::Cmd(op(0, 0, &[(0, true)])),
            Flow::Cmd(Cmd::Record {
                stream: 0,
                event: 0,
            }),
            Flow::Cmd(Cmd::Wait {
                stream: 1,
                event: 0,
            }),
            Flow::Cmd(op(1, 1, &[(0, false)])),
        ];
        let races = certain_races(2, 2, &[Flow::Loop(body.clone())]);
        assert_eq!(races.len(), 1);
        assert_eq!(
            (races[0].first, races[0].second, races[0].loop_carried),
            (1, 0, true)
        );
        // Adding the back edge (side records, main waits at the top) removes the race.
        let mut fixed = vec![Flow::Cmd(Cmd::Wait {
            stream: 0,
            event: 1,
        })];
        fixed.extend(body);
        fixed.push(Flow::Cmd(Cmd::Record {
            stream: 1,
            event: 1,
        }));
        assert!(certain_races(2, 2, &[Flow::Loop(fixed)]).is_empty());
    }

    #[test]
    fn branches_report_only_races_on_every_path() {
        let write = Flow::Cmd(op(0, 0, &[(0, true)]));
        let read = Flow::Cmd(op(1, 1, &[(0, false)]));
        let order = vec![
            Flow::Cmd(Cmd::Record {
                stream: 0,
                event: 0,
            }),
            Flow::Cmd(Cmd::Wait {
                stream: 1,
                event: 0,
            }),
        ];
        // Ordered on one path only: not reported.
        let maybe = [write.clone(), Flow::If(order.clone(), vec![]), read.clone()];
        assert!(certain_races(2, 1, &maybe).is_empty());
        // Ordered on both paths: not reported.
        let both = [write.clone(), Flow::If(order.clone(), order), read.clone()];
        assert!(certain_races(2, 1, &both).is_empty());
        // Unordered on every path where both run: reported, even inside a branch.
        let inside = [write, Flow::If(vec![read], vec![])];
        assert_eq!(certain_races(2, 1, &inside).len(), 1);
    }

    #[test]
    fn a_loop_that_may_not_run_does_not_excuse_nor_accuse() {
        // The wait inside the loop orders the pair only when the loop runs: not certain.
        let p = [
            Flow::Cmd(op(0, 0, &[(0, true)])),
            Flow::Cmd(Cmd::Record {
                stream: 0,
                event: 0,
            }),
            Flow::Loop(vec![Flow::Cmd(Cmd::Wait {
                stream: 1,
                event: 0,
            })]),
            Flow::Cmd(op(1, 1, &[(0, false)])),
        ];
        assert!(certain_races(2, 1, &p).is_empty());
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
