//! The accepted syntax, as syn types that mirror the grammar one to one.
//!
//! ```text
//! Input     := Attribute* Visibility "pipeline" Ident Generics? "(" Param,* ")" WhereClause?
//!              "{" Item* "}"
//! Param     := Ident ":" Type
//! Item      := "stream" Ident ("(" StreamOpt,* ")")? ";"
//!            | "event" Ident ";"
//!            | Stmt
//! StreamOpt := "priority" "=" Expr | "device" "=" Expr
//! Stmt      := Ident ":" Op ";"
//!            | Ident ":" "while" Expr ("," "limit" "=" Expr)? "{" Stmt* "}"
//!            | Ident ":" "if" Expr "{" Stmt* "}" ("else" "{" Stmt* "}")?
//!            | "for" Pat "in" Expr "{" Stmt* "}"
//!            | "if" Expr "{" Stmt* "}" ("else" ("{" Stmt* "}" | IfStmt))?
//! Op        := "launch" Expr "<<<" Expr,* ">>>" "(" Expr,* ")"
//!            | "copy" Expr "<-" Expr
//!            | "fill" Expr "=" Expr
//!            | "host" Expr
//!            | "record" Ident
//!            | "wait" Ident
//!            | "wait_stream" Ident
//! ```
//!
//! `STREAM: while FLAG { … }` and `STREAM: if FLAG { … } else { … }` are device blocks: loops
//! and branches that run on the device (CUDA conditional nodes when captured), deciding on a
//! `DeviceFlag` parameter. A plain `for`/`if` is host control flow, decided when the pipeline
//! is issued.
//!
//! `for`, `if` and device blocks nest at most [`MAX_NESTING`] levels deep.
//!
//! A statement or declaration that does not parse is reported and skipped (up to its `;`, or
//! its block), and parsing goes on with the next one: one invocation reports every syntax error
//! at once.
//!
//! The launch configuration is parsed as a list so that a wrong number of items is reported
//! by the model with a precise message; a missing `>>>` is a parse error.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{braced, parenthesized, Attribute, Expr, Generics, Ident, Pat, Token, Type, Visibility};

/// Keywords of the pipeline language (contextual: they stay usable as Rust identifiers).
pub mod kw {
    syn::custom_keyword!(pipeline);
    syn::custom_keyword!(stream);
    syn::custom_keyword!(event);
    syn::custom_keyword!(priority);
    syn::custom_keyword!(device);
    syn::custom_keyword!(launch);
    syn::custom_keyword!(copy);
    syn::custom_keyword!(fill);
    syn::custom_keyword!(host);
    syn::custom_keyword!(record);
    syn::custom_keyword!(wait);
    syn::custom_keyword!(wait_stream);
    syn::custom_keyword!(limit);
}

/// The whole macro input.
#[derive(Debug)]
pub struct Input {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub pipeline_token: kw::pipeline,
    pub name: Ident,
    pub generics: Generics,
    pub params: Punctuated<Param, Token![,]>,
    pub items: Vec<Item>,
}

/// `NAME: TYPE` in the parameter list.
#[derive(Debug)]
pub struct Param {
    pub name: Ident,
    pub ty: Type,
}

/// One item of the pipeline body.
#[derive(Debug)]
pub enum Item {
    Stream(StreamItem),
    Event(EventItem),
    Stmt(Stmt),
}

/// `stream NAME(priority = EXPR, device = EXPR);`
#[derive(Debug)]
pub struct StreamItem {
    pub name: Ident,
    pub options: Punctuated<StreamOpt, Token![,]>,
}

/// One option of a stream declaration.
#[derive(Debug)]
pub enum StreamOpt {
    Priority(kw::priority, Expr),
    Device(kw::device, Expr),
}

/// `event NAME;`
#[derive(Debug)]
pub struct EventItem {
    pub name: Ident,
}

/// A statement: an operation on a stream, or control flow around statements.
#[derive(Debug)]
pub enum Stmt {
    Op(OpStmt),
    For(ForStmt),
    If(IfStmt),
    /// Boxed: the deeply nested parse stays light on the stack.
    Block(Box<BlockStmt>),
    /// A collective across streams.
    Collective(Box<CollectiveStmt>),
}

/// `KEYWORD(COMM, OPTION*) { STREAM: BUFFERS, … };`: a collective (`all_reduce`,
/// `all_gather`, `reduce_scatter`, `broadcast`) with one participant per stream.
#[derive(Debug)]
pub struct CollectiveStmt {
    /// `all_reduce`, `all_gather`, `reduce_scatter` or `broadcast`.
    pub keyword: Ident,
    /// The communicator expression (a parameter name).
    pub comm: Expr,
    /// The options after the communicator: `sum` (a reduction), `root = STREAM`.
    pub options: Vec<(Ident, Option<Ident>)>,
    pub parts: Vec<Participant>,
    pub semi: Token![;],
}

/// `STREAM: &mut BUF` (in place) or `STREAM: &SEND => &mut RECV`.
#[derive(Debug)]
pub struct Participant {
    pub stream: Ident,
    pub send: Option<Expr>,
    pub recv: Expr,
}

/// The keywords of collective statements.
pub const COLLECTIVES: [&str; 4] = ["all_reduce", "all_gather", "reduce_scatter", "broadcast"];

/// Whether the input starts a collective statement: a collective keyword and `(`.
fn at_collective(input: ParseStream<'_>) -> bool {
    let fork = input.fork();
    fork.parse::<Ident>()
        .is_ok_and(|i| COLLECTIVES.contains(&i.to_string().as_str()))
        && fork.peek(syn::token::Paren)
}

impl Parse for CollectiveStmt {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let keyword: Ident = input.parse()?;
        let args;
        parenthesized!(args in input);
        let comm: Expr = args.parse()?;
        let mut options = Vec::new();
        while !args.is_empty() {
            args.parse::<Token![,]>()?;
            if args.is_empty() {
                break;
            }
            let name: Ident = args.parse()?;
            let value = if args.peek(Token![=]) {
                args.parse::<Token![=]>()?;
                Some(args.parse()?)
            } else {
                None
            };
            options.push((name, value));
        }
        let body;
        braced!(body in input);
        let mut parts = Vec::new();
        while !body.is_empty() {
            let stream: Ident = body.parse()?;
            body.parse::<Token![:]>()?;
            let first: Expr = body.parse()?;
            let (send, recv) = if body.peek(Token![=>]) {
                body.parse::<Token![=>]>()?;
                (Some(first), body.parse()?)
            } else {
                (None, first)
            };
            parts.push(Participant { stream, send, recv });
            if body.is_empty() {
                break;
            }
            body.parse::<Token![,]>()?;
        }
        let semi = input.parse()?;
        Ok(CollectiveStmt {
            keyword,
            comm,
            options,
            parts,
            semi,
        })
    }
}

/// `STREAM: while FLAG (, limit = EXPR)? { STMT* }` or
/// `STREAM: if FLAG { STMT* } (else { STMT* })?`: a loop or branch on the device.
#[derive(Debug)]
pub struct BlockStmt {
    pub stream: Ident,
    pub keyword: BlockKeyword,
    pub flag: Expr,
    /// `limit = EXPR` of a `while`.
    pub limit: Option<(kw::limit, Expr)>,
    pub body: Vec<Stmt>,
    /// The `else` body of an `if`.
    pub otherwise: Option<(Token![else], Vec<Stmt>)>,
}

/// The keyword of a [`BlockStmt`].
#[derive(Debug)]
pub enum BlockKeyword {
    While,
    If,
}

/// `STREAM: OP;`
#[derive(Debug)]
pub struct OpStmt {
    pub stream: Ident,
    pub op: Op,
    pub semi: Token![;],
}

/// `for PAT in EXPR { STMT* }`
#[derive(Debug)]
pub struct ForStmt {
    pub for_token: Token![for],
    pub pat: Pat,
    pub expr: Expr,
    pub body: Vec<Stmt>,
}

/// `if EXPR { STMT* } else ...`
#[derive(Debug)]
pub struct IfStmt {
    pub if_token: Token![if],
    pub cond: Expr,
    pub then: Vec<Stmt>,
    pub otherwise: Option<Else>,
}

/// The `else` part of an [`IfStmt`].
#[derive(Debug)]
pub enum Else {
    Block(Vec<Stmt>),
    If(Box<IfStmt>),
}

/// The operation of an [`OpStmt`].
#[derive(Debug)]
pub enum Op {
    Launch(Launch),
    Copy { dst: Expr, src: Expr },
    Fill { dst: Expr, value: Expr },
    Host { func: Expr },
    Record { event: Ident },
    Wait { event: Ident },
    WaitStream { stream: Ident },
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

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut parsed = Header::parse_head(input)?.into_input();
        let body;
        braced!(body in input);
        let mut items = Vec::new();
        let mut errors = Vec::new();
        while !body.is_empty() {
            match parse_item(&body, &mut errors) {
                Ok(item) => items.push(item),
                Err(e) => {
                    errors.push(e);
                    recover(&body);
                }
            }
        }
        if let Some(e) = combine(errors) {
            return Err(e);
        }
        parsed.items = items;
        Ok(parsed)
    }
}

/// The header of a `pipeline!` input, everything before the body; the body is skipped. What
/// the expansion falls back to when the body does not parse.
pub struct Header {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub pipeline_token: kw::pipeline,
    pub name: Ident,
    pub generics: Generics,
    pub params: Punctuated<Param, Token![,]>,
}

impl Parse for Header {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let header = Header::parse_head(input)?;
        input.parse::<TokenStream>()?;
        Ok(header)
    }
}

impl Header {
    /// Everything before the body: attributes, visibility, `pipeline NAME<GENERICS>(PARAMS)`
    /// and the where clause.
    fn parse_head(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let pipeline_token = input.parse()?;
        let name = input.parse()?;
        let mut generics: Generics = input.parse()?;
        let content;
        parenthesized!(content in input);
        let params = content.parse_terminated(Param::parse, Token![,])?;
        generics.where_clause = input.parse()?;
        Ok(Header {
            attrs,
            vis,
            pipeline_token,
            name,
            generics,
            params,
        })
    }

    /// The input with an empty body.
    pub fn into_input(self) -> Input {
        Input {
            attrs: self.attrs,
            vis: self.vis,
            pipeline_token: self.pipeline_token,
            name: self.name,
            generics: self.generics,
            params: self.params,
            items: Vec::new(),
        }
    }
}

impl Parse for Param {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let name = input.parse()?;
        input.parse::<Token![:]>()?;
        let ty = input.parse()?;
        Ok(Param { name, ty })
    }
}

/// All of `errors` as one error (each is reported), `None` when there are none.
fn combine(errors: Vec<syn::Error>) -> Option<syn::Error> {
    errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    })
}

/// Skips the rest of a statement or declaration that did not parse, so that the next one is
/// parsed (and its errors reported) on its own: up to and including the next `;` at this level,
/// or up to the end of the block. A statement that ends in a `{ … }` body (`for`, `if`, device
/// blocks, a nested pipeline) ends after a body followed by what starts a statement. Always
/// skips at least one token, so that parsing makes progress.
fn recover(input: ParseStream<'_>) {
    while let Ok(tt) = input.parse::<TokenTree>() {
        match tt {
            TokenTree::Punct(p) if p.as_char() == ';' => return,
            TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Brace => {
                if input.peek(Token![;]) {
                    let _ = input.parse::<Token![;]>();
                    return;
                }
                if at_statement_start(input) {
                    return;
                }
            }
            _ => {}
        }
    }
}

/// Whether the input starts like a statement or declaration: the end of the block, `for`,
/// `if`, `stream NAME`, `event NAME` or `NAME:`.
fn at_statement_start(input: ParseStream<'_>) -> bool {
    input.is_empty()
        || input.peek(Token![for])
        || input.peek(Token![if])
        || ((input.peek(kw::stream) || input.peek(kw::event)) && input.peek2(Ident))
        || (input.peek(Ident) && input.peek2(Token![:]) && !input.peek2(Token![::]))
        || at_collective(input)
}

/// One item of the body; errors inside the bodies of its blocks go to `errors` (the item is
/// returned without the statements that did not parse).
fn parse_item(input: ParseStream<'_>, errors: &mut Vec<syn::Error>) -> syn::Result<Item> {
    if input.peek(kw::stream) && !input.peek2(Token![:]) {
        input.parse().map(Item::Stream)
    } else if input.peek(kw::event) && !input.peek2(Token![:]) {
        input.parse().map(Item::Event)
    } else {
        let lookahead = input.lookahead1();
        if lookahead.peek(Token![for])
            || lookahead.peek(Token![if])
            || lookahead.peek(Ident)
            || lookahead.peek(kw::stream)
            || lookahead.peek(kw::event)
        {
            parse_stmt(input, 0, errors).map(Item::Stmt)
        } else {
            Err(lookahead.error())
        }
    }
}

impl Parse for StreamItem {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        input.parse::<kw::stream>()?;
        let name = input.parse()?;
        let options = if input.peek(syn::token::Paren) {
            let content;
            parenthesized!(content in input);
            content.parse_terminated(StreamOpt::parse, Token![,])?
        } else {
            Punctuated::new()
        };
        input.parse::<Token![;]>()?;
        Ok(StreamItem { name, options })
    }
}

impl Parse for EventItem {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        input.parse::<kw::event>()?;
        let name = input.parse()?;
        input.parse::<Token![;]>()?;
        Ok(EventItem { name })
    }
}

impl Parse for StreamOpt {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let lookahead = input.lookahead1();
        if lookahead.peek(kw::priority) {
            let k = input.parse()?;
            input.parse::<Token![=]>()?;
            Ok(StreamOpt::Priority(k, input.parse()?))
        } else if lookahead.peek(kw::device) {
            let k = input.parse()?;
            input.parse::<Token![=]>()?;
            Ok(StreamOpt::Device(k, input.parse()?))
        } else {
            Err(lookahead.error())
        }
    }
}

/// The deepest nesting of `for` and `if` accepted (each `else if` nests one level deeper).
///
/// Every stage recurses once per level: parsing, resolution, the race check, the generated
/// code and rustc compiling it. Beyond a few hundred levels an unoptimised build of this macro,
/// or rustc itself, runs out of stack; the limit keeps well clear of both and reports a clear
/// error instead.
pub const MAX_NESTING: usize = 128;

/// A `{ STMT* }` body at `depth`; the errors of statements that do not parse go to `errors`
/// and the rest of the body is still parsed.
fn parse_block(
    input: ParseStream<'_>,
    depth: usize,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<Vec<Stmt>> {
    let body;
    braced!(body in input);
    let mut stmts = Vec::new();
    while !body.is_empty() {
        match parse_stmt(&body, depth, errors) {
            Ok(stmt) => stmts.push(stmt),
            Err(e) => {
                errors.push(e);
                recover(&body);
            }
        }
    }
    Ok(stmts)
}

/// A `for` or `if` at `depth` enclosing levels: refused past [`MAX_NESTING`].
fn nesting_limit(keyword: &impl quote::ToTokens, depth: usize) -> syn::Result<()> {
    if depth < MAX_NESTING {
        return Ok(());
    }
    Err(syn::Error::new_spanned(
        keyword,
        format!(
            "nesting deeper than {MAX_NESTING} levels of `for` and `if` is not supported (each \
             `else if` counts as one more level); flatten it, e.g. combine conditions with `&&` \
             or split the pipeline in two"
        ),
    ))
}

/// A statement inside `depth` levels of `for` and `if`.
fn parse_stmt(
    input: ParseStream<'_>,
    depth: usize,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<Stmt> {
    let lookahead = input.lookahead1();
    if lookahead.peek(Token![for]) {
        let for_token: Token![for] = input.parse()?;
        nesting_limit(&for_token, depth)?;
        let pat = Pat::parse_single(input)?;
        input.parse::<Token![in]>()?;
        let expr = Expr::parse_without_eager_brace(input)?;
        let body = parse_block(input, depth + 1, errors)?;
        Ok(Stmt::For(ForStmt {
            for_token,
            pat,
            expr,
            body,
        }))
    } else if lookahead.peek(Token![if]) {
        parse_if(input, depth, errors).map(Stmt::If)
    } else if at_collective(input) {
        input.parse().map(|c| Stmt::Collective(Box::new(c)))
    } else if lookahead.peek(Ident) {
        misplaced_statement(input)?;
        let stream: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        if input.peek(Token![while]) || input.peek(Token![if]) {
            return parse_device_block(input, stream, depth, errors).map(Stmt::Block);
        }
        let op = input.parse()?;
        let semi = input.parse()?;
        Ok(Stmt::Op(OpStmt { stream, op, semi }))
    } else {
        Err(lookahead.error())
    }
}

/// A device block `STREAM: while …` or `STREAM: if …` (after `STREAM:`) inside `depth` levels.
fn parse_device_block(
    input: ParseStream<'_>,
    stream: Ident,
    depth: usize,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<Box<BlockStmt>> {
    let keyword = if input.peek(Token![while]) {
        let k: Token![while] = input.parse()?;
        nesting_limit(&k, depth)?;
        BlockKeyword::While
    } else {
        let k: Token![if] = input.parse()?;
        nesting_limit(&k, depth)?;
        BlockKeyword::If
    };
    let flag = Expr::parse_without_eager_brace(input)?;
    let mut limit = None;
    if matches!(keyword, BlockKeyword::While) && input.peek(Token![,]) {
        input.parse::<Token![,]>()?;
        let k: kw::limit = input.parse()?;
        input.parse::<Token![=]>()?;
        limit = Some((k, Expr::parse_without_eager_brace(input)?));
    }
    let body = parse_block(input, depth + 1, errors)?;
    let mut otherwise = None;
    if matches!(keyword, BlockKeyword::If) && input.peek(Token![else]) {
        let e: Token![else] = input.parse()?;
        if input.peek(Token![if]) {
            return Err(syn::Error::new_spanned(
                e,
                "a device `if` takes a plain `else { … }`: nest another `STREAM: if FLAG { … }` \
                 inside it for a second condition",
            ));
        }
        otherwise = Some((e, parse_block(input, depth + 1, errors)?));
    }
    Ok(Box::new(BlockStmt {
        stream,
        keyword,
        flag,
        limit,
        body,
        otherwise,
    }))
}

/// An `if` inside `depth` levels of `for` and `if`.
fn parse_if(
    input: ParseStream<'_>,
    depth: usize,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<IfStmt> {
    let if_token: Token![if] = input.parse()?;
    nesting_limit(&if_token, depth)?;
    let cond = Expr::parse_without_eager_brace(input)?;
    let then = parse_block(input, depth + 1, errors)?;
    let otherwise = if input.peek(Token![else]) {
        input.parse::<Token![else]>()?;
        if input.peek(Token![if]) {
            Some(Else::If(Box::new(parse_if(input, depth + 1, errors)?)))
        } else {
            Some(Else::Block(parse_block(input, depth + 1, errors)?))
        }
    } else {
        None
    };
    Ok(IfStmt {
        if_token,
        cond,
        then,
        otherwise,
    })
}

/// The operations of [`Op`], as written after `STREAM:`.
const OPERATIONS: [&str; 7] = [
    "launch",
    "copy",
    "fill",
    "host",
    "record",
    "wait",
    "wait_stream",
];

/// Dedicated errors for statements that start with an identifier but are not `STREAM: OP;`:
/// a nested pipeline, a method-call statement (`side.wait_event(ready)`), an operation without
/// its stream, a stream name without `:`. Looks ahead only; `Ok` when none applies.
fn misplaced_statement(input: ParseStream<'_>) -> syn::Result<()> {
    let nested = |at: &dyn quote::ToTokens, name: Option<&Ident>| {
        let name = name.map_or_else(|| "it".to_owned(), |n| format!("`{n}`"));
        syn::Error::new_spanned(
            at,
            format!(
                "a pipeline cannot be declared inside another pipeline: declare {name} in its own \
                 `pipeline!` next to this one and run the two one after the other, or write its \
                 streams and statements in this pipeline"
            ),
        )
    };
    if let Ok(mac) = input.fork().parse::<syn::Macro>() {
        if mac
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "pipeline")
        {
            let name = syn::parse2::<NestedHeader>(mac.tokens.clone()).ok();
            return Err(nested(&mac, name.as_ref().map(|h| &h.name)));
        }
    }
    if input.peek(kw::pipeline) && input.peek2(Ident) {
        let fork = input.fork();
        let header: NestedHeader = fork.parse()?;
        return Err(nested(&header, Some(&header.name)));
    }
    let fork = input.fork();
    let first: Ident = fork.parse()?;
    if fork.peek(Token![.]) {
        if let Ok(Expr::MethodCall(call)) = input.fork().parse::<Expr>() {
            return Err(method_call_statement(&call));
        }
    }
    if fork.peek(Token![:]) && !fork.peek(Token![::]) {
        return Ok(());
    }
    let op = first.to_string();
    if OPERATIONS.contains(&op.as_str()) {
        return Err(syn::Error::new_spanned(
            &first,
            format!(
                "this `{op}` names no stream: every statement is issued on a stream, written \
                 `STREAM: {op} …;` (e.g. `main: {op} …;` for a stream declared `stream main;`)"
            ),
        ));
    }
    Err(syn::Error::new(
        fork.span(),
        format!(
            "expected `:` after `{first}`: statements are written `STREAM: OP;`, e.g. \
             `{first}: launch k<<<grid, block>>>(&mut x);` for a stream `{first}`"
        ),
    ))
}

/// `pipeline NAME`, the start of a nested pipeline declaration (the rest is skipped).
struct NestedHeader {
    pipeline: kw::pipeline,
    name: Ident,
}

impl Parse for NestedHeader {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        input.call(Attribute::parse_outer)?;
        input.parse::<Visibility>()?;
        let pipeline = input.parse()?;
        let name = input.parse()?;
        input.parse::<TokenStream>()?;
        Ok(NestedHeader { pipeline, name })
    }
}

impl quote::ToTokens for NestedHeader {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.pipeline.to_tokens(tokens);
        self.name.to_tokens(tokens);
    }
}

/// The error for a statement written as a method call on a stream, as in PyTorch
/// (`side.wait_event(ready)`), with the statement to write instead.
fn method_call_statement(call: &syn::ExprMethodCall) -> syn::Error {
    let receiver = crate::text::text_of(&call.receiver);
    let args: Vec<String> = call.args.iter().map(crate::text::text_of).collect();
    let arg = args.first().map_or("…", String::as_str);
    let method = call.method.to_string();
    let instead = match method.as_str() {
        "wait_event" | "wait" => Some(format!("{receiver}: wait {arg};")),
        "record_event" | "record" => Some(format!("{receiver}: record {arg};")),
        "wait_stream" => Some(format!("{receiver}: wait_stream {arg};")),
        "launch" => Some(format!("{receiver}: launch KERNEL<<<GRID, BLOCK>>>(ARGS);")),
        "copy" | "copy_" => Some(format!("{receiver}: copy DST <- SRC;")),
        "fill" | "fill_" => Some(format!("{receiver}: fill BUF = VALUE;")),
        _ => None,
    };
    let message = match instead {
        Some(instead) => format!("statements are not method calls on streams: write `{instead}`"),
        None => format!(
            "statements are not method calls: write `STREAM: OP;`, where OP is one of {}",
            OPERATIONS.map(|o| format!("`{o}`")).join(", ")
        ),
    };
    syn::Error::new_spanned(call, message)
}

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
        } else if lookahead.peek(kw::record) {
            input.parse::<kw::record>()?;
            Ok(Op::Record {
                event: input.parse()?,
            })
        } else if lookahead.peek(kw::wait_stream) {
            input.parse::<kw::wait_stream>()?;
            Ok(Op::WaitStream {
                stream: input.parse()?,
            })
        } else if lookahead.peek(kw::wait) {
            input.parse::<kw::wait>()?;
            Ok(Op::Wait {
                event: input.parse()?,
            })
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

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn parses_every_item_and_statement_form() {
        let input: Input = parse_quote! {
            /// Docs.
            pub pipeline P<T: Copy>(x: &mut DeviceBuffer<f32>, k: &Kernels, n: u32) where T: Send {
                stream main;
                stream side(priority = -1, device = 0);
                event e;
                main: launch k.scale<<<(n + 255) / 256, 256, 0>>>(&mut x, 2.0f32, n);
                main: record e;
                side: wait e;
                side: copy h.slice(0..n) <- x;
                side: fill x = 0.0f32;
                side: host move || {};
                main: wait_stream side;
                for i in 0..n { side: fill x.slice(i..i + 1) = 1.0f32; }
                if n > 2 { main: record e; } else if n > 1 { main: wait e; } else { side: wait e; }
            }
        };
        assert_eq!(input.name, "P");
        assert_eq!(input.params.len(), 3);
        assert!(input.generics.where_clause.is_some());
        assert_eq!(input.items.len(), 12);
        let Item::Stream(side) = &input.items[1] else {
            panic!("expected a stream")
        };
        assert_eq!(side.options.len(), 2);
        let Item::Stmt(Stmt::Op(OpStmt {
            op: Op::Launch(l), ..
        })) = &input.items[3]
        else {
            panic!("expected a launch")
        };
        assert_eq!(l.config.len(), 3);
        assert_eq!(l.args.len(), 3);
        let Item::Stmt(Stmt::Op(OpStmt {
            op: Op::Copy { dst, src, .. },
            ..
        })) = &input.items[6]
        else {
            panic!("expected a copy")
        };
        assert!(matches!(dst, Expr::MethodCall(_)));
        assert!(matches!(src, Expr::Path(_)));
        assert!(matches!(
            &input.items[11],
            Item::Stmt(Stmt::If(IfStmt {
                otherwise: Some(Else::If(_)),
                ..
            }))
        ));
    }

    #[test]
    fn missing_close_of_launch_configuration_is_an_error() {
        let err = syn::parse2::<Input>(quote::quote! {
            pipeline P() { stream s; s: launch k<<<1, 1(); }
        })
        .unwrap_err();
        assert!(err.to_string().contains("expected `>>>`"), "{err}");
    }

    #[test]
    fn unknown_operation_lists_the_alternatives() {
        let err = syn::parse2::<Input>(quote::quote! {
            pipeline P() { stream s; s: frobnicate k<<<1, 1>>>(); }
        })
        .unwrap_err();
        assert!(err.to_string().contains("expected one of"), "{err}");
        let err = syn::parse2::<Input>(quote::quote! {
            pipeline P() { stream s; s: lunch k<<<1, 1>>>(); }
        })
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("unknown operation `lunch`: did you mean `launch`?"),
            "{err}"
        );
    }

    fn parse_error(body: proc_macro2::TokenStream) -> String {
        syn::parse2::<Input>(
            quote::quote!(pipeline P(x: &mut B) { stream main; stream side; #body }),
        )
        .unwrap_err()
        .to_string()
    }

    /// The messages of all the errors of a body, in order.
    fn parse_errors(body: proc_macro2::TokenStream) -> Vec<String> {
        syn::parse2::<Input>(
            quote::quote!(pipeline P(x: &mut B) { stream main; stream side; event ready; #body }),
        )
        .unwrap_err()
        .into_iter()
        .map(|e| e.to_string())
        .collect()
    }

    #[test]
    fn every_statement_that_does_not_parse_is_reported() {
        let errors = parse_errors(quote::quote! {
            main: launch k<<<1, 32>>>(&mut x);
            main.record_event(ready);
            side wait ready;
            for i in 0..2 {
                side: lunch k<<<1, 32>>>(&mut x);
                side: fill x = 0.0f32;
                side: copy x;
            }
            main: launch k<<<1, 32(&mut x);
            main: wait_stream side;
            stream third(priority = );
            event;
            if true { main: record ready; } else { side: wait ready }
            main: host || {} main: record ready;
        });
        let expected = [
            "write `main: record ready;`",
            "expected `:` after `side`",
            "unknown operation `lunch`: did you mean `launch`?",
            "expected `copy DST <- SRC`",
            "expected `>>>`",
            "expected an expression",
            "expected identifier",
            "expected `;`",
            "expected `;`",
        ];
        assert_eq!(errors.len(), expected.len(), "{errors:#?}");
        for (error, expected) in errors.iter().zip(expected) {
            assert!(error.contains(expected), "{error:?} lacks {expected:?}");
        }
    }

    #[test]
    fn recovery_skips_block_statements_whole() {
        // The bodies of a `for` and a device `while` whose heads do not parse are skipped
        // whole; the statements after them are parsed.
        let errors = parse_errors(quote::quote! {
            for in 0..2 { side: fill x = 1.0f32; }
            main: while , limit = 3 { main: fill x = 1.0f32; }
            main: if f { main: fill x = 0.0f32; } else if g { side: fill x = 0.0f32; }
            main: record;
        });
        assert_eq!(errors.len(), 4, "{errors:#?}");
        assert!(
            errors[2].contains("a device `if` takes a plain `else"),
            "{errors:#?}"
        );
    }

    #[test]
    fn misplaced_statements_get_their_own_messages() {
        let cases = [
            (
                quote::quote!(side.wait_event(ready);),
                "statements are not method calls on streams: write `side: wait ready;`",
            ),
            (
                quote::quote!(side.wait_stream(main);),
                "write `side: wait_stream main;`",
            ),
            (
                quote::quote!(main.record_event(ready);),
                "write `main: record ready;`",
            ),
            (
                quote::quote!(main.synchronize();),
                "statements are not method calls: write `STREAM: OP;`",
            ),
            (
                quote::quote!(launch k<<<1, 1>>>(&mut x);),
                "this `launch` names no stream",
            ),
            (
                quote::quote!(for i in 0..2 { record ready; }),
                "this `record` names no stream",
            ),
            (
                quote::quote!(main launch k<<<1, 1>>>(&mut x);),
                "expected `:` after `main`",
            ),
            (
                quote::quote!(pipeline Inner(y: &B) { stream s; }),
                "a pipeline cannot be declared inside another pipeline: declare `Inner`",
            ),
            (
                quote::quote!(streamgraph::pipeline! { pipeline Inner() { stream s; } }),
                "a pipeline cannot be declared inside another pipeline: declare `Inner`",
            ),
        ];
        for (body, expected) in cases {
            let err = parse_error(body.clone());
            assert!(err.contains(expected), "{body}: {err}");
        }
    }
}
