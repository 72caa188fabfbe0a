//! The header of a pipeline: attributes, visibility, name, generics, parameters.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{parenthesized, Attribute, Generics, Ident, Token, Type, Visibility};

use super::{kw, Input};

/// `NAME: TYPE` in the parameter list.
#[derive(Debug)]
pub struct Param {
    pub name: Ident,
    pub ty: Type,
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
    pub(super) fn parse_head(input: ParseStream<'_>) -> syn::Result<Self> {
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
