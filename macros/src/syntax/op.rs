//! The operations after `STREAM:`: `launch`, `copy`, `fill`, `host`, `call`, `record`,
//! `wait`, `wait_stream`.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{parenthesized, Expr, Ident, Token};

use super::kw;

/// The operation of an [`OpStmt`].
#[derive(Debug)]
pub enum Op {
    Launch(Launch),
    Copy {
        dst: Expr,
        src: Expr,
    },
    Fill {
        dst: Expr,
        value: Expr,
    },
    Host {
        func: Expr,
    },
    /// `call OP(OPERANDS,*)`.
    Call {
        op: Expr,
        args: Punctuated<Expr, Token![,]>,
    },
    /// `record NAME` or `record NAME[INDEX]` (an element of an event array).
    Record {
        event: Ident,
        index: Option<Expr>,
    },
    /// `wait NAME` or `wait NAME[INDEX]`.
    Wait {
        event: Ident,
        index: Option<Expr>,
    },
    WaitStream {
        stream: Ident,
    },
}

/// `launch KERNEL<<<CONFIG,*>>>(ARGS,*)`
#[derive(Debug)]
pub struct Launch {
    pub kernel: Expr,
    /// Span of the `<<<`.
    pub open: Span,
    pub config: Punctuated<Expr, Token![,]>,
    pub args: Punctuated<Expr, Token![,]>,
}

/// The operations of [`Op`], as written after `STREAM:`.
pub(super) const OPERATIONS: [&str; 8] = [
    "launch",
    "copy",
    "fill",
    "host",
    "call",
    "record",
    "wait",
    "wait_stream",
];

impl Parse for Op {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let lookahead = input.lookahead1();
        if lookahead.peek(kw::launch) {
            input.parse().map(Op::Launch)
        } else if lookahead.peek(kw::copy) {
            let copy_token: kw::copy = input.parse()?;
            let dst_tokens = tokens_until(input, &['<', '-'])?;
            if input.is_empty() || input.peek(Token![;]) {
                return Err(syn::Error::new(
                    copy_token_span(&copy_token, &dst_tokens),
                    "expected `copy DST <- SRC`",
                ));
            }
            input.parse::<Token![<]>()?;
            input.parse::<Token![-]>()?;
            let dst = syn::parse2(dst_tokens)?;
            let src = input.parse()?;
            Ok(Op::Copy { dst, src })
        } else if lookahead.peek(kw::fill) {
            input.parse::<kw::fill>()?;
            match input.parse()? {
                Expr::Assign(assign) => Ok(Op::Fill {
                    dst: *assign.left,
                    value: *assign.right,
                }),
                other => Err(syn::Error::new_spanned(
                    other,
                    "expected `fill BUF = VALUE`",
                )),
            }
        } else if lookahead.peek(kw::host) {
            input.parse::<kw::host>()?;
            Ok(Op::Host {
                func: input.parse()?,
            })
        } else if lookahead.peek(kw::call) {
            let call_token: kw::call = input.parse()?;
            match input.parse()? {
                Expr::Call(c) => Ok(Op::Call {
                    op: *c.func,
                    args: c.args,
                }),
                // `layer.gemm(&mut c, &a)`: the op is the field `layer.gemm`.
                Expr::MethodCall(m) if m.turbofish.is_none() => Ok(Op::Call {
                    op: Expr::Field(syn::ExprField {
                        attrs: Vec::new(),
                        base: m.receiver,
                        dot_token: m.dot_token,
                        member: syn::Member::Named(m.method),
                    }),
                    args: m.args,
                }),
                other => Err(syn::Error::new(
                    call_token
                        .span
                        .join(syn::spanned::Spanned::span(&other))
                        .unwrap_or(call_token.span),
                    "expected `call OP(OPERANDS)`: an op parameter and, in parentheses, the \
                     memory it reads (`&x`) and writes (`&mut x`)",
                )),
            }
        } else if lookahead.peek(kw::record) {
            input.parse::<kw::record>()?;
            let (event, index) = event_ref(input)?;
            Ok(Op::Record { event, index })
        } else if lookahead.peek(kw::wait_stream) {
            input.parse::<kw::wait_stream>()?;
            Ok(Op::WaitStream {
                stream: input.parse()?,
            })
        } else if lookahead.peek(kw::wait) {
            input.parse::<kw::wait>()?;
            let (event, index) = event_ref(input)?;
            Ok(Op::Wait { event, index })
        } else {
            let error = lookahead.error();
            let Ok(word) = input.fork().parse::<Ident>() else {
                return Err(error);
            };
            let word_text = word.to_string();
            match crate::text::closest(&word_text, OPERATIONS) {
                Some(op) => Err(syn::Error::new_spanned(
                    &word,
                    format!(
                        "unknown operation `{word}`: did you mean `{op}`? (the operations are {})",
                        OPERATIONS.map(|o| format!("`{o}`")).join(", ")
                    ),
                )),
                None => Err(error),
            }
        }
    }
}

fn copy_token_span(token: &kw::copy, rest: &TokenStream) -> Span {
    rest.clone().into_iter().last().map_or(token.span, |t| {
        token.span.join(t.span()).unwrap_or(token.span)
    })
}

impl Parse for Launch {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let launch_token: kw::launch = input.parse()?;
        let kernel_tokens = tokens_until(input, &['<', '<', '<'])?;
        if !at_puncts(input, &['<', '<', '<']) {
            return Err(syn::Error::new(
                launch_token.span,
                "expected `launch KERNEL<<<GRID, BLOCK>>>(ARGS)`: missing `<<<`",
            ));
        }
        let kernel: Expr = syn::parse2(kernel_tokens)?;
        let open = input.parse::<Token![<<]>()?.spans[0];
        input.parse::<Token![<]>()?;
        let config_tokens = tokens_until(input, &['>', '>', '>'])?;
        if !at_puncts(input, &['>', '>', '>']) {
            return Err(syn::Error::new(
                open,
                "this launch configuration is not closed: expected `>>>` after `<<<GRID, BLOCK`",
            ));
        }
        input.parse::<Token![>>]>()?;
        input.parse::<Token![>]>()?;
        let config = syn::parse::Parser::parse2(
            Punctuated::<Expr, Token![,]>::parse_terminated,
            config_tokens,
        )?;
        let content;
        parenthesized!(content in input);
        let args = content.parse_terminated(Expr::parse, Token![,])?;
        Ok(Launch {
            kernel,
            open,
            config,
            args,
        })
    }
}

/// Whether the next tokens are the punctuation characters `chars`, in order. Spacing is not
/// compared: `quote!` splits `<<<` into `<<` and `<`.
fn at_puncts(input: ParseStream<'_>, chars: &[char]) -> bool {
    let mut cursor = input.cursor();
    for &c in chars {
        match cursor.punct() {
            Some((p, next)) if p.as_char() == c => cursor = next,
            _ => return false,
        }
    }
    true
}

/// Collects token trees up to (not including) the punctuation sequence `stop`, a `;` or the
/// end of the input, whichever comes first.
fn tokens_until(input: ParseStream<'_>, stop: &[char]) -> syn::Result<TokenStream> {
    let mut tokens = TokenStream::new();
    while !input.is_empty() && !input.peek(Token![;]) && !at_puncts(input, stop) {
        let tt: TokenTree = input.parse()?;
        tokens.extend([tt]);
    }
    if tokens.is_empty() {
        return Err(input.error("expected an expression"));
    }
    Ok(tokens)
}

/// An event's name, and the index after it for an element of an event array: `ready[i % 2]`.
fn event_ref(input: ParseStream<'_>) -> syn::Result<(Ident, Option<Expr>)> {
    let name = input.parse()?;
    if !input.peek(syn::token::Bracket) {
        return Ok((name, None));
    }
    let content;
    syn::bracketed!(content in input);
    Ok((name, Some(content.parse()?)))
}
