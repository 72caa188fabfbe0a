//! Statements: an operation on a stream, host `for`/`if` around statements, device blocks
//! (`STREAM: while FLAG { … }`, `STREAM: if FLAG { … } else { … }` and
//! `STREAM: switch INDEX { VALUE => { … } … _ => { … } }`) and collectives; nesting and the
//! recovery of a body's statements. Blocks and statements nest in each other, so one file
//! parses both.

use syn::parse::ParseStream;
use syn::{braced, Expr, Ident, Pat, Token};

use super::collective::{at_collective, CollectiveStmt};
use super::kw;
use super::misplaced::misplaced_statement;
use super::op::Op;
use super::recover;

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

/// The deepest nesting of `for` and `if` accepted (each `else if` nests one level deeper).
///
/// Every stage recurses once per level: parsing, resolution, the race check, the generated
/// code and rustc compiling it. Beyond a few hundred levels an unoptimised build of this macro,
/// or rustc itself, runs out of stack; the limit keeps well clear of both and reports a clear
/// error instead.
pub const MAX_NESTING: usize = 128;

/// A `{ STMT* }` body at `depth`; the errors of statements that do not parse go to `errors`
/// and the rest of the body is still parsed.
pub(super) fn parse_block(
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
pub(super) fn nesting_limit(keyword: &impl quote::ToTokens, depth: usize) -> syn::Result<()> {
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
pub(super) fn parse_stmt(
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
    } else if input.peek(super::kw::temp) && input.peek2(Ident) {
        let item: super::TempItem = input.parse()?;
        Err(syn::Error::new_spanned(
            item.temp_token,
            format!(
                "temporary `{}` is declared inside a block: declare temporaries at the top \
                 level of the pipeline body, next to `stream` and `event` (each one is \
                 allocated before its first use and freed after its last, wherever those are)",
                item.name
            ),
        ))
    } else if lookahead.peek(Ident) {
        misplaced_statement(input)?;
        let stream: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        if input.peek(Token![while]) || input.peek(Token![if]) || input.peek(super::kw::switch) {
            return parse_device_block(input, stream, depth, errors).map(Stmt::Block);
        }
        let op = input.parse()?;
        let semi = input.parse()?;
        Ok(Stmt::Op(OpStmt { stream, op, semi }))
    } else {
        Err(lookahead.error())
    }
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

/// `STREAM: while FLAG (, limit = EXPR)? (, signalled)? { STMT* }` (the options in either
/// order),
/// `STREAM: if FLAG { STMT* } (else { STMT* })?` or
/// `STREAM: switch INDEX { (PAT => { STMT* } ,?)* }`: a loop, branch or switch on the device.
#[derive(Debug)]
pub struct BlockStmt {
    pub stream: Ident,
    pub keyword: BlockKeyword,
    pub flag: Expr,
    /// `limit = EXPR` of a `while`.
    pub limit: Option<(kw::limit, Expr)>,
    /// `signalled` of a `while`: the body's kernels set the loop's condition.
    pub signalled: Option<kw::signalled>,
    /// The body of a `while` or the `then` body of an `if` (empty for a `switch`).
    pub body: Vec<Stmt>,
    /// The `else` body of an `if`.
    pub otherwise: Option<(Token![else], Vec<Stmt>)>,
    /// The arms of a `switch`, in source order.
    pub arms: Vec<Arm>,
}

/// The keyword of a [`BlockStmt`].
#[derive(Debug)]
pub enum BlockKeyword {
    While,
    If,
    Switch(kw::switch),
}

/// `PAT => { STMT* }`: one arm of a device `switch`. The pattern is any Rust pattern here;
/// the model accepts integer literals and `_`.
#[derive(Debug)]
pub struct Arm {
    pub pat: Pat,
    pub body: Vec<Stmt>,
}

/// A device block `STREAM: while …`, `STREAM: if …` or `STREAM: switch …` (after `STREAM:`)
/// inside `depth` levels.
pub(super) fn parse_device_block(
    input: ParseStream<'_>,
    stream: Ident,
    depth: usize,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<Box<BlockStmt>> {
    let keyword = if input.peek(Token![while]) {
        let k: Token![while] = input.parse()?;
        nesting_limit(&k, depth)?;
        BlockKeyword::While
    } else if input.peek(kw::switch) {
        let k: kw::switch = input.parse()?;
        nesting_limit(&k, depth)?;
        BlockKeyword::Switch(k)
    } else {
        let k: Token![if] = input.parse()?;
        nesting_limit(&k, depth)?;
        BlockKeyword::If
    };
    let flag = Expr::parse_without_eager_brace(input)?;
    let mut limit = None;
    let mut signalled = None;
    while matches!(keyword, BlockKeyword::While) && input.peek(Token![,]) {
        let comma: Token![,] = input.parse()?;
        if input.peek(kw::limit) && limit.is_none() {
            let k: kw::limit = input.parse()?;
            input.parse::<Token![=]>()?;
            limit = Some((k, Expr::parse_without_eager_brace(input)?));
        } else if input.peek(kw::signalled) && signalled.is_none() {
            signalled = Some(input.parse::<kw::signalled>()?);
        } else {
            return Err(syn::Error::new(
                if input.is_empty() { comma.span } else { input.span() },
                "expected `limit = N` or `signalled` after the flag of a device `while`, each at \
                 most once: `main: while go, limit = 100u32 { … }`, `main: while go, signalled { … }`",
            ));
        }
    }
    if let BlockKeyword::Switch(_) = keyword {
        let arms = parse_arms(input, depth + 1, errors)?;
        return Ok(Box::new(BlockStmt {
            stream,
            keyword,
            flag,
            limit,
            signalled,
            body: Vec::new(),
            otherwise: None,
            arms,
        }));
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
        signalled,
        body,
        otherwise,
        arms: Vec::new(),
    }))
}

/// `{ (PAT => { STMT* } ,?)* }`: the arms of a `switch`, bodies at `depth`.
fn parse_arms(
    input: ParseStream<'_>,
    depth: usize,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<Vec<Arm>> {
    let content;
    braced!(content in input);
    let mut arms = Vec::new();
    while !content.is_empty() {
        let pat = Pat::parse_single(&content)?;
        content.parse::<Token![=>]>()?;
        let body = parse_block(&content, depth, errors)?;
        if content.peek(Token![,]) {
            content.parse::<Token![,]>()?;
        }
        arms.push(Arm { pat, body });
    }
    Ok(arms)
}
