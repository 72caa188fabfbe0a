//! Device blocks: `STREAM: while FLAG { … }`, `STREAM: if FLAG { … } else { … }` and
//! `STREAM: switch INDEX { VALUE => { … } … _ => { … } }`.

use syn::parse::ParseStream;
use syn::{braced, Expr, Ident, Pat, Token};

use super::kw;
use super::statement::{nesting_limit, parse_block, Stmt};

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
