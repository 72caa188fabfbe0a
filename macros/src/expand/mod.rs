//! Code generation: the pipeline type, its constructor and its `Pipeline` impl.
//!
//! The pipeline reads in one function, [`pipeline`]: parse → model → validate → expand. On
//! errors the type is still generated, as close to the input as resolution allowed, next to
//! one `compile_error!` per error, so that later errors and IDEs stay sane.

mod operand;
mod program;
mod reads;
mod statement;
#[cfg(test)]
mod tests;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{GenericParam, Lifetime, LifetimeParam};

use crate::model::{Errors, Param, ParamKind, Program, Warning};
use crate::syntax::{Header, Input};
use crate::validate::validate;
use program::program_const;
use statement::nodes;

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
    let warnings = warnings_of(&program.name, &warnings);
    quote!(#code #(#errors)* #warnings)
}

/// A warning on stable Rust: the use of a deprecated item, spanned on the user's tokens so that
/// the lint is not silenced as coming from an external macro. The item lies in a constant named
/// as the pipeline (the pipeline's braced struct leaves that name free among values), so that
/// the message names the pipeline.
///
/// ```text
/// warning: use of deprecated unit struct `PIPELINE::NAME`: MESSAGE
/// ```
/// All warnings of one pipeline lie in the one constant (two constants of one name would
/// clash).
fn warnings_of(pipeline: &syn::Ident, warnings: &[Warning]) -> TokenStream {
    let Some(first) = warnings.first() else {
        return TokenStream::new();
    };
    let items = warnings.iter().map(|w| {
        let name = syn::Ident::new(w.name, w.span);
        let note = &w.message;
        quote_spanned! {w.span=>
            #[deprecated(note = #note)]
            #[allow(non_camel_case_types)]
            struct #name;
            let _ = #name;
        }
    });
    quote_spanned! {first.span=>
        #[doc(hidden)]
        #[allow(dead_code, non_upper_case_globals)]
        const #pipeline: () = {
            #(#items)*
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
    for p in program.params.iter().filter(|p| p.temp.is_none()) {
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
    // Streams declared without options: a constant, borrowed (no allocation per run).
    let stream_options = if program
        .streams
        .iter()
        .all(|s| s.priority.is_none() && s.device.is_none())
    {
        let default = program
            .streams
            .iter()
            .map(|_| quote!(::streamgraph::__private::StreamOptions::DEFAULT));
        quote!(::std::borrow::Cow::Borrowed(&[#(#default),*]))
    } else {
        quote! {
            #bindings
            ::std::borrow::Cow::Owned(::std::vec![#(#options),*])
        }
    };
    let reads = reads::read_sets(program, &params);
    let keyed_walk = reads::walk_keyed(program, &params, &reads.stmts);
    let body = nodes(program, &reads, &program.body);
    let keys = params.iter().map(|p| {
        let name = &p.name;
        match p.kind {
            ParamKind::Shared | ParamKind::Mut => quote!(&*self.#name),
            ParamKind::Value => quote!(&self.#name),
        }
    });
    // With temporaries, the statements run in a scope whose lifetime brands them, so that
    // none outlives the issue (see the runtime's `temporaries`).
    let body = if program.temps.is_empty() {
        quote!(#body ::core::result::Result::Ok(()))
    } else {
        quote! {
            ::streamgraph::__private::temporaries(__issuer, |__issuer, __scope| {
                #body
                ::core::result::Result::<(), ::streamgraph::__private::Error>::Ok(())
            })
        }
    };

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
            const KEYED_WALK: bool = #keyed_walk;

            fn program(&self) -> &'static ::streamgraph::__private::Program {
                Self::PROGRAM
            }

            #[allow(unused_variables)]
            fn stream_options(&self) -> ::std::borrow::Cow<'static, [::streamgraph::__private::StreamOptions]> {
                #stream_options
            }

            #[allow(unused_variables)]
            fn issue<__I: ::streamgraph::__private::Issuer + ?::core::marker::Sized>(
                &self,
                __issuer: &mut __I,
            ) -> ::core::result::Result<(), ::streamgraph::__private::Error> {
                #bindings
                #body
            }

            fn param_keys(&self, __keys: &mut ::streamgraph::__private::ParamKeys) {
                #[allow(unused_imports)]
                use ::streamgraph::__private::{KeyedParam as _, UnkeyedParam as _};
                #( (&&::streamgraph::__private::ParamProbe(#keys)).param_key(__keys); )*
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
