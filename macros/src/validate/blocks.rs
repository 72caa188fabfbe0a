//! Device blocks: bodies hold device work only, and events stay in their body.

use super::line_column;
use crate::model::{Errors, Kind, Node, Program, Statement};

/// The body of a device block (`STREAM: while FLAG { … }`, `STREAM: if FLAG { … }`) holds only
/// work the device can run without the host: no `host` function.
pub(super) fn bodies_hold_only_device_work(program: &Program, errors: &mut Errors) {
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
pub(super) fn block_events_stay_in_their_body(program: &Program, errors: &mut Errors) {
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
                Node::Block { stmt, bodies } => {
                    out.push((ctx, &program.statements[*stmt]));
                    for (branch, body) in bodies.iter().enumerate() {
                        walk(body, Some((*stmt, branch)), program, out);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(&program.body, None, program, &mut out);
    out
}
