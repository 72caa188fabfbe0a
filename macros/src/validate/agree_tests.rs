//! The static race check and the run-time plan's race check agree on straight-line programs.
//!
//! Each program is built three ways and its racing statement pairs compared:
//!
//! 1. as the analysis model ([`race::Cmd`]s) given to [`race::straight_line_races`];
//! 2. as `pipeline!` source tokens taken through the macro's front end (parse, resolve,
//!    [`to_flow`], [`race::certain_races`], as `no_static_races` does), which also checks the
//!    statement-to-model mapping and the diagnostics `validate` reports;
//! 3. as a run-time [`Program`](streamgraph_runtime::Program) issued through the
//!    [`Planner`] with plan-only buffers and kernel, then [`Plan::races`](streamgraph_runtime::Plan::races).
//!
//! Waits on events never recorded earlier are generated on purpose. The race analysis takes
//! them as input and treats them as an empty snapshot (README "The model"), as the plan does; the
//! macro rejects them with a separate diagnostic (`waits_follow_records`) while still running
//! the race check, so the front end is asked for both and the diagnostic is checked to name
//! exactly those waits. `wait_stream` always names another stream, since waiting for oneself
//! is rejected by its own rule and is a no-op in both models.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::TokenStream;
use proptest::prelude::*;
use quote::{format_ident, quote};
use streamgraph_runtime::__private::{arg_place, arg_read, place};
use streamgraph_runtime::{
    AccessMode, DeviceBuffer, DeviceMemory, Dim3, Issuer, Kernel, LaunchConfig,
};
use streamgraph_runtime::{Planner, ProgramBuilder};

use super::data_races::to_flow;
use super::race::{self, Cmd, Touch};
use super::{validate, MAX_RACE_DIAGNOSTICS};
use crate::model::{Errors, Program};

/// One straight-line statement; indices name streams `s{i}`, events `e{i}`, buffers `b{i}`.
#[derive(Debug, Clone)]
enum St {
    /// A launch touching whole buffers: `(buffer, writes)`, each buffer at most once.
    Launch {
        stream: usize,
        touches: Vec<(usize, bool)>,
    },
    Record {
        stream: usize,
        event: usize,
    },
    Wait {
        stream: usize,
        event: usize,
    },
    WaitStream {
        stream: usize,
        other: usize,
    },
}

#[derive(Debug, Clone)]
struct Prog {
    streams: usize,
    events: usize,
    buffers: usize,
    stmts: Vec<St>,
}

/// Racing statement pairs `(first issued, second issued)` and, per pair, the buffers they
/// conflict on.
type Races = BTreeMap<(usize, usize), BTreeSet<usize>>;

fn model_races(p: &Prog) -> Races {
    let cmds: Vec<Cmd> = p
        .stmts
        .iter()
        .enumerate()
        .map(|(i, s)| match *s {
            St::Launch {
                stream,
                ref touches,
            } => Cmd::Op {
                stmt: i,
                stream,
                touches: touches
                    .iter()
                    .map(|&(buffer, write)| Touch {
                        buffer,
                        write,
                        whole: true,
                    })
                    .collect(),
            },
            St::Record { stream, event } => Cmd::Record { stream, event },
            St::Wait { stream, event } => Cmd::Wait { stream, event },
            St::WaitStream { stream, other } => Cmd::WaitStream { stream, other },
        })
        .collect();
    let mut out = Races::new();
    for r in race::straight_line_races(p.streams, p.events, &cmds) {
        assert!(!r.loop_carried, "{r:?} in a straight-line program");
        out.entry((r.first, r.second)).or_default().insert(r.buffer);
    }
    out
}

fn source(p: &Prog) -> TokenStream {
    let buffers = (0..p.buffers).map(|b| format_ident!("b{b}"));
    let streams = (0..p.streams).map(|s| format_ident!("s{s}"));
    let events = (0..p.events).map(|e| format_ident!("e{e}"));
    let stmts = p.stmts.iter().map(|s| match *s {
        St::Launch {
            stream,
            ref touches,
        } => {
            let stream = format_ident!("s{stream}");
            let args = touches.iter().map(|&(b, write)| {
                let b = format_ident!("b{b}");
                if write {
                    quote!(&mut #b)
                } else {
                    quote!(&#b)
                }
            });
            quote!(#stream: launch k.f<<<1, 1>>>(#(#args),*);)
        }
        St::Record { stream, event } => {
            let (s, e) = (format_ident!("s{stream}"), format_ident!("e{event}"));
            quote!(#s: record #e;)
        }
        St::Wait { stream, event } => {
            let (s, e) = (format_ident!("s{stream}"), format_ident!("e{event}"));
            quote!(#s: wait #e;)
        }
        St::WaitStream { stream, other } => {
            let (s, o) = (format_ident!("s{stream}"), format_ident!("s{other}"));
            quote!(#s: wait_stream #o;)
        }
    });
    quote! {
        pipeline P(#(#buffers: &mut B,)* k: &K) {
            #(stream #streams;)*
            #(event #events;)*
            #(#stmts)*
        }
    }
}

/// What the macro's front end reports for a program.
struct Frontend {
    races: Races,
    /// `data race on …` diagnostics.
    race_errors: usize,
    /// `N` of the `and N more data races …` diagnostic, if any.
    unlisted_races: Option<usize>,
    /// Statements named by "waits for event …, which no earlier statement records".
    unrecorded_waits: BTreeSet<String>,
}

fn frontend(p: &Prog) -> Frontend {
    let input: crate::syntax::Input = syn::parse2(source(p)).unwrap();
    let mut errors = Errors::default();
    let program = Program::from_syntax(input, &mut errors);
    assert_eq!(program.statements.len(), p.stmts.len());
    let buffers = super::data_races::buffer_names(&program);
    let flow = to_flow(&program.body, &program, &buffers);
    let mut races = Races::new();
    let analysis = race::certain_races(program.streams.len(), program.events.len(), &flow);
    assert!(
        analysis.complete,
        "straight-line programs are always decided"
    );
    for r in analysis.races {
        assert!(!r.loop_carried, "{r:?} in a straight-line program");
        let buffer = buffers[r.buffer].to_string();
        let buffer: usize = buffer.trim_start_matches('b').parse().unwrap();
        races.entry((r.first, r.second)).or_default().insert(buffer);
    }
    validate(&program, &mut errors);
    let mut race_errors = 0;
    let mut unlisted_races = None;
    let mut unrecorded_waits = BTreeSet::new();
    for message in errors
        .into_vec()
        .into_iter()
        .flatten()
        .map(|e| e.to_string())
    {
        if message.starts_with("data race on `") {
            race_errors += 1;
        } else if let Some(rest) = message.strip_prefix("and ") {
            let (n, tail) = rest.split_once(' ').unwrap();
            assert!(tail.starts_with("more data race"), "{message}");
            assert!(unlisted_races.replace(n.parse().unwrap()).is_none());
        } else if let Some(rest) = message.strip_prefix('`') {
            let (stmt, tail) = rest.split_once('`').unwrap();
            assert!(
                tail.starts_with(" waits for event ") && tail.contains("which no earlier"),
                "unexpected diagnostic: {message}"
            );
            unrecorded_waits.insert(stmt.to_owned());
        } else {
            assert!(
                message.starts_with("the other side of the data race"),
                "unexpected diagnostic: {message}"
            );
        }
    }
    Frontend {
        races,
        race_errors,
        unlisted_races,
        unrecorded_waits,
    }
}

fn runtime_races(p: &Prog) -> Races {
    let mut b = ProgramBuilder::new("Agree");
    for s in 0..p.streams {
        b.stream(&format!("s{s}"));
    }
    for e in 0..p.events {
        b.event(&format!("e{e}"));
    }
    let names: Vec<String> = (0..p.buffers).map(|i| format!("b{i}")).collect();
    let mode = |write: bool| {
        if write {
            AccessMode::Write
        } else {
            AccessMode::Read
        }
    };
    for st in &p.stmts {
        match *st {
            St::Launch {
                stream,
                ref touches,
            } => {
                let args: Vec<(&str, AccessMode)> = touches
                    .iter()
                    .map(|&(b, w)| (names[b].as_str(), mode(w)))
                    .collect();
                b.launch(stream, "k.f", &args)
            }
            St::Record { stream, event } => b.record(stream, event),
            St::Wait { stream, event } => b.wait(stream, event),
            St::WaitStream { stream, other } => b.wait_stream(stream, other),
        };
    }
    let program = b.build();

    let mut buffers: Vec<DeviceBuffer<f32>> = (0..p.buffers)
        .map(|_| DeviceBuffer::for_planning(64).unwrap())
        .collect();
    let kernel = Kernel::for_planning("f");
    let config = LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from(1),
        shared_mem_bytes: 0,
    };
    let mut planner = Planner::new(program);
    // Launches write the buffers through this exclusive borrow, as a pipeline's `&mut` does.
    let written = &mut buffers;
    for (st, stmt) in p.stmts.iter().zip(program.statements) {
        match st {
            St::Launch { touches, .. } => {
                let args: Vec<_> = touches
                    .iter()
                    .map(|&(b, w)| {
                        if w {
                            arg_place(place(&written).index(b)).unwrap()
                        } else {
                            arg_read(&written[b])
                        }
                    })
                    .collect();
                planner.launch(stmt, &kernel, config, &args)
            }
            St::Record { .. } => planner.record(stmt),
            St::Wait { .. } => planner.wait(stmt),
            St::WaitStream { .. } => planner.wait_stream(stmt),
        }
        .unwrap();
    }
    let plan = planner.finish();

    let mut out = Races::new();
    for r in plan.races() {
        let buffer = buffers
            .iter()
            .position(|b| b.range() == r.first.access.range)
            .unwrap();
        let key = (r.first.statement.id, r.second.statement.id);
        assert!(key.0 < key.1, "{key:?}: sides out of issue order");
        assert!(out.insert(key, BTreeSet::from([buffer])).is_none());
    }
    out
}

/// The waits the front end must reject: no earlier statement records their event.
fn unrecorded_waits(p: &Prog) -> BTreeSet<String> {
    let mut recorded = BTreeSet::new();
    let mut out = BTreeSet::new();
    for st in &p.stmts {
        match *st {
            St::Record { event, .. } => {
                recorded.insert(event);
            }
            St::Wait { stream, event } if !recorded.contains(&event) => {
                out.insert(format!("s{stream}: wait e{event}"));
            }
            _ => {}
        }
    }
    out
}

/// Checks that all three agree on `p`, returning the racing pairs.
fn agreed_pairs(p: &Prog) -> BTreeSet<(usize, usize)> {
    let model = model_races(p);
    let front = frontend(p);
    let runtime = runtime_races(p);
    assert_eq!(front.races, model, "front end vs analysis model");
    let pairs: BTreeSet<_> = model.keys().copied().collect();
    let runtime_pairs: BTreeSet<_> = runtime.keys().copied().collect();
    assert_eq!(
        runtime_pairs, pairs,
        "run-time plan (left) vs static check (right)"
    );
    // The plan reports one conflicting access per pair; it must be one the static check saw.
    for (key, buffers) in &runtime {
        assert!(buffers.is_subset(&model[key]), "{key:?}: {buffers:?}");
    }
    // One diagnostic per racing pair and buffer, up to the cap; one more counts the rest.
    let total = model.values().map(BTreeSet::len).sum::<usize>();
    let listed = total.min(MAX_RACE_DIAGNOSTICS);
    assert_eq!(
        (front.race_errors, front.unlisted_races),
        (listed, (total > listed).then_some(total - listed)),
        "one diagnostic per racing pair and buffer, at most {MAX_RACE_DIAGNOSTICS}"
    );
    assert_eq!(front.unrecorded_waits, unrecorded_waits(p));
    pairs
}

fn program() -> impl Strategy<Value = Prog> {
    (2usize..=6, 1usize..=4, 1usize..=4).prop_flat_map(|(streams, events, buffers)| {
        // Per buffer: 0 untouched, 1 read, 2 written.
        let launch =
            (0..streams, proptest::collection::vec(0u8..3, buffers)).prop_map(|(stream, modes)| {
                St::Launch {
                    stream,
                    touches: modes
                        .iter()
                        .enumerate()
                        .filter(|&(_, &m)| m > 0)
                        .map(|(b, &m)| (b, m == 2))
                        .collect(),
                }
            });
        let stmt = prop_oneof![
            45 => launch,
            20 => (0..streams, 0..events).prop_map(|(stream, event)| St::Record { stream, event }),
            20 => (0..streams, 0..events).prop_map(|(stream, event)| St::Wait { stream, event }),
            15 => (0..streams, 1..streams).prop_map(move |(stream, d)| St::WaitStream {
                stream,
                other: (stream + d) % streams,
            }),
        ];
        proptest::collection::vec(stmt, 0..=64).prop_map(move |stmts| Prog {
            streams,
            events,
            buffers,
            stmts,
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn static_and_runtime_race_checks_agree_on_straight_line_programs(p in program()) {
        agreed_pairs(&p);
    }
}

fn launch(stream: usize, touches: &[(usize, bool)]) -> St {
    St::Launch {
        stream,
        touches: touches.to_vec(),
    }
}

fn prog(streams: usize, events: usize, buffers: usize, stmts: Vec<St>) -> Prog {
    Prog {
        streams,
        events,
        buffers,
        stmts,
    }
}

const W: bool = true;
const R: bool = false;

#[test]
fn unordered_write_and_read_race() {
    // s0: launch(&mut b0); s1: launch(&b0)
    let p = prog(2, 1, 1, vec![launch(0, &[(0, W)]), launch(1, &[(0, R)])]);
    assert_eq!(agreed_pairs(&p), BTreeSet::from([(0, 1)]));
}

#[test]
fn record_and_wait_order_the_pair() {
    let p = prog(
        2,
        1,
        1,
        vec![
            launch(0, &[(0, W)]),
            St::Record {
                stream: 0,
                event: 0,
            },
            St::Wait {
                stream: 1,
                event: 0,
            },
            launch(1, &[(0, R)]),
        ],
    );
    assert_eq!(agreed_pairs(&p), BTreeSet::new());
}

#[test]
fn wait_stream_orders_what_was_issued_at_the_call() {
    // 0 s0: write b0; 1 s1: wait_stream s0; 2 s1: write b0 (after 0); 3 s0: read b0 (issued
    // after the wait_stream, so 2 and 3 race).
    let p = prog(
        2,
        1,
        1,
        vec![
            launch(0, &[(0, W)]),
            St::WaitStream {
                stream: 1,
                other: 0,
            },
            launch(1, &[(0, W)]),
            launch(0, &[(0, R)]),
        ],
    );
    assert_eq!(agreed_pairs(&p), BTreeSet::from([(2, 3)]));
}

#[test]
fn a_re_record_after_a_wait_leaves_the_wait_on_the_old_snapshot() {
    let p = prog(
        3,
        1,
        2,
        vec![
            launch(0, &[(0, W)]), // 0
            St::Record {
                stream: 0,
                event: 0,
            }, // 1: snapshot {0}
            St::Wait {
                stream: 1,
                event: 0,
            }, // 2: s1 after 0
            launch(0, &[(1, W)]), // 3
            St::Record {
                stream: 0,
                event: 0,
            }, // 4: re-record, snapshot {3}
            launch(1, &[(0, R), (1, R)]), // 5: after 0, not after 3
            St::Wait {
                stream: 2,
                event: 0,
            }, // 6: s2 after 3 (and 0)
            launch(2, &[(0, W)]), // 7: unordered with 5
        ],
    );
    assert_eq!(agreed_pairs(&p), BTreeSet::from([(3, 5), (5, 7)]));
}

#[test]
fn a_re_record_replaces_the_snapshot() {
    // The wait sees s2's empty frontier, not the write recorded first.
    let p = prog(
        3,
        1,
        1,
        vec![
            launch(0, &[(0, W)]),
            St::Record {
                stream: 0,
                event: 0,
            },
            St::Record {
                stream: 2,
                event: 0,
            },
            St::Wait {
                stream: 1,
                event: 0,
            },
            launch(1, &[(0, R)]),
        ],
    );
    assert_eq!(agreed_pairs(&p), BTreeSet::from([(0, 4)]));
}

#[test]
fn a_wait_before_any_record_orders_nothing() {
    let p = prog(
        2,
        1,
        1,
        vec![
            St::Wait {
                stream: 1,
                event: 0,
            },
            launch(0, &[(0, W)]),
            St::Record {
                stream: 0,
                event: 0,
            },
            launch(1, &[(0, R)]),
        ],
    );
    assert_eq!(agreed_pairs(&p), BTreeSet::from([(1, 3)]));
}
