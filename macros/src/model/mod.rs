//! The resolved program: names looked up, statements numbered, buffer accesses extracted.
//!
//! Everything keeps the user's tokens, so that `validate` and `expand` can point errors and
//! generated code at them. Resolution errors (unknown names, malformed launches) are recorded
//! in [`Errors`] and resolution carries on with a placeholder, so that every error of an input
//! is reported at once.

mod block;
mod collective;
mod errors;
mod operand;
mod param;
mod statement;
mod temps;
#[cfg(test)]
mod temps_tests;
#[cfg(test)]
mod tests;

use proc_macro2::Span;
use syn::{Attribute, Expr, Generics, Ident, Pat, Type, Visibility};

use crate::syntax::{self, Else, Input, Item, StreamOpt};
use crate::text::closest;

pub use collective::{unborrowed, Collective, CollectiveOp, REDUCTIONS};
pub use errors::{Errors, Warning};
pub use operand::{write_form, Access, BufferExpr, Mode};
pub use param::{Param, ParamKind};
pub use statement::{Arg, BlockShape, Kind, Statement};

/// A resolved `pipeline!` input.
pub struct Program {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub pipeline_span: Span,
    pub name: Ident,
    pub generics: Generics,
    pub params: Vec<Param>,
    pub streams: Vec<Stream>,
    pub events: Vec<Event>,
    /// Every operation statement, in source order; `statements[i].id == i`.
    pub statements: Vec<Statement>,
    /// The body's control flow over `statements`.
    pub body: Vec<Node>,
    /// Every collective as written, in source order.
    pub collectives: Vec<Collective>,
    /// The temporaries, in declaration order (each also a [`Param`] with `temp` set).
    pub temps: Vec<Temp>,
}

/// `temp NAME: TYPE[LEN];`.
pub struct Temp {
    pub name: Ident,
    /// The element type.
    pub ty: Type,
    /// The number of elements, an expression over the parameters.
    pub len: Expr,
}

/// `stream NAME(...)`.
pub struct Stream {
    pub name: Ident,
    pub priority: Option<Expr>,
    pub device: Option<Expr>,
}

/// `event NAME`.
pub struct Event {
    pub name: Ident,
    /// For an element of an event array (`event ready[N];`): its index and the array's length.
    pub element: Option<(usize, usize)>,
}

impl Event {
    /// The event as messages and the static program name it: `done`, `ready[1]`.
    pub fn label(&self) -> String {
        match self.element {
            Some((k, _)) => format!("{}[{k}]", self.name),
            None => self.name.to_string(),
        }
    }
}

/// The most events an event array declares (a run-time index is issued as one alternative
/// per element).
pub const MAX_EVENT_ARRAY: usize = 64;

/// Control flow over statements.
pub enum Node {
    Stmt(usize),
    For {
        for_token: syn::token::For,
        pat: Pat,
        expr: Expr,
        body: Vec<Node>,
    },
    If {
        if_token: syn::token::If,
        cond: Expr,
        then: Vec<Node>,
        otherwise: Option<Vec<Node>>,
    },
    /// A device block (statement `stmt`, of kind [`Kind::Block`]) and its bodies, in the
    /// order of [`Kind::Block`]'s `starts` (a `while`'s one; an `if`'s `then` and, with an
    /// `else`, its `else`; a `switch`'s arms).
    Block {
        stmt: usize,
        bodies: Vec<Vec<Node>>,
    },
}

impl Program {
    /// Resolves `input`, recording every resolution error in `errors`.
    pub fn from_syntax(input: Input, errors: &mut Errors) -> Program {
        let mut program = Program {
            attrs: input.attrs,
            vis: input.vis,
            pipeline_span: input.pipeline_token.span,
            name: input.name,
            generics: input.generics,
            params: input
                .params
                .into_iter()
                .map(|p| {
                    let kind = match &p.ty {
                        Type::Reference(r) if r.mutability.is_some() => ParamKind::Mut,
                        Type::Reference(_) => ParamKind::Shared,
                        _ => ParamKind::Value,
                    };
                    Param {
                        name: p.name,
                        ty: p.ty,
                        kind,
                        temp: None,
                    }
                })
                .collect(),
            streams: Vec::new(),
            events: Vec::new(),
            statements: Vec::new(),
            body: Vec::new(),
            collectives: Vec::new(),
            temps: Vec::new(),
        };
        let mut stmts = Vec::new();
        for item in input.items {
            match item {
                Item::Stream(s) => {
                    let mut stream = Stream {
                        name: s.name,
                        priority: None,
                        device: None,
                    };
                    for opt in s.options {
                        let (slot, key, expr) = match opt {
                            StreamOpt::Priority(k, e) => {
                                (&mut stream.priority, Ident::new("priority", k.span), e)
                            }
                            StreamOpt::Device(k, e) => {
                                (&mut stream.device, Ident::new("device", k.span), e)
                            }
                        };
                        if slot.is_some() {
                            errors.spanned(
                                &key,
                                format!("`{key}` is given twice for this stream; keep one"),
                            );
                        }
                        *slot = Some(expr);
                    }
                    program.streams.push(stream);
                }
                Item::Event(e) => program.declare_event(e, errors),
                Item::Temp(t) => program.declare_temp(t),
                Item::Stmt(s) => stmts.push(s),
            }
        }
        program.body = stmts
            .into_iter()
            .map(|s| program.resolve_stmt(s, errors))
            .collect();
        program.place_temps(errors);
        program
    }

    /// The index of the parameter named `name`.
    pub fn param(&self, name: &Ident) -> Option<&Param> {
        self.params.iter().find(|p| p.name == *name)
    }

    /// "did you mean `p`? " for the parameter `p` whose name is closest to `name`, or nothing.
    fn similar_param(&self, name: &Ident) -> String {
        let params: Vec<String> = self.params.iter().map(|p| p.name.to_string()).collect();
        closest(&name.to_string(), params.iter().map(String::as_str))
            .map(|s| format!("did you mean `{s}`? "))
            .unwrap_or_default()
    }

    fn resolve_block(&mut self, stmts: Vec<syntax::Stmt>, errors: &mut Errors) -> Vec<Node> {
        stmts
            .into_iter()
            .map(|s| self.resolve_stmt(s, errors))
            .collect()
    }

    fn resolve_stmt(&mut self, stmt: syntax::Stmt, errors: &mut Errors) -> Node {
        match stmt {
            syntax::Stmt::Op(op) => match self.event_pick(&op) {
                Some(array) => self.resolve_event_pick(op, array, errors),
                None => Node::Stmt(self.resolve_op(op, errors)),
            },
            syntax::Stmt::For(f) => Node::For {
                for_token: f.for_token,
                pat: f.pat,
                expr: f.expr,
                body: self.resolve_block(f.body, errors),
            },
            syntax::Stmt::If(i) => self.resolve_if(i, errors),
            syntax::Stmt::Block(b) => self.resolve_device_block(*b, errors),
            syntax::Stmt::Collective(c) => Node::Stmt(self.resolve_collective(*c, errors)),
        }
    }

    fn resolve_if(&mut self, i: syntax::IfStmt, errors: &mut Errors) -> Node {
        let then = self.resolve_block(i.then, errors);
        let otherwise = i.otherwise.map(|e| match e {
            Else::Block(b) => self.resolve_block(b, errors),
            Else::If(nested) => vec![self.resolve_if(*nested, errors)],
        });
        Node::If {
            if_token: i.if_token,
            cond: i.cond,
            then,
            otherwise,
        }
    }

    fn stream_index(&self, name: &Ident, errors: &mut Errors) -> usize {
        match self.streams.iter().position(|s| s.name == *name) {
            Some(i) => i,
            None => {
                errors.spanned(
                    name,
                    unknown("stream", name, self.streams.iter().map(|s| &s.name)),
                );
                0
            }
        }
    }

    /// `event NAME;` is one event; `event NAME[N];` is `N` of them, `NAME[0]` to `NAME[N-1]`.
    fn declare_event(&mut self, e: syntax::EventItem, errors: &mut Errors) {
        let Some(len) = e.len else {
            self.events.push(Event {
                name: e.name,
                element: None,
            });
            return;
        };
        let n = match len.base10_parse::<usize>() {
            Ok(n) if (1..=MAX_EVENT_ARRAY).contains(&n) => n,
            _ => {
                errors.spanned(
                    &len,
                    format!(
                        "an event array has 1 to {MAX_EVENT_ARRAY} events: write their number as \
                         an integer literal, `event {}[2];`",
                        e.name
                    ),
                );
                1
            }
        };
        for k in 0..n {
            self.events.push(Event {
                name: e.name.clone(),
                element: Some((k, n)),
            });
        }
    }

    /// The event `record NAME` / `wait NAME` names (an error for an event array: it needs an
    /// element).
    fn event_index(&self, name: &Ident, errors: &mut Errors) -> usize {
        match self.events.iter().position(|e| e.name == *name) {
            Some(i) => {
                if let Some((_, n)) = self.events[i].element {
                    errors.spanned(
                        name,
                        format!(
                            "`{name}` is an array of {n} events: name one, `{name}[0]`, or pick \
                             one by a value, `{name}[i % {n}]`"
                        ),
                    );
                }
                i
            }
            None => {
                errors.spanned(name, self.unknown_event(name));
                0
            }
        }
    }

    fn unknown_event(&self, name: &Ident) -> String {
        let mut names: Vec<&Ident> = Vec::new();
        for e in &self.events {
            if !names.contains(&&e.name) {
                names.push(&e.name);
            }
        }
        unknown("event", name, names.into_iter())
    }

    /// The element `NAME[INDEX]` names: `Ok(event)` for a constant index, `Err((first, len))`
    /// for an index known only at run time (the array's first event and its length). Errors
    /// (recorded) resolve to some event.
    pub(super) fn event_element(
        &self,
        name: &Ident,
        index: &Expr,
        errors: &mut Errors,
    ) -> Result<usize, (usize, usize)> {
        let Some(first) = self.events.iter().position(|e| e.name == *name) else {
            errors.spanned(name, self.unknown_event(name));
            return Ok(0);
        };
        let Some((_, n)) = self.events[first].element else {
            errors.spanned(
                index,
                format!(
                    "`{name}` is one event, not an array: write `{name}` without an index, or \
                     declare an array, `event {name}[2];`"
                ),
            );
            return Ok(first);
        };
        match constant_index(index) {
            Some(k) if k < n => Ok(first + k),
            Some(k) => {
                errors.spanned(
                    index,
                    format!(
                        "index {k} is out of range: `{name}` is an array of {n} events, \
                         `{name}[0]` to `{name}[{}]`",
                        n - 1
                    ),
                );
                Ok(first)
            }
            None => Err((first, n)),
        }
    }
}

/// `expr` as a plain identifier, when it is one: how a device block's flag or index and a
/// collective's communicator name their parameter.
fn plain_ident(expr: &Expr) -> Option<Ident> {
    match expr {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
        _ => None,
    }
}

fn unknown<'a>(what: &str, name: &Ident, declared: impl Iterator<Item = &'a Ident>) -> String {
    let names: Vec<String> = declared.map(ToString::to_string).collect();
    let declared: Vec<String> = names.iter().map(|d| format!("`{d}`")).collect();
    let name_text = name.to_string();
    if let Some(similar) = closest(&name_text, names.iter().map(String::as_str)) {
        format!(
            "unknown {what} `{name}`: did you mean `{similar}`? (declared {what}s are {}; a new \
             one is declared with `{what} {name};`)",
            declared.join(", ")
        )
    } else if declared.is_empty() {
        format!("unknown {what} `{name}`: no {what} is declared; declare it with `{what} {name};`")
    } else {
        format!(
            "unknown {what} `{name}`: declared {what}s are {}; declare it with `{what} {name};`",
            declared.join(", ")
        )
    }
}

/// The value of an index written as an integer literal (`0`, `1usize`).
pub(crate) fn constant_index(index: &Expr) -> Option<usize> {
    match index {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        _ => None,
    }
}
