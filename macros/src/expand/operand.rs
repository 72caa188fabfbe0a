//! Operands as generated code passes them: buffers, places written, kernels and values, every
//! token on the user's expression so that type errors land there.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

use crate::model::{write_form, BufferExpr, ParamKind, Program};

/// A buffer expression as the reference generated code passes on: the binding itself for a
/// reference parameter's whole buffer, a borrow of the value otherwise.
fn buffer(program: &Program, b: &BufferExpr) -> TokenStream {
    let expr = &b.expr;
    let by_ref = program
        .param(&b.root)
        .is_some_and(|p| p.kind != ParamKind::Value);
    if b.whole && b.element.is_none() && by_ref {
        quote_spanned!(expr.span()=> #expr)
    } else {
        quote_spanned!(expr.span()=> &(#expr))
    }
}

/// A kernel expression as the reference generated code passes on: a reference parameter's
/// binding itself (so that a wrong parameter is reported with the type the user declared behind
/// its `&`), a borrow of the value otherwise.
pub(super) fn kernel_ref(program: &Program, kernel: &syn::Expr) -> TokenStream {
    let by_ref = match kernel {
        syn::Expr::Path(p) if p.qself.is_none() => p
            .path
            .get_ident()
            .and_then(|name| program.param(name))
            .is_some_and(|p| p.kind != ParamKind::Value),
        _ => false,
    };
    if by_ref {
        quote_spanned!(kernel.span()=> #kernel)
    } else {
        borrow(kernel)
    }
}

/// `&EXPR`, with parentheses only where precedence needs them: without them the borrow spans
/// exactly the user's expression (a `(` `)` pair carries one span, its first token's), so a type
/// error on it underlines all of `k.scale` rather than `k`.
pub(super) fn borrow(expr: &syn::Expr) -> TokenStream {
    use syn::Expr;
    let tight = matches!(
        expr,
        Expr::Path(_)
            | Expr::Field(_)
            | Expr::MethodCall(_)
            | Expr::Call(_)
            | Expr::Index(_)
            | Expr::Lit(_)
            | Expr::Paren(_)
            | Expr::Tuple(_)
            | Expr::Array(_)
            | Expr::Struct(_)
            | Expr::Macro(_)
    );
    let span = expr.span();
    if tight {
        quote_spanned!(span=> &#expr)
    } else {
        quote_spanned!(span=> &(#expr))
    }
}

/// `FUNCTION(device_memory(BUFFER, DeviceMemory::len))`, every token on the user's buffer
/// expression: memory that is not device memory is reported once, there, as the
/// `DeviceMemory` trait words it.
pub(super) fn buffer_arg(program: &Program, b: &BufferExpr, function: TokenStream) -> TokenStream {
    let expr = &b.expr;
    let span = expr.span();
    let last = last_span(expr);
    let checked = device_memory(program, b);
    let mut outer = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, checked);
    outer.set_span(last);
    let function = respan(function, span);
    quote_spanned!(span=> #function #outer)
}

/// `device_memory(BUFFER, DeviceMemory::len)`, every token on the user's buffer expression; a
/// call that takes it reports memory that is not device memory at the same place, and rustc
/// shows that error once, in the `DeviceMemory` trait's words.
pub(super) fn device_memory(program: &Program, b: &BufferExpr) -> TokenStream {
    let expr = &b.expr;
    let span = expr.span();
    let memory = buffer(program, b);
    let check = quote_spanned!(span=> ::streamgraph::__private::DeviceMemory::len);
    let mut args = proc_macro2::Group::new(
        proc_macro2::Delimiter::Parenthesis,
        quote_spanned!(span=> #memory, #check),
    );
    args.set_span(last_span(expr));
    quote_spanned!(span=> ::streamgraph::__private::device_memory #args)
}

/// A written buffer as the `Place` generated code writes: `place(&self.x)`, the `&&mut` that
/// `issue(&self)` holds for a `&mut` parameter, then `.index(i)` for each index and `.slice(r)`
/// for a `.slice_mut(r)` (or `.slice(r)`), every token on the user's expression. Writing it
/// needs the parameter's memory to be writable through that borrow (the runtime's
/// `DeviceMemoryMut`, `CopyTarget`), which a shared borrow under the `&mut` is not; the macro
/// reports the cases it sees itself and generates no write for them ([`write_rejected`]).
pub(super) fn place(program: &Program, b: &BufferExpr) -> TokenStream {
    let span = b.expr.span();
    let Some(form) = write_form(&b.expr) else {
        // Reported; the statement is not generated.
        return quote_spanned!(span=> ::core::unreachable!());
    };
    let root = &b.root;
    let binding = match program.temp_named(root) {
        // A temporary: its exclusive borrow (see `statement::temp_alloc`).
        Some(t) => {
            let exclusive = temp_exclusive(&program.temps[t].name);
            quote!(&#exclusive)
        }
        None => quote_spanned!(root.span()=> &self.#root),
    };
    let mut tokens = quote_spanned!(span=> ::streamgraph::__private::place);
    tokens.extend([TokenTree::Group(group(binding, root.span()))]);
    for index in form.indices {
        let at = index.span();
        tokens.extend(quote_spanned!(at=> .index));
        tokens.extend([TokenTree::Group(group(index.to_token_stream(), at))]);
    }
    if let Some((method, range)) = form.slice {
        let at = method.span();
        tokens.extend(quote_spanned!(at=> .slice));
        tokens.extend([TokenTree::Group(group(
            range.to_token_stream(),
            range.span(),
        ))]);
    }
    let mut tokens: Vec<TokenTree> = tokens.into_iter().collect();
    if let Some(last) = tokens.last_mut() {
        last.set_span(last_span(&b.expr));
    }
    tokens.into_iter().collect()
}

/// `(tokens)`, the parentheses spanned at `span`.
fn group(tokens: TokenStream, span: Span) -> proc_macro2::Group {
    let mut g = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, tokens);
    g.set_span(span);
    g
}

/// `path`, spanning all of `expr`: its first tokens carry the span of `expr`'s first token,
/// its last one the span of `expr`'s last token, so that an error on the path underlines the
/// user's expression, all of it.
pub(super) fn spanning(path: TokenStream, expr: &syn::Expr) -> TokenStream {
    let mut tokens: Vec<TokenTree> = respan(path, expr.span()).into_iter().collect();
    if let Some(last) = tokens.last_mut() {
        last.set_span(last_span(expr));
    }
    tokens.into_iter().collect()
}

/// `tokens`, every one spanned at `span`.
pub(super) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect()
}

/// The span of the last token of `expr` (a group's whole span).
pub(super) fn last_span(expr: &syn::Expr) -> Span {
    expr.to_token_stream()
        .into_iter()
        .last()
        .map_or_else(|| expr.span(), |t| t.span())
}

/// A copy's source as generated code passes it: `graph_copy_source(SOURCE, CHECK)`, where
/// `CHECK`, a closure over the source's type, calls `graph_copyable` on what `SourceProbe`
/// finds of it, every token on the user's source expression. Pageable host memory (a slice or
/// `Vec` of plain data) is thus refused by its type, however the user spells it, and the
/// source is evaluated once, in its place.
pub(super) fn graph_copy_source(program: &Program, src: &BufferExpr) -> TokenStream {
    let span = src.expr.span();
    let memory = buffer(program, src);
    let p = quote_spanned!(span=> ::streamgraph::__private);
    let source = proc_macro2::Ident::new("__source", span);
    let mut args = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, TokenStream::new());
    args.set_span(last_span(&src.expr));
    let kind = quote_spanned!(span=> (&#p::SourceProbe(#source)).kind #args);
    let function = respan(quote!(#p::graph_copy_source), span);
    quote_spanned! {span=>
        #function(#memory, |#source| {
            // One of the two answers the probe; the other stays unused.
            #[allow(unused_imports)]
            use #p::{OtherProbe as _, PageableProbe as _};
            #p::graph_copyable(#source, #kind)
        })
    }
}

/// The local that owns temporary `name` while it is allocated.
pub(super) fn temp_owned(name: &syn::Ident) -> syn::Ident {
    syn::Ident::new(
        &format!("__sg_temp_{name}"),
        proc_macro2::Span::mixed_site(),
    )
}

/// The local that borrows temporary `name` exclusively, for the statements that write it.
pub(super) fn temp_exclusive(name: &syn::Ident) -> syn::Ident {
    syn::Ident::new(
        &format!("__sg_temp_{name}_mut"),
        proc_macro2::Span::mixed_site(),
    )
}
