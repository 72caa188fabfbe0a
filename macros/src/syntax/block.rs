//! Device blocks: `STREAM: while FLAG { … }` and `STREAM: if FLAG { … } else { … }`.

use syn::parse::ParseStream;
use syn::{Expr, Ident, Token};

use super::kw;
use super::statement::{nesting_limit, parse_block, Stmt};

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

/// A device block `STREAM: while …` or `STREAM: if …` (after `STREAM:`) inside `depth` levels.
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
