//! Unit tests of resolution on `parse_quote!` input.

use super::*;
use syn::parse_quote;

fn resolve(input: Input) -> (Program, Vec<String>) {
    let mut errors = Errors::default();
    let p = Program::from_syntax(input, &mut errors);
    (
        p,
        errors.into_vec().iter().map(ToString::to_string).collect(),
    )
}

#[test]
fn statements_are_numbered_with_accesses_and_text() {
    let (p, errors) = resolve(parse_quote! {
        pipeline P(x: &mut DeviceBuffer<f32>, y: &DeviceBuffer<f32>, k: &K, n: u32) {
            stream main;
            stream side;
            event e;
            main: launch k.f<<<grid(n), 256>>>(&mut x, &y.slice(0..n), n);
            main: record e;
            for i in 0..n { side: wait e; side: copy x.slice(i..i+1) <- y; }
            side: fill x = 0.0f32;
        }
    });
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(p.statements.len(), 5);
    let texts: Vec<&str> = p.statements.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "main: launch k.f<<<grid(n), 256>>>(&mut x, &y.slice(0..n), n)",
            "main: record e",
            "side: wait e",
            "side: copy x.slice(i..i + 1) <- y",
            "side: fill x = 0.0f32",
        ]
    );
    let a = &p.statements[0].accesses;
    assert_eq!(
        (a[0].buffer.to_string(), a[0].mode, a[0].whole),
        ("x".into(), Mode::Write, true)
    );
    assert_eq!(
        (a[1].buffer.to_string(), a[1].mode, a[1].whole),
        ("y".into(), Mode::Read, false)
    );
    let c = &p.statements[3].accesses;
    assert_eq!(
        (c[0].mode, c[0].whole, c[1].mode, c[1].whole),
        (Mode::Read, true, Mode::Write, false)
    );
    assert_eq!(p.statements[3].stream, 1);
    assert!(matches!(p.body[2], Node::For { .. }));
    assert_eq!(p.params[0].kind, ParamKind::Mut);
    assert_eq!(p.params[3].kind, ParamKind::Value);
}

#[test]
fn unknown_names_are_all_reported() {
    let (p, errors) = resolve(parse_quote! {
        pipeline P(x: &mut B) {
            stream main;
            mian: record e;
            main: wait_stream other;
            main: launch k<<<1>>>(&mut z, &x);
        }
    });
    assert_eq!(p.statements.len(), 3);
    assert_eq!(errors.len(), 5, "{errors:?}");
    assert!(errors[0].starts_with("unknown stream `mian`: did you mean `main`?"));
    assert!(errors[1].starts_with("unknown event `e`: no event is declared"));
    assert!(errors[2].starts_with("unknown stream `other`"));
    assert!(errors[3].contains("no block size"));
    assert!(errors[4].contains("`z` is not a parameter"));
    assert!(p.statements.iter().all(|s| s.unresolved));
}

#[test]
fn typos_get_the_closest_declared_name() {
    let (p, errors) = resolve(parse_quote! {
        pipeline P(input: &mut B, k: &K) {
            stream main;
            stream side;
            event ready;
            sied: record redy;
            main: launch k<<<1, 1>>>(&mut inptu);
            main: fill output = 0.0f32;
            main: launch k<<<1, 1>>>(input);
        }
    });
    assert_eq!(errors.len(), 5, "{errors:#?}");
    assert!(errors[0].starts_with("unknown stream `sied`: did you mean `side`?"));
    assert!(errors[1].starts_with("unknown event `redy`: did you mean `ready`?"));
    assert!(
        errors[2].starts_with("`inptu` is not a parameter of this pipeline: did you mean `input`?")
    );
    assert!(errors[3].starts_with("`output` is not a parameter of this pipeline; buffers"));
    assert!(errors[4].starts_with("buffer `input` is passed by value: write `&mut input`"));
    assert!(matches!(
        &p.statements[3].kind,
        Kind::Launch { args, .. } if matches!(args[..], [Arg::Read(_)])
    ));
    assert!(p.statements[3].accesses.is_empty());
}

#[test]
fn shared_borrows_under_mut_are_read_from_references_alone() {
    let (p, _) = resolve(parse_quote! {
        pipeline P<'a>(
            a: &mut &'a DeviceBuffer<f32>, b: &mut [&'a B], c: &mut &mut &'a T,
            d: &mut [&'a B; 2], e: &mut DeviceBuffer<f32>, f: &mut [B], g: &'a B,
            h: &mut DeviceView<'a, f32>, i: &mut V<'a, f32>
        ) {}
    });
    let shared: Vec<bool> = p.params.iter().map(Param::shared_under_mut).collect();
    // A read-only view is the type system's to refuse (`DeviceMemoryMut`, `CopyTarget`),
    // under its own name or any other.
    assert_eq!(
        shared,
        [true, true, true, true, false, false, false, false, false]
    );
    let exclusive: Vec<String> = p.params[..3]
        .iter()
        .map(|p| crate::text::type_text(&p.exclusive_type()))
        .collect();
    assert_eq!(
        exclusive,
        ["&mut DeviceBuffer<f32>", "&mut [&'a mut B]", "&mut &mut T"]
    );
}

#[test]
fn a_switch_numbers_its_arms_bodies_and_reports_every_bad_arm() {
    let (p, errors) = resolve(parse_quote! {
        pipeline P(x: &mut DeviceBuffer<f32>, i: &DeviceFlag, k: &Kernel) {
            stream s;
            stream t;
            s: switch i {
                4 => { s: launch k<<<1, 1>>>(&mut x); t: launch k<<<1, 1>>>(&x); }
                1 => {}
                _ => { s: launch k<<<1, 1>>>(&mut x); }
            }
            s: launch k<<<1, 1>>>(&x);
        }
    });
    assert!(errors.is_empty(), "{errors:?}");
    let Kind::Block {
        shape: BlockShape::Switch(values),
        starts,
        end,
        ..
    } = &p.statements[0].kind
    else {
        panic!("expected a switch")
    };
    assert_eq!(values, &[Some(4), Some(1), None]);
    assert_eq!((starts.as_slice(), *end), (&[1, 3, 3][..], 4));
    assert_eq!(p.statements[0].text, "s: switch i");
    assert!(matches!(&p.body[0], Node::Block { bodies, .. } if bodies.len() == 3));

    let (_, errors) = resolve(parse_quote! {
        pipeline P(x: &mut DeviceBuffer<f32>, i: &DeviceFlag, k: &Kernel) {
            stream s;
            s: switch i {
                _ => {}
                2 => {}
                2 => {}
                x => {}
                _ => {}
            }
        }
    });
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(errors[0].contains("must be its last"), "{errors:?}");
    assert!(
        errors[1].contains("value 2 is already an arm"),
        "{errors:?}"
    );
    assert!(errors[2].contains("`x` is no arm pattern"), "{errors:?}");
    assert!(errors[3].contains("has a `_` arm already"), "{errors:?}");
}
