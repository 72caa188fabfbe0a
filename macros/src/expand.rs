//! Code generation: the pipeline type, its constructor and its `Pipeline` impl.
//!
//! The pipeline reads in one function, [`pipeline`]: parse → model → validate → expand. On
//! errors the type is still generated, as close to the input as resolution allowed, next to
//! one `compile_error!` per error, so that later errors and IDEs stay sane.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{GenericParam, Lifetime, LifetimeParam};

use crate::model::{
    write_form, Arg, BufferExpr, CollectiveOp, Errors, Kind, Mode, Node, Param, ParamKind, Program,
    Warning,
};
use crate::syntax::{Header, Input};
use crate::validate::{line_column, validate};

/// The whole macro on `proc_macro2` tokens.
///
/// When the body does not parse but the header does, the type is still generated from the
/// header (with an empty body), so that the user's uses of it and of the parameter types stay
/// sane: no `unused import` warnings or unknown-type errors next to the syntax errors. The
/// parser recovers at statement boundaries, so every statement that does not parse is
/// reported; the checks of later stages wait until all of them do.
pub fn pipeline(input: TokenStream) -> TokenStream {
    let input: Input = match syn::parse2(input.clone()) {
        Ok(input) => input,
        Err(e) => {
            let error = e.to_compile_error();
            let Ok(header) = syn::parse2::<Header>(input) else {
                return error;
            };
            let mut errors = Errors::default();
            let code = expand(&Program::from_syntax(header.into_input(), &mut errors));
            // Resolving a header records no error; a duplicate parameter waits for the fix.
            return quote!(#code #error);
        }
    };
    let mut errors = Errors::default();
    let program = Program::from_syntax(input, &mut errors);
    validate(&program, &mut errors);
    let code = expand(&program);
    let (errors, warnings) = errors.into_parts();
    let errors = errors.into_iter().map(|e| e.to_compile_error());
    let warnings = warnings.iter().map(|w| warning(&program.name, w));
    quote!(#code #(#errors)* #(#warnings)*)
}

/// A warning on stable Rust: the use of a deprecated item, spanned on the user's tokens so that
/// the lint is not silenced as coming from an external macro. The item lies in a constant named
/// as the pipeline (the pipeline's braced struct leaves that name free among values), so that
/// the message names the pipeline.
///
/// ```text
/// warning: use of deprecated unit struct `PIPELINE::NAME`: MESSAGE
/// ```
fn warning(pipeline: &syn::Ident, w: &Warning) -> TokenStream {
    let name = syn::Ident::new(w.name, w.span);
    let note = &w.message;
    quote_spanned! {w.span=>
        #[doc(hidden)]
        #[allow(dead_code, non_upper_case_globals)]
        const #pipeline: () = {
            #[deprecated(note = #note)]
            #[allow(non_camel_case_types)]
            struct #name;
            let _ = #name;
        };
    }
}

/// Adds a lifetime to every reference type and `'_` that lacks one.
struct AddLifetime<'a> {
    lifetime: &'a Lifetime,
    added: bool,
}

impl VisitMut for AddLifetime<'_> {
    fn visit_type_reference_mut(&mut self, r: &mut syn::TypeReference) {
        if r.lifetime.is_none() {
            r.lifetime = Some(self.lifetime.clone());
            self.added = true;
        }
        syn::visit_mut::visit_type_reference_mut(self, r);
    }

    fn visit_lifetime_mut(&mut self, l: &mut Lifetime) {
        if l.ident == "_" {
            *l = self.lifetime.clone();
            self.added = true;
        }
    }
}

fn location(span: Span) -> TokenStream {
    let (line, column) = line_column(span);
    quote!(::streamgraph::__private::Location { file: ::core::file!(), line: #line, column: #column })
}

/// The generated code for a resolved program.
pub fn expand(program: &Program) -> TokenStream {
    let name = &program.name;
    let vis = &program.vis;
    let attrs = &program.attrs;
    let lifetime = Lifetime::new("'sg", Span::call_site());
    let mut add = AddLifetime {
        lifetime: &lifetime,
        added: false,
    };
    // A duplicate parameter is already reported; generating it twice would only add noise.
    let mut params: Vec<&Param> = Vec::new();
    for p in &program.params {
        if !params.iter().any(|q| q.name == p.name) {
            params.push(p);
        }
    }
    let types: Vec<syn::Type> = params
        .iter()
        .map(|p| {
            let mut ty = p.ty.clone();
            add.visit_type_mut(&mut ty);
            ty
        })
        .collect();
    let mut generics = program.generics.clone();
    if add.added {
        generics
            .params
            .insert(0, GenericParam::Lifetime(LifetimeParam::new(lifetime)));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let names: Vec<&syn::Ident> = params.iter().map(|p| &p.name).collect();
    let field_docs = names.iter().map(|n| format!("Parameter `{n}`."));
    let new_doc = format!("A `{name}` over its parameters.");

    let program_const = program_const(program);
    let bindings = bindings(&params);
    let assert_copy = params
        .iter()
        .zip(&types)
        .filter(|(p, _)| p.kind == ParamKind::Value)
        .map(|(p, ty)| {
            quote_spanned! {p.ty.span()=>
                <#ty as ::streamgraph::__private::ValueParameter>::check();
            }
        });
    let options = program.streams.iter().map(|s| {
        let priority = s.priority.as_ref().map_or_else(
            || quote!(0),
            |p| quote_spanned!(p.span()=> { let __priority: i32 = #p; __priority }),
        );
        let device = s.device.as_ref().map_or_else(
            || quote!(::core::option::Option::None),
            |d| quote_spanned!(d.span()=> ::core::option::Option::Some({ let __device: i32 = #d; __device })),
        );
        quote!(::streamgraph::__private::StreamOptions { priority: #priority, device: #device })
    });
    let body = nodes(program, &program.body);

    quote! {
        #(#attrs)*
        #vis struct #name #impl_generics #where_clause {
            #( #[doc = #field_docs] pub #names: #types, )*
        }

        impl #impl_generics #name #ty_generics #where_clause {
            #[doc = #new_doc]
            #[allow(clippy::too_many_arguments)]
            #vis fn new(#( #names: #types ),*) -> Self {
                #(#assert_copy)*
                Self { #( #names ),* }
            }

            /// The pipeline's static description: streams, events and statements.
            // A static, so that every use sees the same address: executors cache per program
            // and graphs map statements back by identity.
            #vis const PROGRAM: &'static ::streamgraph::__private::Program = {
                static PROGRAM: ::streamgraph::__private::Program = #program_const;
                &PROGRAM
            };
        }

        impl #impl_generics ::streamgraph::__private::Pipeline for #name #ty_generics #where_clause {
            fn program(&self) -> &'static ::streamgraph::__private::Program {
                Self::PROGRAM
            }

            #[allow(unused_variables)]
            fn stream_options(&self) -> ::std::vec::Vec<::streamgraph::__private::StreamOptions> {
                #bindings
                ::std::vec![#(#options),*]
            }

            #[allow(unused_variables)]
            fn issue<__I: ::streamgraph::__private::Issuer + ?::core::marker::Sized>(
                &self,
                __issuer: &mut __I,
            ) -> ::core::result::Result<(), ::streamgraph::__private::Error> {
                #bindings
                #body
                ::core::result::Result::Ok(())
            }
        }
    }
}

/// `let x = &*self.x;` for reference parameters, a copy of the value for the others.
fn bindings(params: &[&Param]) -> TokenStream {
    params
        .iter()
        .map(|p| {
            let name = &p.name;
            match p.kind {
                ParamKind::Shared | ParamKind::Mut => quote!(let #name = &*self.#name;),
                // `new` asserts `Copy`, so this clone is a copy; cloning keeps a wrong type
                // from adding move errors to the one clear assertion failure.
                ParamKind::Value => quote!(let #name = ::core::clone::Clone::clone(&self.#name);),
            }
        })
        .collect()
}

fn program_const(program: &Program) -> TokenStream {
    let name = program.name.to_string();
    let streams = program.streams.iter().map(|s| {
        let n = s.name.to_string();
        let loc = location(s.name.span());
        quote!(::streamgraph::__private::StreamDecl { name: #n, location: #loc })
    });
    let events = program.events.iter().map(|e| {
        let n = e.name.to_string();
        let loc = location(e.name.span());
        quote!(::streamgraph::__private::EventDecl { name: #n, location: #loc })
    });
    let statements = program.statements.iter().map(|s| {
        let id = s.id;
        let stream = s.stream;
        let kind = match &s.kind {
            Kind::Launch { kernel, .. } => {
                let k = crate::text::text_of(kernel);
                quote!(Launch { kernel: #k })
            }
            Kind::Copy { .. } => quote!(Copy),
            Kind::Fill { .. } => quote!(Fill),
            Kind::Host { .. } => quote!(Host),
            Kind::Record { event, .. } => quote!(Record { event: #event }),
            Kind::Wait { event, .. } => quote!(Wait { event: #event }),
            Kind::WaitStream { stream, .. } => quote!(WaitStream { stream: #stream }),
            Kind::Block {
                looping: true, end, ..
            } => quote!(While { end: #end }),
            Kind::Block { otherwise, end, .. } => {
                quote!(If { otherwise: #otherwise, end: #end })
            }
            Kind::Collective {
                op, first, count, ..
            } => {
                let op = match op {
                    CollectiveOp::AllReduce => quote!(AllReduce),
                    CollectiveOp::AllGather => quote!(AllGather),
                    CollectiveOp::ReduceScatter => quote!(ReduceScatter),
                    CollectiveOp::Broadcast { root } => quote!(Broadcast { root: #root }),
                };
                quote!(Collective {
                    op: ::streamgraph::__private::Collective::#op,
                    first: #first,
                    count: #count,
                })
            }
        };
        let accesses = s.accesses.iter().map(|a| {
            let buffer = a.buffer.to_string();
            let mode = match a.mode {
                Mode::Read => quote!(Read),
                Mode::Write => quote!(Write),
            };
            let whole = a.whole;
            quote!(::streamgraph::__private::StaticAccess {
                buffer: #buffer,
                mode: ::streamgraph::__private::AccessMode::#mode,
                whole: #whole,
            })
        });
        let text = &s.text;
        let loc = location(s.first);
        quote!(::streamgraph::__private::Statement {
            id: #id,
            stream: #stream,
            kind: ::streamgraph::__private::StatementKind::#kind,
            text: #text,
            accesses: &[#(#accesses),*],
            location: #loc,
        })
    });
    let loc = location(program.pipeline_span);
    quote!(::streamgraph::__private::Program {
        name: #name,
        streams: &[#(#streams),*],
        events: &[#(#events),*],
        statements: &[#(#statements),*],
        location: #loc,
    })
}

fn nodes(program: &Program, nodes: &[Node]) -> TokenStream {
    nodes.iter().map(|n| node(program, n)).collect()
}

fn node(program: &Program, node: &Node) -> TokenStream {
    match node {
        Node::Stmt(i) => statement(program, *i),
        Node::For {
            for_token,
            pat,
            expr,
            body,
        } => {
            let body = nodes(program, body);
            quote!(#for_token #pat in #expr { #body })
        }
        Node::If {
            if_token,
            cond,
            then,
            otherwise,
        } => {
            let then = nodes(program, then);
            let otherwise = otherwise.as_ref().map(|o| {
                let o = nodes(program, o);
                quote!(else { #o })
            });
            quote!(#if_token #cond { #then } #otherwise)
        }
        Node::Block {
            stmt,
            body,
            otherwise,
        } => device_block(program, *stmt, body, otherwise.as_deref()),
    }
}

/// A device `while`/`if`: one issuer call with the bodies as closures over a `dyn Issuer`.
fn device_block(
    program: &Program,
    i: usize,
    body: &[Node],
    otherwise: Option<&[Node]>,
) -> TokenStream {
    let p = quote!(::streamgraph::__private);
    let stmt = &program.statements[i];
    let Kind::Block {
        looping,
        flag,
        flag_param,
        limit,
        ..
    } = &stmt.kind
    else {
        return TokenStream::new();
    };
    let Some(name) = flag_param else {
        // Already reported: the flag is no parameter.
        return TokenStream::new();
    };
    let span = flag.span();
    let flag = quote_spanned!(span=> { let __flag: &#p::DeviceFlag = #name; __flag });
    let closure = |nodes_: &[Node]| {
        let code = nodes(program, nodes_);
        quote! {
            &mut |__issuer: &mut dyn #p::Issuer| -> ::core::result::Result<(), #p::Error> {
                #code
                ::core::result::Result::Ok(())
            }
        }
    };
    let then = closure(body);
    let call = if *looping {
        let limit = limit.as_ref().map_or_else(
            || quote!(::core::option::Option::None),
            |l| quote_spanned!(l.span()=> #p::limit(#l)),
        );
        quote!(#p::while_loop(__issuer, __stmt, #flag, #limit, #then))
    } else {
        let otherwise = closure(otherwise.unwrap_or_default());
        quote!(#p::if_else(__issuer, __stmt, #flag, #then, #otherwise))
    };
    quote! {
        {
            let __stmt: &'static #p::Statement = &Self::PROGRAM.statements[#i];
            #call.map_err(|e| e.in_statement(__stmt))?;
        }
    }
}

/// A buffer expression as the reference generated code passes on: the binding itself for a
/// reference parameter's whole buffer, a borrow of the value otherwise.
fn buffer(program: &Program, b: &BufferExpr) -> TokenStream {
    let expr = &b.expr;
    let by_ref = program
        .param(&b.root)
        .is_some_and(|p| p.kind != ParamKind::Value);
    if b.whole && by_ref {
        quote_spanned!(expr.span()=> #expr)
    } else {
        quote_spanned!(expr.span()=> &(#expr))
    }
}

/// A kernel expression as the reference generated code passes on: a reference parameter's
/// binding itself (so that a wrong parameter is reported with the type the user declared behind
/// its `&`), a borrow of the value otherwise.
fn kernel_ref(program: &Program, kernel: &syn::Expr) -> TokenStream {
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
fn borrow(expr: &syn::Expr) -> TokenStream {
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
fn buffer_arg(program: &Program, b: &BufferExpr, function: TokenStream) -> TokenStream {
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
fn device_memory(program: &Program, b: &BufferExpr) -> TokenStream {
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
fn place(b: &BufferExpr) -> TokenStream {
    let span = b.expr.span();
    let Some(form) = write_form(&b.expr) else {
        // Reported; the statement is not generated.
        return quote_spanned!(span=> ::core::unreachable!());
    };
    let root = &b.root;
    let binding = quote_spanned!(root.span()=> &self.#root);
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

/// Whether a write of `stmt` is already reported (through a shared parameter, a buffer
/// borrowed shared under a `&mut`, or in a shape the pipeline cannot write through its
/// borrow): its code would only add type errors to the message.
fn write_rejected(program: &Program, stmt: &crate::model::Statement) -> bool {
    // A collective's first participant issues them all.
    let participants = match stmt.kind {
        Kind::Collective { first, count, .. } => program.statements.get(first..first + count),
        _ => None,
    };
    participants
        .unwrap_or(std::slice::from_ref(stmt))
        .iter()
        .flat_map(|s| s.kind.writes())
        .any(|b| {
            program
                .param(&b.root)
                .is_none_or(|p| p.kind != ParamKind::Mut || p.shared_under_mut())
                || write_form(&b.expr).is_none()
        })
}

/// `match RESULT { Ok(v) => v, Err(e) => return Err(e.in_statement(__stmt)) }`: a write's
/// index or range out of bounds ends the statement with its typed error.
fn or_return(result: TokenStream) -> TokenStream {
    quote! {
        match #result {
            ::core::result::Result::Ok(__v) => __v,
            ::core::result::Result::Err(__e) => {
                return ::core::result::Result::Err(__e.in_statement(__stmt));
            }
        }
    }
}

/// `path`, spanning all of `expr`: its first tokens carry the span of `expr`'s first token,
/// its last one the span of `expr`'s last token, so that an error on the path underlines the
/// user's expression, all of it.
fn spanning(path: TokenStream, expr: &syn::Expr) -> TokenStream {
    let mut tokens: Vec<TokenTree> = respan(path, expr.span()).into_iter().collect();
    if let Some(last) = tokens.last_mut() {
        last.set_span(last_span(expr));
    }
    tokens.into_iter().collect()
}

/// `tokens`, every one spanned at `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect()
}

/// The span of the last token of `expr` (a group's whole span).
fn last_span(expr: &syn::Expr) -> Span {
    expr.to_token_stream()
        .into_iter()
        .last()
        .map_or_else(|| expr.span(), |t| t.span())
}

fn statement(program: &Program, i: usize) -> TokenStream {
    let stmt = &program.statements[i];
    let p = quote!(::streamgraph::__private);
    let host_memory = stmt.accesses.iter().any(|a| {
        program
            .param(&a.buffer)
            .is_some_and(|p| p.is_pageable_host())
    });
    let call = match &stmt.kind {
        // Host memory in a launch, fill or copy is already reported, and so is a write the
        // pipeline cannot make; the type errors of the impossible call would only add noise.
        _ if host_memory || write_rejected(program, stmt) => {
            quote!(::core::result::Result::<(), #p::Error>::Ok(()))
        }
        Kind::Launch {
            kernel,
            grid,
            block,
            shared,
            args,
        } => {
            let shared = shared
                .as_ref()
                .map_or_else(|| quote!(0), ToTokens::to_token_stream);
            let args = args.iter().map(|a| match a {
                Arg::Write(b) => {
                    let function = respan(quote!(#p::arg_place), b.expr.span());
                    let place = place(b);
                    or_return(quote!(#function(#place)))
                }
                Arg::Read(b) => buffer_arg(program, b, quote!(#p::arg_read)),
                Arg::Value(e) => {
                    let kernel_arg =
                        spanning(quote!(::streamgraph::__private::KernelValue::kernel_arg), e);
                    let value = borrow(e);
                    quote!(#p::value_with(#value, #kernel_arg))
                }
            });
            let grid = quote_spanned!(grid.span()=> #p::Dim3::from(#grid));
            let block = quote_spanned!(block.span()=> #p::Dim3::from(#block));
            let as_kernel = spanning(
                quote!(::streamgraph::__private::LaunchKernel::as_kernel),
                kernel,
            );
            let kernel_ref = kernel_ref(program, kernel);
            let kernel = quote!(#p::kernel_with(#kernel_ref, #as_kernel));
            quote! {
                __issuer.launch(
                    __stmt,
                    #kernel,
                    #p::LaunchConfig { grid: #grid, block: #block, shared_mem_bytes: #shared },
                    &[#(#args),*],
                )
            }
        }
        Kind::Copy { dst, src } => {
            let source = spanning(
                quote!(::streamgraph::__private::CopySource::copy_source_of),
                &src.expr,
            );
            let copy_with = respan(quote!(#p::copy_with), dst.expr.span());
            let (dst, src) = (place(dst), buffer(program, src));
            quote!(#copy_with(__issuer, __stmt, #dst, #src, #source))
        }
        Kind::Fill { dst, value } => {
            let span = dst.expr.span();
            let memory = place(dst);
            let (dst_var, value_var) = (
                syn::Ident::new("__dst", span),
                syn::Ident::new("__value", span),
            );
            let p = respan(p.clone(), span);
            let mut arg = proc_macro2::Group::new(
                proc_macro2::Delimiter::Parenthesis,
                quote_spanned!(span=> &#dst_var),
            );
            arg.set_span(last_span(&dst.expr));
            let zero = quote_spanned!(span=> #p::fill_value_of #arg);
            let pattern =
                quote_spanned!(value.span()=> ::streamgraph::__private::FillValue::pattern);
            // A `match`, not a `let`: the temporaries of the place live through it.
            quote_spanned!(span=> (match #memory {
                #dst_var => {
                    #[allow(unused_assignments)]
                    let mut #value_var = #zero;
                    #value_var = #value;
                    #p::fill_with(__issuer, __stmt, #dst_var, #value_var, #pattern)
                }
            }))
        }
        Kind::Host { func } => quote!(#p::host(__issuer, __stmt, #func)),
        Kind::Record { .. } => quote!(__issuer.record(__stmt)),
        Kind::Wait { .. } => quote!(__issuer.wait(__stmt)),
        Kind::WaitStream { .. } => quote!(__issuer.wait_stream(__stmt)),
        // Generated with its bodies by `device_block`.
        Kind::Block { .. } => quote!(::core::result::Result::<(), #p::Error>::Ok(())),
        Kind::Collective {
            comm,
            reduce,
            first,
            count,
            ..
        } => {
            let reduce = reduce.as_ref().map_or_else(
                || quote!(Sum),
                |r| {
                    let name = crate::model::REDUCTIONS
                        .iter()
                        .find(|(w, _)| r == w)
                        .map_or("Sum", |(_, n)| n);
                    let name = format_ident!("{}", name);
                    quote!(#name)
                },
            );
            let parts = (*first..first + count).map(|j| {
                let Kind::Collective { send, recv, .. } = &program.statements[j].kind else {
                    return quote!();
                };
                let recv_place = place(recv);
                let span = recv.expr.span();
                let stmt_j = quote!(&Self::PROGRAM.statements[#j]);
                let part = match send {
                    Some(send) => {
                        let send_memory = device_memory(program, send);
                        let part = respan(quote!(#p::collective_part), span);
                        quote_spanned!(span=> #part(#stmt_j, #send_memory, #recv_place))
                    }
                    None => {
                        let part = respan(quote!(#p::collective_part_in_place), span);
                        quote_spanned!(span=> #part(#stmt_j, #recv_place))
                    }
                };
                or_return(part)
            });
            let call = respan(quote!(#p::collective), comm.span());
            quote! {
                #call(__issuer, __stmt, #comm, #p::ReduceOp::#reduce, &[#(#parts),*])
            }
        }
    };
    let stmt_var = format_ident!("__stmt");
    quote! {
        {
            let #stmt_var: &'static #p::Statement = &Self::PROGRAM.statements[#i];
            #call.map_err(|e| e.in_statement(#stmt_var))?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(input: TokenStream) -> String {
        pipeline(input).to_string()
    }

    #[test]
    fn generates_struct_constructor_and_pipeline_impl() {
        let out = expand_str(quote! {
            /// Docs.
            pub pipeline P(x: &mut DeviceBuffer<f32>, k: &K, n: u32) {
                stream main;
                stream side(priority = -1);
                event e;
                main: launch k.f<<<n, 256>>>(&mut x, n);
                main: record e;
                side: wait e;
                for i in 0..n { side: fill x.slice(i..i + 1) = 0.0f32; }
                if n > 1 { main: wait_stream side; } else { side: host || {}; }
            }
        });
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("pub struct P < 'sg >"), "{out}");
        assert!(
            out.contains("pub x : & 'sg mut DeviceBuffer < f32 >"),
            "{out}"
        );
        assert!(out.contains("pub fn new"), "{out}");
        assert!(out.contains("let x = & * self . x ;"), "{out}");
        assert!(
            out.contains("let n = :: core :: clone :: Clone :: clone (& self . n) ;"),
            "{out}"
        );
        assert!(
            out.contains("< u32 as :: streamgraph :: __private :: ValueParameter > :: check ()"),
            "{out}"
        );
        assert!(
            out.contains(":: streamgraph :: __private :: arg_place (:: streamgraph :: __private :: place (& self . x))"),
            "{out}"
        );
        assert!(
            out.contains(":: streamgraph :: __private :: value_with (& n , :: streamgraph :: __private :: KernelValue :: kernel_arg)"),
            "{out}"
        );
        assert!(
            out.contains(":: streamgraph :: __private :: kernel_with (& k . f , :: streamgraph :: __private :: LaunchKernel :: as_kernel)"),
            "{out}"
        );
        assert!(out.contains("__issuer . record (__stmt)"), "{out}");
        assert!(out.contains("for i in 0 .. n"), "{out}");
        assert!(
            out.contains(
                "match :: streamgraph :: __private :: place (& self . x) . slice (i .. i + 1)"
            ),
            "{out}"
        );
        assert!(out.contains("fill_value_of (& __dst)"), "{out}");
        assert!(out.contains("__value = 0.0f32 ;"), "{out}");
        assert!(out.contains(":: streamgraph :: __private :: fill_with (__issuer , __stmt , __dst , __value , :: streamgraph :: __private :: FillValue :: pattern)"), "{out}");
        assert!(
            out.contains("text : \"main: launch k.f<<<n, 256>>>(&mut x, n)\""),
            "{out}"
        );
        assert!(
            out.contains("priority : { let __priority : i32 = - 1 ; __priority }"),
            "{out}"
        );
        assert!(
            out.contains("map_err (| e | e . in_statement (__stmt))"),
            "{out}"
        );
    }

    #[test]
    fn copies_pass_buffers_and_skip_pageable_memory() {
        let out = expand_str(quote! {
            pipeline P(d: &mut DeviceBuffer<f32>, h: &PinnedBuffer<f32>, v: &[f32], n: usize) {
                stream main;
                main: copy d.slice(0..n) <- h;
                main: copy d <- v;
            }
        });
        assert!(
            out.contains(":: streamgraph :: __private :: copy_with (__issuer , __stmt , :: streamgraph :: __private :: place (& self . d) . slice (0 .. n) , h , :: streamgraph :: __private :: CopySource :: copy_source_of)"),
            "{out}"
        );
        assert!(out.contains("StatementKind :: Copy"), "{out}");
        assert_eq!(
            out.matches(":: streamgraph :: __private :: copy_with (")
                .count(),
            1,
            "{out}"
        );
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
    }

    #[test]
    fn no_lifetime_without_references_and_user_generics_kept() {
        let out = expand_str(quote! {
            pipeline P<'a, T: Copy>(x: &'a DeviceBuffer<f32>, n: T) where T: Send { stream s; }
        });
        assert!(
            out.contains("struct P < 'a , T : Copy > where T : Send"),
            "{out}"
        );
        assert!(!out.contains("'sg"), "{out}");
    }

    #[test]
    fn errors_come_with_the_expansion() {
        let out = expand_str(quote! {
            pipeline P(x: &DeviceBuffer<f32>) { stream s; t: record e; }
        });
        assert!(out.contains("struct P"), "{out}");
        assert_eq!(out.matches("compile_error").count(), 2, "{out}");
    }

    /// `streams` streams; a loop of `stmts` statements, each writing `x` on the next stream.
    fn racy_loop(streams: usize, stmts: usize) -> TokenStream {
        let names: Vec<_> = (0..streams).map(|s| format_ident!("s{s}")).collect();
        let body = (0..stmts).map(|i| {
            let s = &names[i % streams];
            quote!(#s: fill x = 1.0f32;)
        });
        quote! {
            pipeline P(x: &mut B, n: u32) {
                #(stream #names;)*
                for i in 0..n { #(#body)* }
            }
        }
    }

    /// `stmts` statements writing `x`, alternating between two streams.
    fn racy_straight_line(stmts: usize) -> TokenStream {
        let body = (0..stmts).map(|i| {
            let s = format_ident!("s{}", i % 2);
            quote!(#s: fill x = 1.0f32;)
        });
        quote! {
            pipeline P(x: &mut B) {
                stream s0;
                stream s1;
                #(#body)*
            }
        }
    }

    /// Large racy pipelines expand quickly, with a bounded number of diagnostics. Run with
    /// `--nocapture` (and `--release`) to see the timings.
    #[test]
    fn large_racy_pipelines_expand_quickly() {
        let cases = [
            ("500 streams, loop of 8", racy_loop(500, 8), 8 * 7 / 2),
            ("250 streams, loop of 32", racy_loop(250, 32), 32 * 31 / 2),
            (
                "1000 statements on 2 streams",
                racy_straight_line(1000),
                500 * 500,
            ),
        ];
        for (what, input, races) in cases {
            let start = std::time::Instant::now();
            let out = expand_str(input);
            let took = start.elapsed();
            // Each listed race is two errors (both statements); one more counts the rest.
            let listed = races.min(crate::validate::MAX_RACE_DIAGNOSTICS);
            let errors = 2 * listed + usize::from(races > listed);
            assert_eq!(out.matches("compile_error").count(), errors, "{what}");
            if races > listed {
                let more = format!("and {} more data races", races - listed);
                assert!(out.contains(&more), "{what}: {more}");
            }
            assert!(!out.contains("static_race_check_incomplete"), "{what}");
            eprintln!("{what}: {races} races, {errors} errors, expanded in {took:.2?}");
        }
    }

    /// `depth` nested `for`s (or `if`s), each with a write of `x` and a hand-off to the other
    /// stream.
    fn nested(depth: usize, keyword: TokenStream) -> TokenStream {
        let mut body = quote!(s0: fill x = 0.0f32;);
        for i in (0..depth).rev() {
            let (s, other) = if i % 2 == 0 {
                (quote!(s0), quote!(s1))
            } else {
                (quote!(s1), quote!(s0))
            };
            let head = if keyword.to_string() == "for" {
                quote!(for i in 0..n)
            } else {
                quote!(if n > #i)
            };
            body = quote! {
                #head {
                    #s: fill x = 1.0f32;
                    #other: wait_stream #s;
                    #body
                }
            };
        }
        quote! {
            pipeline P(x: &mut B, n: usize) {
                stream s0;
                stream s1;
                #body
            }
        }
    }

    /// Nesting up to the limit expands (and quickly); one level more is a clear error.
    #[test]
    fn nesting_is_checked_up_to_the_limit() {
        let limit = crate::syntax::MAX_NESTING;
        for keyword in [quote!(for), quote!(if)] {
            let start = std::time::Instant::now();
            let out = expand_str(nested(limit, keyword.clone()));
            eprintln!(
                "{limit} nested `{keyword}`s: expanded in {:.2?}",
                start.elapsed()
            );
            assert!(out.contains("struct P"), "{keyword}");
            assert!(!out.contains("static_race_check_incomplete"), "{keyword}");
            let out = expand_str(nested(limit + 1, keyword.clone()));
            // The type is generated from the header alone, next to the error.
            assert!(out.contains("struct P"), "{keyword}");
            assert!(!out.contains("fill"), "{keyword}");
            let message = format!("nesting deeper than {limit} levels of `for` and `if`");
            assert_eq!(out.matches("compile_error").count(), 1, "{keyword}");
            assert!(out.contains(&message), "{keyword}: {out}");
        }
        // An `else if` nests one level deeper.
        let chain = (1..=limit).map(|i| quote!(else if n == #i { s0: fill x = 1.0f32; }));
        let input = quote! {
            pipeline P(x: &mut B, n: usize) {
                stream s0;
                if n == 0 { s0: fill x = 0.0f32; } #(#chain)*
            }
        };
        assert!(expand_str(input).contains("nesting deeper than"));
    }

    #[test]
    fn a_body_that_does_not_parse_still_gives_the_type() {
        let out = expand_str(quote! {
            pipeline P(x: &mut DeviceBuffer<f32>, k: &Kernel) {
                stream main;
                main.record_event(ready);
            }
        });
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(out.contains("write `main: record ready;`"), "{out}");
        assert!(
            out.contains("pub x : & 'sg mut DeviceBuffer < f32 >"),
            "{out}"
        );
        assert!(out.contains("pub k : & 'sg Kernel"), "{out}");
    }

    #[test]
    fn parse_errors_become_compile_errors() {
        let out = expand_str(quote!(pipeline P { }));
        assert!(out.contains("compile_error"), "{out}");
    }
}
