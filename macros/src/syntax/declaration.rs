//! Stream, event and temporary declarations: `stream NAME(OPTIONS);`, `event NAME;`,
//! `event NAME[N];`, `temp NAME: TYPE[LEN];`.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{bracketed, parenthesized, Expr, Ident, LitInt, Token, Type};

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

/// `temp NAME: TYPE[LEN];`: device memory of `LEN` elements of `TYPE` that lives from before
/// its first use to after its last use in each run (`LEN` an expression over the parameters).
#[derive(Debug)]
pub struct TempItem {
    pub temp_token: kw::temp,
    pub name: Ident,
    pub ty: Type,
    pub len: Expr,
}

impl Parse for TempItem {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let temp_token = input.parse()?;
        let name = input.parse()?;
        input.parse::<Token![:]>()?;
        let ty = input.parse()?;
        if !input.peek(syn::token::Bracket) {
            return Err(input.error(
                "expected `[LEN]` after the element type: a temporary is declared \
                 `temp NAME: TYPE[LEN];`, e.g. `temp h: f32[rows * cols];`",
            ));
        }
        let content;
        bracketed!(content in input);
        let len = content.parse()?;
        input.parse::<Token![;]>()?;
        Ok(TempItem {
            temp_token,
            name,
            ty,
            len,
        })
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
