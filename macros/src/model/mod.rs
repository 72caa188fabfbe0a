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
pub use statement::{Arg, Kind, Statement};

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
}

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
    /// A device block (statement `stmt`, of kind [`Kind::Block`]) and its bodies.
    Block {
        stmt: usize,
        body: Vec<Node>,
        otherwise: Option<Vec<Node>>,
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
                    }
                })
                .collect(),
            streams: Vec::new(),
            events: Vec::new(),
            statements: Vec::new(),
            body: Vec::new(),
            collectives: Vec::new(),
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
                Item::Event(e) => program.events.push(Event { name: e.name }),
                Item::Stmt(s) => stmts.push(s),
            }
        }
        program.body = stmts
            .into_iter()
            .map(|s| program.resolve_stmt(s, errors))
            .collect();
        program
    }

    /// The index of the parameter named `name`.
    pub fn param(&self, name: &Ident) -> Option<&Param> {
        self.params.iter().find(|p| p.name == *name)
    }

    fn resolve_block(&mut self, stmts: Vec<syntax::Stmt>, errors: &mut Errors) -> Vec<Node> {
        stmts
            .into_iter()
            .map(|s| self.resolve_stmt(s, errors))
            .collect()
    }

    fn resolve_stmt(&mut self, stmt: syntax::Stmt, errors: &mut Errors) -> Node {
        match stmt {
            syntax::Stmt::Op(op) => Node::Stmt(self.resolve_op(op, errors)),
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

    fn event_index(&self, name: &Ident, errors: &mut Errors) -> usize {
        match self.events.iter().position(|e| e.name == *name) {
            Some(i) => i,
            None => {
                errors.spanned(
                    name,
                    unknown("event", name, self.events.iter().map(|e| &e.name)),
                );
                0
            }
        }
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
