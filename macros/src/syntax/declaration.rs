//! Stream and event declarations: `stream NAME(OPTIONS);`, `event NAME;`, `event NAME[N];`.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{bracketed, parenthesized, Expr, Ident, LitInt, Token};

use super::kw;

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

/// `event NAME;`, or an array of events `event NAME[N];` (`N` an integer literal).
#[derive(Debug)]
pub struct EventItem {
    pub name: Ident,
    pub len: Option<LitInt>,
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
        let len = if input.peek(syn::token::Bracket) {
            let content;
            bracketed!(content in input);
            Some(content.parse()?)
        } else {
            None
        };
        input.parse::<Token![;]>()?;
        Ok(EventItem { name, len })
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
