//! The accepted syntax, as syn types that mirror the grammar one to one.
//!
//! ```text
//! Input     := Attribute* Visibility "pipeline" Ident Generics? "(" Param,* ")" WhereClause?
//!              "{" Item* "}"
//! Param     := Ident ":" Type
//! Item      := "stream" Ident ("(" StreamOpt,* ")")? ";"
//!            | "event" Ident ("[" LitInt "]")? ";"
//!            | "temp" Ident ":" Type "[" Expr "]" ";"
//!            | Stmt
//! StreamOpt := "priority" "=" Expr | "device" "=" Expr
//! Stmt      := Ident ":" Op ";"
//!            | Ident ":" "while" Expr ("," "limit" "=" Expr)? "{" Stmt* "}"
//!            | Ident ":" "if" Expr "{" Stmt* "}" ("else" "{" Stmt* "}")?
//!            | Ident ":" "switch" Expr "{" (Pat "=>" "{" Stmt* "}" ","?)* "}"
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
//! `stream`, `event` and `temp` are contextual keywords: `NAME: …` is always a statement, so a
//! stream may be named `temp` (`temp: launch …;`). A `temp` declaration belongs at the top
//! level of the body; one inside a `for`, an `if` or a device block is reported and skipped.
//!
//! `STREAM: while FLAG { … }`, `STREAM: if FLAG { … } else { … }` and
//! `STREAM: switch INDEX { 0 => { … } 2 => { … } _ => { … } }` are device blocks: loops,
//! branches and switches that run on the device (CUDA conditional nodes when captured),
//! deciding on a `DeviceFlag` parameter. A `switch` arm's pattern is a non-negative integer
//! literal or, last, `_`. A plain `for`/`if` is host control flow, decided when the pipeline
//! is issued.
//!
//! `for`, `if` and device blocks nest at most [`statement::MAX_NESTING`] levels deep.
//!
//! A statement or declaration that does not parse is reported and skipped (up to its `;`, or
//! its block), and parsing goes on with the next one: one invocation reports every syntax error
//! at once.
//!
//! The launch configuration is parsed as a list so that a wrong number of items is reported
//! by the model with a precise message; a missing `>>>` is a parse error.

mod collective;
mod declaration;
mod header;
mod misplaced;
mod op;
mod statement;
#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod tests;

use proc_macro2::TokenTree;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{braced, Attribute, Generics, Ident, Token, Visibility};

pub use collective::CollectiveStmt;
pub use declaration::{EventItem, StreamItem, StreamOpt, TempItem};
pub use header::{Header, Param};
pub use op::Op;
#[cfg(test)]
pub use statement::MAX_NESTING;
pub use statement::{Arm, BlockKeyword, BlockStmt};
pub use statement::{Else, IfStmt, OpStmt, Stmt};

use collective::at_collective;
use statement::parse_stmt;

/// Keywords of the pipeline language (contextual: they stay usable as Rust identifiers).
pub mod kw {
    syn::custom_keyword!(pipeline);
    syn::custom_keyword!(stream);
    syn::custom_keyword!(event);
    syn::custom_keyword!(temp);
    syn::custom_keyword!(priority);
    syn::custom_keyword!(device);
    syn::custom_keyword!(launch);
    syn::custom_keyword!(copy);
    syn::custom_keyword!(fill);
    syn::custom_keyword!(host);
    syn::custom_keyword!(call);
    syn::custom_keyword!(record);
    syn::custom_keyword!(wait);
    syn::custom_keyword!(wait_stream);
    syn::custom_keyword!(limit);
    syn::custom_keyword!(signalled);
    syn::custom_keyword!(switch);
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

/// One item of the pipeline body.
#[derive(Debug)]
pub enum Item {
    Stream(StreamItem),
    Event(EventItem),
    Temp(TempItem),
    Stmt(Stmt),
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
/// `if`, `stream NAME`, `event NAME`, `temp NAME` or `NAME:`.
fn at_statement_start(input: ParseStream<'_>) -> bool {
    input.is_empty()
        || input.peek(Token![for])
        || input.peek(Token![if])
        || ((input.peek(kw::stream) || input.peek(kw::event) || input.peek(kw::temp))
            && input.peek2(Ident))
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
    } else if input.peek(kw::temp) && input.peek2(Ident) {
        input.parse().map(Item::Temp)
    } else {
        let lookahead = input.lookahead1();
        if lookahead.peek(Token![for])
            || lookahead.peek(Token![if])
            || lookahead.peek(Ident)
            || lookahead.peek(kw::stream)
            || lookahead.peek(kw::event)
            || lookahead.peek(kw::temp)
        {
            parse_stmt(input, 0, errors).map(Item::Stmt)
        } else {
            Err(lookahead.error())
        }
    }
}
