//! Device blocks: bodies hold device work only, and events stay in their body.

use super::line_column;
use crate::model::{BlockShape, Errors, Kind, Mode, Node, Program, Statement};
use crate::text::text_of;

/// The body of a device block (`STREAM: while FLAG { … }`, `STREAM: if FLAG { … }`) holds only
/// work the device can run without the host: no `host` function.
pub(super) fn bodies_hold_only_device_work(program: &Program, errors: &mut Errors) {
    for (ctx, _, stmt) in contexts(program) {
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
/// carry ordering into or out of it. A body that records an event before every `wait` of it
/// (a `record` earlier in the body, outside any host `if` or `for` the `wait` is not in) waits
/// for its own record whatever other code records: the same event may then be recorded and
/// waited in each arm of a `switch`, or before the block too.
pub(super) fn block_events_stay_in_their_body(program: &Program, errors: &mut Errors) {
    let all = contexts(program);
    for (at, (ctx, scopes, stmt)) in all.iter().enumerate() {
        let Kind::Wait { event, name } = &stmt.kind else {
            continue;
        };
        let records = |(c, _, s): &&(BodyContext, Vec<usize>, &Statement)| {
            matches!(&s.kind, Kind::Record { event: e } if e == event) && c == ctx
        };
        let own = all[..at]
            .iter()
            .filter(records)
            .any(|(_, outer, _)| scopes.starts_with(outer));
        if ctx.is_some() && own {
            continue;
        }
        let other = all.iter().find(|(c, _, s)| {
            matches!(&s.kind, Kind::Record { event: e } if e == event) && c != ctx
        });
        let Some((record_ctx, _, record)) = other else {
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

/// Every statement in program order, with the innermost device block body it is in and the
/// host `for` bodies and `if` branches around it inside that body (each numbered once).
fn contexts(program: &Program) -> Vec<(BodyContext, Vec<usize>, &Statement)> {
    struct Walk<'p> {
        program: &'p Program,
        scopes: usize,
        out: Vec<(BodyContext, Vec<usize>, &'p Statement)>,
    }
    impl<'p> Walk<'p> {
        fn nodes(&mut self, nodes: &[Node], ctx: BodyContext, outer: &[usize]) {
            for node in nodes {
                match node {
                    Node::Stmt(i) => {
                        let stmt = &self.program.statements[*i];
                        self.out.push((ctx, outer.to_vec(), stmt));
                    }
                    Node::For { body, .. } => self.scope(body, ctx, outer),
                    Node::If {
                        then, otherwise, ..
                    } => {
                        self.scope(then, ctx, outer);
                        self.scope(otherwise.as_deref().unwrap_or_default(), ctx, outer);
                    }
                    Node::Block { stmt, bodies } => {
                        let block = &self.program.statements[*stmt];
                        self.out.push((ctx, outer.to_vec(), block));
                        for (branch, body) in bodies.iter().enumerate() {
                            self.nodes(body, Some((*stmt, branch)), &[]);
                        }
                    }
                }
            }
        }

        fn scope(&mut self, nodes: &[Node], ctx: BodyContext, outer: &[usize]) {
            self.scopes += 1;
            let inner = [outer, &[self.scopes]].concat();
            self.nodes(nodes, ctx, &inner);
        }
    }
    let mut walk = Walk {
        program,
        scopes: 0,
        out: Vec::new(),
    };
    walk.nodes(&program.body, None, &[]);
    walk.out
}

/// A signalled loop (`STREAM: while FLAG, signalled { … }`) ends when its body's kernels say
/// so (`streamgraph_signal`): no built-in kernel counts its iterations or reads its flag back.
/// So it takes no `limit`; in its body only launches write the flag, and not inside a nested
/// device block (whose kernels cannot set this loop's condition); and no signalled loop on the
/// same flag is nested in it (each keeps its condition in the flag's words).
pub(super) fn signalled_loops_are_signalled_by_kernels(program: &Program, errors: &mut Errors) {
    for block in &program.statements {
        let Kind::Block {
            shape: BlockShape::While,
            flag_param: Some(flag),
            limit,
            signalled: Some(word),
            starts,
            end,
            ..
        } = &block.kind
        else {
            continue;
        };
        if let Some(limit) = limit {
            errors.spanned(
                word,
                format!(
                    "`{}` takes no `limit`: a signalled loop ends when its kernels say so, and \
                     no built-in kernel counts its iterations; drop `limit = {}` (end the loop \
                     from a kernel) or `signalled`",
                    block.text,
                    text_of(limit)
                ),
            );
        }
        let body = &program.statements[starts.first().copied().unwrap_or(*end)..*end];
        for stmt in body {
            let inner = body.iter().find(
                |b| matches!(b.kind, Kind::Block { end: e, .. } if b.id < stmt.id && stmt.id < e),
            );
            let nested_on_flag = matches!(
                &stmt.kind,
                Kind::Block {
                    shape: BlockShape::While,
                    flag_param: Some(f),
                    signalled: Some(_),
                    ..
                } if f == flag
            );
            if nested_on_flag {
                errors.spanned(
                    stmt.tokens(),
                    format!(
                        "`{}` is a signalled loop on `{flag}` inside signalled loop `{}` on the \
                         same flag: each keeps its condition in the flag's words, so the inner \
                         one would take the outer one's over; give the inner loop a flag of its \
                         own",
                        stmt.text, block.text
                    ),
                );
            }
            let Some(write) = stmt
                .accesses
                .iter()
                .find(|a| a.mode == Mode::Write && &a.buffer == flag)
            else {
                continue;
            };
            let message = match (&stmt.kind, inner) {
                (Kind::Launch { .. }, None) => continue,
                (Kind::Launch { .. }, Some(inner)) => format!(
                    "`{}` writes `{flag}`, the flag of signalled loop `{}`, inside device block \
                     `{}`: a kernel there cannot set the outer loop's condition; write \
                     `{flag}` in the loop's own body, or drop `signalled`",
                    stmt.text, block.text, inner.text
                ),
                _ => format!(
                    "`{}` writes `{flag}`, the flag of signalled loop `{}`, in its body: only a \
                     kernel sets the loop's condition as it writes the flag \
                     (`streamgraph_signal`), so a fill, copy or call would change the flag \
                     without it; write `{flag}` from a kernel, or drop `signalled`",
                    stmt.text, block.text
                ),
            };
            errors.spanned(&write.at, message);
        }
    }
}
