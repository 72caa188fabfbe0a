//! Statements: an operation on a stream, host `for`/`if` around statements, device blocks
//! and collectives; nesting and the recovery of a body's statements.

use syn::parse::ParseStream;
use syn::{braced, Expr, Ident, Pat, Token};

use super::block::{parse_device_block, BlockStmt};
use super::collective::{at_collective, CollectiveStmt};
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
