//! The resolved program: names looked up, statements numbered, buffer accesses extracted.
//!
//! Everything keeps the user's tokens, so that `validate` and `expand` can point errors and
//! generated code at them. Resolution errors (unknown names, malformed launches) are recorded
//! in [`Errors`] and resolution carries on with a placeholder, so that every error of an input
//! is reported at once.

use proc_macro2::{Span, TokenStream};
use quote::{quote_spanned, ToTokens};
use syn::{Attribute, Expr, Generics, Ident, Pat, Type, Visibility};

use crate::syntax::{self, Else, Input, Item, Op, StreamOpt};
use crate::text::{closest, text_of};

/// Errors collected while resolving and validating, reported together; and warnings.
#[derive(Default)]
pub struct Errors {
    errors: Vec<syn::Error>,
    warnings: Vec<Warning>,
}

/// A warning: stable Rust gives procedural macros no warning of their own, so `expand` emits
/// it as the use of a deprecated item named `name`, with `message` as the deprecation note.
pub struct Warning {
    pub span: Span,
    pub name: &'static str,
    pub message: String,
}

impl Errors {
    /// Records `message` on the tokens `at`.
    pub fn spanned(&mut self, at: impl ToTokens, message: impl std::fmt::Display) {
        self.errors.push(syn::Error::new_spanned(at, message));
    }

    /// Records an error, e.g. one built with a note appended.
    pub fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// Records a warning.
    pub fn warn(&mut self, span: Span, name: &'static str, message: impl std::fmt::Display) {
        self.warnings.push(Warning {
            span,
            name,
            message: message.to_string(),
        });
    }

    /// How many errors are recorded so far.
    pub fn count(&self) -> usize {
        self.errors.len()
    }

    /// Every error, in the order found.
    #[cfg(test)]
    pub fn into_vec(self) -> Vec<syn::Error> {
        self.errors
    }

    /// Every error and every warning, each in the order found.
    pub fn into_parts(self) -> (Vec<syn::Error>, Vec<Warning>) {
        (self.errors, self.warnings)
    }
}

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
}

/// A pipeline parameter.
pub struct Param {
    pub name: Ident,
    pub ty: Type,
    pub kind: ParamKind,
}

/// How a parameter is passed, from its declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// `&T`.
    Shared,
    /// `&mut T`.
    Mut,
    /// Anything else: bound by copy.
    Value,
}

impl Param {
    /// Whether the parameter is declared `&mut` but what it holds is borrowed shared under
    /// the `&mut`: `&mut &DeviceBuffer<T>`, `&mut DeviceView<'_, T>`, `&mut [&PinnedBuffer<T>]`,
    /// `&mut &mut &T`. The pipeline cannot write such a buffer: the `&mut` is exclusive only
    /// for the reference or view, not for the memory, which others may be reading.
    pub fn shared_under_mut(&self) -> bool {
        matches!(&self.ty, Type::Reference(r) if r.mutability.is_some() && holds_shared(&r.elem))
    }

    /// The declared type with every shared borrow of a buffer made exclusive: what to declare
    /// instead of a [`Param::shared_under_mut`] type (`&mut &DeviceBuffer<T>` becomes
    /// `&mut DeviceBuffer<T>`, `&mut DeviceView<'_, T>` becomes `&mut DeviceViewMut<'_, T>`).
    pub fn exclusive_type(&self) -> Type {
        exclusive(&self.ty, false)
    }

    /// Whether the declared type is pageable host memory (`&[T]`, `&mut [T]`, `&Vec<T>`,
    /// `Vec<T>`, arrays of plain data), which a copy cannot use inside a CUDA graph. Slices,
    /// `Vec`s and arrays *of buffers* (`&[PinnedBuffer<f32>]`, `Vec<DeviceBuffer<u8>>`) are
    /// not: a copy names one of their elements, whose own type decides.
    pub fn is_pageable_host(&self) -> bool {
        container_element(&self.ty).is_some_and(is_host_data)
    }
}

/// The read-only views of the runtime and of cudarc, with their writable counterparts.
const SHARED_VIEWS: [(&str, &str); 3] = [
    ("DeviceView", "DeviceViewMut"),
    ("PinnedView", "PinnedViewMut"),
    ("CudaView", "CudaViewMut"),
];

/// Whether `ty` (under a `&mut`) holds a shared borrow: a `&T`, a read-only view, or a
/// slice, array or `Vec` of them.
fn holds_shared(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => r.mutability.is_none() || holds_shared(&r.elem),
        Type::Paren(p) => holds_shared(&p.elem),
        Type::Group(g) => holds_shared(&g.elem),
        Type::Slice(s) => holds_shared(&s.elem),
        Type::Array(a) => holds_shared(&a.elem),
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|last| {
            SHARED_VIEWS.iter().any(|(view, _)| last.ident == view)
                || (last.ident == "Vec" && vec_element(last).is_some_and(holds_shared))
        }),
        _ => false,
    }
}

/// The element type of `Vec<T>`'s last path segment.
fn vec_element(last: &syn::PathSegment) -> Option<&Type> {
    match &last.arguments {
        syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

/// `ty` with its shared borrows made exclusive (see [`Param::exclusive_type`]); a shared
/// reference directly under another reference is dropped (`&mut &T` is `&mut T`).
fn exclusive(ty: &Type, under_reference: bool) -> Type {
    let mut ty = ty.clone();
    match &mut ty {
        Type::Reference(r) => {
            let inner = exclusive(&r.elem, true);
            if r.mutability.is_none() {
                if under_reference {
                    return inner;
                }
                r.mutability = Some(syn::token::Mut(r.and_token.span));
            }
            *r.elem = inner;
        }
        Type::Paren(p) => *p.elem = exclusive(&p.elem, under_reference),
        Type::Group(g) => *g.elem = exclusive(&g.elem, under_reference),
        Type::Slice(s) => *s.elem = exclusive(&s.elem, false),
        Type::Array(a) => *a.elem = exclusive(&a.elem, false),
        Type::Path(p) if p.qself.is_none() => {
            if let Some(last) = p.path.segments.last_mut() {
                if let Some((_, writable)) = SHARED_VIEWS.iter().find(|(v, _)| last.ident == v) {
                    last.ident = Ident::new(writable, last.ident.span());
                } else if last.ident == "Vec" {
                    if let syn::PathArguments::AngleBracketed(args) = &mut last.arguments {
                        for arg in &mut args.args {
                            if let syn::GenericArgument::Type(t) = arg {
                                *t = exclusive(t, false);
                            }
                        }
                    }
                }
            }
        }
        _ => {}
    }
    ty
}

/// A written buffer expression in the shape that generated code writes through the
/// pipeline's exclusive borrow of the parameter: the parameter, then indices (`xs[i]`), then
/// at most one `.slice_mut(range)` or `.slice(range)`.
pub struct WriteForm<'e> {
    /// The indices, outermost first (`xs[i][j]`: `i`, then `j`).
    pub indices: Vec<&'e Expr>,
    /// The range of the slice, and the method's name (for spans).
    pub slice: Option<(&'e Ident, &'e Expr)>,
}

/// `expr` as a [`WriteForm`]; `None` when it is not in that shape (another method, a slice of
/// a slice, a field).
pub fn write_form(expr: &Expr) -> Option<WriteForm<'_>> {
    let mut at = unparen(expr);
    let mut slice = None;
    if let Expr::MethodCall(m) = at {
        let is_slice = m.method == "slice" || m.method == "slice_mut";
        if !is_slice || m.turbofish.is_some() || m.args.len() != 1 {
            return None;
        }
        slice = m.args.first().map(|range| (&m.method, range));
        at = unparen(&m.receiver);
    }
    let mut indices = Vec::new();
    loop {
        match at {
            Expr::Index(i) => {
                indices.push(&*i.index);
                at = unparen(&i.expr);
            }
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => break,
            _ => return None,
        }
    }
    indices.reverse();
    Some(WriteForm { indices, slice })
}

fn unparen(mut expr: &Expr) -> &Expr {
    while let Expr::Paren(p) = expr {
        expr = &p.expr;
    }
    expr
}

impl Kind {
    /// The buffers the statement writes: `&mut` launch arguments, a copy destination, a fill
    /// target, a collective's receive buffer.
    pub fn writes(&self) -> Vec<&BufferExpr> {
        match self {
            Kind::Launch { args, .. } => args
                .iter()
                .filter_map(|a| match a {
                    Arg::Write(b) => Some(b),
                    _ => None,
                })
                .collect(),
            Kind::Copy { dst, .. } | Kind::Fill { dst, .. } => vec![dst],
            Kind::Collective { recv, .. } => vec![recv],
            _ => Vec::new(),
        }
    }
}

/// The element type of a slice, array or `Vec` (behind references and parentheses).
fn container_element(ty: &Type) -> Option<&Type> {
    match strip(ty) {
        Type::Slice(s) => Some(&s.elem),
        Type::Array(a) => Some(&a.elem),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if last.ident != "Vec" {
                return None;
            }
            match &last.arguments {
                syn::PathArguments::AngleBracketed(args) => {
                    args.args.iter().find_map(|a| match a {
                        syn::GenericArgument::Type(t) => Some(t),
                        _ => None,
                    })
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The buffer types of the runtime and of cudarc that a parameter may hold many of.
const BUFFER_TYPES: &[&str] = &[
    "DeviceBuffer",
    "DeviceView",
    "DeviceViewMut",
    "PinnedBuffer",
    "PinnedView",
    "PinnedViewMut",
    "CudaSlice",
    "CudaView",
    "CudaViewMut",
];

/// Whether an element type is plain host data (a scalar, a struct, nested containers of
/// them) rather than a buffer: a generic type other than `Vec` (`PinnedBuffer<f32>`, a
/// user's `Chunk<T>`) or one of [`BUFFER_TYPES`] is taken as a buffer.
fn is_host_data(ty: &Type) -> bool {
    if container_element(ty).is_some() {
        return true;
    }
    match strip(ty) {
        Type::Path(p) => p.path.segments.last().is_none_or(|last| {
            !(BUFFER_TYPES.iter().any(|b| last.ident == b)
                || matches!(last.arguments, syn::PathArguments::AngleBracketed(_)))
        }),
        _ => true,
    }
}

/// `ty` without the references and parentheses around it.
fn strip(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Reference(r) => ty = &r.elem,
            Type::Paren(p) => ty = &p.elem,
            _ => return ty,
        }
    }
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

/// One operation statement `STREAM: OP;`.
pub struct Statement {
    pub id: usize,
    /// Index into [`Program::streams`] (0 when the name is unknown; an error is recorded).
    pub stream: usize,
    pub stream_name: Ident,
    pub kind: Kind,
    pub accesses: Vec<Access>,
    /// Normalised source text, `STREAM: OP`.
    pub text: String,
    /// The statement's first token (its stream name) and its `;`, for spans and locations.
    pub first: Span,
    pub last: Span,
    /// Resolving it recorded an error (an unknown name, a malformed launch): its stream, events
    /// or buffers are placeholders, so cross-statement rules skip it rather than report
    /// follow-on errors.
    pub unresolved: bool,
}

impl Statement {
    /// Tokens spanning the whole statement, for `syn::Error::new_spanned`.
    pub fn tokens(&self) -> TokenStream {
        let (first, last) = (self.first, self.last);
        let a = quote_spanned!(first=> __first);
        let b = quote_spanned!(last=> __last);
        quote::quote!(#a #b)
    }
}

/// What a statement does, with its user expressions.
pub enum Kind {
    Launch {
        kernel: Expr,
        grid: Expr,
        block: Expr,
        shared: Option<Expr>,
        args: Vec<Arg>,
    },
    Copy {
        dst: BufferExpr,
        src: BufferExpr,
    },
    Fill {
        dst: BufferExpr,
        value: Expr,
    },
    Host {
        func: Expr,
    },
    Record {
        event: usize,
    },
    Wait {
        event: usize,
        name: Ident,
    },
    WaitStream {
        stream: usize,
        name: Ident,
    },
    /// A device block `while`/`if`: its body statements are `id + 1 .. otherwise` and
    /// `otherwise .. end` (the `else`).
    Block {
        /// `true` for `while`, `false` for `if`.
        looping: bool,
        /// The flag expression as written.
        flag: Expr,
        /// The flag's parameter, when the expression is one.
        flag_param: Option<Ident>,
        limit: Option<Expr>,
        otherwise: usize,
        end: usize,
    },
    /// Participant `id - first` of a collective of `count` participants (statements
    /// `first .. first + count`, consecutive, one per stream). Only the first is in the
    /// program's body ([`Node::Stmt`]); it issues them all.
    Collective {
        op: CollectiveOp,
        /// The communicator parameter.
        comm: Ident,
        /// The reduction (`sum`, `prod`, `min`, `max`, `avg`) of a reducing collective.
        reduce: Option<Ident>,
        first: usize,
        count: usize,
        /// The participant's send buffer; `None` in place (it sends `recv`).
        send: Option<BufferExpr>,
        recv: BufferExpr,
    },
}

/// Which collective; `Broadcast` with its root's participant index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectiveOp {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast { root: usize },
}

/// The reductions of `all_reduce` and `reduce_scatter`, as written, with the runtime's names.
pub const REDUCTIONS: [(&str, &str); 5] = [
    ("sum", "Sum"),
    ("prod", "Prod"),
    ("min", "Min"),
    ("max", "Max"),
    ("avg", "Avg"),
];

/// A launch argument.
pub enum Arg {
    /// `&mut BUF`.
    Write(BufferExpr),
    /// `&BUF`.
    Read(BufferExpr),
    /// Anything else, passed by value.
    Value(Expr),
}

/// A buffer expression: a parameter name, optionally followed by method calls.
#[derive(Clone)]
pub struct BufferExpr {
    pub expr: Expr,
    /// The parameter name it starts from.
    pub root: Ident,
    /// `true` for the plain name (the whole buffer).
    pub whole: bool,
}

/// Read or write, as in the runtime's `AccessMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    Read,
    Write,
}

/// One buffer a statement touches.
pub struct Access {
    pub buffer: Ident,
    pub mode: Mode,
    pub whole: bool,
    /// The user's expression (`&mut x.slice(..)`, a copy side), for errors.
    pub at: TokenStream,
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

    /// A collective: one statement per participant, consecutive; returns the first's id.
    fn resolve_collective(&mut self, c: syntax::CollectiveStmt, errors: &mut Errors) -> usize {
        let first = self.statements.len();
        let errors_before = errors.count();
        let word = c.keyword.to_string();
        let reduces = matches!(word.as_str(), "all_reduce" | "reduce_scatter");
        let in_place_allowed = matches!(word.as_str(), "all_reduce" | "broadcast");
        // The communicator: a parameter.
        let comm = match &c.comm {
            Expr::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
            _ => None,
        };
        let comm = match comm {
            Some(name) if self.param(&name).is_some() => Some(name),
            Some(name) => {
                let params: Vec<String> = self.params.iter().map(|p| p.name.to_string()).collect();
                let similar = closest(&name.to_string(), params.iter().map(String::as_str))
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                errors.spanned(
                    &name,
                    format!(
                        "unknown communicator `{name}`: it is not a parameter of this pipeline; \
                         {similar}the communicator of `{word}` is a parameter of type \
                         `&Communicator`, e.g. `{name}: &Communicator`"
                    ),
                );
                None
            }
            None => {
                errors.spanned(
                    &c.comm,
                    format!(
                        "the communicator of `{word}` is a parameter name, of type \
                         `&Communicator`, e.g. `{word}(comm, …) {{ … }}` with a parameter \
                         `comm: &Communicator`"
                    ),
                );
                None
            }
        };
        // The participants' streams: declared, each once.
        let mut streams = Vec::new();
        for (k, part) in c.parts.iter().enumerate() {
            let stream = self.stream_index(&part.stream, errors);
            if let Some(j) = c.parts[..k].iter().position(|p| p.stream == part.stream) {
                errors.spanned(
                    &part.stream,
                    format!(
                        "stream `{}` is listed twice in this `{word}` (participants {j} and {k}): \
                         each participant is one rank, on a stream of its own; list each \
                         stream once",
                        part.stream
                    ),
                );
            }
            streams.push(stream);
        }
        if c.parts.is_empty() {
            errors.spanned(
                &c.keyword,
                format!(
                    "this `{word}` lists no participant: write one `STREAM: &mut BUFFER` per \
                     rank of the communicator, e.g. `{word}(comm, …) {{ s0: &mut x0, s1: &mut x1 }};`"
                ),
            );
        }
        // The options: a reduction, or a root.
        let mut reduce = None;
        let mut root = None;
        for (name, value) in &c.options {
            match (name.to_string().as_str(), value) {
                ("root", Some(stream)) if word == "broadcast" => {
                    match c.parts.iter().position(|p| p.stream == *stream) {
                        Some(k) => root = Some(k),
                        None => errors.spanned(
                            stream,
                            format!(
                                "the root of this `broadcast` must be one of its participants' \
                                 streams; `{stream}` is not listed"
                            ),
                        ),
                    }
                }
                (op, None) if reduces && REDUCTIONS.iter().any(|(r, _)| *r == op) => {
                    if reduce.is_some() {
                        errors.spanned(name, format!("`{word}` takes one reduction; keep one"));
                    }
                    reduce = Some(name.clone());
                }
                _ => {
                    let expected = if reduces {
                        format!(
                            "a reduction: one of {}",
                            REDUCTIONS.map(|(r, _)| format!("`{r}`")).join(", ")
                        )
                    } else if word == "broadcast" {
                        "`root = STREAM`".to_owned()
                    } else {
                        "no option".to_owned()
                    };
                    errors.spanned(
                        name,
                        format!("unexpected option of `{word}`: after the communicator it takes {expected}"),
                    );
                }
            }
        }
        if reduces && reduce.is_none() && c.options.is_empty() {
            errors.spanned(
                &c.keyword,
                format!(
                    "`{word}` needs a reduction after the communicator: one of {}, e.g. \
                     `{word}(comm, sum) {{ … }}`",
                    REDUCTIONS.map(|(r, _)| format!("`{r}`")).join(", ")
                ),
            );
        }
        if word == "broadcast" && root.is_none() && !c.options.iter().any(|(n, _)| n == "root") {
            errors.spanned(
                &c.keyword,
                "`broadcast` needs its root after the communicator: `broadcast(comm, root = \
                 STREAM) { … }`, where STREAM is the participant whose buffer is sent",
            );
        }
        // The buffers: `&mut RECV`, or `&SEND => &mut RECV`.
        let mut buffers = Vec::new();
        for part in &c.parts {
            let recv = self.collective_buffer(&word, &part.recv, true, errors);
            let send = match &part.send {
                Some(send) => Some(self.collective_buffer(&word, send, false, errors)),
                None => {
                    if !in_place_allowed {
                        errors.spanned(
                            &part.recv,
                            format!(
                                "`{word}` needs a send and a receive buffer on each stream: \
                                 write `{}: &SEND => &mut RECV`",
                                part.stream
                            ),
                        );
                    }
                    None
                }
            };
            buffers.push((send, recv));
        }
        let parts_text: Vec<String> = c
            .parts
            .iter()
            .map(|p| match &p.send {
                Some(send) => format!("{}: {} => {}", p.stream, text_of(send), text_of(&p.recv)),
                None => format!("{}: {}", p.stream, text_of(&p.recv)),
            })
            .collect();
        let options_text: String = c
            .options
            .iter()
            .map(|(n, v)| match v {
                Some(v) => format!(", {n} = {v}"),
                None => format!(", {n}"),
            })
            .collect();
        let text = format!(
            "{word}({}{options_text}) {{ {} }}",
            text_of(&c.comm),
            parts_text.join(", ")
        );
        let op = match word.as_str() {
            "all_reduce" => CollectiveOp::AllReduce,
            "all_gather" => CollectiveOp::AllGather,
            "reduce_scatter" => CollectiveOp::ReduceScatter,
            _ => CollectiveOp::Broadcast {
                root: root.unwrap_or(0),
            },
        };
        let failed = errors.count() > errors_before;
        let count = c.parts.len();
        let resolved: Vec<_> = buffers
            .into_iter()
            .map(|(send, recv)| match (send, recv) {
                (Some(Some(send)), Some(recv)) => Some((Some(send), recv)),
                (None, Some(recv)) => Some((None, recv)),
                _ => None,
            })
            .collect();
        for (k, part) in c.parts.into_iter().enumerate() {
            let last = part
                .recv
                .to_token_stream()
                .into_iter()
                .last()
                .map_or_else(|| part.stream.span(), |t| t.span());
            let (kind, accesses) = match (&comm, resolved[k].as_ref()) {
                (Some(comm), Some((send, recv))) if !failed => {
                    let mut accesses = Vec::new();
                    if let (Some(send), Some(at)) = (send, &part.send) {
                        accesses.push(Access {
                            buffer: send.root.clone(),
                            mode: Mode::Read,
                            whole: send.whole,
                            at: at.to_token_stream(),
                        });
                    }
                    accesses.push(Access {
                        buffer: recv.root.clone(),
                        mode: Mode::Write,
                        whole: recv.whole,
                        at: part.recv.to_token_stream(),
                    });
                    let kind = Kind::Collective {
                        op,
                        comm: comm.clone(),
                        reduce: reduce.clone(),
                        first,
                        count,
                        send: send.clone(),
                        recv: recv.clone(),
                    };
                    (kind, accesses)
                }
                _ => (
                    Kind::Host {
                        func: syn::parse_quote!(|| {}),
                    },
                    Vec::new(),
                ),
            };
            self.statements.push(Statement {
                id: first + k,
                stream: streams[k],
                text: text.clone(),
                first: part.stream.span(),
                stream_name: part.stream,
                kind,
                accesses,
                last,
                unresolved: failed,
            });
        }
        if count == 0 {
            // Keep numbering: one placeholder stands for the empty collective.
            return self.push_placeholder(c.keyword, 0, c.semi.span, text);
        }
        first
    }

    /// A collective's buffer: `&mut BUF` for the receive side (`write`), `&BUF` for the send
    /// side.
    fn collective_buffer(
        &self,
        word: &str,
        expr: &Expr,
        write: bool,
        errors: &mut Errors,
    ) -> Option<BufferExpr> {
        let (inner, mutable) = match expr {
            Expr::Reference(r) => (&*r.expr, r.mutability.is_some()),
            other => (other, false),
        };
        let text = text_of(inner);
        if write && !mutable {
            errors.spanned(
                expr,
                format!(
                    "`{word}` writes this buffer: write `&mut {text}` (a collective reads and \
                     writes its receive buffer)"
                ),
            );
            return None;
        }
        if !write && (mutable || !matches!(expr, Expr::Reference(_))) {
            errors.spanned(
                expr,
                format!("`{word}` only reads its send buffer: write `&{text}`"),
            );
            return None;
        }
        self.buffer_expr(inner.clone(), errors)
    }

    fn resolve_device_block(&mut self, b: syntax::BlockStmt, errors: &mut Errors) -> Node {
        let id = self.statements.len();
        let errors_before = errors.count();
        let stream = self.stream_index(&b.stream, errors);
        let (looping, word) = match &b.keyword {
            syntax::BlockKeyword::While => (true, "while"),
            syntax::BlockKeyword::If => (false, "if"),
        };
        let flag_param = match &b.flag {
            Expr::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
            _ => None,
        };
        match &flag_param {
            Some(name) if self.param(name).is_some() => {}
            Some(name) => {
                let params: Vec<String> = self.params.iter().map(|p| p.name.to_string()).collect();
                let similar = closest(&name.to_string(), params.iter().map(String::as_str))
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                errors.spanned(
                    name,
                    format!(
                        "`{name}` is not a parameter of this pipeline; {similar}the flag of a \
                         device `{word}` is a parameter of type `&mut DeviceFlag` (or \
                         `&DeviceFlag`), e.g. `{name}: &mut DeviceFlag`"
                    ),
                )
            }
            None => errors.spanned(
                &b.flag,
                format!(
                    "the flag of a device `{word}` is a parameter name, of type `&mut DeviceFlag` \
                     (or `&DeviceFlag`), e.g. `{}: {word} done {{ … }}`",
                    b.stream
                ),
            ),
        }
        let flag_param = flag_param.filter(|n| self.param(n).is_some());
        let mut accesses = Vec::new();
        if let Some(name) = &flag_param {
            accesses.push(Access {
                buffer: name.clone(),
                mode: Mode::Read,
                whole: true,
                at: b.flag.to_token_stream(),
            });
        }
        let limit_text = b
            .limit
            .as_ref()
            .map(|(_, e)| format!(", limit = {}", text_of(e)))
            .unwrap_or_default();
        let text = format!("{}: {word} {}{limit_text}", b.stream, text_of(&b.flag));
        // The statement's tokens run from the stream to the flag (or the limit).
        let tail = b
            .limit
            .as_ref()
            .map_or_else(|| b.flag.to_token_stream(), |(_, e)| e.to_token_stream());
        let last = tail
            .into_iter()
            .last()
            .map_or_else(|| b.stream.span(), |t| t.span());
        self.statements.push(Statement {
            id,
            stream,
            text,
            first: b.stream.span(),
            stream_name: b.stream,
            kind: Kind::Block {
                looping,
                flag: b.flag,
                flag_param,
                limit: b.limit.map(|(_, e)| e),
                otherwise: id + 1,
                end: id + 1,
            },
            accesses,
            last,
            unresolved: errors.count() > errors_before,
        });
        let body = self.resolve_block(b.body, errors);
        let start = self.statements.len();
        let otherwise = b.otherwise.map(|(_, o)| self.resolve_block(o, errors));
        let stop = self.statements.len();
        if let Kind::Block {
            otherwise: o, end, ..
        } = &mut self.statements[id].kind
        {
            *o = start;
            *end = stop;
        }
        Node::Block {
            stmt: id,
            body,
            otherwise,
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

    fn resolve_op(&mut self, stmt: syntax::OpStmt, errors: &mut Errors) -> usize {
        let id = self.statements.len();
        let errors_before = errors.count();
        let stream = self.stream_index(&stmt.stream, errors);
        let mut accesses = Vec::new();
        let (kind, op_text) = match stmt.op {
            Op::Launch(l) => {
                let config: Vec<Expr> = l.config.into_iter().collect();
                if config.len() < 2 {
                    let at = config.first().map_or_else(
                        || Ident::new("launch", l.open).into_token_stream(),
                        ToTokens::into_token_stream,
                    );
                    errors.spanned(
                        at,
                        "this launch configuration has no block size: write \
                         `<<<GRID, BLOCK>>>` or `<<<GRID, BLOCK, SHARED_BYTES>>>`",
                    );
                } else if config.len() > 3 {
                    errors.spanned(
                        &config[3],
                        "a launch configuration has at most three items: \
                         `<<<GRID, BLOCK, SHARED_BYTES>>>` (use a tuple for 2D or 3D sizes)",
                    );
                }
                let mut items = config.iter().cloned();
                let grid = items.next().unwrap_or_else(|| syn::parse_quote!(1u32));
                let block = items.next().unwrap_or_else(|| syn::parse_quote!(1u32));
                let shared = items.next();
                let mut args = Vec::new();
                for arg in l.args {
                    args.push(match arg {
                        Expr::Reference(r) => {
                            let buffer = self.buffer_expr(*r.expr.clone(), errors);
                            let mode = if r.mutability.is_some() {
                                Mode::Write
                            } else {
                                Mode::Read
                            };
                            if let Some(b) = &buffer {
                                accesses.push(Access {
                                    buffer: b.root.clone(),
                                    mode,
                                    whole: b.whole,
                                    at: r.to_token_stream(),
                                });
                            }
                            match (buffer, mode) {
                                (Some(b), Mode::Write) => Arg::Write(b),
                                (Some(b), Mode::Read) => Arg::Read(b),
                                (None, _) => Arg::Value(Expr::Reference(r)),
                            }
                        }
                        other => self.value_arg(other, errors),
                    });
                }
                let text = format!(
                    "launch {}<<<{}>>>({})",
                    text_of(&l.kernel),
                    config.iter().map(text_of).collect::<Vec<_>>().join(", "),
                    args.iter().map(arg_text).collect::<Vec<_>>().join(", "),
                );
                (
                    Kind::Launch {
                        kernel: l.kernel,
                        grid,
                        block,
                        shared,
                        args,
                    },
                    text,
                )
            }
            Op::Copy { dst, src } => {
                let text = format!("copy {} <- {}", text_of(&dst), text_of(&src));
                let dst_at = dst.to_token_stream();
                let src_at = src.to_token_stream();
                let dst = self.buffer_expr(dst, errors);
                let src = self.buffer_expr(src, errors);
                let (Some(dst), Some(src)) = (dst, src) else {
                    return self.push_placeholder(stmt.stream, stream, stmt.semi.span, text);
                };
                accesses.push(Access {
                    buffer: src.root.clone(),
                    mode: Mode::Read,
                    whole: src.whole,
                    at: src_at,
                });
                accesses.push(Access {
                    buffer: dst.root.clone(),
                    mode: Mode::Write,
                    whole: dst.whole,
                    at: dst_at,
                });
                (Kind::Copy { dst, src }, text)
            }
            Op::Fill { dst, value } => {
                let text = format!("fill {} = {}", text_of(&dst), text_of(&value));
                let at = dst.to_token_stream();
                let Some(dst) = self.buffer_expr(dst, errors) else {
                    return self.push_placeholder(stmt.stream, stream, stmt.semi.span, text);
                };
                accesses.push(Access {
                    buffer: dst.root.clone(),
                    mode: Mode::Write,
                    whole: dst.whole,
                    at,
                });
                (Kind::Fill { dst, value }, text)
            }
            Op::Host { func } => {
                let text = format!("host {}", text_of(&func));
                (Kind::Host { func }, text)
            }
            Op::Record { event } => {
                let text = format!("record {event}");
                (
                    Kind::Record {
                        event: self.event_index(&event, errors),
                    },
                    text,
                )
            }
            Op::Wait { event } => {
                let text = format!("wait {event}");
                (
                    Kind::Wait {
                        event: self.event_index(&event, errors),
                        name: event,
                    },
                    text,
                )
            }
            Op::WaitStream { stream: other } => {
                let text = format!("wait_stream {other}");
                (
                    Kind::WaitStream {
                        stream: self.stream_index(&other, errors),
                        name: other,
                    },
                    text,
                )
            }
        };
        self.statements.push(Statement {
            id,
            stream,
            text: format!("{}: {}", stmt.stream, op_text),
            first: stmt.stream.span(),
            stream_name: stmt.stream,
            kind,
            accesses,
            last: stmt.semi.span,
            unresolved: errors.count() > errors_before,
        });
        id
    }

    /// Keeps numbering intact for a statement whose buffers could not be resolved: it becomes a
    /// host statement that does nothing (the error already recorded stops compilation).
    fn push_placeholder(
        &mut self,
        stream_name: Ident,
        stream: usize,
        last: Span,
        text: String,
    ) -> usize {
        let id = self.statements.len();
        self.statements.push(Statement {
            id,
            stream,
            text: format!("{stream_name}: {text}"),
            first: stream_name.span(),
            stream_name,
            kind: Kind::Host {
                func: syn::parse_quote!(|| {}),
            },
            accesses: Vec::new(),
            last,
            unresolved: true,
        });
        id
    }

    /// A launch argument written without `&`/`&mut`: passed by value, unless it names a
    /// reference parameter, which cannot be (a buffer missing its `&mut`/`&`, most often). That
    /// is an error, and the argument is kept as a read so that no type error follows it.
    fn value_arg(&self, expr: Expr, errors: &mut Errors) -> Arg {
        let param = match &expr {
            Expr::Path(path) if path.qself.is_none() => {
                path.path.get_ident().and_then(|name| self.param(name))
            }
            _ => None,
        };
        let Some(param) = param.filter(|p| p.kind != ParamKind::Value) else {
            return Arg::Value(expr);
        };
        let name = &param.name;
        errors.spanned(
            &expr,
            format!(
                "buffer `{name}` is passed by value: write `&mut {name}` if the kernel writes \
                 it, or `&{name}` if it only reads it (parameter `{name}` is `{}`; a value \
                 passed by value is a parameter declared without `&`, such as `n: u32`)",
                crate::text::type_text(&param.ty)
            ),
        );
        Arg::Read(BufferExpr {
            root: name.clone(),
            expr,
            whole: true,
        })
    }

    /// Reads a buffer expression: a parameter name optionally followed by method calls and
    /// indexing (`xs[i]`: one buffer of a slice or `Vec` of buffers).
    fn buffer_expr(&self, expr: Expr, errors: &mut Errors) -> Option<BufferExpr> {
        let mut root = &expr;
        let mut whole = true;
        loop {
            match root {
                Expr::MethodCall(m) => {
                    root = &m.receiver;
                    whole = false;
                }
                Expr::Index(i) => {
                    root = &i.expr;
                    whole = false;
                }
                Expr::Paren(p) => root = &p.expr,
                _ => break,
            }
        }
        let Expr::Path(path) = root else {
            errors.spanned(
                &expr,
                "expected a buffer: a parameter name, optionally followed by method calls or \
                 indexing such as `x.slice(0..n)` or `xs[i]`",
            );
            return None;
        };
        let Some(root) = path
            .path
            .get_ident()
            .cloned()
            .filter(|_| path.qself.is_none())
        else {
            errors.spanned(
                &expr,
                "expected a buffer: a parameter of the pipeline, such as `x`",
            );
            return None;
        };
        if self.param(&root).is_none() {
            let name = root.to_string();
            let params: Vec<String> = self.params.iter().map(|p| p.name.to_string()).collect();
            let message = match closest(&name, params.iter().map(String::as_str)) {
                Some(similar) => format!(
                    "`{root}` is not a parameter of this pipeline: did you mean `{similar}`? \
                     (buffers in `&`, `&mut`, `copy` and `fill` must be parameters)"
                ),
                None => format!(
                    "`{root}` is not a parameter of this pipeline; buffers in `&`, `&mut`, `copy` \
                     and `fill` must be parameters, e.g. `{root}: &mut DeviceBuffer<f32>`"
                ),
            };
            errors.spanned(&root, message);
            return None;
        }
        Some(BufferExpr { expr, root, whole })
    }
}

fn arg_text(arg: &Arg) -> String {
    match arg {
        Arg::Write(b) => format!("&mut {}", text_of(&b.expr)),
        Arg::Read(b) => format!("&{}", text_of(&b.expr)),
        Arg::Value(e) => text_of(e),
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

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn resolve(input: Input) -> (Program, Vec<String>) {
        let mut errors = Errors::default();
        let p = Program::from_syntax(input, &mut errors);
        (
            p,
            errors.into_vec().iter().map(ToString::to_string).collect(),
        )
    }

    #[test]
    fn statements_are_numbered_with_accesses_and_text() {
        let (p, errors) = resolve(parse_quote! {
            pipeline P(x: &mut DeviceBuffer<f32>, y: &DeviceBuffer<f32>, k: &K, n: u32) {
                stream main;
                stream side;
                event e;
                main: launch k.f<<<grid(n), 256>>>(&mut x, &y.slice(0..n), n);
                main: record e;
                for i in 0..n { side: wait e; side: copy x.slice(i..i+1) <- y; }
                side: fill x = 0.0f32;
            }
        });
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(p.statements.len(), 5);
        let texts: Vec<&str> = p.statements.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "main: launch k.f<<<grid(n), 256>>>(&mut x, &y.slice(0..n), n)",
                "main: record e",
                "side: wait e",
                "side: copy x.slice(i..i + 1) <- y",
                "side: fill x = 0.0f32",
            ]
        );
        let a = &p.statements[0].accesses;
        assert_eq!(
            (a[0].buffer.to_string(), a[0].mode, a[0].whole),
            ("x".into(), Mode::Write, true)
        );
        assert_eq!(
            (a[1].buffer.to_string(), a[1].mode, a[1].whole),
            ("y".into(), Mode::Read, false)
        );
        let c = &p.statements[3].accesses;
        assert_eq!(
            (c[0].mode, c[0].whole, c[1].mode, c[1].whole),
            (Mode::Read, true, Mode::Write, false)
        );
        assert_eq!(p.statements[3].stream, 1);
        assert!(matches!(p.body[2], Node::For { .. }));
        assert_eq!(p.params[0].kind, ParamKind::Mut);
        assert_eq!(p.params[3].kind, ParamKind::Value);
    }

    #[test]
    fn unknown_names_are_all_reported() {
        let (p, errors) = resolve(parse_quote! {
            pipeline P(x: &mut B) {
                stream main;
                mian: record e;
                main: wait_stream other;
                main: launch k<<<1>>>(&mut z, &x);
            }
        });
        assert_eq!(p.statements.len(), 3);
        assert_eq!(errors.len(), 5, "{errors:?}");
        assert!(errors[0].starts_with("unknown stream `mian`: did you mean `main`?"));
        assert!(errors[1].starts_with("unknown event `e`: no event is declared"));
        assert!(errors[2].starts_with("unknown stream `other`"));
        assert!(errors[3].contains("no block size"));
        assert!(errors[4].contains("`z` is not a parameter"));
        assert!(p.statements.iter().all(|s| s.unresolved));
    }

    #[test]
    fn typos_get_the_closest_declared_name() {
        let (p, errors) = resolve(parse_quote! {
            pipeline P(input: &mut B, k: &K) {
                stream main;
                stream side;
                event ready;
                sied: record redy;
                main: launch k<<<1, 1>>>(&mut inptu);
                main: fill output = 0.0f32;
                main: launch k<<<1, 1>>>(input);
            }
        });
        assert_eq!(errors.len(), 5, "{errors:#?}");
        assert!(errors[0].starts_with("unknown stream `sied`: did you mean `side`?"));
        assert!(errors[1].starts_with("unknown event `redy`: did you mean `ready`?"));
        assert!(errors[2]
            .starts_with("`inptu` is not a parameter of this pipeline: did you mean `input`?"));
        assert!(errors[3].starts_with("`output` is not a parameter of this pipeline; buffers"));
        assert!(errors[4].starts_with("buffer `input` is passed by value: write `&mut input`"));
        assert!(matches!(
            &p.statements[3].kind,
            Kind::Launch { args, .. } if matches!(args[..], [Arg::Read(_)])
        ));
        assert!(p.statements[3].accesses.is_empty());
    }

    #[test]
    fn pageable_host_types() {
        let (p, _) = resolve(parse_quote! {
            pipeline P(a: &[f32], b: &mut Vec<u8>, c: Vec<u8>, d: &PinnedBuffer<f32>, e: &mut DeviceBuffer<f32>) {}
        });
        let pageable: Vec<bool> = p.params.iter().map(Param::is_pageable_host).collect();
        assert_eq!(pageable, [true, true, true, false, false]);
        // Containers of buffers are not pageable memory: a copy names one of their elements.
        let (p, _) = resolve(parse_quote! {
            pipeline P(
                a: &[PinnedBuffer<f32>], b: Vec<PinnedBuffer<f32>>, c: &mut [PinnedBuffer<u8>],
                d: &mut Vec<DeviceBuffer<f32>>, e: [&CudaSlice<f32>; 2], f: &[Chunk<f32>],
                g: &[[f32; 4]], h: &[Vec<f32>], i: &[Pixel], j: &mut [&mut PinnedViewMut<'_, f32>]
            ) {}
        });
        let pageable: Vec<bool> = p.params.iter().map(Param::is_pageable_host).collect();
        assert_eq!(
            pageable,
            [false, false, false, false, false, false, true, true, true, false]
        );
    }
}
