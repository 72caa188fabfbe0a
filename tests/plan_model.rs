//! The happens-before model: exact edge sets of hand-made programs (README "The model").
#![allow(clippy::unwrap_used)] // tests may unwrap

mod plan_support;

use std::collections::BTreeSet;

use plan_support::{issue, plan, plan_all};
use streamgraph::AccessMode::{Read, Write};
use streamgraph::{
    AccessMode, Error, EventDecl, Issuer, Location, Pipeline, Program, Statement, StatementKind,
    StaticAccess, StreamDecl,
};
use streamgraph::{Plan, Planner, ProgramBuilder, Via};

fn edges(list: &[(usize, usize)]) -> BTreeSet<(usize, usize)> {
    list.iter().copied().collect()
}

fn w(b: &str) -> [(&str, AccessMode); 1] {
    [(b, Write)]
}

#[test]
fn one_stream_is_a_chain() {
    let mut b = ProgramBuilder::new("Chain");
    let s = b.stream("main");
    for k in ["a", "b", "c"] {
        b.launch(s, k, &w("x"));
    }
    let p = plan_all(b.build());
    assert_eq!(p.edges(), edges(&[(0, 1), (1, 2)]));
    assert_eq!(p.final_frontier(), [2]);
    assert!(p.happens_before(0, 2));
    assert!(!p.happens_before(2, 0));
    assert!(!p.happens_before(1, 1));
    assert_eq!(p.topological_order(), [0, 1, 2]);
    assert!(matches!(p.edge_via(0, 1), Some(Via::Stream)));
}

#[test]
fn streams_without_waits_are_unordered_and_all_joined() {
    let mut b = ProgramBuilder::new("Apart");
    let (s0, s1, s2) = (b.stream("a"), b.stream("b"), b.stream("c"));
    b.launch(s1, "k1", &w("x"));
    b.launch(s0, "k0", &w("y"));
    b.launch(s2, "k2", &w("z"));
    let p = plan_all(b.build());
    assert!(p.edges().is_empty());
    assert_eq!(p.final_frontier(), [0, 1, 2]);
    assert_eq!(p.stream_of(0), Some(s1));
    assert_eq!(p.stream_of(3), None);
}

#[test]
fn fork_join_diamond() {
    let mut b = ProgramBuilder::new("Diamond");
    let (main, side) = (b.stream("main"), b.stream("side"));
    let ready = b.event("ready");
    b.launch(main, "a", &w("x")); // op 0
    b.record(main, ready);
    b.wait(side, ready);
    b.launch(side, "b", &w("y")); // op 1
    b.launch(main, "c", &w("z")); // op 2
    b.wait_stream(main, side);
    b.launch(main, "d", &w("x")); // op 3
    let program = b.build();
    let p = plan_all(program);
    assert_eq!(p.edges(), edges(&[(0, 1), (0, 2), (1, 3), (2, 3)]));
    assert_eq!(p.final_frontier(), [1, 3]);
    assert!(!p.ordered(1, 2));
    assert!(p.happens_before(0, 3));
    match p.edge_via(0, 1) {
        Some(Via::Event { event, wait }) => {
            assert_eq!(event, ready);
            assert_eq!(wait.id, 2);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(p.edge_via(1, 3), Some(Via::WaitStream { stream, .. }) if stream == side));
    assert_eq!(p.predecessors(3), [1, 2]);
    assert_eq!(p.successors(0), [1, 2]);
    assert_eq!(p.ops()[1].label, "launch b #1");
}

#[test]
fn re_record_after_a_wait_keeps_the_old_snapshot() {
    let mut b = ProgramBuilder::new("Rerecord");
    let (s0, s1, s2) = (b.stream("s0"), b.stream("s1"), b.stream("s2"));
    let e = b.event("e");
    b.launch(s0, "a", &w("x")); // op 0
    b.record(s0, e);
    b.wait(s1, e); // snapshot {0}
    b.launch(s0, "b", &w("y")); // op 1
    b.record(s0, e); // re-record: {1}
    b.launch(s1, "c", &w("z")); // op 2: waits for a only
    b.wait(s2, e);
    b.launch(s2, "d", &w("z2")); // op 3: waits for b
    let p = plan_all(b.build());
    assert_eq!(p.edges(), edges(&[(0, 1), (0, 2), (1, 3)]));
    assert!(!p.ordered(1, 2));
}

#[test]
fn waiting_on_a_never_recorded_event_adds_nothing() {
    let mut b = ProgramBuilder::new("Never");
    let (s0, s1) = (b.stream("s0"), b.stream("s1"));
    let (e, f) = (b.event("e"), b.event("f"));
    b.launch(s0, "a", &w("x")); // op 0
    b.wait(s1, e); // never recorded
    b.record(s1, f); // recorded with an empty frontier
    b.wait(s0, f);
    b.launch(s1, "b", &w("y")); // op 1
    b.launch(s0, "c", &w("z")); // op 2
    let p = plan_all(b.build());
    assert_eq!(p.edges(), edges(&[(0, 2)]));
}

#[test]
fn wait_stream_takes_a_snapshot_of_the_other_stream() {
    let mut b = ProgramBuilder::new("Snapshot");
    let (main, side) = (b.stream("main"), b.stream("side"));
    b.launch(main, "a", &w("x")); // op 0
    b.wait_stream(side, main);
    b.launch(main, "b", &w("x")); // op 1: issued later, not waited for
    b.launch(side, "c", &w("y")); // op 2
    let p = plan_all(b.build());
    assert_eq!(p.edges(), edges(&[(0, 1), (0, 2)]));
    assert!(!p.ordered(1, 2));
}

#[test]
fn statements_in_a_loop_are_separate_operations() {
    let mut b = ProgramBuilder::new("Loop");
    let (main, side) = (b.stream("main"), b.stream("side"));
    let e = b.event("e");
    b.launch(main, "k.produce", &w("x"));
    b.record(main, e);
    b.wait(side, e);
    b.launch(side, "k.consume", &[("x", Read)]);
    let program = b.build();
    let body = [0, 1, 2, 3];
    let script: Vec<usize> = body.iter().cycle().take(12).copied().collect();
    let p = plan(program, &script);
    assert_eq!(p.len(), 6);
    assert_eq!(
        p.edges(),
        edges(&[(0, 1), (0, 2), (1, 3), (2, 3), (2, 4), (3, 5), (4, 5)])
    );
    let occurrences: Vec<(usize, u32)> = p
        .ops()
        .iter()
        .map(|o| (o.statement.id, o.occurrence))
        .collect();
    assert_eq!(
        occurrences,
        [(0, 1), (3, 1), (0, 2), (3, 2), (0, 3), (3, 3)]
    );
    assert_eq!(p.ops()[5].label, "launch k.consume #3");
    assert_eq!(p.final_frontier(), [4, 5]);
}

#[test]
fn a_wait_merging_two_sources_gives_two_incoming_edges() {
    let mut b = ProgramBuilder::new("Merge");
    let (s0, s1, s2) = (b.stream("s0"), b.stream("s1"), b.stream("s2"));
    let (e0, e1) = (b.event("e0"), b.event("e1"));
    b.launch(s0, "a", &w("x")); // op 0
    b.record(s0, e0);
    b.launch(s1, "b", &w("y")); // op 1
    b.record(s1, e1);
    b.wait(s2, e0);
    b.wait(s2, e1);
    b.launch(s2, "c", &w("z")); // op 2
    let p = plan_all(b.build());
    assert_eq!(p.edges(), edges(&[(0, 2), (1, 2)]));
    assert_eq!(p.predecessors(2), [0, 1]);
}

#[test]
fn redundant_edges_are_kept() {
    // a → b through e, b → c through f, and a → c because s0's frontier still holds a.
    let mut b = ProgramBuilder::new("Redundant");
    let (s0, s1) = (b.stream("s0"), b.stream("s1"));
    let (e, f) = (b.event("e"), b.event("f"));
    b.launch(s0, "a", &w("x")); // op 0
    b.record(s0, e);
    b.wait(s1, e);
    b.launch(s1, "b", &w("x")); // op 1
    b.record(s1, f);
    b.wait(s0, f);
    b.launch(s0, "c", &w("x")); // op 2
    let p = plan_all(b.build());
    assert_eq!(p.edges(), edges(&[(0, 1), (0, 2), (1, 2)]));
    assert_eq!(p.transitive_reduction(), edges(&[(0, 1), (1, 2)]));
    assert!(p.same_happens_before(&p.transitive_reduction(), 3));
    assert!(!p.same_happens_before(&edges(&[(0, 1)]), 3));
}

#[test]
fn a_frontier_can_hold_two_operations_of_one_stream() {
    let mut b = ProgramBuilder::new("Stale");
    let (s0, s1) = (b.stream("s0"), b.stream("s1"));
    let e = b.event("e");
    b.launch(s1, "a1", &w("x")); // op 0
    b.record(s1, e);
    b.launch(s1, "a2", &w("x")); // op 1
    b.wait(s0, e);
    b.wait_stream(s0, s1); // F(s0) = {0, 1}
    b.launch(s0, "c", &w("y")); // op 2
    let p = plan_all(b.build());
    assert_eq!(p.edges(), edges(&[(0, 1), (0, 2), (1, 2)]));
    assert!(matches!(p.edge_via(0, 2), Some(Via::Event { .. })));
    assert!(matches!(p.edge_via(1, 2), Some(Via::WaitStream { .. })));
}

#[test]
fn many_streams_wait_on_one_event() {
    let mut b = ProgramBuilder::new("Broadcast");
    let streams: Vec<usize> = (0..4).map(|i| b.stream(&format!("s{i}"))).collect();
    let e = b.event("e");
    b.launch(streams[0], "a", &w("x")); // op 0
    b.record(streams[0], e);
    for &s in &streams[1..] {
        b.wait(s, e);
        b.launch(s, "b", &[("x", Read)]); // ops 1, 2, 3
    }
    let p = plan_all(b.build());
    assert_eq!(p.edges(), edges(&[(0, 1), (0, 2), (0, 3)]));
    assert_eq!(p.final_frontier(), [0, 1, 2, 3]);
    p.check_races().unwrap();
}

#[test]
fn a_record_without_operations_forwards_the_merged_frontier() {
    let mut b = ProgramBuilder::new("Forward");
    let (s0, s1, s2) = (b.stream("s0"), b.stream("s1"), b.stream("s2"));
    let (e, f) = (b.event("e"), b.event("f"));
    b.launch(s0, "a", &w("x")); // op 0
    b.record(s0, e);
    b.wait(s1, e);
    b.record(s1, f); // E(f) = {0}
    b.wait(s2, f);
    b.launch(s2, "c", &w("y")); // op 1
    b.wait_stream(s0, s0); // waiting for oneself changes nothing
    b.launch(s0, "d", &w("z")); // op 2
    let p = plan_all(b.build());
    assert_eq!(p.edges(), edges(&[(0, 1), (0, 2)]));
    // s1 issued nothing but its frontier {0} is still joined (once).
    assert_eq!(p.final_frontier(), [0, 1, 2]);
}

#[test]
fn fills_and_host_functions_are_nodes() {
    let mut b = ProgramBuilder::new("Kinds");
    let (s0, s1) = (b.stream("s0"), b.stream("s1"));
    b.fill(s0, "x"); // op 0
    b.host(s0); // op 1
    b.wait_stream(s1, s0);
    b.launch(s1, "k", &[("x", Read)]); // op 2
    let p = plan_all(b.build());
    assert_eq!(p.edges(), edges(&[(0, 1), (1, 2)]));
    assert_eq!(p.ops()[0].accesses.len(), 1);
    assert_eq!(p.ops()[0].accesses[0].mode, Write);
    assert!(p.ops()[1].accesses.is_empty());
    assert_eq!(p.ops()[0].label, "fill x = 0 #1");
    // launch accesses: one per buffer argument, none for the scalar.
    assert_eq!(p.ops()[2].accesses.len(), 1);
    assert_eq!(p.ops()[2].accesses[0].mode, Read);
}

#[test]
fn the_planner_exposes_frontiers_and_snapshots_while_issuing() {
    let mut b = ProgramBuilder::new("Peek");
    let (s0, s1) = (b.stream("s0"), b.stream("s1"));
    let e = b.event("e");
    b.launch(s0, "a", &w("x"));
    b.record(s0, e);
    b.wait(s1, e);
    let program = b.build();
    let mut planner = Planner::new(program);
    let none = Default::default();
    issue(&mut planner, program, 0, &none).unwrap();
    assert_eq!(planner.frontier(s0), [0]);
    assert!(planner.snapshot(e).is_empty());
    issue(&mut planner, program, 1, &none).unwrap();
    assert_eq!(planner.snapshot(e), [0]);
    assert!(planner.frontier(s1).is_empty());
    issue(&mut planner, program, 2, &none).unwrap();
    assert_eq!(planner.frontier(s1), [0]);
    assert_eq!(planner.ops().len(), 1);
}

fn error_of(program: &'static Program, id: usize) -> String {
    let mut planner = Planner::new(program);
    let err = issue(&mut planner, program, id, &Default::default()).unwrap_err();
    assert!(
        matches!(err, Error::Statement { statement, .. } if statement.id == id),
        "{err:?}"
    );
    err.to_string()
}

#[test]
fn wrong_indices_are_errors_naming_the_statement() {
    let mut b = ProgramBuilder::new("Broken");
    b.file("broken.rs");
    let s0 = b.stream("s0");
    let e = b.event("e");
    b.launch(5, "k", &w("x")); // 0
    b.record(s0, 3); // 1
    b.wait(s0, 9); // 2
    b.wait_stream(s0, 4); // 3
    b.record(7, e); // 4
    let program = b.build();
    let msg = error_of(program, 0);
    assert!(
        msg.contains("launch k(&mut x)") && msg.contains("broken.rs:1:5"),
        "{msg}"
    );
    assert!(msg.contains("stream index 5 is out of range"), "{msg}");
    assert!(error_of(program, 1).contains("event index 3 is out of range"));
    assert!(error_of(program, 2).contains("event index 9 is out of range"));
    assert!(error_of(program, 3).contains("waited-for stream index 4 is out of range"));
    assert!(error_of(program, 4).contains("stream index 7 is out of range"));
}

#[test]
fn a_statement_issued_as_the_wrong_kind_is_an_error() {
    let mut b = ProgramBuilder::new("Mismatch");
    let s0 = b.stream("s0");
    b.launch(s0, "k", &w("x"));
    let program = b.build();
    let mut planner = Planner::new(program);
    let err = planner.record(&program.statements[0]).unwrap_err();
    assert!(err.to_string().contains("issued as a `record`"), "{err}");
    assert!(planner.finish().is_empty());
}

// A pipeline written by hand the way `pipeline!` writes one: a constant program and an
// `issue` method that walks it.
static ACCESS_X_W: [StaticAccess; 1] = [StaticAccess {
    buffer: "x",
    mode: Write,
    whole: true,
}];
static ACCESS_X_R: [StaticAccess; 1] = [StaticAccess {
    buffer: "x",
    mode: Read,
    whole: true,
}];
const fn at(line: u32) -> Location {
    Location {
        file: "tests/plan_model.rs",
        line,
        column: 9,
    }
}

struct Handmade<'a> {
    x: &'a mut streamgraph::DeviceBuffer<f32>,
    synced: bool,
}

static HANDMADE: Program = Program {
    name: "Handmade",
    streams: &[
        StreamDecl {
            name: "main",
            location: at(1),
        },
        StreamDecl {
            name: "side",
            location: at(2),
        },
    ],
    events: &[EventDecl {
        name: "ready",
        location: at(3),
    }],
    statements: &[
        Statement {
            id: 0,
            stream: 0,
            kind: StatementKind::Launch { kernel: "k.write" },
            text: "main: launch k.write<<<1, 32>>>(&mut x)",
            accesses: &ACCESS_X_W,
            location: at(4),
        },
        Statement {
            id: 1,
            stream: 0,
            kind: StatementKind::Record { event: 0 },
            text: "main: record ready",
            accesses: &[],
            location: at(5),
        },
        Statement {
            id: 2,
            stream: 1,
            kind: StatementKind::Wait { event: 0 },
            text: "side: wait ready",
            accesses: &[],
            location: at(6),
        },
        Statement {
            id: 3,
            stream: 1,
            kind: StatementKind::Launch { kernel: "k.read" },
            text: "side: launch k.read<<<1, 32>>>(&x)",
            accesses: &ACCESS_X_R,
            location: at(7),
        },
    ],
    temps: &[],
    location: at(1),
};

impl Pipeline for Handmade<'_> {
    fn program(&self) -> &'static Program {
        &HANDMADE
    }

    fn stream_options(&self) -> std::borrow::Cow<'static, [streamgraph::StreamOptions]> {
        std::borrow::Cow::Owned(vec![Default::default(); 2])
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        use streamgraph::__private::{arg_read, arg_write};
        let s = HANDMADE.statements;
        let k = streamgraph::Kernel::for_planning("k");
        let cfg = plan_support::config();
        issuer.launch(&s[0], &k, cfg, &[arg_write(&self.x)])?;
        if self.synced {
            issuer.record(&s[1])?;
            issuer.wait(&s[2])?;
        }
        issuer.launch(&s[3], &k, cfg, &[arg_read(&*self.x)])
    }
}

#[test]
fn plan_build_issues_a_pipeline_through_the_planner() {
    let mut x = streamgraph::DeviceBuffer::<f32>::for_planning(1024).unwrap();
    let synced = Handmade {
        x: &mut x,
        synced: true,
    };
    let p: Plan = Plan::build(&synced).unwrap();
    assert_eq!(p.edges(), edges(&[(0, 1)]));
    p.check_races().unwrap();

    let mut y = streamgraph::DeviceBuffer::for_planning(1024).unwrap();
    let racy = Handmade {
        x: &mut y,
        synced: false,
    };
    let p = Plan::build(&racy).unwrap();
    assert!(p.edges().is_empty());
    let err = p.check_races().unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("tests/plan_model.rs:4:9") && msg.contains("tests/plan_model.rs:7:9"),
        "{msg}"
    );
    assert!(
        msg.contains("`main: launch k.write<<<1, 32>>>(&mut x)`"),
        "{msg}"
    );
}

#[test]
fn transitive_reduction_and_topological_order_of_a_wider_program() {
    let mut b = ProgramBuilder::new("Wide");
    let (s0, s1, s2) = (b.stream("s0"), b.stream("s1"), b.stream("s2"));
    let e = b.event("e");
    b.launch(s0, "a", &w("x")); // 0
    b.record(s0, e);
    b.wait(s1, e);
    b.wait(s2, e);
    b.launch(s1, "b", &w("y")); // 1
    b.launch(s2, "c", &w("z")); // 2
    b.wait_stream(s1, s2);
    b.wait(s1, e); // already ordered: redundant edge 0 → 3
    b.launch(s1, "d", &w("y")); // 3
    let p = plan_all(b.build());
    assert_eq!(p.edges(), edges(&[(0, 1), (0, 2), (0, 3), (1, 3), (2, 3)]));
    assert_eq!(
        p.transitive_reduction(),
        edges(&[(0, 1), (0, 2), (1, 3), (2, 3)])
    );
    let order = p.topological_order();
    let pos = |op: usize| order.iter().position(|&o| o == op).unwrap();
    for (a, b) in p.edges() {
        assert!(pos(a) < pos(b));
    }
    assert_eq!(p.len(), 4);
}
