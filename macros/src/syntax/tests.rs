//! Unit tests of the parser on `parse_quote!` and `quote!` input.

use super::*;
use syn::{parse_quote, Expr};

#[test]
fn parses_every_item_and_statement_form() {
    let input: Input = parse_quote! {
        /// Docs.
        pub pipeline P<T: Copy>(x: &mut DeviceBuffer<f32>, k: &Kernels, n: u32) where T: Send {
            stream main;
            stream side(priority = -1, device = 0);
            event e;
            main: launch k.scale<<<(n + 255) / 256, 256, 0>>>(&mut x, 2.0f32, n);
            main: record e;
            side: wait e;
            side: copy h.slice(0..n) <- x;
            side: fill x = 0.0f32;
            side: host move || {};
            main: wait_stream side;
            for i in 0..n { side: fill x.slice(i..i + 1) = 1.0f32; }
            if n > 2 { main: record e; } else if n > 1 { main: wait e; } else { side: wait e; }
        }
    };
    assert_eq!(input.name, "P");
    assert_eq!(input.params.len(), 3);
    assert!(input.generics.where_clause.is_some());
    assert_eq!(input.items.len(), 12);
    let Item::Stream(side) = &input.items[1] else { panic!("expected a stream") };
    assert_eq!(side.options.len(), 2);
    let Item::Stmt(Stmt::Op(OpStmt {
        op: Op::Launch(l), ..
    })) = &input.items[3]
    else {
        panic!("expected a launch")
    };
    assert_eq!(l.config.len(), 3);
    assert_eq!(l.args.len(), 3);
    let Item::Stmt(Stmt::Op(OpStmt {
        op: Op::Copy { dst, src, .. },
        ..
    })) = &input.items[6]
    else {
        panic!("expected a copy")
    };
    assert!(matches!(dst, Expr::MethodCall(_)));
    assert!(matches!(src, Expr::Path(_)));
    assert!(matches!(
        &input.items[11],
        Item::Stmt(Stmt::If(IfStmt {
            otherwise: Some(Else::If(_)),
            ..
        }))
    ));
}

#[test]
fn missing_close_of_launch_configuration_is_an_error() {
    let err = syn::parse2::<Input>(quote::quote! {
        pipeline P() { stream s; s: launch k<<<1, 1(); }
    })
    .unwrap_err();
    assert!(err.to_string().contains("expected `>>>`"), "{err}");
}

#[test]
fn unknown_operation_lists_the_alternatives() {
    let err = syn::parse2::<Input>(quote::quote! {
        pipeline P() { stream s; s: frobnicate k<<<1, 1>>>(); }
    })
    .unwrap_err();
    assert!(err.to_string().contains("expected one of"), "{err}");
    let err = syn::parse2::<Input>(quote::quote! {
        pipeline P() { stream s; s: lunch k<<<1, 1>>>(); }
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("unknown operation `lunch`: did you mean `launch`?"),
        "{err}"
    );
}

fn parse_error(body: proc_macro2::TokenStream) -> String {
    syn::parse2::<Input>(quote::quote!(pipeline P(x: &mut B) { stream main; stream side; #body }))
        .unwrap_err()
        .to_string()
}

/// The messages of all the errors of a body, in order.
fn parse_errors(body: proc_macro2::TokenStream) -> Vec<String> {
    syn::parse2::<Input>(
        quote::quote!(pipeline P(x: &mut B) { stream main; stream side; event ready; #body }),
    )
    .unwrap_err()
    .into_iter()
    .map(|e| e.to_string())
    .collect()
}

#[test]
fn every_statement_that_does_not_parse_is_reported() {
    let errors = parse_errors(quote::quote! {
        main: launch k<<<1, 32>>>(&mut x);
        main.record_event(ready);
        side wait ready;
        for i in 0..2 {
            side: lunch k<<<1, 32>>>(&mut x);
            side: fill x = 0.0f32;
            side: copy x;
        }
        main: launch k<<<1, 32(&mut x);
        main: wait_stream side;
        stream third(priority = );
        event;
        if true { main: record ready; } else { side: wait ready }
        main: host || {} main: record ready;
    });
    let expected = [
        "write `main: record ready;`",
        "expected `:` after `side`",
        "unknown operation `lunch`: did you mean `launch`?",
        "expected `copy DST <- SRC`",
        "expected `>>>`",
        "expected an expression",
        "expected identifier",
        "expected `;`",
        "expected `;`",
    ];
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
    for (error, expected) in errors.iter().zip(expected) {
        assert!(error.contains(expected), "{error:?} lacks {expected:?}");
    }
}

#[test]
fn recovery_skips_block_statements_whole() {
    // The bodies of a `for` and a device `while` whose heads do not parse are skipped
    // whole; the statements after them are parsed.
    let errors = parse_errors(quote::quote! {
        for in 0..2 { side: fill x = 1.0f32; }
        main: while , limit = 3 { main: fill x = 1.0f32; }
        main: if f { main: fill x = 0.0f32; } else if g { side: fill x = 0.0f32; }
        main: record;
    });
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(
        errors[2].contains("a device `if` takes a plain `else"),
        "{errors:#?}"
    );
}

#[test]
fn misplaced_statements_get_their_own_messages() {
    let cases = [
        (
            quote::quote!(side.wait_event(ready);),
            "statements are not method calls on streams: write `side: wait ready;`",
        ),
        (
            quote::quote!(side.wait_stream(main);),
            "write `side: wait_stream main;`",
        ),
        (
            quote::quote!(main.record_event(ready);),
            "write `main: record ready;`",
        ),
        (
            quote::quote!(main.synchronize();),
            "statements are not method calls: write `STREAM: OP;`",
        ),
        (
            quote::quote!(launch k<<<1, 1>>>(&mut x);),
            "this `launch` names no stream",
        ),
        (
            quote::quote!(for i in 0..2 { record ready; }),
            "this `record` names no stream",
        ),
        (
            quote::quote!(main launch k<<<1, 1>>>(&mut x);),
            "expected `:` after `main`",
        ),
        (
            quote::quote!(pipeline Inner(y: &B) { stream s; }),
            "a pipeline cannot be declared inside another pipeline: declare `Inner`",
        ),
        (
            quote::quote!(streamgraph::pipeline! { pipeline Inner() { stream s; } }),
            "a pipeline cannot be declared inside another pipeline: declare `Inner`",
        ),
    ];
    for (body, expected) in cases {
        let err = parse_error(body.clone());
        assert!(err.contains(expected), "{body}: {err}");
    }
}

#[test]
fn temporaries_are_top_level_items_and_temp_stays_a_name() {
    let input: Input = parse_quote! {
        pipeline P(x: &mut DeviceBuffer<f32>, n: usize) {
            stream main;
            stream temp;
            temp h: f32[2 * n];
            temp temp: [u8; 4][n];
            temp: fill h = 0.0f32;
            main: wait_stream temp;
        }
    };
    assert_eq!(input.items.len(), 6);
    let Item::Temp(h) = &input.items[2] else { panic!("expected a temporary") };
    assert_eq!(h.name, "h");
    assert_eq!(crate::text::text_of(&h.ty), "f32");
    assert_eq!(crate::text::text_of(&h.len), "2 * n");
    let Item::Temp(t) = &input.items[3] else { panic!("expected a temporary") };
    assert_eq!(t.name, "temp");
    assert_eq!(crate::text::text_of(&t.ty), "[u8; 4]");
    assert!(matches!(&input.items[4], Item::Stmt(Stmt::Op(s)) if s.stream == "temp"));

    let errors = parse_errors(quote::quote! {
        temp a: f32;
        for i in 0..2 {
            temp b: f32[4];
            main: fill x = 0.0f32;
        }
        main: if go { temp c: f32[4]; }
        main: fill x = 1.0f32;
    });
    let expected = [
        "expected `[LEN]` after the element type: a temporary is declared `temp NAME: TYPE[LEN];`",
        "temporary `b` is declared inside a block: declare temporaries at the top level",
        "temporary `c` is declared inside a block",
    ];
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
    for (error, expected) in errors.iter().zip(expected) {
        assert!(error.starts_with(expected), "{error:?} is not {expected:?}");
    }
}

#[test]
fn a_switch_parses_its_arms_with_or_without_commas() {
    let input: Input = parse_quote! {
        pipeline P(i: &DeviceFlag) {
            stream s;
            s: switch i {
                0 => { s: fill x = 0u32; }
                7 => {},
                "no" => {}
                _ => { s: switch i { 1 => {} } }
            }
        }
    };
    let Item::Stmt(Stmt::Block(b)) = &input.items[1] else { panic!("expected a block") };
    assert!(matches!(b.keyword, BlockKeyword::Switch(_)));
    assert_eq!(b.arms.len(), 4);
    assert!(b.body.is_empty() && b.otherwise.is_none());
    assert_eq!(b.arms[0].body.len(), 1);
    assert!(matches!(b.arms[3].pat, syn::Pat::Wild(_)));
    let err = syn::parse2::<Input>(quote::quote! {
        pipeline P(i: &DeviceFlag) { stream s; s: switch i { 0 { } } }
    })
    .unwrap_err();
    assert!(err.to_string().contains("expected `=>`"), "{err}");
}
