//! Device blocks: bodies hold device work only, and events stay in their body.

use super::line_column;
use crate::model::{Errors, Kind, Node, Program, Statement};

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
