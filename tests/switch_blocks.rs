//! Device `switch` blocks (README "Loops and branches on the device"): the static program and
//! the plan with one nested plan per arm, without a GPU; captured as one CUDA `SWITCH`
//! conditional node (or, on a driver older than CUDA 12.8, one `IF` node per arm) whose every
//! body graph is verified against its plan (on the stand-in driver too, `.ci/stand-in-tests`);
//! and on the GPU, each arm, the `_` arm and no arm at all, eagerly and replayed, against the
//! values the test computes.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod block_support;
mod common;

use block_support::{gpu, read, K};
use streamgraph::cudarc::driver::sys;
use streamgraph::{
    capture, pipeline, AccessMode, Capture, DeviceBuffer, DeviceFlag, Eager, Pipeline, Plan,
    ProgramBuilder, StatementKind, Stream, SwitchArm,
};

pipeline! {
    /// A kernel writes the index; arms 0, 3 and 7 (empty) and `_`, on two streams.
    pipeline Pick(x: &mut DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, index: &mut DeviceFlag,
                  k: &K, choice: u32) {
        stream main;
        stream side;

        main: fill x = 0u32;
        main: fill y = 0u32;
        main: launch k.put<<<1, 1>>>(&mut index, choice);
        main: switch index {
            0 => {
                main: launch k.add<<<1, 1>>>(&mut x, 1u32);
            }
            3 => {
                main: launch k.add<<<1, 1>>>(&mut x, 30u32);
                side: launch k.add<<<1, 1>>>(&mut y, 3u32);
            }
            7 => {}
            _ => {
                side: launch k.add<<<1, 1>>>(&mut y, 100u32);
            }
        }
        main: launch k.add<<<1, 1>>>(&mut x, 1000u32);
    }
}

pipeline! {
    /// No `_` arm: a value no arm takes runs nothing. The index is filled.
    pipeline NoDefault(x: &mut DeviceBuffer<u32>, index: &mut DeviceFlag, k: &K, choice: u32) {
        stream main;

        main: fill x = 0u32;
        main: fill index = choice;
        main: switch index {
            2 => {
                main: launch k.add<<<1, 1>>>(&mut x, 2u32);
            }
            1 => {
                main: launch k.add<<<1, 1>>>(&mut x, 1u32);
            }
        }
    }
}

pipeline! {
    /// A switch in a device loop, picking by the iteration (`i % 3`), with an `if` in its `_`
    /// arm: `a` counts iterations 0, 3, 6…, `b` 1, 4, 7…, `c` the others while `pick` is set.
    pipeline Rotate(i: &mut DeviceBuffer<u32>, a: &mut DeviceBuffer<u32>, b: &mut DeviceBuffer<u32>,
                    c: &mut DeviceBuffer<u32>, go: &mut DeviceFlag, sel: &mut DeviceFlag,
                    pick: &DeviceFlag, k: &K, n: u32) {
        stream main;
        stream side;

        main: fill i = 0u32;
        main: fill a = 0u32;
        main: fill b = 0u32;
        main: fill c = 0u32;
        main: fill go = 1u32;
        main: while go {
            main: launch k.modulo<<<1, 1>>>(&mut sel, &i, 3u32);
            main: switch sel {
                0 => {
                    main: launch k.add<<<1, 1>>>(&mut a, 1u32);
                }
                1 => {
                    side: launch k.add<<<1, 1>>>(&mut b, 1u32);
                }
                _ => {
                    main: if pick {
                        main: launch k.add<<<1, 1>>>(&mut c, 1u32);
                    }
                }
            }
            main: launch k.step<<<1, 1>>>(&mut i, &mut go, n);
        }
    }
}

pipeline! {
    /// Each arm forks `side` from `main` and joins it back with the same two events, recorded
    /// and waited in every arm: arm 0 makes `x = 1`, `y = x`, `x += 10`; `_` the same with 2
    /// and 20; then `x += 100`.
    pipeline ArmEvents(x: &mut DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>,
                       index: &mut DeviceFlag, k: &K, choice: u32) {
        stream main;
        stream side;
        event forked;
        event joined;

        main: fill x = 0u32;
        main: fill y = 0u32;
        main: launch k.put<<<1, 1>>>(&mut index, choice);
        main: switch index {
            0 => {
                main: launch k.add<<<1, 1>>>(&mut x, 1u32);
                main: record forked;
                side: wait forked;
                side: launch k.modulo<<<1, 1>>>(&mut y, &x, 1000u32);
                side: record joined;
                main: wait joined;
                main: launch k.add<<<1, 1>>>(&mut x, 10u32);
            }
            _ => {
                main: launch k.add<<<1, 1>>>(&mut x, 2u32);
                main: record forked;
                side: wait forked;
                side: launch k.modulo<<<1, 1>>>(&mut y, &x, 1000u32);
                side: record joined;
                main: wait joined;
                main: launch k.add<<<1, 1>>>(&mut x, 20u32);
            }
        }
        main: launch k.add<<<1, 1>>>(&mut x, 100u32);
    }
}

/// What [`Pick`] leaves in `(x, y)` for index `choice`.
fn pick_values(choice: u32) -> (u32, u32) {
    match choice {
        0 => (1001, 0),
        3 => (1030, 3),
        7 => (1000, 0),
        _ => (1000, 100),
    }
}

/// What [`Rotate`] leaves in `(a, b, c)` after `n` iterations.
fn rotate_values(n: u32, pick: bool) -> (u32, u32, u32) {
    let n = n.max(1);
    let (a, b) = (
        (0..n).filter(|i| i % 3 == 0).count(),
        (0..n).filter(|i| i % 3 == 1).count(),
    );
    let c = if pick { n as usize - a - b } else { 0 };
    (a as u32, b as u32, c as u32)
}

#[test]
fn a_switch_is_one_statement_with_a_body_per_arm() {
    let p = Pick::PROGRAM;
    let block = &p.statements[3];
    let StatementKind::Switch { arms, end } = block.kind else {
        panic!("{:?}", block.kind);
    };
    assert_eq!(end, 8);
    assert_eq!(
        arms,
        [
            SwitchArm {
                value: Some(0),
                start: 4
            },
            SwitchArm {
                value: Some(3),
                start: 5
            },
            SwitchArm {
                value: Some(7),
                start: 7
            },
            SwitchArm {
                value: None,
                start: 7
            },
        ]
    );
    assert_eq!(block.kind.bodies(3).unwrap(), [4..5, 5..7, 7..7, 7..8]);
    assert_eq!(block.text, "main: switch index");
    assert!(block.kind.is_block() && block.kind.is_operation());
    assert_eq!(block.accesses.len(), 1);
    assert_eq!(
        (block.accesses[0].buffer, block.accesses[0].mode),
        ("index", AccessMode::Read)
    );
    // Each value picks its arm; any other the `_` arm.
    let picks: Vec<_> = [0, 3, 7, 1, u32::MAX]
        .iter()
        .map(|&v| block.kind.switch_arm(v))
        .collect();
    assert_eq!(picks, [Some(0), Some(1), Some(2), Some(3), Some(3)]);
    assert_eq!(
        (0..4)
            .map(|k| block.kind.branch_name(k))
            .collect::<Vec<_>>(),
        ["case 0", "case 3", "case 7", "default"]
    );
    // Without `_`, a value no arm takes picks none; arms keep their source order.
    let n = &NoDefault::PROGRAM.statements[2];
    assert_eq!(
        [2, 1, 0].map(|v| n.kind.switch_arm(v)),
        [Some(0), Some(1), None]
    );
    // The statement after the block is outside it.
    assert_eq!(
        p.statements[8].text,
        "main: launch k.add<<<1, 1>>>(&mut x, 1000u32)"
    );
}

#[test]
fn a_switch_is_one_operation_with_a_plan_per_arm() {
    let k = K::planning();
    let (mut x, mut y) = (
        DeviceBuffer::for_planning(1).unwrap(),
        DeviceBuffer::for_planning(1).unwrap(),
    );
    let mut index = DeviceFlag::for_planning().unwrap();
    let plan = Plan::build(&Pick::new(&mut x, &mut y, &mut index, &k, 3)).unwrap();
    // fill x, fill y, put, the switch, add.
    assert_eq!(plan.len(), 5);
    assert_eq!(
        plan.edges().into_iter().collect::<Vec<_>>(),
        [(0, 1), (1, 2), (2, 3), (3, 4)]
    );
    let block = &plan.ops()[3];
    assert_eq!(block.label, "main: switch index #1");
    // The block reads the index and does what every arm does.
    assert_eq!(block.accesses[0].mode, AccessMode::Read);
    assert_eq!(block.accesses.len(), 1 + 1 + 2 + 1);
    // One nested plan per arm, empty ones included.
    assert_eq!(plan.bodies().len(), 4);
    assert_eq!(
        (0..4)
            .map(|k| plan.body(3, k).unwrap().len())
            .collect::<Vec<_>>(),
        [1, 2, 0, 1]
    );
    // Arm 3's two streams fork from `main` and are not ordered with each other.
    let three = plan.body(3, 1).unwrap();
    assert!(three.edges().is_empty());
    assert_eq!(three.final_frontier(), [0, 1]);
    assert_eq!(plan.body(3, 3).unwrap().ops()[0].stream, 1);
    plan.check_races().unwrap();

    let (mut i, mut a, mut b, mut c) = (
        DeviceBuffer::for_planning(1).unwrap(),
        DeviceBuffer::for_planning(1).unwrap(),
        DeviceBuffer::for_planning(1).unwrap(),
        DeviceBuffer::for_planning(1).unwrap(),
    );
    let (mut go, mut sel, pick) = (
        DeviceFlag::for_planning().unwrap(),
        DeviceFlag::for_planning().unwrap(),
        DeviceFlag::for_planning().unwrap(),
    );
    let plan = Plan::build(&Rotate::new(
        &mut i, &mut a, &mut b, &mut c, &mut go, &mut sel, &pick, &k, 5,
    ))
    .unwrap();
    let body = plan.body(5, 0).unwrap();
    // modulo, the switch, step; the switch's arms, the `_` arm's `if` with its `then`.
    assert_eq!(body.len(), 3);
    assert_eq!(body.bodies().len(), 3);
    assert_eq!(body.body(1, 2).unwrap().bodies().len(), 1);
    plan.check_races().unwrap();
}

#[test]
fn a_built_switch_plans_like_a_written_one() {
    let mut b = ProgramBuilder::new("built");
    let main = b.stream("main");
    let side = b.stream("side");
    let s = b.switch_block(main, "sel", &[(Some(5), 1), (None, 2)], 4);
    b.launch(main, "k", &[("x", AccessMode::Write)]);
    b.launch(side, "k", &[("y", AccessMode::Write)]);
    b.launch(main, "k", &[("x", AccessMode::Read)]);
    let program = b.build();
    let StatementKind::Switch { arms, end } = program.statements[s].kind else {
        panic!("{:?}", program.statements[s].kind);
    };
    assert_eq!((arms.len(), end), (2, 4));
    assert_eq!(program.statements[s].text, "switch sel");
    assert_eq!(program.statements[s].kind.bodies(s).unwrap(), [1..2, 2..4]);
}

// ---- On the GPU (the capture tests also on the stand-in driver) ----

/// Captures `pipeline` with checks on and verifies its graph, every body graph included;
/// returns the graph's picture.
fn captured_and_verified<P: Pipeline>(origin: &Stream, pipeline: P) -> String {
    let graph = Capture::new(origin).check(true).capture(pipeline).unwrap();
    graph.verify().unwrap();
    graph.to_dot().unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn switch_captures_verify_on_every_body() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let b = || DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let f = |v| DeviceFlag::new(&device, v).unwrap();
    let (mut x, mut y, mut index) = (b(), b(), f(0));
    let dot = captured_and_verified(&origin, Pick::new(&mut x, &mut y, &mut index, &k, 3));
    for which in ["case 0", "case 3", "case 7", "default"] {
        assert!(
            dot.contains(&format!("label=\"{which} of main: switch index")),
            "{dot}"
        );
    }
    let mut x = b();
    let mut index = f(0);
    captured_and_verified(&origin, NoDefault::new(&mut x, &mut index, &k, 1));
    let (mut i, mut a, mut bb, mut c) = (b(), b(), b(), b());
    let (mut go, mut sel, pick) = (f(0), f(0), f(1));
    captured_and_verified(
        &origin,
        Rotate::new(
            &mut i, &mut a, &mut bb, &mut c, &mut go, &mut sel, &pick, &k, 5,
        ),
    );
}

/// Arms that record and wait the same events, each in its own body: every body graph's edges
/// are the plan's.
#[test]
#[ignore = "needs a CUDA GPU"]
fn arms_that_record_and_wait_the_same_events_verify() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let b = || DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let (mut x, mut y) = (b(), b());
    let mut index = DeviceFlag::new(&device, 0).unwrap();
    let dot = captured_and_verified(&origin, ArmEvents::new(&mut x, &mut y, &mut index, &k, 0));
    for which in ["case 0", "default"] {
        assert!(
            dot.contains(&format!("label=\"{which} of main: switch index")),
            "{dot}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn arms_that_record_and_wait_the_same_events_values() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut index = DeviceFlag::new(&device, 0).unwrap();
    let expect = |choice| if choice == 0 { (111, 1) } else { (122, 2) };
    for choice in [0u32, 1, 0, 9] {
        Eager::new(&origin)
            .check(true)
            .run(&ArmEvents::new(&mut x, &mut y, &mut index, &k, choice))
            .unwrap();
        origin.synchronize().unwrap();
        assert_eq!((read(&x), read(&y)), expect(choice), "eager, {choice}");
    }
    let graph = Capture::new(&origin)
        .check(true)
        .capture(ArmEvents::new(&mut x, &mut y, &mut index, &k, 0))
        .unwrap();
    graph.verify().unwrap();
    let mut exec = graph.instantiate().unwrap();
    for choice in [0u32, 1, 9, 0] {
        exec.update_args_with(|p| p.choice = choice).unwrap();
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        let p = exec.pipeline();
        assert_eq!((read(p.x), read(p.y)), expect(choice), "replay, {choice}");
    }
    exec.verify().unwrap();
}

/// Run with `STUB_CUDA_VERSION=12060` on the stand-in driver (`.ci/stand-in-tests`): a driver
/// without `SWITCH` nodes gets one `IF` node per arm, verified the same way. On a GPU, it
/// checks whatever the driver offers.
#[test]
#[ignore = "needs a CUDA GPU"]
fn switch_captures_verify_on_the_driver_at_hand() {
    let _serial = common::serial();
    switch_captures_verify_on_every_body();
    let (device, origin, k) = gpu();
    let (mut x, mut y) = (
        DeviceBuffer::<u32>::zeros(&device, 1).unwrap(),
        DeviceBuffer::<u32>::zeros(&device, 1).unwrap(),
    );
    let mut index = DeviceFlag::new(&device, 0).unwrap();
    let graph = capture(&origin, Pick::new(&mut x, &mut y, &mut index, &k, 3)).unwrap();
    let mut version = 0;
    // SAFETY: `version` is a valid out-pointer.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .unwrap();
    let mut count = 0usize;
    // SAFETY: the graph is alive while `graph` is; a null array asks for the count only.
    unsafe { sys::cuGraphGetNodes(graph.as_raw().0, std::ptr::null_mut(), &mut count) }
        .result()
        .unwrap();
    // Two fills, the `put`, the built-in kernel, the last `add`; then one `SWITCH` node, or
    // one `IF` node per arm (4) on a driver older than CUDA 12.8.
    let conditional = if version >= 12080 { 1 } else { 4 };
    assert_eq!(count, 5 + conditional, "driver {version}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn each_arm_runs_eagerly_and_replayed_values() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut index = DeviceFlag::new(&device, 0).unwrap();
    for choice in [0u32, 3, 7, 1, 5, u32::MAX] {
        Eager::new(&origin)
            .check(true)
            .run(&Pick::new(&mut x, &mut y, &mut index, &k, choice))
            .unwrap();
        origin.synchronize().unwrap();
        assert_eq!((read(&x), read(&y)), pick_values(choice), "eager, {choice}");
    }
    let graph = Capture::new(&origin)
        .check(true)
        .capture(Pick::new(&mut x, &mut y, &mut index, &k, 0))
        .unwrap();
    graph.verify().unwrap();
    let mut exec = graph.instantiate().unwrap();
    for choice in [0u32, 3, 7, 1, 5, u32::MAX, 3] {
        exec.update_with(|p| p.choice = choice).unwrap();
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        let p = exec.pipeline();
        assert_eq!(
            (read(p.x), read(p.y)),
            pick_values(choice),
            "replay, {choice}"
        );
    }
    assert_eq!(exec.stats().reinstantiations, 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_value_no_arm_takes_runs_nothing_values() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut index = DeviceFlag::new(&device, 0).unwrap();
    let expected = |c: u32| match c {
        1 | 2 => c,
        _ => 0,
    };
    for choice in [2u32, 1, 0, 3, 64] {
        Eager::new(&origin)
            .run(&NoDefault::new(&mut x, &mut index, &k, choice))
            .unwrap();
        origin.synchronize().unwrap();
        assert_eq!(read(&x), expected(choice), "eager, {choice}");
    }
    let graph = Capture::new(&origin)
        .check(true)
        .capture(NoDefault::new(&mut x, &mut index, &k, 2))
        .unwrap();
    graph.verify().unwrap();
    let mut exec = graph.instantiate().unwrap();
    for choice in [2u32, 1, 0, 3, 64] {
        exec.update_with(|p| p.choice = choice).unwrap();
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        assert_eq!(
            read(exec.pipeline().x),
            expected(choice),
            "replay, {choice}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_switch_in_a_device_loop_picks_by_iteration_values() {
    let _serial = common::serial();
    let (device, origin, k) = gpu();
    let b = || DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let (mut i, mut a, mut bb, mut c) = (b(), b(), b(), b());
    let (mut go, mut sel) = (
        DeviceFlag::new(&device, 0).unwrap(),
        DeviceFlag::new(&device, 0).unwrap(),
    );
    for pick_set in [true, false] {
        let pick = DeviceFlag::new(&device, u32::from(pick_set)).unwrap();
        for n in [1u32, 5, 7] {
            Eager::new(&origin)
                .check(true)
                .run(&Rotate::new(
                    &mut i, &mut a, &mut bb, &mut c, &mut go, &mut sel, &pick, &k, n,
                ))
                .unwrap();
            origin.synchronize().unwrap();
            let eager = (read(&a), read(&bb), read(&c));
            assert_eq!(eager, rotate_values(n, pick_set), "eager, n = {n}");
            let graph = Capture::new(&origin)
                .check(true)
                .capture(Rotate::new(
                    &mut i, &mut a, &mut bb, &mut c, &mut go, &mut sel, &pick, &k, n,
                ))
                .unwrap();
            graph.verify().unwrap();
            let exec = graph.instantiate().unwrap();
            exec.launch(&origin).unwrap();
            origin.synchronize().unwrap();
            let p = exec.pipeline();
            assert_eq!((read(p.a), read(p.b), read(p.c)), eager, "replay, n = {n}");
        }
    }
}
