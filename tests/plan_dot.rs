//! The plan as Graphviz DOT.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod plan_support;

use plan_support::plan_all;
use streamgraph::AccessMode::{Read, Write};
use streamgraph::ProgramBuilder;

#[test]
fn dot_of_a_diamond() {
    let mut b = ProgramBuilder::new("Diamond");
    b.file("src/diamond.rs");
    let (main, side) = (b.stream("main"), b.stream("side"));
    let ready = b.event("ready");
    b.launch(main, "k.scale", &[("x", Write)]);
    b.record(main, ready);
    b.wait(side, ready);
    b.launch(side, "k.axpy", &[("y", Write), ("x", Read)]);
    b.launch(main, "k.norm", &[("x", Read)]);
    b.wait_stream(main, side);
    b.host(main);
    let dot = plan_all(b.build()).to_dot();
    let expected = r#"digraph "Diamond" {
  rankdir=TB;
  node [shape=box, fontname="monospace"];
  subgraph cluster_0 {
    label="stream main";
    n0 [label="launch k.scale #1\n(&mut x)\n<<<1, 32>>>\nsrc/diamond.rs:1"];
    n2 [label="launch k.norm #1\n(&x)\n<<<1, 32>>>\nsrc/diamond.rs:5"];
    n3 [label="host f6 #1\nsrc/diamond.rs:7"];
    join [label="join", shape=point];
  }
  subgraph cluster_1 {
    label="stream side";
    n1 [label="launch k.axpy #1\n(&mut y, &x)\n<<<1, 32>>>\nsrc/diamond.rs:4"];
  }
  n0 -> n1 [style=dashed, color=blue, label="wait ready"];
  n0 -> n2;
  n1 -> n3 [style=dashed, color=darkgreen, label="wait_stream side"];
  n2 -> n3;
  n1 -> join [style=dotted];
  n3 -> join [style=dotted];
}
"#;
    assert_eq!(dot, expected, "got:\n{dot}");
}

#[test]
fn dot_escapes_quotes_and_draws_empty_plans() {
    let mut b = ProgramBuilder::new("Odd \"name\"");
    b.stream("main");
    let dot = plan_all(b.build()).to_dot();
    assert_eq!(
        dot,
        "digraph \"Odd \\\"name\\\"\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n  subgraph cluster_0 {\n    label=\"stream main\";\n  }\n}\n"
    );
}
