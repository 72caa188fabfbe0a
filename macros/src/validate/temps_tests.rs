//! Unit tests of the temporaries' diagnostics on `parse_quote!` input: their names, their
//! uses, what reads them first, and races with their allocation and release.

use super::*;
use syn::parse_quote;

/// Every error message (each part of a combined error on its own) and every warning's name
/// and message.
fn verdicts_of(input: crate::syntax::Input) -> (Vec<String>, Vec<(&'static str, String)>) {
    let mut errors = Errors::default();
    let program = Program::from_syntax(input, &mut errors);
    validate(&program, &mut errors);
    let (errors, warnings) = errors.into_parts();
    (
        errors
            .iter()
            .flat_map(|e| e.clone().into_iter())
            .map(|e| e.to_string())
            .collect(),
        warnings.into_iter().map(|w| (w.name, w.message)).collect(),
    )
}

#[test]
fn a_use_that_nothing_orders_after_the_allocation_is_reported_in_the_temporary_s_terms() {
    let (errors, _) = verdicts_of(parse_quote! {
        pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &K, n: usize) {
            stream main;
            stream side;
            temp h: f32[n];
            main: copy h <- x;
            side: launch k<<<1, 1>>>(&mut y, &h);
            main: wait_stream side;
        }
    });
    // `parse_quote!` tokens have no location of their own: every statement is "at 1:1".
    assert_eq!(
        errors[0],
        "`side: launch k<<<1, 1>>>(&mut y, &h)` (at 1:1) uses temporary `h` on stream \
         `side`, but nothing orders it after `h` is allocated on stream `main` (before its \
         first use): add `side: wait_stream main;` before this statement (or a `record`/`wait` \
         pair), or use `h` on `side` first",
        "{errors:#?}"
    );
    assert_eq!(
        errors[1], "temporary `h`, allocated on stream `main` by `main: alloc h`",
        "{errors:#?}"
    );
    // The write and the read race as well, worded as any buffer's race.
    assert!(errors[2].starts_with("data race on `h`"), "{errors:#?}");
    assert_eq!(errors.len(), 4, "{errors:#?}");
}

#[test]
fn ordered_uses_on_several_streams_and_items_that_may_not_run_are_accepted() {
    for input in [
        parse_quote! {
            pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, z: &mut DeviceBuffer<f32>,
                       k: &K, n: usize) {
                stream main;
                stream side;
                event written;
                temp h: f32[n];
                main: copy h <- x;
                main: record written;
                side: wait written;
                side: launch k<<<1, 1>>>(&mut z, &h);
                main: launch k<<<1, 1>>>(&mut y, &h);
            }
        },
        parse_quote! {
            pipeline P(y: &mut DeviceBuffer<f32>, k: &K, n: usize, rounds: usize) {
                stream main;
                stream side;
                event written;
                temp h: f32[n];
                for _r in 0..rounds {
                    main: wait_stream side;
                    main: fill h = 0.0f32;
                    main: record written;
                    side: wait written;
                    side: launch k<<<1, 1>>>(&mut y, &h);
                }
            }
        },
        parse_quote! {
            pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, go: &mut DeviceFlag,
                       k: &K, n: usize) {
                stream main;
                temp h: f32[n];
                main: fill go = 1u32;
                main: while go {
                    main: copy h <- x;
                    main: launch k<<<1, 1>>>(&mut go, &mut y, &h);
                }
            }
        },
    ] {
        let (errors, warnings) = verdicts_of(input);
        assert!(
            errors.is_empty() && warnings.is_empty(),
            "{errors:#?} {warnings:#?}"
        );
    }
}

#[test]
fn a_read_before_any_write_is_an_error_on_the_read() {
    let (errors, _) = verdicts_of(parse_quote! {
        pipeline P(y: &mut DeviceBuffer<f32>, k: &K, n: usize) {
            stream main;
            temp h: f32[n];
            main: launch k<<<1, 1>>>(&mut y, &h.slice(0..1));
            main: fill h = 0.0f32;
            main: launch k<<<1, 1>>>(&mut y, &h);
        }
    });
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with(
            "temporary `h` is read here before anything writes it: its contents are undefined"
        ),
        "{errors:#?}"
    );
    // A statement that writes it may read it too (it is the writer), and a later read in
    // the same scope as a write is fine.
    let (errors, warnings) = verdicts_of(parse_quote! {
        pipeline P(y: &mut DeviceBuffer<f32>, k: &K, n: usize) {
            stream main;
            temp h: f32[n];
            main: launch k<<<1, 1>>>(&mut h, &h.slice(0..1));
            for _i in 0..n {
                main: launch k<<<1, 1>>>(&mut h, &y);
                main: launch k<<<1, 1>>>(&mut y, &h);
            }
        }
    });
    assert!(
        errors.is_empty() && warnings.is_empty(),
        "{errors:#?} {warnings:#?}"
    );
}

#[test]
fn a_read_after_writes_that_a_run_may_skip_is_a_warning() {
    let skippable = [
        quote::quote!(for _i in 0..n { main: fill h = 0.0f32; }),
        quote::quote!(if n > 1 { main: fill h = 0.0f32; }),
        quote::quote!(main: fill go = 1u32; main: if go { main: fill h = 0.0f32; }),
        quote::quote!(main: fill go = 1u32; main: while go { main: launch k<<<1, 1>>>(&mut h, &mut go); }),
    ];
    for writes in skippable {
        let (errors, warnings) = verdicts_of(parse_quote! {
            pipeline P(y: &mut DeviceBuffer<f32>, go: &mut DeviceFlag, k: &K, n: usize) {
                stream main;
                temp h: f32[n];
                #writes
                main: launch k<<<1, 1>>>(&mut y, &h);
            }
        });
        assert!(errors.is_empty(), "{writes}: {errors:#?}");
        assert_eq!(warnings.len(), 1, "{writes}: {warnings:#?}");
        assert_eq!(warnings[0].0, "temporary_may_be_read_before_written");
        assert!(
            warnings[0].1.starts_with(
                "`main: launch k<<<1, 1>>>(&mut y, &h)` may read temporary `h` before anything \
                 writes it"
            ),
            "{warnings:#?}"
        );
    }
}

#[test]
fn a_temporary_s_name_is_its_own() {
    let (errors, _) = verdicts_of(parse_quote! {
        pipeline P(y: &mut DeviceBuffer<f32>, n: usize) {
            stream main;
            temp y: f32[n];
            temp h: f32[n];
            temp h: u32[n];
            temp unused: f32[n];
            main: fill h = 0.0f32;
            main: fill y = 0.0f32;
        }
    });
    assert_eq!(
        errors,
        [
            "temporary `unused` is never used: no statement names it; remove the declaration, \
             or use it (`&mut unused` in a launch, a `copy` or `fill` target, …)",
            "temporary `y` has the name of a parameter of the pipeline: statements name both \
             alike; rename one",
            "temporary `h` is declared twice; rename one",
        ]
    );
    // Streams and events are names of another kind, as they are beside parameters.
    let (errors, _) = verdicts_of(parse_quote! {
        pipeline P(y: &mut DeviceBuffer<f32>, n: usize) {
            stream temp;
            temp temp: f32[n];
            temp: fill temp = 0.0f32;
            temp: copy y <- temp;
        }
    });
    assert!(errors.is_empty(), "{errors:#?}");
}
