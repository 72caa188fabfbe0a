//! Operation statements `STREAM: OP;`: what each does, the buffers it touches, its text.

use proc_macro2::{Span, TokenStream};
use quote::{quote_spanned, ToTokens};
use syn::{Expr, Ident};

use super::{Access, BufferExpr, CollectiveOp, Errors, Mode, ParamKind, Program};
use crate::syntax::{self, Op};
use crate::text::text_of;

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
    /// One element's alternative of a `record`/`wait` on an event array indexed by a value
    /// known only at run time (`wait ready[i % 2]`): the issue picks one alternative.
    pub alternative: bool,
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

/// Which device block a [`Kind::Block`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockShape {
    /// `while FLAG { … }`.
    While,
    /// `if FLAG { … } else { … }`.
    If,
    /// `switch INDEX { … }`: each arm's value, `None` for `_` (the last arm, if any).
    Switch(Vec<Option<u32>>),
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
    /// `call OP(OPERANDS)`: every operand is memory, read (`&x`) or written (`&mut x`).
    Call {
        op: Expr,
        args: Vec<Arg>,
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
    /// A device block `while`/`if`/`switch`: body `k`'s statements are `starts[k] ..
    /// starts[k + 1]`, the last body's `.. end`.
    Block {
        /// Which block.
        shape: BlockShape,
        /// The flag (or index) expression as written.
        flag: Expr,
        /// The flag's parameter, when the expression is one.
        flag_param: Option<Ident>,
        limit: Option<Expr>,
        /// `signalled` of a `while`, as written: its body's kernels set the loop's condition.
        signalled: Option<syn::Ident>,
        /// The first statement id of each body: one for a `while`, two for an `if` (`then`
        /// and `else`, the second empty without `else`), one per arm for a `switch`.
        starts: Vec<usize>,
        end: usize,
    },
    /// The allocation of temporary `temp` (an index into [`Program::temps`]), placed by the
    /// model before the temporary's first use.
    Alloc {
        temp: usize,
    },
    /// The release of temporary `temp`, placed by the model after every use of it.
    Free {
        temp: usize,
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

impl Kind {
    /// The buffers the statement writes: `&mut` launch arguments, a copy destination, a fill
    /// target, a collective's receive buffer.
    pub fn writes(&self) -> Vec<&BufferExpr> {
        match self {
            Kind::Launch { args, .. } | Kind::Call { args, .. } => args
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

/// A launch argument.
pub enum Arg {
    /// `&mut BUF`.
    Write(BufferExpr),
    /// `&BUF`.
    Read(BufferExpr),
    /// Anything else, passed by value.
    Value(Expr),
}

impl Arg {
    /// The expression as written: the buffer's, or the value's.
    pub fn expr(&self) -> &Expr {
        match self {
            Arg::Write(b) | Arg::Read(b) => &b.expr,
            Arg::Value(e) => e,
        }
    }
}

impl Program {
    pub(super) fn resolve_op(&mut self, stmt: syntax::OpStmt, errors: &mut Errors) -> usize {
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
                                    element: b.element,
                                    dynamic: b.dynamic,
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
                    element: src.element,
                    dynamic: src.dynamic,
                    at: src_at,
                });
                accesses.push(Access {
                    buffer: dst.root.clone(),
                    mode: Mode::Write,
                    whole: dst.whole,
                    element: dst.element,
                    dynamic: dst.dynamic,
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
                    element: dst.element,
                    dynamic: dst.dynamic,
                    at,
                });
                (Kind::Fill { dst, value }, text)
            }
            Op::Host { func } => {
                let text = format!("host {}", text_of(&func));
                (Kind::Host { func }, text)
            }
            Op::Call { op, args: operands } => {
                let mut args = Vec::new();
                for arg in operands {
                    match arg {
                        Expr::Reference(r) => {
                            let mode = if r.mutability.is_some() {
                                Mode::Write
                            } else {
                                Mode::Read
                            };
                            let Some(b) = self.buffer_expr(*r.expr.clone(), errors) else {
                                continue;
                            };
                            accesses.push(Access {
                                buffer: b.root.clone(),
                                mode,
                                whole: b.whole,
                                element: b.element,
                                dynamic: b.dynamic,
                                at: r.to_token_stream(),
                            });
                            args.push(match mode {
                                Mode::Write => Arg::Write(b),
                                Mode::Read => Arg::Read(b),
                            });
                        }
                        other => errors.spanned(
                            &other,
                            format!(
                                "`{}` is not memory: a `call` operand is a buffer the op \
                                 reads (`&x`) or writes (`&mut x`); values the op needs \
                                 (sizes, scalars) belong in the op itself",
                                text_of(&other)
                            ),
                        ),
                    }
                }
                let text = format!(
                    "call {}({})",
                    text_of(&op),
                    args.iter().map(arg_text).collect::<Vec<_>>().join(", "),
                );
                (Kind::Call { op, args }, text)
            }
            Op::Record { event, index } => {
                let (event, text) = self.event_ref(&event, index.as_ref(), errors);
                (Kind::Record { event }, format!("record {text}"))
            }
            Op::Wait { event: name, index } => {
                let (event, text) = self.event_ref(&name, index.as_ref(), errors);
                (Kind::Wait { event, name }, format!("wait {text}"))
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
            alternative: false,
        });
        id
    }

    /// The event `NAME` or `NAME[CONSTANT]` names, and its text.
    fn event_ref(
        &self,
        name: &Ident,
        index: Option<&Expr>,
        errors: &mut Errors,
    ) -> (usize, String) {
        let Some(index) = index else {
            return (self.event_index(name, errors), name.to_string());
        };
        match self.event_element(name, index, errors) {
            Ok(e) => (e, format!("{name}[{}]", text_of(index))),
            // Picked at run time: issued as alternatives (`resolve_event_pick`).
            Err((first, _)) => (first, format!("{name}[{}]", text_of(index))),
        }
    }

    /// The array (first event, length) a `record`/`wait` picks an element of by a value known
    /// only at run time (`ready[i % 2]`), if it does.
    pub(super) fn event_pick(&self, stmt: &syntax::OpStmt) -> Option<(usize, usize)> {
        let (Op::Record { event, index } | Op::Wait { event, index }) = &stmt.op else {
            return None;
        };
        let index = index.as_ref()?;
        if super::constant_index(index).is_some() {
            return None;
        }
        let first = self.events.iter().position(|e| e.name == *event)?;
        let (_, len) = self.events[first].element?;
        Some((first, len))
    }

    /// `STREAM: record NAME[INDEX];` (or `wait`) with `INDEX` known only at run time: one
    /// statement per element, and the issue picks one by the index's value, checked against
    /// the array's length (an error naming the statement when it is out of range):
    ///
    /// ```text
    /// for __streamgraph_element in [checked(INDEX)] {
    ///     if __streamgraph_element == 0 { record NAME[0] } else if … else { record NAME[N-1] }
    /// }
    /// ```
    ///
    /// The static checks see alternatives of which any one may run, as the branches of an
    /// `if`: a race is reported only where it is certain whatever the index.
    pub(super) fn resolve_event_pick(
        &mut self,
        stmt: syntax::OpStmt,
        (_, len): (usize, usize),
        errors: &mut Errors,
    ) -> super::Node {
        use super::Node;
        let syntax::OpStmt { stream, op, semi } = stmt;
        let (record, name, index) = match op {
            Op::Record {
                event,
                index: Some(index),
            } => (true, event, index),
            Op::Wait {
                event,
                index: Some(index),
            } => (false, event, index),
            _ => unreachable!("event_pick found an indexed record or wait"),
        };
        let source = text_of(&index);
        let verb = if record { "record" } else { "wait" };
        let mut ids = Vec::with_capacity(len);
        for k in 0..len {
            let element: Expr = syn::parse_quote!(#k);
            let op = if record {
                Op::Record {
                    event: name.clone(),
                    index: Some(element),
                }
            } else {
                Op::Wait {
                    event: name.clone(),
                    index: Some(element),
                }
            };
            // The first alternative reports what is wrong with the statement; the others would
            // repeat it.
            let mut quiet = Errors::default();
            let errs = if k == 0 { &mut *errors } else { &mut quiet };
            let id = self.resolve_op(
                syntax::OpStmt {
                    stream: stream.clone(),
                    op,
                    semi,
                },
                errs,
            );
            let st = &mut self.statements[id];
            st.text = format!("{stream}: {verb} {name}[{source}] ({name}[{k}])");
            st.alternative = true;
            ids.push(id);
        }
        let mut chain = vec![Node::Stmt(ids[len - 1])];
        for k in (0..len - 1).rev() {
            chain = vec![Node::If {
                if_token: syn::Token![if](index_span(&index)),
                cond: syn::parse_quote!(__streamgraph_element == #k),
                then: vec![Node::Stmt(ids[k])],
                otherwise: Some(chain),
            }];
        }
        let array = name.to_string();
        let id0 = ids[0];
        let span = index_span(&index);
        let checked: Expr = syn::parse_quote_spanned! {span=>
            [match ::streamgraph::__private::event_element(#index, #len, #array) {
                ::core::result::Result::Ok(__e) => __e,
                ::core::result::Result::Err(__e) => {
                    return ::core::result::Result::Err(
                        __e.in_statement(&Self::PROGRAM.statements[#id0]),
                    );
                }
            }]
        };
        Node::For {
            for_token: syn::Token![for](span),
            pat: syn::parse_quote!(__streamgraph_element),
            expr: checked,
            body: chain,
        }
    }

    /// Keeps numbering intact for a statement whose buffers could not be resolved: it becomes a
    /// host statement that does nothing (the error already recorded stops compilation).
    pub(super) fn push_placeholder(
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
            alternative: false,
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
            element: None,
            dynamic: false,
        })
    }
}

fn arg_text(arg: &Arg) -> String {
    match arg {
        Arg::Write(b) => format!("&mut {}", text_of(&b.expr)),
        Arg::Read(b) => format!("&{}", text_of(&b.expr)),
        Arg::Value(e) => text_of(e),
    }
}

fn index_span(index: &Expr) -> Span {
    syn::spanned::Spanned::span(index)
}
