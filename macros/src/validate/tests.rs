//! Unit tests of the rules on `parse_quote!` input.

use super::*;
use syn::parse_quote;

fn errors_of(input: crate::syntax::Input) -> Vec<String> {
    let mut errors = Errors::default();
    let program = Program::from_syntax(input, &mut errors);
    validate(&program, &mut errors);
    errors
        .into_vec()
        .iter()
        .flat_map(|e| e.clone().into_iter())
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn rules_report_on_the_model() {
    let errors = errors_of(parse_quote! {
        pipeline P(x: &mut B, y: &B, h: &[f32], k: &K, x: u32) {
            stream main;
            stream side;
            stream main;
            event e;
            event e;
            side: wait e;
            main: wait_stream main;
            main: launch k.f<<<1, 1>>>(&mut y);
            side: copy x <- h;
            main: record e;
        }
    });
    let has = |s: &str| errors.iter().any(|e| e.contains(s));
    assert!(has("stream `main` is declared twice"), "{errors:#?}");
    assert!(has("event `e` is declared twice"));
    assert!(has("parameter `x` is declared twice"));
    assert!(has(
        "waits for event `e`, which no earlier statement records"
    ));
    assert!(has("stream `main` cannot wait for itself"));
    assert!(has("parameter `y` is declared `& B`") || has("parameter `y` is declared `&B`"));
    assert!(has("pageable host memory"));
}

#[test]
fn waits_may_follow_records_of_a_previous_iteration() {
    let errors = errors_of(parse_quote! {
        pipeline P(n: u32) {
            stream main;
            stream side;
            event e;
            for i in 0..n { side: wait e; main: record e; }
            if n > 1 { main: record e; }
            side: wait e;
        }
    });
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn race_message_names_both_statements_and_the_fix() {
    let errors = errors_of(parse_quote! {
        pipeline P(x: &mut B, k: &K) {
            stream main;
            stream side;
            main: launch k.a<<<1, 1>>>(&mut x);
            side: launch k.b<<<1, 1>>>(&x);
        }
    });
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors[0].starts_with("data race on `x`: `side: launch k.b<<<1, 1>>>(&x)`"));
    assert!(errors[0].contains("while `main: launch k.a<<<1, 1>>>(&mut x)`"));
    assert!(
        errors[0].contains("add `main: record x_ready;` after the write and `side: wait x_ready;`")
    );
    assert!(errors[1].contains("the other side of the data race on `x`"));
}

#[test]
fn no_stream_is_an_error() {
    let errors = errors_of(parse_quote! { pipeline P() {} });
    assert!(errors[0].contains("declares no stream"));
}
