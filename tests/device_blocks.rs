//! Device `while` / `if` blocks (README "Loops and branches on the device"): the static program, the plan with nested body
//! plans, errors without a GPU; and on the GPU, eager runs against captured device loops
//! (CUDA conditional nodes), limits, nesting, `if`/`else` both ways, updates inside bodies and
//! faults inside bodies.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod block_support;
mod common;

use block_support::{gpu, read, K};
use streamgraph::{
    capture, pipeline, AccessMode, Capture, DeviceBuffer, DeviceFlag, Error, GraphSet, KernelArg,
    OpRef, Pipeline, Plan, StatementKind, Stream,
};

pipeline! {
    /// Counts `x` to `n` in a device loop on `main` while `side` adds 2 to `y` per iteration.
    pipeline CountTo(x: &mut DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, flag: &mut DeviceFlag, k: &K, n: u32) {
        stream main;
        stream side;

        main: fill x = 0u32;
        main: fill flag = 1u32;
        main: fill y = 0u32;
        main: while flag {
            main: launch k.step<<<1, 1>>>(&mut x, &mut flag, n);
            side: launch k.add<<<1, 1>>>(&mut y, 2u32);
        }
    }
}

pipeline! {
    /// A loop whose flag never clears, stopped by its limit.
    pipeline Limited(x: &mut DeviceBuffer<u32>, flag: &mut DeviceFlag, k: &K, lim: u32, by: u32) {
        stream main;

        main: fill x = 0u32;
        main: fill flag = 1u32;
        main: while flag, limit = lim {
            main: launch k.add<<<1, 1>>>(&mut x, by);
        }
    }
}

pipeline! {
    /// `n × m` iterations of two nested device loops, counted in `total`.
    pipeline Nested(i: &mut DeviceBuffer<u32>, j: &mut DeviceBuffer<u32>, total: &mut DeviceBuffer<u32>,
                    outer: &mut DeviceFlag, inner: &mut DeviceFlag, k: &K, n: u32, m: u32) {
        stream main;
        stream side;

        main: fill i = 0u32;
        main: fill total = 0u32;
        main: fill outer = 1u32;
        main: while outer {
            main: fill j = 0u32;
            main: fill inner = 1u32;
            main: while inner {
                main: launch k.step<<<1, 1>>>(&mut j, &mut inner, m);
                side: launch k.add<<<1, 1>>>(&mut total, 1u32);
            }
            main: launch k.step<<<1, 1>>>(&mut i, &mut outer, n);
        }
    }
}

pipeline! {
    /// `out = 1` when `choice` is non-zero, else `out = 2`, decided on the device.
    pipeline Branch(out: &mut DeviceBuffer<u32>, flag: &mut DeviceFlag, k: &K, choice: u32) {
        stream main;
        stream side;

        main: fill flag = choice;
        main: if flag {
            side: launch k.put<<<1, 1>>>(&mut out, 1u32);
        } else {
            main: launch k.put<<<1, 1>>>(&mut out, 2u32);
        }
    }
}

pipeline! {
    /// `y = top`, then `x += by` in each of a device loop's `lim` iterations.
    pipeline Stepped(x: &mut DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, flag: &mut DeviceFlag,
                     pick: &DeviceFlag, k: &K, lim: u32, by: u32, top: u32) {
        stream main;
        stream side;

        main: fill x = 0u32;
        main: fill flag = 1u32;
        main: launch k.put<<<1, 1>>>(&mut y, top);
        main: while flag, limit = lim {
            main: launch k.add<<<1, 1>>>(&mut x, by);
            side: if pick {
                side: launch k.add<<<1, 1>>>(&mut y, 1u32);
            }
        }
    }
}

pipeline! {
    /// A fault inside a loop body.
    pipeline Faulty(x: &mut DeviceBuffer<u32>, flag: &mut DeviceFlag, k: &K) {
        stream main;

        main: fill flag = 1u32;
        main: while flag, limit = 3u32 {
            main: launch k.fault<<<1, 1>>>(&mut x);
        }
    }
}

pipeline! {
    /// A loop whose body holds a branch that issues no work.
    pipeline EmptyBranch(x: &mut DeviceBuffer<u32>, flag: &mut DeviceFlag, pick: &DeviceFlag, k: &K) {
        stream main;
        stream side;
        event e;

        main: fill x = 0u32;
        main: fill flag = 1u32;
        main: while flag, limit = 3u32 {
            main: launch k.add<<<1, 1>>>(&mut x, 1u32);
            side: if pick {
                side: record e;
            } else {
                main: wait_stream side;
            }
        }
    }
}

#[test]
fn blocks_are_statements_with_their_bodies() {
    let p = CountTo::PROGRAM;
    assert_eq!(p.statements.len(), 6);
    let block = &p.statements[3];
    assert_eq!(
        block.kind,
        StatementKind::While {
            end: 6,
            signalled: false
        }
    );
    assert_eq!(block.text, "main: while flag");
    assert!(block.kind.is_block() && block.kind.is_operation());
    assert_eq!(
        block.kind.bodies(3).unwrap(),
        [std::ops::Range { start: 4, end: 6 }]
    );
    assert_eq!(block.accesses.len(), 1);
    assert_eq!(block.accesses[0].buffer, "flag");
    assert_eq!(block.accesses[0].mode, AccessMode::Read);

    let b = Branch::PROGRAM;
    assert_eq!(
        b.statements[1].kind,
        StatementKind::If {
            otherwise: 3,
            end: 4
        }
    );
    assert_eq!(b.statements[1].kind.bodies(1).unwrap(), [2..3, 3..4]);
    assert_eq!(
        Limited::PROGRAM.statements[2].text,
        "main: while flag, limit = lim"
    );

    let n = Nested::PROGRAM;
    assert_eq!(
        n.statements[3].kind,
        StatementKind::While {
            end: 10,
            signalled: false
        }
    );
    assert_eq!(
        n.statements[6].kind,
        StatementKind::While {
            end: 9,
            signalled: false
        }
    );
}

#[test]
fn a_block_is_one_operation_with_a_nested_plan() {
    let k = K::planning();
    let (mut x, mut y) = (
        DeviceBuffer::for_planning(1).unwrap(),
        DeviceBuffer::for_planning(1).unwrap(),
    );
    let mut flag = DeviceFlag::for_planning().unwrap();
    let plan = Plan::build(&CountTo::new(&mut x, &mut y, &mut flag, &k, 5)).unwrap();
    // fill x, fill flag, fill y, the block.
    assert_eq!(plan.len(), 4);
    assert_eq!(
        plan.edges().into_iter().collect::<Vec<_>>(),
        [(0, 1), (1, 2), (2, 3)]
    );
    let block = &plan.ops()[3];
    assert_eq!(block.label, "main: while flag #1");
    // The block reads the flag and does what its body does.
    assert_eq!(block.accesses[0].mode, AccessMode::Read);
    assert_eq!(block.accesses.len(), 1 + 2 + 1);
    assert_eq!(plan.bodies().len(), 1);
    let body = plan.body(3, 0).unwrap();
    assert_eq!(body.len(), 2);
    // The two streams of the body fork from `main` and are not ordered with each other.
    assert!(body.edges().is_empty());
    assert_eq!(body.final_frontier(), [0, 1]);
    plan.check_races().unwrap();

    let mut out = DeviceBuffer::for_planning(1).unwrap();
    let plan = Plan::build(&Branch::new(&mut out, &mut flag, &k, 1)).unwrap();
    assert_eq!(plan.len(), 2);
    assert_eq!(plan.bodies().len(), 2);
    assert_eq!(plan.body(1, 0).unwrap().ops()[0].stream, 1);
    assert_eq!(plan.body(1, 1).unwrap().ops()[0].stream, 0);
}

#[test]
fn nested_loops_nest_their_plans() {
    let k = K::planning();
    let b = || DeviceBuffer::<u32>::for_planning(1).unwrap();
    let (mut i, mut j, mut t) = (b(), b(), b());
    let (mut o, mut n) = (
        DeviceFlag::for_planning().unwrap(),
        DeviceFlag::for_planning().unwrap(),
    );
    let plan = Plan::build(&Nested::new(
        &mut i, &mut j, &mut t, &mut o, &mut n, &k, 2, 3,
    ))
    .unwrap();
    assert_eq!(plan.len(), 4);
    let outer = plan.body(3, 0).unwrap();
    // fill j, fill inner, the inner block, step.
    assert_eq!(outer.len(), 4);
    assert_eq!(outer.bodies().len(), 1);
    let inner = outer.body(2, 0).unwrap();
    assert_eq!(inner.len(), 2);
    plan.check_races().unwrap();
}

#[test]
fn running_a_plan_only_flag_is_a_typed_error() {
    // Without a GPU, creating the origin stream already fails with a typed error; with one, a
    // plan-only flag is refused when the block reads it.
    let Ok(device) = streamgraph::Device::new(None) else {
        return;
    };
    let origin = Stream::new(&device, 0).unwrap();
    let k = K::planning();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut flag = DeviceFlag::for_planning().unwrap();
    let err = streamgraph::Eager::new(&origin)
        .run(&Limited::new(&mut x, &mut flag, &k, 3, 1))
        .unwrap_err();
    assert!(matches!(err, Error::Statement { .. }), "{err}");
}

// ---- On the GPU ----

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_device_loop_counts_like_the_eager_loop() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut flag = DeviceFlag::new(&device, 0).unwrap();
    streamgraph::Eager::new(&origin)
        .run(&CountTo::new(&mut x, &mut y, &mut flag, &k, 7))
        .unwrap();
    origin.synchronize().unwrap();
    assert_eq!((read(&x), read(&y), flag.get().unwrap()), (7, 14, 0));

    let graph = Capture::new(&origin)
        .check(true)
        .capture(CountTo::new(&mut x, &mut y, &mut flag, &k, 9))
        .unwrap();
    let report = graph.verify().unwrap();
    assert_eq!(report.operations, 4 + 2);
    assert_eq!(graph.len(), 4);
    let exec = graph.instantiate().unwrap();
    exec.upload(&origin).unwrap();
    for _ in 0..3 {
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        let p = exec.pipeline();
        assert_eq!((read(p.x), read(p.y), p.flag.get().unwrap()), (9, 18, 0));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_limit_stops_a_loop_whose_flag_never_clears() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut flag = DeviceFlag::new(&device, 0).unwrap();
    for lim in [0u32, 1, 5] {
        streamgraph::Eager::new(&origin)
            .run(&Limited::new(&mut x, &mut flag, &k, lim, 1))
            .unwrap();
        origin.synchronize().unwrap();
        assert_eq!(read(&x), lim, "eager, limit {lim}");
        let exec = capture(&origin, Limited::new(&mut x, &mut flag, &k, lim, 1))
            .unwrap()
            .instantiate()
            .unwrap();
        exec.replay(&origin, 2).unwrap();
        origin.synchronize().unwrap();
        assert_eq!(read(exec.pipeline().x), lim, "captured, limit {lim}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nested_loops_run_n_times_m() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let b = || DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let (mut i, mut j, mut t) = (b(), b(), b());
    let mut o = DeviceFlag::new(&device, 0).unwrap();
    let mut n = DeviceFlag::new(&device, 0).unwrap();
    streamgraph::Eager::new(&origin)
        .run(&Nested::new(
            &mut i, &mut j, &mut t, &mut o, &mut n, &k, 4, 3,
        ))
        .unwrap();
    origin.synchronize().unwrap();
    assert_eq!((read(&i), read(&t)), (4, 12));
    let graph = Capture::new(&origin)
        .check(true)
        .capture(Nested::new(
            &mut i, &mut j, &mut t, &mut o, &mut n, &k, 5, 6,
        ))
        .unwrap();
    graph.verify().unwrap();
    let exec = graph.instantiate().unwrap();
    exec.replay(&origin, 3).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(
        (read(exec.pipeline().i), read(exec.pipeline().total)),
        (5, 30)
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn if_else_takes_either_branch_and_updates_switch_it() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let mut out = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut flag = DeviceFlag::new(&device, 0).unwrap();
    for (choice, expected) in [(1u32, 1u32), (0, 2), (7, 1)] {
        streamgraph::Eager::new(&origin)
            .run(&Branch::new(&mut out, &mut flag, &k, choice))
            .unwrap();
        origin.synchronize().unwrap();
        assert_eq!(read(&out), expected, "eager, choice {choice}");
    }
    let graph = Capture::new(&origin)
        .check(true)
        .capture(Branch::new(&mut out, &mut flag, &k, 1))
        .unwrap();
    graph.verify().unwrap();
    let mut exec = graph.instantiate().unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(read(exec.pipeline().out), 1);
    exec.update_with(|p| p.choice = 0).unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(read(exec.pipeline().out), 2);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bodies_that_issue_no_work_run() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut flag = DeviceFlag::new(&device, 0).unwrap();
    for choice in [1u32, 0] {
        let pick = DeviceFlag::new(&device, choice).unwrap();
        let graph = Capture::new(&origin)
            .check(true)
            .capture(EmptyBranch::new(&mut x, &mut flag, &pick, &k))
            .unwrap();
        graph.verify().unwrap();
        let exec = graph.instantiate().unwrap();
        exec.launch(&origin).unwrap();
        let start = std::time::Instant::now();
        while !origin.query().unwrap() {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(5),
                "the graph did not finish"
            );
            std::thread::yield_now();
        }
        assert_eq!(read(exec.pipeline().x), 3);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn updates_reach_kernels_inside_a_body() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut flag = DeviceFlag::new(&device, 0).unwrap();
    let mut exec = capture(&origin, Limited::new(&mut x, &mut flag, &k, 4, 1))
        .unwrap()
        .instantiate()
        .unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(read(exec.pipeline().x), 4);
    // A new argument of the kernel in the body, and a new limit.
    exec.update_with(|p| {
        p.by = 3;
        p.lim = 6;
    })
    .unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(read(exec.pipeline().x), 18);
    assert_eq!(exec.stats().reinstantiations, 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn set_kernel_args_reaches_a_launch_inside_a_loop_body() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut flag = DeviceFlag::new(&device, 0).unwrap();
    let graph = capture(&origin, Limited::new(&mut x, &mut flag, &k, 4, 1)).unwrap();
    let program = graph.pipeline().program();
    // fill x, fill flag, while, launch: the launch is the body's only statement.
    let launch = &program.statements[3];
    assert!(matches!(launch.kind, StatementKind::Launch { .. }));
    let exec = graph.instantiate().unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(read(exec.pipeline().x), 4);

    // New arguments of the launch in the body: the same buffer (a view of the memory the
    // graph already writes, through the pipeline's exclusive borrow), a new increment. They take
    // effect on the next launch, in every iteration.
    let x = &exec.pipeline().x;
    let by = 5u32;
    exec.set_kernel_args(
        OpRef::new(launch),
        &k.add,
        &[KernelArg::write_through(x), KernelArg::value(&by)],
    )
    .unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(read(exec.pipeline().x), 4 * 5);
    assert_eq!(exec.stats().reinstantiations, 0);

    // The loop's own statement takes no kernel arguments.
    let e = exec
        .set_kernel_args(
            OpRef::new(&program.statements[2]),
            &k.add,
            &[KernelArg::write_through(x), KernelArg::value(&by)],
        )
        .unwrap_err();
    assert!(e.to_string().contains("is not a launch"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_fault_in_a_body_is_an_error_naming_the_statement() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut flag = DeviceFlag::new(&device, 0).unwrap();
    // A plan-only buffer inside a body, captured: refused before anything runs, naming the
    // launch in the body.
    let mut planning = DeviceBuffer::<u32>::for_planning(1).unwrap();
    let Err(err) = capture(&origin, Faulty::new(&mut planning, &mut flag, &k)) else {
        panic!("a plan-only buffer in a body was captured");
    };
    let text = err.to_string();
    assert!(text.contains("main: launch k.fault"), "{text}");
    // The capture was ended cleanly: the next one works.
    let exec = capture(&origin, Limited::new(&mut x, &mut flag, &k, 2, 1))
        .unwrap()
        .instantiate()
        .unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(read(exec.pipeline().x), 2);
    drop(exec);
    let _ = device;
}

pipeline! {
    /// Three conditional nodes side by side in a loop, two of them with bodies that issue no
    /// work (random program 204 of `block_options`, cut down); `side`, `second` and `tail`
    /// leave parts out.
    pipeline R2b(b1: &mut DeviceBuffer<u32>, b2: &mut DeviceBuffer<u32>, f3: &mut DeviceFlag, f4: &DeviceFlag, f5: &DeviceFlag, k: &K,
                 rec: bool, second: bool, tail: bool, side: bool) {
        stream s0; stream s1; stream s2; stream s3;
        event e0;
        s2: fill f3 = 1u32;
        s2: while f3, limit = 3u32 {
            if side {
                s3: if f4 {
                    s3: launch k.add<<<1, 1>>>(&mut b2, 1u32);
                    if rec {
                        s1: record e0;
                    }
                    s3: launch k.add<<<1, 1>>>(&mut b2, 1u32);
                } else {
                }
            } else {
                s2: if f4 {
                    s2: launch k.add<<<1, 1>>>(&mut b2, 1u32);
                    if rec {
                        s1: record e0;
                    }
                    s2: launch k.add<<<1, 1>>>(&mut b2, 1u32);
                } else {
                }
            }
            if second {
                s2: if f5 {
                    s2: wait_stream s3;
                }
            }
            if tail {
                s1: launch k.add<<<1, 1>>>(&mut b1, 1u32);
            }
        }
    }
}

pipeline! {
    /// One device loop issued twice by a host loop.
    pipeline X8(x: &mut DeviceBuffer<u32>, f: &mut DeviceFlag, k: &K, n: u32) {
        stream s0;
        stream s1;
        s1: fill f = 1u32;
        for _i in 0..n {
            s1: while f, limit = 2u32 {
                s0: launch k.add<<<1, 1>>>(&mut x, 1u32);
            }
        }
    }
}

pipeline! {
    /// Two loops on one flag, one inside the other: each counts its own iterations.
    pipeline SharedFlag(x: &mut DeviceBuffer<u32>, flag: &mut DeviceFlag, k: &K) {
        stream main;
        main: fill x = 0u32;
        main: fill flag = 1u32;
        main: while flag, limit = 2u32 {
            main: while flag, limit = 3u32 {
                main: launch k.add<<<1, 1>>>(&mut x, 1u32);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nested_loops_on_one_flag_count_apart() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut flag = DeviceFlag::new(&device, 0).unwrap();
    streamgraph::Eager::new(&origin)
        .run(&SharedFlag::new(&mut x, &mut flag, &k))
        .unwrap();
    origin.synchronize().unwrap();
    assert_eq!(read(&x), 6, "eager: 2 × 3 iterations");
    let graph = Capture::new(&origin)
        .check(true)
        .capture(SharedFlag::new(&mut x, &mut flag, &k))
        .unwrap();
    graph.verify().unwrap();
    let exec = graph.instantiate().unwrap();
    for _ in 0..2 {
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        // A count kept in the flag would be reset by the inner loop's start and end the
        // outer loop after one iteration (3).
        assert_eq!(read(exec.pipeline().x), 6, "captured: 2 × 3 iterations");
    }
}

pipeline! {
    /// A branch inside a loop (for the picture of a captured graph).
    pipeline LoopBranch(x: &mut DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, flag: &mut DeviceFlag,
                        pick: &DeviceFlag, k: &K) {
        stream main;
        stream side;
        main: fill x = 0u32;
        main: fill y = 0u32;
        main: fill flag = 1u32;
        main: while flag, limit = 2u32 {
            main: launch k.add<<<1, 1>>>(&mut x, 1u32);
            side: if pick {
                side: launch k.add<<<1, 1>>>(&mut y, 10u32);
            } else {
                side: launch k.add<<<1, 1>>>(&mut y, 100u32);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_picture_of_a_captured_graph_draws_bodies_as_clusters() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut flag = DeviceFlag::new(&device, 0).unwrap();
    let pick = DeviceFlag::new(&device, 1).unwrap();
    let graph = Capture::new(&origin)
        .check(true)
        .capture(LoopBranch::new(&mut x, &mut y, &mut flag, &pick, &k))
        .unwrap();
    let dot = graph.to_dot().unwrap();
    // The loop's body is a cluster inside the graph, the branch's two bodies clusters inside it.
    assert!(dot.contains("subgraph cluster_cb0_body {"), "{dot}");
    assert!(dot.contains("label=\"body of main: while flag"), "{dot}");
    assert!(dot.contains("subgraph cluster_cb0_b0_body {"), "{dot}");
    assert!(dot.contains("label=\"then of side: if pick"), "{dot}");
    assert!(dot.contains("subgraph cluster_cb0_b1_body {"), "{dot}");
    assert!(dot.contains("label=\"else of side: if pick"), "{dot}");
    // Each body's launches are drawn in it, with their arguments.
    assert!(
        dot.contains("cb0_0 [label=\"launch k.add #1\\n(&mut x, 1u32)"),
        "{dot}"
    );
    assert!(
        dot.contains("cb0_b0_0 [label=\"launch k.add #1\\n(&mut y, 10u32)"),
        "{dot}"
    );
    assert!(
        dot.contains("cb0_b1_0 [label=\"launch k.add #1\\n(&mut y, 100u32)"),
        "{dot}"
    );
    // The loop (operation 3 of the graph) leads into its body, the branch into its bodies.
    assert!(
        dot.contains("c3 -> cb0_0 [style=dotted, label=\"body\"];"),
        "{dot}"
    );
    assert!(
        dot.contains("cb0_1 -> cb0_b0_0 [style=dotted, label=\"then\"];"),
        "{dot}"
    );
    assert!(
        dot.contains("cb0_1 -> cb0_b1_0 [style=dotted, label=\"else\"];"),
        "{dot}"
    );
    assert_eq!(dot.matches('{').count(), dot.matches('}').count(), "{dot}");
    // And the graph runs: two iterations, the `then` branch each time.
    let exec = graph.instantiate().unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!((read(exec.pipeline().x), read(exec.pipeline().y)), (2, 20));
}

/// Waits for `origin` at most 5 s.
fn finishes(origin: &Stream) -> bool {
    let start = std::time::Instant::now();
    while !origin.query().unwrap() {
        if start.elapsed() > std::time::Duration::from_secs(5) {
            return false;
        }
        std::thread::yield_now();
    }
    true
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn side_by_side_branches_with_empty_bodies_finish() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let b = || DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let f = |v| DeviceFlag::new(&device, v).unwrap();
    for bits in [
        [true; 4],
        [false, true, true, true],
        [true, true, false, true],
    ] {
        for pick in [0u32, 1] {
            let (mut b1, mut b2) = (b(), b());
            let (mut f3, f4, f5) = (f(1), f(pick), f(1));
            let [rec, second, tail, side] = bits;
            let graph = Capture::new(&origin)
                .check(true)
                .capture(R2b::new(
                    &mut b1, &mut b2, &mut f3, &f4, &f5, &k, rec, second, tail, side,
                ))
                .unwrap();
            graph.verify().unwrap();
            let exec = graph.instantiate().unwrap();
            exec.launch(&origin).unwrap();
            if !finishes(&origin) {
                // A graph that never ends holds the GPU: stop the whole run.
                eprintln!("the graph of {bits:?}, pick {pick} did not finish in 5 s");
                std::process::exit(3);
            }
            let p = exec.pipeline();
            assert_eq!(read(p.b2), 6 * pick, "{bits:?}, pick {pick}");
            assert_eq!(
                read(p.b1),
                if tail { 3 } else { 0 },
                "{bits:?}, pick {pick}"
            );
        }
    }
}

/// `Stepped`'s argument updates in turn: `(by, lim, top)`, whether the update captures anew (a
/// block's limit changed) and how many launch nodes it sets in place (the launch before the
/// loop when `top` changed, the one in the loop's body when `by` did).
const STEPS: [((u32, u32, u32), bool, u64); 6] = [
    ((1, 4, 7), false, 1),
    ((3, 4, 7), false, 1),
    ((3, 5, 7), true, 0),
    ((2, 5, 9), false, 2),
    ((2, 5, 9), false, 0),
    ((2, 6, 9), true, 0),
];

/// `Stepped`'s buffers and flags, the branch's flag set to `pick`.
fn stepped_memory(
    device: &streamgraph::Device,
    pick: u32,
) -> (DeviceBuffer<u32>, DeviceBuffer<u32>, DeviceFlag, DeviceFlag) {
    let word = || DeviceBuffer::<u32>::zeros(device, 1).unwrap();
    let flag = |v| DeviceFlag::new(device, v).unwrap();
    (word(), word(), flag(0), flag(pick))
}

/// Argument updates of a pipeline with device blocks walk the blocks' bodies: a changed launch
/// outside or inside them gets new parameters in place, a change of a block's limit captures
/// anew, and `values` sees each launch's result.
fn argument_updates_through_device_blocks(values: bool) {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let (mut x, mut y, mut flag, pick) = stepped_memory(&device, 1);
    let mut exec = capture(
        &origin,
        Stepped::new(&mut x, &mut y, &mut flag, &pick, &k, 4, 1, 5),
    )
    .unwrap()
    .instantiate()
    .unwrap();
    let mut captures = 0;
    for ((by, lim, top), captured, set) in STEPS {
        let before = exec.stats();
        exec.update_args_with(|p| {
            (p.by, p.lim, p.top) = (by, lim, top);
        })
        .unwrap();
        let after = exec.stats();
        captures += u64::from(captured);
        assert_eq!(after.updates, captures, "by {by}, lim {lim}, top {top}");
        assert_eq!(
            after.nodes_set - before.nodes_set,
            set,
            "by {by}, lim {lim}, top {top}"
        );
        exec.verify().unwrap();
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        if values {
            let p = exec.pipeline();
            assert_eq!(
                (read(p.x), read(p.y)),
                (lim * by, top + lim),
                "by {by}, lim {lim}, top {top}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn argument_updates_walk_device_block_bodies() {
    argument_updates_through_device_blocks(false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn argument_updates_walk_device_block_bodies_values() {
    argument_updates_through_device_blocks(true);
}

/// A graph set's later launches of a key whose pipeline has device blocks keep its graph:
/// nothing changed, so nothing is captured again.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_graph_set_keeps_a_graph_with_device_blocks() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let (mut x, mut y, mut flag, pick) = stepped_memory(&device, 0);
    let mut set = GraphSet::new(&origin, 2);
    for (key, round) in [(4u32, 0), (2, 0), (4, 1), (2, 1), (4, 2)] {
        set.launch(
            &origin,
            key,
            &Stepped::new(&mut x, &mut y, &mut flag, &pick, &k, key, 1, round),
        )
        .unwrap();
    }
    origin.synchronize().unwrap();
    let stats = set.stats(&4).unwrap();
    assert_eq!((stats.captures, stats.launches), (1, 3), "{stats:?}");
    let stats = set.stats(&2).unwrap();
    assert_eq!((stats.captures, stats.launches), (1, 2), "{stats:?}");
}
