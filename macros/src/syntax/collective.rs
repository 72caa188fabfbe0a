//! Collectives: `KEYWORD(COMM, OPTION*) { STREAM: BUFFERS, … };`.

use syn::parse::{Parse, ParseStream};
use syn::{braced, parenthesized, Expr, Ident, Token};

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
pub(super) fn at_collective(input: ParseStream<'_>) -> bool {
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
