//! [`certain_races`] against the former enumeration ([`enumerate::enumerated_races`]) and
//! against pass 2 alone ([`exhaustive_races`]) on random programs with branches and loops.

use proptest::prelude::*;

use super::enumerate::enumerated_races;
use super::{certain_races, exhaustive_races, Cmd, Flow, Race, Touch};

#[derive(Debug, Clone)]
struct Prog {
    streams: usize,
    events: usize,
    flow: Vec<Flow>,
}

fn touches(buffers: usize) -> impl Strategy<Value = Vec<Touch>> {
    // Per buffer: 0 untouched, 1 read, 2 written, 3 read and written, 4 a sub-range written.
    proptest::collection::vec(0u8..5, buffers).prop_map(|modes| {
        let mut out = Vec::new();
        for (buffer, m) in modes.into_iter().enumerate() {
            let t = |write, whole| Touch {
                buffer,
                write,
                whole,
            };
            match m {
                1 => out.push(t(false, true)),
                2 => out.push(t(true, true)),
                3 => out.extend([t(false, true), t(true, true)]),
                4 => out.push(t(true, false)),
                _ => {}
            }
        }
        out
    })
}

fn flow(streams: usize, events: usize, buffers: usize) -> impl Strategy<Value = Vec<Flow>> {
    let cmd = prop_oneof![
        4 => (0..streams, touches(buffers)).prop_map(|(stream, touches)| Cmd::Op {
            stmt: 0,
            stream,
            touches,
        }),
        2 => (0..streams, 0..events).prop_map(|(stream, event)| Cmd::Record { stream, event }),
        2 => (0..streams, 0..events).prop_map(|(stream, event)| Cmd::Wait { stream, event }),
        1 => (0..streams, 1..streams).prop_map(move |(stream, d)| Cmd::WaitStream {
            stream,
            other: (stream + d) % streams,
        }),
    ];
    let node = cmd.prop_map(Flow::Cmd).prop_recursive(3, 20, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Flow::Loop),
            (
                proptest::collection::vec(inner.clone(), 0..3),
                proptest::collection::vec(inner, 0..3)
            )
                .prop_map(|(t, e)| Flow::If(t, e)),
        ]
    });
    proptest::collection::vec(node, 1..8).prop_map(|mut flow| {
        number(&mut flow, &mut 0);
        flow
    })
}

/// Numbers the operations in source order.
fn number(flow: &mut [Flow], next: &mut usize) {
    for f in flow {
        match f {
            Flow::Cmd(Cmd::Op { stmt, .. }) => {
                *stmt = *next;
                *next += 1;
            }
            Flow::Cmd(_) => {}
            Flow::Loop(body) => number(body, next),
            Flow::If(t, e) => {
                number(t, next);
                number(e, next);
            }
        }
    }
}

fn program() -> impl Strategy<Value = Prog> {
    (2usize..=4, 1usize..=3, 1usize..=2).prop_flat_map(|(streams, events, buffers)| {
        flow(streams, events, buffers).prop_map(move |flow| Prog {
            streams,
            events,
            flow,
        })
    })
}

fn check(p: &Prog) -> Result<(), TestCaseError> {
    let fast = certain_races(p.streams, p.events, &p.flow);
    let exact = exhaustive_races(p.streams, p.events, &p.flow);
    prop_assert!(fast.complete, "small programs are decided");
    prop_assert_eq!(
        Some(&fast.races),
        exact.as_ref(),
        "pass 1 shortcuts vs pass 2"
    );
    if let Some(old) = enumerated_races(p.streams, p.events, &p.flow) {
        prop_assert_eq!(&fast.races, &old, "vs the enumeration");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn the_analysis_agrees_with_the_enumeration(p in program()) {
        check(&p)?;
    }
}

fn op(stmt: usize, stream: usize, write: bool) -> Flow {
    Flow::Cmd(Cmd::Op {
        stmt,
        stream,
        touches: vec![Touch {
            buffer: 0,
            write,
            whole: true,
        }],
    })
}

#[test]
fn the_first_iteration_races_even_when_later_ones_are_ordered() {
    // main: write x; for { side: read x; side: wait_stream main; }
    let flow = [
        op(0, 0, true),
        Flow::Loop(vec![
            op(1, 1, false),
            Flow::Cmd(Cmd::WaitStream {
                stream: 1,
                other: 0,
            }),
        ]),
    ];
    let a = certain_races(2, 0, &flow);
    assert!(a.complete);
    let expected = Race {
        first: 0,
        second: 1,
        buffer: 0,
        first_writes: true,
        second_writes: false,
        loop_carried: false,
    };
    assert_eq!(a.races, [expected]);
    assert_eq!(enumerated_races(2, 0, &flow), Some(vec![expected]));
}

#[test]
fn many_branches_and_deep_loops_are_decided() {
    // Twenty optional writes alternating between two streams: any two on different streams
    // race whenever both run.
    let flow: Vec<Flow> = (0..20)
        .map(|i| Flow::If(vec![op(i, i % 2, true)], vec![]))
        .collect();
    let a = certain_races(2, 0, &flow);
    assert!(a.complete);
    assert_eq!(a.races.len(), 10 * 10);

    // A write and a read in loops nested two to twelve deep, ordered within an iteration by an
    // event but not across iterations: the read races with the next iteration's write.
    for depth in [2, 3, 12] {
        let mut flow = vec![
            op(0, 0, true),
            Flow::Cmd(Cmd::Record {
                stream: 0,
                event: 0,
            }),
            Flow::Cmd(Cmd::Wait {
                stream: 1,
                event: 0,
            }),
            op(1, 1, false),
        ];
        for _ in 0..depth {
            flow = vec![Flow::Loop(flow)];
        }
        let a = certain_races(2, 1, &flow);
        assert!(a.complete);
        let expected = Race {
            first: 1,
            second: 0,
            buffer: 0,
            first_writes: false,
            second_writes: true,
            loop_carried: true,
        };
        assert_eq!(a.races, [expected], "depth {depth}");
        // The enumeration agrees two deep and gives up from three deep.
        let old = enumerated_races(2, 1, &flow);
        assert_eq!(old, (depth == 2).then(|| vec![expected]), "depth {depth}");
    }
}

#[test]
fn too_many_orderings_leave_the_check_incomplete() {
    // A write on stream 0; thirteen optional `wait_stream`s pass it to streams 1..=13; stream
    // 14 joins them all, then reads: 8,192 distinct orderings, more than pass 2 follows.
    let mut flow = vec![op(0, 0, true)];
    for s in 1..=13 {
        flow.push(Flow::If(
            vec![Flow::Cmd(Cmd::WaitStream {
                stream: s,
                other: 0,
            })],
            vec![],
        ));
    }
    for s in 1..=13 {
        flow.push(Flow::Cmd(Cmd::WaitStream {
            stream: 14,
            other: s,
        }));
    }
    flow.push(op(1, 14, false));
    let a = certain_races(15, 0, &flow);
    assert!(!a.complete);
    assert!(a.races.is_empty());
    // With one optional `wait_stream` fewer it is decided: not certain (any branch orders it).
    flow.remove(1);
    let a = certain_races(15, 0, &flow);
    assert!(a.complete);
    assert!(a.races.is_empty());
}
