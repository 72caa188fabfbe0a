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
    // Pageable host memory (`h`) is the compiler's to refuse, from its type.
    assert!(!has("pageable"), "{errors:#?}");
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
fn a_body_that_records_an_event_before_waiting_waits_for_its_own_record() {
    // Each arm records and waits `e` itself.
    let errors = errors_of(parse_quote! {
        pipeline P(f: &F, on: bool) {
            stream main;
            stream side;
            event e;
            main: switch f {
                0 => { main: record e; side: wait e; }
                _ => { main: record e; if on { side: wait e; } }
            }
        }
    });
    assert!(errors.is_empty(), "{errors:?}");
    // A record the wait may not follow (in a host `if`, or after it) leaves the other arm's
    // record as what it may wait for: refused.
    for arm in [
        quote::quote!({ if on { main: record e; } side: wait e; }),
        quote::quote!({ side: wait e; main: record e; }),
    ] {
        let errors = errors_of(parse_quote! {
            pipeline P(f: &F, on: bool) {
                stream main;
                stream side;
                event e;
                main: switch f {
                    0 => { main: record e; side: wait e; }
                    _ => #arm
                }
            }
        });
        assert!(
            errors
                .iter()
                .any(|e| e.contains("records outside this body")),
            "{arm}: {errors:?}"
        );
    }
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

#[test]
fn collective_rules_are_validate_s_and_resolution_keeps_going() {
    let input: crate::syntax::Input = parse_quote! {
        pipeline P(x0: &mut B, x1: &mut B, g: &mut B, comm: &Communicator) {
            stream s0;
            stream s1;
            all_reduce(comm) { s0: &x0, s0: &mut x1 };
            all_gather(comm, sum) { s0: &mut x0, s1: x1 => &mut g };
            broadcast(comm, root = s2) { s0: &mut x0, s1: &mut x1 };
        }
    };
    let mut errors = Errors::default();
    let program = Program::from_syntax(input, &mut errors);
    // Resolution finds every name; the collectives are resolved as written.
    assert_eq!(errors.count(), 0);
    assert_eq!(program.collectives.len(), 3);
    assert!(program.statements.iter().all(|s| !s.unresolved));
    assert!(matches!(
        program.statements[4].kind,
        crate::model::Kind::Collective {
            op: crate::model::CollectiveOp::Broadcast { root: 0 },
            ..
        }
    ));
    validate(&program, &mut errors);
    let errors: Vec<String> = errors.into_vec().iter().map(ToString::to_string).collect();
    let expected = [
        "stream `s0` is listed twice in this `all_reduce` (participants 0 and 1)",
        "`all_reduce` needs a reduction after the communicator",
        "`all_reduce` writes this buffer: write `&mut x0`",
        "unexpected option of `all_gather`: after the communicator it takes no option",
        "`all_gather` needs a send and a receive buffer on each stream: write `s0: &SEND",
        "`all_gather` only reads its send buffer: write `&x1`",
        "the root of this `broadcast` must be one of its participants' streams; `s2` is not",
    ];
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
    for (error, expected) in errors.iter().zip(expected) {
        assert!(error.starts_with(expected), "{error:?} is not {expected:?}");
    }
}

#[test]
fn verdicts_do_not_depend_on_how_a_type_is_spelled() {
    // The same pipeline over the runtime's names, over renamed imports and over aliases of
    // slices of buffers: the same errors (one race), and no other.
    let spelled = [
        quote::quote!(x: &mut DeviceBuffer<f32>, xs: &mut [DeviceBuffer<f32>], hs: &[PinnedBuffer<f32>]),
        quote::quote!(x: &mut B<f32>, xs: &mut [B<f32>], hs: &[H<f32>]),
        quote::quote!(x: &mut Buf, xs: &mut [Buf], hs: &[Host]),
        quote::quote!(x: &mut Buf, xs: &mut Bufs, hs: &Hosts),
    ];
    let errors: Vec<Vec<String>> = spelled
        .iter()
        .map(|params| {
            errors_of(parse_quote! {
                pipeline P(#params, k: &K) {
                    stream main;
                    stream side;
                    main: launch k<<<1, 1>>>(&mut x, &xs[0]);
                    side: launch k<<<1, 1>>>(&x);
                    side: copy xs[1] <- hs[0];
                    main: fill xs[0] = 0.0f32;
                }
            })
        })
        .collect();
    assert_eq!(errors[0].len(), 2, "{:#?}", errors[0]);
    assert!(
        errors[0][0].starts_with("data race on `x`"),
        "{:#?}",
        errors[0]
    );
    for other in &errors[1..] {
        assert_eq!(other, &errors[0]);
    }
}

/// Errors and the names of warnings of `input`.
fn verdicts_of(input: crate::syntax::Input) -> (Vec<String>, Vec<&'static str>) {
    let mut errors = Errors::default();
    let program = Program::from_syntax(input, &mut errors);
    validate(&program, &mut errors);
    let (errors, warnings) = errors.into_parts();
    (
        errors.iter().map(|e| e.to_string()).collect(),
        warnings.iter().map(|w| w.name).collect(),
    )
}

#[test]
fn constant_indexes_are_buffers_of_their_own_and_run_time_indexes_warn_when_unordered() {
    // `bufs[0]` and `bufs[1]` are two buffers: no race between them, a race on `bufs[0]`.
    let (errors, warnings) = verdicts_of(parse_quote! {
        pipeline P(bufs: &mut [B], k: &K) {
            stream main;
            stream side;
            main: launch k<<<1, 1>>>(&mut bufs[0]);
            side: launch k<<<1, 1>>>(&bufs[1]);
        }
    });
    assert!(
        errors.is_empty() && warnings.is_empty(),
        "{errors:?} {warnings:?}"
    );
    let (errors, _) = verdicts_of(parse_quote! {
        pipeline P(bufs: &mut [B], k: &K) {
            stream main;
            stream side;
            main: launch k<<<1, 1>>>(&mut bufs[0]);
            side: launch k<<<1, 1>>>(&bufs[0]);
        }
    });
    assert!(
        errors[0].starts_with("data race on `bufs[0]`"),
        "{errors:?}"
    );
    // `bufs[i]` unordered with a use of `bufs` on another stream: a warning, no error.
    let (errors, warnings) = verdicts_of(parse_quote! {
        pipeline P(bufs: &mut [B], i: usize, k: &K) {
            stream main;
            stream side;
            main: launch k<<<1, 1>>>(&mut bufs[i]);
            side: launch k<<<1, 1>>>(&bufs[1]);
        }
    });
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(warnings, ["indexed_buffer_checked_at_run_time"]);
    // Ordered: neither.
    let (errors, warnings) = verdicts_of(parse_quote! {
        pipeline P(bufs: &mut [B], i: usize, k: &K) {
            stream main;
            stream side;
            main: launch k<<<1, 1>>>(&mut bufs[i]);
            side: wait_stream main;
            side: launch k<<<1, 1>>>(&bufs[1]);
        }
    });
    assert!(
        errors.is_empty() && warnings.is_empty(),
        "{errors:?} {warnings:?}"
    );
}

#[test]
fn signalled_loops_are_written_by_their_own_kernels_only() {
    let ok = errors_of(parse_quote! {
        pipeline P(left: &mut B, go: &mut DeviceFlag, other: &mut DeviceFlag, k: &K) {
            stream main;
            stream side;
            event e;
            main: fill go = 1u32;
            main: while go, signalled {
                main: launch k.f<<<1, 1>>>(&mut left);
                main: record e;
                side: wait e;
                side: launch k.countdown<<<1, 1>>>(&mut left, &mut go);
                main: wait_stream side;
                main: while other, signalled {
                    main: launch k.g<<<1, 1>>>(&mut other, &go);
                }
            }
        }
    });
    assert!(ok.is_empty(), "{ok:#?}");
    let errors = errors_of(parse_quote! {
        pipeline P(left: &mut B, go: &mut DeviceFlag, other: &mut DeviceFlag, k: &K, x: &B) {
            stream main;
            main: while go, limit = 10u32, signalled {
                main: fill go = 0u32;
                main: copy go <- x;
                main: if other {
                    main: launch k.countdown<<<1, 1>>>(&mut left, &mut go);
                }
                main: while go, signalled {
                    main: launch k.f<<<1, 1>>>(&mut left);
                }
            }
        }
    });
    let has = |s: &str| errors.iter().filter(|e| e.contains(s)).count();
    assert_eq!(has("takes no `limit`"), 1, "{errors:#?}");
    assert_eq!(
        has("only a kernel sets the loop's condition"),
        2,
        "{errors:#?}"
    );
    assert_eq!(
        has("inside device block `main: if other`"),
        1,
        "{errors:#?}"
    );
    assert_eq!(
        has("is a signalled loop on `go` inside signalled loop"),
        1,
        "{errors:#?}"
    );
}
