//! Dedicated errors for statements written in another shape than `STREAM: OP;`.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Expr, Ident, Token, Visibility};

use super::kw;
use super::op::OPERATIONS;

/// Dedicated errors for statements that start with an identifier but are not `STREAM: OP;`:
/// a nested pipeline, a method-call statement (`side.wait_event(ready)`), an operation without
/// its stream, a stream name without `:`. Looks ahead only; `Ok` when none applies.
pub(super) fn misplaced_statement(input: ParseStream<'_>) -> syn::Result<()> {
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
    if let Ok(mac) = input.fork().parse::<syn::Macro>()
        && mac
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "pipeline")
    {
        let name = syn::parse2::<NestedHeader>(mac.tokens.clone()).ok();
        return Err(nested(&mac, name.as_ref().map(|h| &h.name)));
    }
    if input.peek(kw::pipeline) && input.peek2(Ident) {
        let fork = input.fork();
        let header: NestedHeader = fork.parse()?;
        return Err(nested(&header, Some(&header.name)));
    }
    let fork = input.fork();
    let first: Ident = fork.parse()?;
    if fork.peek(Token![.])
        && let Ok(Expr::MethodCall(call)) = input.fork().parse::<Expr>()
    {
        return Err(method_call_statement(&call));
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
