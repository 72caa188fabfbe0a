//! Unit tests of the temporaries' placement (`temps.rs`) on `parse_quote!` input.

use super::*;
use syn::parse_quote;

/// The resolved program, with the resolution errors as strings.
fn resolve(input: Input) -> (Program, Vec<String>) {
    let mut errors = Errors::default();
    let p = Program::from_syntax(input, &mut errors);
    (
        p,
        errors.into_vec().iter().map(ToString::to_string).collect(),
    )
}

/// The program of `input`, which must resolve without an error.
fn placed(input: Input) -> Program {
    let (p, errors) = resolve(input);
    assert!(errors.is_empty(), "{errors:#?}");
    p
}

fn texts(p: &Program) -> Vec<&str> {
    p.statements.iter().map(|s| s.text.as_str()).collect()
}

/// The ids of the top-level nodes: a statement's, a device block's; `None` for host `for`/`if`.
fn top_ids(p: &Program) -> Vec<Option<usize>> {
    p.body
        .iter()
        .map(|n| match n {
            Node::Stmt(i) | Node::Block { stmt: i, .. } => Some(*i),
            Node::For { .. } | Node::If { .. } => None,
        })
        .collect()
}

/// Every statement is numbered by its position, every node names a statement, and each
/// statement appears once in the tree (collective participants through their first).
fn assert_consistent(p: &Program) {
    for (i, s) in p.statements.iter().enumerate() {
        assert_eq!(s.id, i, "{:?}", texts(p));
    }
    fn walk(p: &Program, nodes: &[Node], seen: &mut Vec<usize>) {
        for n in nodes {
            match n {
                Node::Stmt(i) => match p.statements[*i].kind {
                    Kind::Collective { first, count, .. } => {
                        assert_eq!(first, *i, "a collective enters the tree by its first");
                        seen.extend(first..first + count);
                    }
                    _ => seen.push(*i),
                },
                Node::For { body, .. } => walk(p, body, seen),
                Node::If {
                    then, otherwise, ..
                } => {
                    walk(p, then, seen);
                    walk(p, otherwise.as_deref().unwrap_or_default(), seen);
                }
                Node::Block { stmt, bodies } => {
                    seen.push(*stmt);
                    bodies.iter().for_each(|body| walk(p, body, seen));
                }
            }
        }
    }
    let mut seen = Vec::new();
    walk(p, &p.body, &mut seen);
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..p.statements.len()).collect::<Vec<_>>(),
        "{:?}",
        texts(p)
    );
}

#[test]
fn straight_line_allocates_before_the_first_use_and_frees_after_the_last() {
    let p = placed(parse_quote! {
        pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &K, n: usize) {
            stream main;
            temp h: f32[n];
            main: fill y = 0.0f32;
            main: copy h <- x;
            main: launch k<<<1, 1>>>(&mut y, &h);
            main: fill y = 1.0f32;
        }
    });
    assert_consistent(&p);
    assert_eq!(
        texts(&p),
        [
            "main: fill y = 0.0f32",
            "main: alloc h",
            "main: copy h <- x",
            "main: launch k<<<1, 1>>>(&mut y, &h)",
            "main: free h",
            "main: fill y = 1.0f32",
        ]
    );
    assert!(matches!(p.statements[1].kind, Kind::Alloc { temp: 0 }));
    assert!(matches!(p.statements[4].kind, Kind::Free { temp: 0 }));
    for i in [1, 4] {
        let a = &p.statements[i].accesses;
        assert_eq!(a.len(), 1);
        assert_eq!(
            (a[0].buffer.to_string(), a[0].mode, a[0].whole),
            ("h".into(), Mode::Write, true)
        );
    }
    // A temporary is a buffer after the parameters: the race check's index of it.
    assert_eq!(p.params.len(), 5);
    assert_eq!(p.params[4].temp, Some(0));
    assert_eq!(p.params[4].kind, ParamKind::Mut);
}

#[test]
fn frees_come_before_allocations_at_one_boundary_each_in_declaration_order() {
    let p = placed(parse_quote! {
        pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &K, n: usize) {
            stream main;
            temp c: f32[n];
            temp b: f32[n];
            temp a: f32[n];
            temp d: f32[n];
            main: launch k<<<1, 1>>>(&mut a, &mut d, &x);
            main: launch k<<<1, 1>>>(&mut b, &mut c);
            main: launch k<<<1, 1>>>(&mut y, &b, &c);
        }
    });
    assert_consistent(&p);
    assert_eq!(
        texts(&p),
        [
            "main: alloc a",
            "main: alloc d",
            "main: launch k<<<1, 1>>>(&mut a, &mut d, &x)",
            "main: free a",
            "main: free d",
            "main: alloc c",
            "main: alloc b",
            "main: launch k<<<1, 1>>>(&mut b, &mut c)",
            "main: launch k<<<1, 1>>>(&mut y, &b, &c)",
            "main: free c",
            "main: free b",
        ]
    );
}

#[test]
fn a_use_on_a_stream_that_waited_lets_that_stream_free() {
    let p = placed(parse_quote! {
        pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &K, n: usize) {
            stream main;
            stream side;
            event written;
            temp h: f32[n];
            main: copy h <- x;
            main: record written;
            side: wait written;
            side: launch k<<<1, 1>>>(&mut y, &h);
            main: fill y.slice_mut(0..1) = 0.0f32;
        }
    });
    assert_consistent(&p);
    // `side` waited for `main`'s write: it covers both uses right after its own.
    assert_eq!(
        texts(&p),
        [
            "main: alloc h",
            "main: copy h <- x",
            "main: record written",
            "side: wait written",
            "side: launch k<<<1, 1>>>(&mut y, &h)",
            "side: free h",
            "main: fill y.slice_mut(0..1) = 0.0f32",
        ]
    );
    assert_eq!(p.statements[5].stream, 1);
}

#[test]
fn the_free_waits_for_a_later_boundary_that_covers_every_use() {
    let p = placed(parse_quote! {
        pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, z: &mut DeviceBuffer<f32>,
                   k: &K, n: usize) {
            stream main;
            stream side;
            event written;
            temp h: f32[n];
            main: copy h <- x;
            main: record written;
            side: wait written;
            side: launch k<<<1, 1>>>(&mut y, &h);
            main: launch k<<<1, 1>>>(&mut z, &h);
            main: fill z = 0.0f32;
            main: wait_stream side;
            main: fill z = 1.0f32;
        }
    });
    assert_consistent(&p);
    let t = texts(&p);
    // Neither stream covers the other's read until `main` joins `side`.
    let free = t.iter().position(|s| *s == "main: free h");
    let join = t.iter().position(|s| *s == "main: wait_stream side");
    assert_eq!(free, join.map(|j| j + 1), "{t:?}");
    assert_eq!(t.len(), 10, "{t:?}");
}

#[test]
fn uses_that_no_boundary_covers_are_joined_into_the_origin_at_the_end() {
    let p = placed(parse_quote! {
        pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, z: &mut DeviceBuffer<f32>,
                   w: &mut DeviceBuffer<f32>, k: &K, n: usize) {
            stream main;
            stream side;
            stream third;
            event written;
            temp h: f32[n];
            main: copy h <- x;
            main: record written;
            side: wait written;
            third: wait written;
            side: launch k<<<1, 1>>>(&mut y, &h);
            third: launch k<<<1, 1>>>(&mut w, &h);
            main: launch k<<<1, 1>>>(&mut z, &h);
        }
    });
    assert_consistent(&p);
    let t = texts(&p);
    assert_eq!(
        t[t.len() - 3..],
        [
            "main: wait_stream side",
            "main: wait_stream third",
            "main: free h"
        ],
        "{t:?}"
    );
    let n = p.statements.len();
    assert!(matches!(
        p.statements[n - 3].kind,
        Kind::WaitStream { stream: 1, .. }
    ));
    assert!(matches!(
        p.statements[n - 2].kind,
        Kind::WaitStream { stream: 2, .. }
    ));
    assert!(p.statements[n - 3].accesses.is_empty());
    assert!(p.statements[n - 3..].iter().all(|s| s.stream == 0));
    // Located at the temporary's declaration.
    let decl = p.temps[0].name.span().start();
    assert_eq!(p.statements[n - 3].first.start(), decl);
}

#[test]
fn host_for_and_if_are_hoisted_out_of() {
    let p = placed(parse_quote! {
        pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &K, n: usize, b: bool) {
            stream main;
            temp h: f32[n];
            main: fill y = 0.0f32;
            for i in 0..n {
                if b {
                    main: copy h <- x;
                    main: launch k<<<1, 1>>>(&mut y, &h, i);
                }
            }
            main: fill y = 1.0f32;
        }
    });
    assert_consistent(&p);
    assert_eq!(
        texts(&p),
        [
            "main: fill y = 0.0f32",
            "main: alloc h",
            "main: copy h <- x",
            "main: launch k<<<1, 1>>>(&mut y, &h, i)",
            "main: free h",
            "main: fill y = 1.0f32",
        ]
    );
    assert_eq!(top_ids(&p), [Some(0), Some(1), None, Some(4), Some(5)]);
    let Node::For { body, .. } = &p.body[2] else { panic!("expected the `for`") };
    let [Node::If { then, .. }] = &body[..] else { panic!("expected the `if`") };
    assert!(matches!(then[..], [Node::Stmt(2), Node::Stmt(3)]));
}

#[test]
fn a_use_in_one_branch_on_another_stream_keeps_the_free_until_it_is_covered() {
    let p = placed(parse_quote! {
        pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &K, n: usize, b: bool) {
            stream main;
            stream side;
            event written;
            temp h: f32[n];
            main: copy h <- x;
            main: record written;
            if b {
                side: wait written;
                side: launch k<<<1, 1>>>(&mut y, &h);
            }
            main: fill y = 0.0f32;
            main: wait_stream side;
        }
    });
    assert_consistent(&p);
    let t = texts(&p);
    // After the `if`, `side` covers no use when the branch was skipped and `main` not
    // `side`'s when it was taken: only after the join does one stream cover both.
    assert_eq!(t.last(), Some(&"main: free h"), "{t:?}");
    assert_eq!(t[t.len() - 2], "main: wait_stream side", "{t:?}");
    assert!(!t.contains(&"side: free h"), "{t:?}");
}

#[test]
fn a_use_in_a_device_block_is_placed_around_the_outermost_block_on_its_stream() {
    let p = placed(parse_quote! {
        pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, go: &mut DeviceFlag,
                   more: &mut DeviceFlag, k: &K, n: usize) {
            stream main;
            stream side;
            temp h: f32[n];
            main: fill y = 0.0f32;
            main: wait_stream side;
            side: fill go = 1u32;
            side: while go {
                side: copy h <- x;
                side: if more {
                    side: launch k<<<1, 1>>>(&mut go, &h);
                } else {
                    side: launch k<<<1, 1>>>(&mut more, &h);
                }
            }
            side: fill go = 0u32;
        }
    });
    assert_consistent(&p);
    assert_eq!(
        texts(&p),
        [
            "main: fill y = 0.0f32",
            "main: wait_stream side",
            "side: fill go = 1u32",
            "side: alloc h",
            "side: while go",
            "side: copy h <- x",
            "side: if more",
            "side: launch k<<<1, 1>>>(&mut go, &h)",
            "side: launch k<<<1, 1>>>(&mut more, &h)",
            "side: free h",
            "side: fill go = 0u32",
        ]
    );
    assert_eq!(p.statements[3].stream, 1);
    assert_eq!(p.statements[9].stream, 1);
    // The blocks' indices moved with their statements; the free is after the outer body.
    assert!(matches!(
        &p.statements[4].kind,
        Kind::Block {
            shape: BlockShape::While,
            end: 9,
            starts,
            ..
        } if starts == &[5]
    ));
    assert!(matches!(
        &p.statements[6].kind,
        Kind::Block {
            shape: BlockShape::If,
            starts,
            end: 9,
            ..
        } if starts == &[7, 8]
    ));
    assert_eq!(
        top_ids(&p),
        [
            Some(0),
            Some(1),
            Some(2),
            Some(3),
            Some(4),
            Some(9),
            Some(10)
        ]
    );
}

#[test]
fn collectives_keep_their_first_participant_when_statements_are_inserted() {
    let p = placed(parse_quote! {
        pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, comm: &Communicator,
                   k: &K, n: usize) {
            stream s0;
            stream s1;
            temp a: f32[n];
            temp b: f32[n];
            s0: copy a <- x;
            s1: copy b <- x;
            all_reduce(comm, sum) { s0: &mut a, s1: &mut b };
            s0: launch k<<<1, 1>>>(&mut y, &a);
            s0: wait_stream s1;
        }
    });
    assert_consistent(&p);
    let t = texts(&p);
    let pos = |s: &str| t.iter().position(|x| *x == s).unwrap_or(usize::MAX);
    assert_eq!(pos("s0: alloc a"), 0, "{t:?}");
    assert_eq!(pos("s1: alloc b"), 2, "{t:?}");
    let first = pos("s1: copy b <- x") + 1;
    for j in [first, first + 1] {
        let Kind::Collective {
            first: f, count, ..
        } = p.statements[j].kind
        else {
            panic!("expected a participant at {j}: {t:?}")
        };
        assert_eq!((f, count), (first, 2), "{t:?}");
    }
    // `b`'s last use is `s1`'s participant: freed on `s1` right after the collective.
    assert_eq!(pos("s1: free b"), first + 2, "{t:?}");
    assert_eq!(
        pos("s0: free a"),
        pos("s0: launch k<<<1, 1>>>(&mut y, &a)") + 1
    );
}

#[test]
fn a_temporary_that_no_statement_uses_is_not_placed() {
    let (p, errors) = resolve(parse_quote! {
        pipeline P(y: &mut DeviceBuffer<f32>, n: usize) {
            stream main;
            temp h: f32[n];
            main: fill y = 0.0f32;
        }
    });
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("temporary `h` is never used"),
        "{errors:?}"
    );
    assert_eq!(texts(&p), ["main: fill y = 0.0f32"]);
    assert_eq!(p.temps.len(), 1);
}

#[test]
fn a_temporary_named_as_a_parameter_is_not_placed() {
    let (p, _) = resolve(parse_quote! {
        pipeline P(y: &mut DeviceBuffer<f32>, n: usize) {
            stream main;
            temp y: f32[n];
            main: fill y = 0.0f32;
        }
    });
    // The clash is `validate`'s to report; the uses are the parameter's.
    assert_eq!(texts(&p), ["main: fill y = 0.0f32"]);
}

#[test]
fn the_free_is_ordered_after_the_allocation_when_the_first_use_may_not_run() {
    // A loop that runs no iteration leaves `side` with nothing of `h` to follow, not even
    // the allocation on `main`: freeing on `side` after the loop would race with it.
    for input in [
        parse_quote! {
            pipeline P(y: &mut DeviceBuffer<f32>, k: &K, n: usize) {
                stream main;
                stream side;
                event e;
                temp h: f32[n];
                for _i in 0..n {
                    main: fill h = 0.0f32;
                    main: record e;
                    side: wait e;
                    side: launch k<<<1, 1>>>(&mut y, &h);
                }
            }
        },
        parse_quote! {
            pipeline P(y: &mut DeviceBuffer<f32>, k: &K, n: usize, b: bool) {
                stream main;
                stream side;
                event e;
                temp h: f32[n];
                if b {
                    main: fill h = 0.0f32;
                    main: record e;
                    side: wait e;
                    side: launch k<<<1, 1>>>(&mut y, &h);
                }
            }
        },
    ] {
        let p = placed(input);
        assert_consistent(&p);
        let t = texts(&p);
        assert_eq!(t[0], "main: alloc h", "{t:?}");
        assert_eq!(
            t[t.len() - 2..],
            ["main: wait_stream side", "main: free h"],
            "{t:?}"
        );
    }
}

#[test]
fn an_event_pick_names_its_statement_by_its_new_id() {
    let p = placed(parse_quote! {
        pipeline P(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &K, n: usize) {
            stream main;
            stream side;
            event ready[2];
            temp h: f32[n];
            main: copy h <- x;
            for c in 0..n {
                main: launch k<<<1, 1>>>(&mut y, &h);
                main: record ready[c % 2];
            }
            side: wait ready[1];
        }
    });
    assert_consistent(&p);
    let t = texts(&p);
    let first = t
        .iter()
        .position(|s| s.starts_with("main: record ready[c % 2]"))
        .unwrap_or(usize::MAX);
    assert_eq!(first, 3, "{t:?}");
    let Node::For { body, .. } = &p.body[2] else { panic!("expected the host `for`: {t:?}") };
    let Node::For { expr, .. } = &body[1] else { panic!("expected the pick's `for`: {t:?}") };
    let expr = crate::text::text_of(expr);
    assert!(
        expr.contains(&format!("statements[{first}usize]")),
        "{expr} does not name statement {first}: {t:?}"
    );
}
