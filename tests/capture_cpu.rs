//! What capture checks without a GPU: the comparison of a captured graph's edges with the
//! plan (missing edges, extra edges, equal reachability with different edges), the DOT
//! pictures, and the thread-safety of the graph types.
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::collections::BTreeSet;

use streamgraph::__private::arg_read;
use streamgraph::testing::RandomProgram;
use streamgraph::testing::{captured_dot, side_by_side_dot, verify_edges};
use streamgraph::AccessMode::{Read, Write};
use streamgraph::{
    Capture, DeviceBuffer, Dim3, Error, Graph, GraphExec, Issuer, Kernel, KernelArg, LaunchConfig,
};
use streamgraph::{Plan, Planner, ProgramBuilder};

/// main: launch scale(&mut x); record ready / side: wait ready; launch axpy(&mut y, &x) /
/// main: wait_stream side; launch sum(&x, &y). Edges: 0→1, 0→2, 1→2.
fn diamond() -> Plan {
    let mut b = ProgramBuilder::new("Diamond");
    let (main, side) = (b.stream("main"), b.stream("side"));
    let ready = b.event("ready");
    b.launch(main, "scale", &[("x", Write)]);
    b.record(main, ready);
    b.wait(side, ready);
    b.launch(side, "axpy", &[("y", Write), ("x", Read)]);
    b.wait_stream(main, side);
    b.launch(main, "sum", &[("x", Read), ("y", Read)]);
    let program = b.build();
    let s = &program.statements;
    let (mut x, mut y) = (
        DeviceBuffer::<f32>::for_planning(16).unwrap(),
        DeviceBuffer::<f32>::for_planning(16).unwrap(),
    );
    let k = Kernel::for_planning("k");
    let cfg = LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from(16),
        shared_mem_bytes: 0,
    };
    let mut planner = Planner::new(program);
    planner
        .launch(&s[0], &k, cfg, &[KernelArg::write(&mut x)])
        .unwrap();
    planner.record(&s[1]).unwrap();
    planner.wait(&s[2]).unwrap();
    planner
        .launch(&s[3], &k, cfg, &[KernelArg::write(&mut y), arg_read(&x)])
        .unwrap();
    planner.wait_stream(&s[4]).unwrap();
    planner
        .launch(&s[5], &k, cfg, &[arg_read(&x), arg_read(&y)])
        .unwrap();
    planner.finish()
}

fn set(edges: &[(usize, usize)]) -> BTreeSet<(usize, usize)> {
    edges.iter().copied().collect()
}

#[test]
fn equal_edges_verify() {
    let plan = diamond();
    let report = verify_edges(&plan, &set(&[(0, 1), (0, 2), (1, 2)])).unwrap();
    assert_eq!(report.pipeline, "Diamond");
    assert_eq!((report.operations, report.edges), (3, 3));
}

#[test]
fn a_missing_edge_is_named_by_statement_and_location() {
    let plan = diamond();
    let e = verify_edges(&plan, &set(&[(0, 1), (0, 2)])).unwrap_err();
    let Error::GraphMismatch {
        missing,
        extra,
        problems,
        ..
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!(missing.len(), 1);
    assert!(extra.is_empty());
    assert_eq!((missing[0].from.index, missing[0].to.index), (1, 2));
    assert!(problems.iter().any(|p| p.contains("ordered differently")));
    let msg = e.to_string();
    assert!(msg.contains("1 missing edge(s), 0 extra edge(s)"), "{msg}");
    let from = plan.ops()[1].statement;
    let to = plan.ops()[2].statement;
    assert!(
        msg.contains(&format!(
            "missing: `{}` #1 at {} -> `{}` #1 at {}",
            from.text, from.location, to.text, to.location
        )),
        "{msg}"
    );
}

#[test]
fn an_extra_edge_is_a_mismatch() {
    let plan = diamond();
    let mut edges = set(&[(0, 1), (0, 2), (1, 2)]);
    edges.insert((2, 1)); // a cycle the plan never has
    let e = verify_edges(&plan, &edges).unwrap_err();
    let Error::GraphMismatch { missing, extra, .. } = &e else { panic!("{e}") };
    assert!(missing.is_empty());
    assert_eq!((extra[0].from.index, extra[0].to.index), (2, 1));
    assert!(e.to_string().contains("extra: `"), "{e}");
}

#[test]
fn same_reachability_with_other_edges_is_still_a_mismatch() {
    // The driver keeps redundant edges (0→2 besides 0→1→2); a graph without it orders the
    // same pairs but is not what capture produces.
    let plan = diamond();
    let e = verify_edges(&plan, &set(&[(0, 1), (1, 2)])).unwrap_err();
    let Error::GraphMismatch {
        missing, problems, ..
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!((missing[0].from.index, missing[0].to.index), (0, 2));
    assert!(
        problems
            .iter()
            .any(|p| p.contains("orderings (reachability) are equal")),
        "{problems:?}"
    );
    assert!(plan.same_happens_before(&set(&[(0, 1), (1, 2)]), 3));
}

#[test]
fn orderings_that_differ_are_counted_and_named() {
    // Without axpy → sum, the two are unordered: exactly one pair differs.
    let plan = diamond();
    let e = verify_edges(&plan, &set(&[(0, 1), (0, 2)])).unwrap_err();
    let msg = e.to_string();
    let (axpy, sum) = (plan.ops()[1].statement, plan.ops()[2].statement);
    assert!(
        msg.contains(&format!(
            "1 pair(s) of operations are ordered differently (happens-before differs), e.g. `{}` #1 at {} / `{}` #1 at {}",
            axpy.text, axpy.location, sum.text, sum.location
        )),
        "{msg}"
    );
    // An edge against issue order orders what the plan leaves open; with it the count is
    // only a lower bound.
    let e = verify_edges(&plan, &set(&[(0, 1), (0, 2), (1, 2), (2, 1)])).unwrap_err();
    assert!(
        e.to_string()
            .contains("at least 1 pair(s) of operations are ordered differently"),
        "{e}"
    );
}

#[test]
fn a_long_capture_is_compared_without_a_quadratic_matrix() {
    // One stream of 100,000 operations: the plan is a chain. A capture that lacks one
    // program-order edge in the middle unorders every operation before it from every one
    // after it; the clocks say so without a 100,000² matrix.
    let mut b = ProgramBuilder::new("Long");
    let main = b.stream("main");
    b.launch(main, "k", &[("x", Write)]);
    let program = b.build();
    let mut x = DeviceBuffer::<f32>::for_planning(16).unwrap();
    let k = Kernel::for_planning("k");
    let cfg = LaunchConfig {
        grid: Dim3::from(1),
        block: Dim3::from(16),
        shared_mem_bytes: 0,
    };
    let mut planner = Planner::new(program);
    for _ in 0..100_000 {
        planner
            .launch(&program.statements[0], &k, cfg, &[KernelArg::write(&mut x)])
            .unwrap();
    }
    let plan = planner.finish();
    assert!(plan.happens_before(0, 99_999));
    let mut edges = plan.edges();
    verify_edges(&plan, &edges).unwrap();
    edges.remove(&(50_000, 50_001));
    let e = verify_edges(&plan, &edges).unwrap_err();
    let Error::GraphMismatch {
        missing, problems, ..
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!(
        (missing[0].from.index, missing[0].to.index),
        (50_000, 50_001)
    );
    // Each of the first 50,001 operations no longer precedes operation 50,001 (and those
    // after it, which the count leaves out: it is a lower bound here).
    assert!(
        problems.iter().any(|p| p
            .contains("at least 50001 pair(s) of operations are ordered differently")
            && p.contains("#1 at <Long>:1:5 / `launch k(&mut x)` #50002")),
        "{problems:?}"
    );
    assert!(!plan.same_happens_before(&edges, plan.len()));
}

#[test]
fn edges_to_unknown_operations_are_reported_not_panicked_on() {
    let plan = diamond();
    let e = verify_edges(&plan, &set(&[(0, 1), (0, 2), (1, 2), (2, 7)])).unwrap_err();
    assert!(
        e.to_string()
            .contains("names an operation the plan does not have"),
        "{e}"
    );
}

#[test]
fn random_plans_verify_against_their_own_edges() {
    for seed in 0..50 {
        let plan = RandomProgram::new(seed).plan().unwrap();
        verify_edges(&plan, &plan.edges()).unwrap();
        // Dropping any one edge is always caught.
        if let Some(&first) = plan.edges().iter().next() {
            let mut fewer = plan.edges();
            fewer.remove(&first);
            assert!(verify_edges(&plan, &fewer).is_err(), "seed {seed}");
        }
    }
}

#[test]
fn dot_of_a_synthetic_captured_graph() {
    let plan = diamond();
    let dot = captured_dot(&plan, &set(&[(0, 1), (1, 2), (2, 0)]));
    assert!(dot.starts_with("digraph \"Diamond\" {"), "{dot}");
    assert!(dot.contains("subgraph cluster_c0"), "{dot}");
    assert!(dot.contains("label=\"stream side\""), "{dot}");
    assert!(dot.contains("c0 [label=\"launch scale #1"), "{dot}");
    assert!(dot.contains("c0 -> c1;"), "{dot}");
    assert!(
        dot.contains("c2 -> c0 [color=red, penwidth=2];"),
        "edges the plan lacks are red: {dot}"
    );
    assert!(dot.trim_end().ends_with('}'));

    let both = side_by_side_dot(&plan, &set(&[(0, 1), (1, 2)]));
    assert!(both.contains("subgraph cluster_plan"), "{both}");
    assert!(both.contains("subgraph cluster_captured"), "{both}");
    assert!(
        both.contains("p0 -> p2 [color=red, penwidth=2];"),
        "the plan's edge that the capture lacks is red: {both}"
    );
    assert!(both.contains("c0 -> c1;"), "{both}");
}

/// Graph types move between threads with their pipeline (and are never shared: see the
/// `graph_exec_not_sync` UI case).
#[test]
fn graphs_are_send() {
    fn send<T: Send>() {}
    struct P;
    impl streamgraph::Pipeline for P {
        fn program(&self) -> &'static streamgraph::Program {
            &EMPTY
        }
        fn stream_options(&self) -> std::borrow::Cow<'static, [streamgraph::StreamOptions]> {
            std::borrow::Cow::Owned(Vec::new())
        }
        fn issue<I: Issuer + ?Sized>(&self, _: &mut I) -> Result<(), Error> {
            Ok(())
        }
    }
    static EMPTY: streamgraph::Program = streamgraph::Program {
        name: "Empty",
        streams: &[],
        events: &[],
        statements: &[],
        temps: &[],
        location: streamgraph::Location::UNKNOWN,
    };
    send::<Graph<P>>();
    send::<GraphExec<P>>();
    send::<Capture>();
}
