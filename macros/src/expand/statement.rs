//! The issuing code of each statement, of host control flow and of device blocks.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

use super::operand::{
    borrow, buffer_arg, device_memory, graph_copy_source, kernel_ref, last_span, place, respan,
    spanning, temp_exclusive, temp_owned,
};
use super::reads::ReadSets;
use crate::model::{write_form, Arg, BlockShape, Kind, Node, ParamKind, Program};

/// The issuing code of `nodes`; `reads` says what each statement and host loop reads when an
/// argument update may skip it ([`super::reads`]).
pub(super) fn nodes(program: &Program, reads: &ReadSets, nodes: &[Node]) -> TokenStream {
    nodes.iter().map(|n| node(program, reads, n)).collect()
}

fn node(program: &Program, reads: &ReadSets, node: &Node) -> TokenStream {
    match node {
        Node::Stmt(i) if matches!(program.statements[*i].kind, Kind::Alloc { .. }) => {
            temp_alloc(program, *i)
        }
        Node::Stmt(i) => statement(program, *i, reads.stmt(*i)),
        Node::For {
            for_token,
            pat,
            expr,
            body,
        } => {
            let body = nodes(program, reads, body);
            let code = quote!(#for_token #pat in #expr { #body });
            // A loop an argument update may skip whole: asked first, and its extent noted
            // when it runs.
            match reads.for_loop(node) {
                Some((number, mask)) => {
                    let mask = proc_macro2::Literal::u64_suffixed(mask);
                    let number = proc_macro2::Literal::u32_suffixed(number);
                    quote! {
                        if !__issuer.unchanged_loop(#number, #mask) {
                            let __loop = __issuer.loop_begin();
                            #code
                            __issuer.loop_end(#number, __loop);
                        }
                    }
                }
                None => code,
            }
        }
        Node::If {
            if_token,
            cond,
            then,
            otherwise,
        } => {
            let then = nodes(program, reads, then);
            let otherwise = otherwise.as_ref().map(|o| {
                let o = nodes(program, reads, o);
                quote!(else { #o })
            });
            quote!(#if_token #cond { #then } #otherwise)
        }
        Node::Block { stmt, bodies } => device_block(program, reads, *stmt, bodies),
    }
}

/// A temporary's `Alloc` statement: the temporary, owned by a local the user cannot name,
/// borrowed exclusively by another (what writes go through, as `&self.x` is for a `&mut`
/// parameter) and shared under the temporary's own name (what reads and the user's
/// expressions see, as `let x = &*self.x;` is for a parameter).
fn temp_alloc(program: &Program, i: usize) -> TokenStream {
    let p = quote!(::streamgraph::__private);
    let Kind::Alloc { temp } = program.statements[i].kind else {
        return TokenStream::new();
    };
    let Some(t) = program.temps.get(temp) else {
        return TokenStream::new();
    };
    let (owned, exclusive) = (temp_owned(&t.name), temp_exclusive(&t.name));
    let (name, ty, len) = (&t.name, &t.ty, &t.len);
    let len = quote_spanned!(len.span()=> { let __len: usize = #len; __len });
    let alloc = respan(quote!(#p::temp_alloc::<_, #ty>), name.span());
    quote! {
        let mut #owned = {
            let __stmt: &'static #p::Statement = &Self::PROGRAM.statements[#i];
            #alloc(__issuer, __scope, __stmt, #len).map_err(|e| e.in_statement(__stmt))?
        };
        let #exclusive = &mut #owned;
        let #name = &*#exclusive;
    }
}

/// A device `while`/`if`/`switch`: one issuer call with the bodies as closures over a
/// `dyn Issuer`.
fn device_block(
    program: &Program,
    reads: &ReadSets,
    i: usize,
    bodies: &[Vec<Node>],
) -> TokenStream {
    let p = quote!(::streamgraph::__private);
    let stmt = &program.statements[i];
    let Kind::Block {
        shape,
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
        let code = nodes(program, reads, nodes_);
        quote! {
            &mut |__issuer: &mut dyn #p::Issuer| -> ::core::result::Result<(), #p::Error> {
                #code
                ::core::result::Result::Ok(())
            }
        }
    };
    let body = |k: usize| closure(bodies.get(k).map_or(&[][..], Vec::as_slice));
    let call = match shape {
        BlockShape::While => {
            let limit = limit.as_ref().map_or_else(
                || quote!(::core::option::Option::None),
                |l| quote_spanned!(l.span()=> #p::limit(#l)),
            );
            let body = body(0);
            quote!(#p::while_loop(__issuer, __stmt, #flag, #limit, #body))
        }
        BlockShape::If => {
            let (then, otherwise) = (body(0), body(1));
            quote!(#p::if_else(__issuer, __stmt, #flag, #then, #otherwise))
        }
        BlockShape::Switch(values) => {
            let arms = (0..values.len()).map(|k| {
                let arm = body(k);
                quote!(#arm as &mut #p::Body<'_>)
            });
            quote!(#p::switch(__issuer, __stmt, #flag, &mut [#(#arms),*]))
        }
    };
    quote! {
        {
            let __stmt: &'static #p::Statement = &Self::PROGRAM.statements[#i];
            #call.map_err(|e| e.in_statement(__stmt))?;
        }
    }
}

/// Statement `i`'s issuing code; with `reads`, asked first whether the issuer holds what it
/// would issue already (an argument update that found none of those parameters changed).
fn statement(program: &Program, i: usize, reads: Option<u64>) -> TokenStream {
    let stmt = &program.statements[i];
    let p = quote!(::streamgraph::__private);
    let call = match &stmt.kind {
        // A write the pipeline cannot make is already reported; the type errors of the
        // impossible call would only add noise.
        _ if write_rejected(program, stmt) => {
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
                    let place = place(program, b);
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
            // Spanned on the user's expression: a size of another type is reported there.
            let dims = |e: &syn::Expr| {
                let f = spanning(quote!(::streamgraph::__private::LaunchDims::dims), e);
                quote_spanned!(e.span()=> #f(#e))
            };
            let (grid, block) = (dims(grid), dims(block));
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
            let (dst, src) = (place(program, dst), graph_copy_source(program, src));
            quote!(#copy_with(__issuer, __stmt, #dst, #src, #source))
        }
        Kind::Fill { dst, value } => {
            let span = dst.expr.span();
            let memory = place(program, dst);
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
        // An operand already reported: the op's operand tuple would only add a type error.
        Kind::Call { .. } if stmt.unresolved => {
            quote!(::core::result::Result::<(), #p::Error>::Ok(()))
        }
        Kind::Call { op, args } => {
            let operands = args.iter().map(|a| match a {
                Arg::Write(b) => {
                    let function = respan(quote!(#p::call_out), b.expr.span());
                    let place = place(program, b);
                    or_return(quote!(#function(#place)))
                }
                Arg::Read(b) => buffer_arg(program, b, quote!(#p::call_in)),
                // Refused by the model: a `call` operand is memory.
                Arg::Value(e) => quote_spanned!(e.span()=> ::core::unreachable!()),
            });
            // In a device block's body the op must say that its work fits there.
            let function = if in_device_body(program, i) {
                respan(quote!(#p::call_in_body), op.span())
            } else {
                respan(quote!(#p::call), op.span())
            };
            let op = kernel_ref(program, op);
            quote!(#function(__issuer, __stmt, #op, (#(#operands,)*)))
        }
        Kind::Record { .. } => quote!(__issuer.record(__stmt)),
        Kind::Wait { .. } => quote!(__issuer.wait(__stmt)),
        Kind::WaitStream { .. } => quote!(__issuer.wait_stream(__stmt)),
        // Generated by `temp_alloc` (at the top level of the body).
        Kind::Alloc { .. } => quote!(::core::result::Result::<(), #p::Error>::Ok(())),
        Kind::Free { temp } => match program.temps.get(*temp) {
            Some(t) => {
                let owned = temp_owned(&t.name);
                quote!(#p::temp_free(__issuer, __stmt, #owned))
            }
            None => quote!(::core::result::Result::<(), #p::Error>::Ok(())),
        },
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
                let recv_place = place(program, recv);
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
    let issue = quote!(#call.map_err(|e| e.in_statement(#stmt_var))?;);
    let issue = match reads {
        Some(mask) => {
            let mask = proc_macro2::Literal::u64_suffixed(mask);
            quote!(if !__issuer.unchanged(#stmt_var, #mask) { #issue })
        }
        None => issue,
    };
    quote! {
        {
            let #stmt_var: &'static #p::Statement = &Self::PROGRAM.statements[#i];
            #issue
        }
    }
}

/// Whether statement `i` is in the body of a device `while`/`if`.
fn in_device_body(program: &Program, i: usize) -> bool {
    program
        .statements
        .iter()
        .any(|b| matches!(b.kind, Kind::Block { end, .. } if b.id < i && i < end))
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
