//! Temporaries (`temp h: f32[n];`): declared as device memory that statements name as they
//! name a `&mut` parameter, and placed: the model inserts an `Alloc` statement before the
//! temporary's first use and a `Free` statement after its last.
//!
//! Both go between the body's top-level items — CUDA allows no memory node inside a device
//! block's body, and a host `for`/`if` would allocate once per iteration or not at all — so a
//! temporary used anywhere inside an item is allocated before the item and freed after it:
//!
//! - **Alloc** before the top-level item that holds the first use (in source order), on the
//!   stream of that use (for a use inside a device block, the stream of the outermost block).
//! - **Free** at the first top-level boundary after the item that holds the last use where
//!   some stream's frontier covers the allocation and every use on every execution: each
//!   one's latest issue is ordered before that stream's next command, through the stream's
//!   own order, `wait`s of events recorded after it, or `wait_stream`s (the allocation counts
//!   because the items holding the uses may not run: a `for` of no iteration, an `if` not
//!   taken). The stream of the last use is tried first, then the other streams that used it,
//!   then the rest. When no boundary has one, the free goes at the end of the program on the
//!   origin, after a `wait_stream` of each stream whose uses (or allocation) are not covered
//!   there (the run joins those streams into the origin at its end anyway).
//!
//! Allocations and frees at one boundary come frees first (their memory can serve the
//! allocations), each in declaration order. Both statements write the whole temporary in the
//! race check, so a use on another stream that nothing orders after the allocation is a data
//! race reported on the use.

use std::collections::BTreeSet;

use quote::ToTokens;
use syn::visit_mut::VisitMut;
use syn::{Expr, Ident, Lit};

use super::{Access, Errors, Kind, Mode, Node, Param, ParamKind, Program, Statement, Temp};
use crate::syntax;

impl Program {
    /// `temp NAME: TYPE[LEN];`: a temporary, and a parameter-like buffer of the same name.
    pub(super) fn declare_temp(&mut self, t: syntax::TempItem) {
        let index = self.temps.len();
        let ty = &t.ty;
        let span = t.name.span();
        let param_ty: syn::Type = syn::parse_quote_spanned!(span=>
            &mut ::streamgraph::__private::Temp<'static, #ty>
        );
        self.params.push(Param {
            name: t.name.clone(),
            ty: param_ty,
            kind: ParamKind::Mut,
            temp: Some(index),
        });
        self.temps.push(Temp {
            name: t.name,
            ty: t.ty,
            len: t.len,
        });
    }

    /// The temporary named `name`, if one is declared so.
    pub fn temp_named(&self, name: &Ident) -> Option<usize> {
        self.temps.iter().position(|t| t.name == *name)
    }

    /// Places every temporary's `Alloc` and `Free` statement (see the module); a temporary
    /// that no statement uses is an error.
    pub(super) fn place_temps(&mut self, errors: &mut Errors) {
        if self.temps.is_empty() {
            return;
        }
        let tops = top_of_statements(self);
        let mut slots: Vec<Vec<Pending>> = vec![Vec::new(); self.body.len() + 1];
        for (t, temp) in self.temps.iter().enumerate() {
            // A temporary named as a parameter or an earlier temporary is reported as such
            // (`validate::names`); its uses are the other one's.
            let clash = self
                .params
                .iter()
                .any(|p| p.name == temp.name && p.temp.is_none_or(|o| o < t));
            if clash {
                continue;
            }
            let uses: Vec<usize> = self
                .statements
                .iter()
                .filter(|s| s.accesses.iter().any(|a| a.buffer == temp.name))
                .map(|s| s.id)
                .collect();
            let (Some(&first), Some(&last)) = (uses.first(), uses.last()) else {
                errors.spanned(
                    &temp.name,
                    format!(
                        "temporary `{}` is never used: no statement names it; remove the \
                         declaration, or use it (`&mut {}` in a launch, a `copy` or `fill` \
                         target, …)",
                        temp.name, temp.name
                    ),
                );
                continue;
            };
            let (Some(first_top), Some(last_top)) = (tops[first], tops[last]) else {
                continue;
            };
            let alloc_stream = self.site_of(first).1;
            let (free_at, free_stream, joins) =
                self.free_point(&temp.name, (first_top, alloc_stream), (last, last_top));
            // Frees first at a boundary, then allocations: `push` below keeps that order.
            slots[first_top].push(Pending::Alloc {
                temp: t,
                stream: alloc_stream,
            });
            for stream in joins {
                slots[free_at].push(Pending::Join { temp: t, stream });
            }
            slots[free_at].push(Pending::Free {
                temp: t,
                stream: free_stream,
            });
        }
        for slot in &mut slots {
            // Stable: joins stay before their free, each temporary in declaration order.
            slot.sort_by_key(|p| match p {
                Pending::Join { temp, .. } | Pending::Free { temp, .. } => (0, *temp),
                Pending::Alloc { temp, .. } => (1, *temp),
            });
        }
        self.insert(&tops, slots);
    }

    /// The site of statement `i` in the top-level flow: the outermost device block holding
    /// it (its id and stream), or the statement itself.
    fn site_of(&self, i: usize) -> (usize, usize) {
        let block = self
            .statements
            .iter()
            .find(|b| matches!(b.kind, Kind::Block { end, .. } if b.id < i && i < end));
        match block {
            Some(b) => (b.id, b.stream),
            None => (i, self.statements[i].stream),
        }
    }

    /// Where `temp`, allocated on stream `alloc_stream` before top-level item `first_top` and
    /// last used by statement `last` in top-level item `last_top`, is freed: the slot (before
    /// item `k`, or the end), the stream, and the streams the origin must `wait_stream` for
    /// first.
    ///
    /// The allocation is a site like the uses: where the items holding the uses may not run
    /// (a `for` of no iteration, an `if` not taken), only it orders the free.
    fn free_point(
        &self,
        temp: &Ident,
        (first_top, alloc_stream): (usize, usize),
        (last, last_top): (usize, usize),
    ) -> (usize, usize, Vec<usize>) {
        let streams = self.streams.len().max(1);
        let mut sites: Vec<(usize, usize)> = self
            .statements
            .iter()
            .filter(|s| s.accesses.iter().any(|a| a.buffer == *temp))
            .map(|s| self.site_of(s.id))
            .collect();
        sites.sort_unstable();
        sites.dedup();
        sites.push((ALLOC_SITE, alloc_stream));
        let mut order = vec![self.site_of(last).1];
        for &(_, s) in &sites {
            if !order.contains(&s) {
                order.push(s);
            }
        }
        for s in 0..streams {
            if !order.contains(&s) {
                order.push(s);
            }
        }
        let flow = Coverage {
            program: self,
            sites: &sites,
            targets: streams + self.events.len(),
        };
        let mut state = flow.start();
        for (k, node) in self.body.iter().enumerate() {
            if k == first_top {
                flow.issue(&mut state, ALLOC_SITE);
            }
            flow.node(node, &mut state);
            if k < last_top {
                continue;
            }
            if let Some(&s) = order.iter().find(|&&s| state[s].is_empty()) {
                return (k + 1, s, Vec::new());
            }
        }
        let mut joins: Vec<usize> = state[0]
            .iter()
            .filter_map(|site| sites.iter().find(|(id, _)| id == site).map(|&(_, s)| s))
            .filter(|&s| s != 0)
            .collect();
        joins.sort_unstable();
        joins.dedup();
        (self.body.len(), 0, joins)
    }

    /// Adds the statements of `slots` (`slots[k]` before top-level item `k`, the last at the
    /// end), renumbering every statement id the program holds.
    fn insert(&mut self, tops: &[Option<usize>], slots: Vec<Vec<Pending>>) {
        let old = std::mem::take(&mut self.statements);
        let n = old.len();
        // New id of each old statement: shifted by everything inserted up to its item.
        let mut before = vec![0usize; slots.len() + 1];
        for (k, slot) in slots.iter().enumerate() {
            before[k + 1] = before[k] + slot.len();
        }
        let mut top = 0;
        let map: Vec<usize> = (0..n)
            .map(|i| {
                if let Some(t) = tops[i] {
                    top = t;
                }
                i + before[top + 1]
            })
            .collect();
        let exclusive = |x: usize| if x == 0 { 0 } else { map[x - 1] + 1 };
        let mut old: Vec<Option<Statement>> = old.into_iter().map(Some).collect();
        let mut statements = Vec::with_capacity(n + before[slots.len()]);
        let mut synthetic: Vec<Vec<usize>> = vec![Vec::new(); slots.len()];
        let mut emitted = 0;
        let mut emit = |upto: usize, statements: &mut Vec<Statement>| {
            while emitted <= upto && emitted < slots.len() {
                for p in &slots[emitted] {
                    synthetic[emitted].push(statements.len());
                    statements.push(self.synthetic(statements.len(), p));
                }
                emitted += 1;
            }
        };
        let mut top = 0;
        for i in 0..n {
            if let Some(t) = tops[i] {
                top = t;
            }
            emit(top, &mut statements);
            if let Some(mut s) = old[i].take() {
                s.id = map[i];
                match &mut s.kind {
                    Kind::Block { starts, end, .. } => {
                        for start in starts.iter_mut() {
                            *start = exclusive(*start);
                        }
                        *end = exclusive(*end);
                    }
                    Kind::Collective { first, .. } => *first = map[*first],
                    _ => {}
                }
                statements.push(s);
            }
        }
        emit(slots.len(), &mut statements);
        self.statements = statements;
        let body = std::mem::take(&mut self.body);
        let mut new_body = Vec::with_capacity(body.len() + before[slots.len()]);
        for (k, node) in body.into_iter().enumerate() {
            new_body.extend(synthetic[k].iter().map(|&id| Node::Stmt(id)));
            new_body.push(renumber(node, &map));
        }
        new_body.extend(synthetic[slots.len() - 1].iter().map(|&id| Node::Stmt(id)));
        self.body = new_body;
    }

    /// The statement of `pending`, with id `id`.
    fn synthetic(&self, id: usize, pending: &Pending) -> Statement {
        let (temp, stream) = match *pending {
            Pending::Alloc { temp, stream }
            | Pending::Free { temp, stream }
            | Pending::Join { temp, stream } => (temp, stream),
        };
        let name = &self.temps[temp].name;
        let span = name.span();
        let stream_name = |s: usize| {
            self.streams
                .get(s)
                .map_or_else(|| Ident::new("main", span), |d| d.name.clone())
        };
        let (kind, stream, text, accesses) = match *pending {
            Pending::Alloc { .. } | Pending::Free { .. } => {
                let alloc = matches!(pending, Pending::Alloc { .. });
                let word = if alloc { "alloc" } else { "free" };
                let access = Access {
                    buffer: name.clone(),
                    mode: Mode::Write,
                    whole: true,
                    element: None,
                    dynamic: false,
                    at: name.to_token_stream(),
                };
                let kind = if alloc {
                    Kind::Alloc { temp }
                } else {
                    Kind::Free { temp }
                };
                let text = format!("{}: {word} {name}", stream_name(stream));
                (kind, stream, text, vec![access])
            }
            Pending::Join { .. } => {
                let other = stream_name(stream);
                let kind = Kind::WaitStream {
                    stream,
                    name: other.clone(),
                };
                let text = format!("{}: wait_stream {other}", stream_name(0));
                (kind, 0, text, Vec::new())
            }
        };
        Statement {
            id,
            stream,
            stream_name: Ident::new(&stream_name(stream).to_string(), span),
            kind,
            accesses,
            text,
            first: span,
            last: span,
            unresolved: false,
            alternative: false,
        }
    }
}

/// The site of a temporary's allocation in [`Coverage`] (uses are statement ids).
const ALLOC_SITE: usize = usize::MAX;

/// A statement the placement adds.
#[derive(Debug, Clone, Copy)]
enum Pending {
    Alloc {
        temp: usize,
        stream: usize,
    },
    Free {
        temp: usize,
        stream: usize,
    },
    /// `origin: wait_stream STREAM`, before the end-of-program free of `temp`.
    Join {
        temp: usize,
        stream: usize,
    },
}

/// The top-level item of each statement (`None` for none, which should not happen).
fn top_of_statements(program: &Program) -> Vec<Option<usize>> {
    let mut tops = vec![None; program.statements.len()];
    for (k, node) in program.body.iter().enumerate() {
        mark(program, node, k, &mut tops);
    }
    tops
}

fn mark(program: &Program, node: &Node, k: usize, tops: &mut [Option<usize>]) {
    match node {
        Node::Stmt(i) => {
            let range = match program.statements[*i].kind {
                Kind::Collective { first, count, .. } if first == *i => first..first + count,
                _ => *i..*i + 1,
            };
            for j in range {
                if let Some(t) = tops.get_mut(j) {
                    *t = Some(k);
                }
            }
        }
        Node::For { body, .. } => body.iter().for_each(|n| mark(program, n, k, tops)),
        Node::If {
            then, otherwise, ..
        } => {
            then.iter().for_each(|n| mark(program, n, k, tops));
            otherwise
                .iter()
                .flatten()
                .for_each(|n| mark(program, n, k, tops));
        }
        Node::Block { stmt, .. } => {
            let end = match program.statements[*stmt].kind {
                Kind::Block { end, .. } => end,
                _ => *stmt + 1,
            };
            for j in *stmt..end.max(*stmt + 1) {
                if let Some(t) = tops.get_mut(j) {
                    *t = Some(k);
                }
            }
        }
    }
}

/// `node` with its statement ids mapped through `map`.
fn renumber(node: Node, map: &[usize]) -> Node {
    let all = |nodes: Vec<Node>| nodes.into_iter().map(|n| renumber(n, map)).collect();
    match node {
        Node::Stmt(i) => Node::Stmt(map[i]),
        Node::For {
            for_token,
            pat,
            mut expr,
            body,
        } => {
            StatementIds(map).visit_expr_mut(&mut expr);
            Node::For {
                for_token,
                pat,
                expr,
                body: all(body),
            }
        }
        Node::If {
            if_token,
            cond,
            then,
            otherwise,
        } => Node::If {
            if_token,
            cond,
            then: all(then),
            otherwise: otherwise.map(all),
        },
        Node::Block { stmt, bodies } => Node::Block {
            stmt: map[stmt],
            bodies: bodies.into_iter().map(all).collect(),
        },
    }
}

/// Maps the statement ids that resolution wrote into expressions through its `.0`: an event
/// picked at run time is checked in the `for` over it, whose error names its first
/// alternative as `Self::PROGRAM.statements[ID]` (`resolve_event_pick`).
struct StatementIds<'m>(&'m [usize]);

impl VisitMut for StatementIds<'_> {
    fn visit_expr_index_mut(&mut self, e: &mut syn::ExprIndex) {
        syn::visit_mut::visit_expr_index_mut(self, e);
        if !names_statements(&e.expr) {
            return;
        }
        if let Expr::Lit(syn::ExprLit {
            lit: Lit::Int(id), ..
        }) = &mut *e.index
            && let Ok(old) = id.base10_parse::<usize>()
            && let Some(&new) = self.0.get(old)
        {
            *id = syn::LitInt::new(&format!("{new}usize"), id.span());
        }
    }
}

/// Whether `e` is `Self::PROGRAM.statements`.
fn names_statements(e: &Expr) -> bool {
    let Expr::Field(field) = e else {
        return false;
    };
    let Expr::Path(base) = &*field.base else {
        return false;
    };
    matches!(&field.member, syn::Member::Named(m) if m == "statements")
        && base.qself.is_none()
        && base.path.segments.len() == 2
        && base.path.segments[0].ident == "Self"
        && base.path.segments[1].ident == "PROGRAM"
}

/// Which uses of a temporary each stream and event may not cover: for every target (streams,
/// then events), the use sites whose latest issue is possibly not ordered before the
/// target's next command (a may-analysis over every path of host `for`/`if`). A site is a
/// statement that uses the temporary, the outermost device block holding one, or the
/// temporary's allocation ([`ALLOC_SITE`]).
struct Coverage<'p> {
    program: &'p Program,
    /// `(site id, stream)`.
    sites: &'p [(usize, usize)],
    targets: usize,
}

type State = Vec<BTreeSet<usize>>;

impl Coverage<'_> {
    /// No site issued yet: nothing uncovered on streams; an event never recorded covers
    /// nothing (waiting for it orders nothing).
    fn start(&self) -> State {
        let streams = self.program.streams.len().max(1);
        let all: BTreeSet<usize> = self.sites.iter().map(|&(id, _)| id).collect();
        (0..self.targets)
            .map(|t| {
                if t < streams {
                    BTreeSet::new()
                } else {
                    all.clone()
                }
            })
            .collect()
    }

    fn nodes(&self, nodes: &[Node], state: &mut State) {
        for n in nodes {
            self.node(n, state);
        }
    }

    fn node(&self, node: &Node, state: &mut State) {
        let streams = self.program.streams.len().max(1);
        match node {
            Node::Stmt(i) => {
                let stmt = &self.program.statements[*i];
                match stmt.kind {
                    Kind::Record { event } => {
                        if let Some(slot) = state.get(stmt.stream).cloned()
                            && let Some(e) = state.get_mut(streams + event)
                        {
                            *e = slot;
                        }
                    }
                    Kind::Wait { event, .. } => self.meet(state, stmt.stream, streams + event),
                    Kind::WaitStream { stream, .. } => self.meet(state, stmt.stream, stream),
                    Kind::Collective { first, count, .. } if first == *i => {
                        for j in first..first + count {
                            self.issue(state, j);
                        }
                    }
                    _ => self.issue(state, *i),
                }
            }
            Node::Block { stmt, .. } => self.issue(state, *stmt),
            Node::If {
                then, otherwise, ..
            } => {
                let mut other = state.clone();
                self.nodes(then, state);
                self.nodes(otherwise.as_deref().unwrap_or_default(), &mut other);
                join(state, &other);
            }
            Node::For { body, .. } => {
                // Zero or more iterations: the entry state joined with every state the body
                // can leave, to the fixed point (sets only grow, within the sites).
                loop {
                    let mut next = state.clone();
                    self.nodes(body, &mut next);
                    let before = state.clone();
                    join(state, &next);
                    if *state == before {
                        break;
                    }
                }
            }
        }
    }

    /// Site `i` issues: it becomes uncovered everywhere but on its own stream.
    fn issue(&self, state: &mut State, i: usize) {
        let Some(&(site, stream)) = self.sites.iter().find(|(id, _)| *id == i) else {
            return;
        };
        for (t, set) in state.iter_mut().enumerate() {
            if t == stream {
                set.remove(&site);
            } else {
                set.insert(site);
            }
        }
    }

    /// `target` waits for `source`: it now covers what `source` covers.
    fn meet(&self, state: &mut State, target: usize, source: usize) {
        if target == source {
            return;
        }
        let Some(from) = state.get(source).cloned() else {
            return;
        };
        if let Some(to) = state.get_mut(target) {
            to.retain(|s| from.contains(s));
        }
    }
}

/// `into` joined with `other` (a site uncovered on either path stays uncovered).
fn join(into: &mut State, other: &State) {
    for (a, b) in into.iter_mut().zip(other) {
        a.extend(b.iter().copied());
    }
}
