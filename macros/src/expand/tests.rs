//! Unit tests of the generated code on `quote!` input.

use super::*;
use quote::format_ident;

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
fn copies_pass_buffers_and_check_their_source_by_type() {
    let out = expand_str(quote! {
        pipeline P(d: &mut DeviceBuffer<f32>, h: &PinnedBuffer<f32>, v: &[f32], n: usize) {
            stream main;
            main: copy d.slice(0..n) <- h;
            main: copy d <- v;
        }
    });
    assert!(
        out.contains(":: streamgraph :: __private :: copy_with (__issuer , __stmt , :: streamgraph :: __private :: place (& self . d) . slice (0 .. n) , :: streamgraph :: __private :: graph_copy_source (h , | __source | {"),
        "{out}"
    );
    assert!(
        out.contains("}) , :: streamgraph :: __private :: CopySource :: copy_source_of)"),
        "{out}"
    );
    assert!(out.contains("StatementKind :: Copy"), "{out}");
    // Pageable host memory is the compiler's to find, from the source's type: both copies
    // are generated, each with the check, and the macro reports nothing.
    assert_eq!(
        out.matches(":: streamgraph :: __private :: copy_with (")
            .count(),
        2,
        "{out}"
    );
    assert!(
        out.contains(":: streamgraph :: __private :: graph_copy_source (v , | __source | { # [allow (unused_imports)] use :: streamgraph :: __private :: { OtherProbe as _ , PageableProbe as _ } ; :: streamgraph :: __private :: graph_copyable (__source , (& :: streamgraph :: __private :: SourceProbe (__source)) . kind ()) })"),
        "{out}"
    );
    assert_eq!(out.matches("graph_copyable (").count(), 2, "{out}");
    assert!(!out.contains("compile_error"), "{out}");
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

#[test]
fn temporaries_are_issued_in_a_scope_that_pipelines_without_them_do_not_get() {
    let out = expand_str(quote! {
        pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &K, n: usize) {
            stream main;
            temp h: f32[2 * n];
            main: copy h <- x;
            main: launch k<<<1, 1>>>(&mut h, &h.slice(0..n));
            main: copy y <- h;
        }
    });
    assert!(!out.contains("compile_error"), "{out}");
    assert!(
        out.contains(
            ":: streamgraph :: __private :: temporaries (__issuer , | __issuer , __scope |"
        ),
        "{out}"
    );
    assert!(
        out.contains(":: streamgraph :: __private :: temp_alloc :: < _ , f32 > (__issuer , __scope , __stmt , { let __len : usize = 2 * n ; __len })"),
        "{out}"
    );
    assert!(out.contains("let h = & * __sg_temp_h_mut ;"), "{out}");
    // Writes go through the exclusive borrow, as a `&mut` parameter's through `&self.x`.
    assert!(
        out.contains(":: streamgraph :: __private :: place (& __sg_temp_h_mut)"),
        "{out}"
    );
    assert!(
        out.contains(":: streamgraph :: __private :: temp_free (__issuer , __stmt , __sg_temp_h)"),
        "{out}"
    );
    assert!(
        out.contains("TempDecl { name : \"h\" , elem : \"f32\""),
        "{out}"
    );
    assert!(
        out.contains("StatementKind :: Alloc { temp : 0usize }"),
        "{out}"
    );
    assert!(
        out.contains("StatementKind :: Free { temp : 0usize }"),
        "{out}"
    );
    // No field, no constructor parameter: the pipeline owns it.
    assert!(!out.contains("pub h"), "{out}");

    let out = expand_str(quote! {
        pipeline P(y: &mut DeviceBuffer<f32>) {
            stream main;
            main: fill y = 0.0f32;
        }
    });
    assert!(!out.contains("temporaries"), "{out}");
    assert!(out.contains("temps : & []"), "{out}");
}
