//! `call` statements: an op of one's own (a memset and three kernels) in pipelines, planned,
//! run eagerly, captured, verified and replayed, in the body of a device loop too; an op that
//! forks onto a stream of its own and leaves its stream depending on two nodes (joined to one);
//! a call that makes no node beside one that makes two (each booked with its own), one that
//! starts from two nodes, one of more nodes than a capture follows back from its exit; and the
//! refusal of an op that allocates inside a capture (among other nodes, or as its only one).
//!
//! The GPU tests that read no values back (all but the `_values` ones) also run on the
//! stand-in driver of `benches/stub-driver` (`.ci/stand-in-tests`).
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use common::Kernels;
use streamgraph::{
    pipeline, AccessMode, BodyOp, CallStream, Capture, DeviceBuffer, DeviceFlag, Eager, Error,
    GraphExec, In, Kernel, KernelArg, LaunchConfig, Out, Pipeline, Plan, StatementKind, Stream,
    StreamOp,
};

/// `dst = src + 8`: a memset of `dst`, a copy kernel and two kernels that add to it.
struct Stamp<'k> {
    copy: &'k Kernel,
    add: &'k Kernel,
}

fn config(n: u32) -> LaunchConfig {
    LaunchConfig {
        grid: n.div_ceil(64).max(1).into(),
        block: 64u32.into(),
        shared_mem_bytes: 0,
    }
}

// SAFETY: `issue` issues a memset of `dst` and three kernels on the given stream only; they
// read `src` and write `dst` within their lengths (`n` is the shorter one). The kernels'
// module is kept by their launches.
unsafe impl StreamOp for Stamp<'_> {
    type Operands<'a> = (Out<'a, u32>, In<'a, u32>);

    fn issue(
        &self,
        stream: &CallStream<'_>,
        (dst, src): &mut Self::Operands<'_>,
    ) -> streamgraph::Result<()> {
        let n = dst.len().min(src.len()) as u32;
        stream.fill(dst, 0)?;
        let src_arg = src.arg();
        stream.launch(
            self.copy,
            config(n),
            &[dst.arg(), src_arg, KernelArg::value(&n)],
        )?;
        for k in [7u32, 1] {
            stream.launch(
                self.add,
                config(n),
                &[dst.arg(), KernelArg::value(&k), KernelArg::value(&n)],
            )?;
        }
        Ok(())
    }
}

impl BodyOp for Stamp<'_> {}

pipeline! {
    /// `y = x + 8` by a call on a side stream, then `z = y + 8` by another on the origin.
    pipeline Twice(x: &DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, z: &mut DeviceBuffer<u32>, stamp: &Stamp<'_>) {
        stream main;
        stream side;
        side: wait_stream main;
        side: call stamp(&mut y, &x);
        main: wait_stream side;
        main: call stamp(&mut z, &y);
    }
}

pipeline! {
    /// `y = x + 8` in the body of a device loop that runs once (its limit).
    pipeline InLoop(x: &DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, flag: &DeviceFlag, stamp: &Stamp<'_>) {
        stream main;
        main: while flag, limit = 1 {
            main: call stamp(&mut y, &x);
        }
    }
}

#[test]
fn a_call_is_a_statement_of_its_own_kind_with_its_operands() {
    let program = Twice::PROGRAM;
    let calls: Vec<_> = program
        .statements
        .iter()
        .filter(|s| matches!(s.kind, StatementKind::Call { op: "stamp" }))
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].text, "side: call stamp(&mut y, &x)");
    let modes: Vec<_> = calls[0]
        .accesses
        .iter()
        .map(|a| (a.buffer, a.mode))
        .collect();
    assert_eq!(modes, [("y", AccessMode::Write), ("x", AccessMode::Read)]);
}

#[test]
fn a_plan_orders_calls_by_their_operands() {
    let (copy, add) = (Kernel::for_planning("copy"), Kernel::for_planning("add"));
    let stamp = Stamp {
        copy: &copy,
        add: &add,
    };
    let x = DeviceBuffer::<u32>::for_planning(16).unwrap();
    let mut y = DeviceBuffer::<u32>::for_planning(16).unwrap();
    let mut z = DeviceBuffer::<u32>::for_planning(16).unwrap();
    let plan = Plan::build(&Twice::new(&x, &mut y, &mut z, &stamp)).unwrap();
    plan.check_races().unwrap();
    let ops: Vec<_> = plan.ops().iter().collect();
    assert_eq!(ops.len(), 2);
    // Each call reads one buffer and writes another, as its operands say.
    for op in &ops {
        let modes: Vec<_> = op.accesses.iter().map(|a| a.mode).collect();
        assert_eq!(modes, [AccessMode::Write, AccessMode::Read]);
    }
    assert!(plan.happens_before(0, 1));
}

fn setup(
    k: &Kernels,
) -> (
    Stream,
    DeviceBuffer<u32>,
    DeviceBuffer<u32>,
    DeviceBuffer<u32>,
) {
    let origin = Stream::new(&k.device, 0).unwrap();
    let x = DeviceBuffer::from_host(&k.device, &(0..100u32).collect::<Vec<_>>()).unwrap();
    let y = DeviceBuffer::<u32>::zeros(&k.device, 100).unwrap();
    let z = DeviceBuffer::<u32>::zeros(&k.device, 100).unwrap();
    (origin, x, y, z)
}

/// Each call is one operation of the graph: its memset and kernels are its nodes, joined to
/// one, and the edges between the calls are what the waits say.
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn calls_capture_as_planned() {
    let k = Kernels::new();
    let (origin, x, mut y, mut z) = setup(&k);
    let stamp = Stamp {
        copy: &k.copy,
        add: &k.add,
    };
    let graph = Capture::new(&origin)
        .capture(Twice::new(&x, &mut y, &mut z, &stamp))
        .unwrap();
    graph.verify().unwrap();
    let dot = graph.to_dot().unwrap();
    assert!(dot.contains("call stamp(&mut y, &x)"), "{dot}");

    let flag = DeviceFlag::new(&k.device, 1).unwrap();
    let graph = Capture::new(&origin)
        .capture(InLoop::new(&x, &mut y, &flag, &stamp))
        .unwrap();
    graph.verify().unwrap();
}

/// An eager run and every replay compute `z = x + 16`; the loop's body computes `y = x + 8`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn calls_run_eagerly_as_replayed_values() {
    let k = Kernels::new();
    let (origin, x, mut y, mut z) = setup(&k);
    let stamp = Stamp {
        copy: &k.copy,
        add: &k.add,
    };
    let want_y: Vec<u32> = (0..100).map(|v| v + 8).collect();
    let want_z: Vec<u32> = (0..100).map(|v| v + 16).collect();
    Eager::new(&origin)
        .run(&Twice::new(&x, &mut y, &mut z, &stamp))
        .unwrap();
    assert_eq!(y.to_vec_on(&origin).unwrap(), want_y);
    assert_eq!(z.to_vec_on(&origin).unwrap(), want_z);
    let eager = z.to_vec_on(&origin).unwrap();

    z.copy_from_host(&[0; 100]).unwrap();
    let exec = Capture::new(&origin)
        .capture(Twice::new(&x, &mut y, &mut z, &stamp))
        .unwrap()
        .instantiate()
        .unwrap();
    for _ in 0..3 {
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        let pipeline = exec.pipeline();
        assert_eq!(
            pipeline.z.to_vec_on(&origin).unwrap(),
            eager,
            "replay == eager, bitwise"
        );
    }
    drop(exec);

    let flag = DeviceFlag::new(&k.device, 1).unwrap();
    y.copy_from_host(&[0; 100]).unwrap();
    let exec = replayed_once(
        &origin,
        Capture::new(&origin),
        InLoop::new(&x, &mut y, &flag, &stamp),
    );
    assert_eq!(exec.pipeline().y.to_vec_on(&origin).unwrap(), want_y);
}

/// `y = 5` on the given stream and `z = 0` on a stream of the op's own, forked from the given
/// one and joined back: the call leaves its stream depending on two nodes.
struct Forked {
    side: std::sync::Arc<streamgraph::cudarc::driver::CudaStream>,
}

// SAFETY: `issue` fills `y` on the given stream and zeroes `z` on the op's own stream, which
// first waits for the given stream and is waited for by it before `issue` returns (the forked
// work the contract allows); nothing else is touched, waited for or allocated.
unsafe impl StreamOp for Forked {
    type Operands<'a> = (Out<'a, u32>, Out<'a, u32>);

    fn issue(
        &self,
        stream: &CallStream<'_>,
        (y, z): &mut Self::Operands<'_>,
    ) -> streamgraph::Result<()> {
        let failed =
            |e: streamgraph::cudarc::driver::DriverError| Error::InvalidArgument(format!("{e:?}"));
        stream.fill(y, 5)?;
        let on = stream.as_cudarc();
        self.side.join(on).map_err(failed)?;
        // SAFETY: `z` is live device memory of `z.len()` words, written on a stream ordered
        // after the given one's work so far and before its work to come.
        unsafe {
            streamgraph::cudarc::driver::result::memset_d8_async(
                z.device_ptr(),
                0,
                z.len() * 4,
                self.side.cu_stream(),
            )
        }
        .map_err(failed)?;
        on.join(&self.side).map_err(failed)
    }
}

pipeline! {
    /// `z = 7`, then the forked call (`y = 5`, `z = 0`), then `w = z` on the side stream.
    pipeline ForkedCall(y: &mut DeviceBuffer<u32>, z: &mut DeviceBuffer<u32>, w: &mut DeviceBuffer<u32>, op: &Forked) {
        stream main;
        stream side;
        event done;
        main: fill z = 7u32;
        main: call op(&mut y, &mut z);
        main: record done;
        side: wait done;
        side: copy w <- z;
    }
}

/// A call whose work ends on two nodes is joined to one: the graph verifies against the plan
/// (the fill before the call's first nodes, the copy after its join), and replays compute
/// what the eager run does.
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn a_call_that_leaves_two_tips_is_joined() {
    let k = Kernels::new();
    let (origin, _x, mut y, mut z) = setup(&k);
    let mut w = DeviceBuffer::<u32>::zeros(&k.device, 100).unwrap();
    let op = Forked {
        side: origin.as_cudarc().context().new_stream().unwrap(),
    };
    let graph = Capture::new(&origin)
        .capture(ForkedCall::new(&mut y, &mut z, &mut w, &op))
        .unwrap();
    graph.verify().unwrap();
}

/// The values of [`a_call_that_leaves_two_tips_is_joined`]'s pipeline, eagerly and replayed.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_call_that_leaves_two_tips_is_joined_values() {
    let k = Kernels::new();
    let (origin, _x, mut y, mut z) = setup(&k);
    let mut w = DeviceBuffer::<u32>::from_host(&k.device, &[9; 100]).unwrap();
    let op = Forked {
        side: origin.as_cudarc().context().new_stream().unwrap(),
    };
    Eager::new(&origin)
        .run(&ForkedCall::new(&mut y, &mut z, &mut w, &op))
        .unwrap();
    assert_eq!(y.to_vec_on(&origin).unwrap(), [5; 100]);
    assert_eq!(w.to_vec_on(&origin).unwrap(), [0; 100]);
    w.copy_from_host(&[9; 100]).unwrap();
    y.copy_from_host(&[0; 100]).unwrap();
    let exec = replayed_once(
        &origin,
        Capture::new(&origin),
        ForkedCall::new(&mut y, &mut z, &mut w, &op),
    );
    assert_eq!(exec.pipeline().y.to_vec_on(&origin).unwrap(), [5; 100]);
    assert_eq!(exec.pipeline().w.to_vec_on(&origin).unwrap(), [0; 100]);
}

/// An op that allocates stream-ordered memory while it is captured, and frees it right after
/// unless `free` is off (then the allocation is its one node; the graph that holds it is refused
/// and destroyed unlaunched).
struct Allocates {
    free: bool,
}

// SAFETY: deliberately broken for the test: it allocates (and frees) on its stream, which the
// contract forbids; the capture must refuse it. It touches no memory.
unsafe impl StreamOp for Allocates {
    type Operands<'a> = (Out<'a, u32>,);

    fn issue(
        &self,
        stream: &CallStream<'_>,
        _: &mut Self::Operands<'_>,
    ) -> streamgraph::Result<()> {
        let cu = stream.as_cudarc().cu_stream();
        let failed = |e| Error::InvalidArgument(format!("{e:?}"));
        // SAFETY: a stream-ordered allocation of 256 bytes on a live stream, freed right after
        // in the same order or never launched; nothing reads the pointer.
        unsafe {
            let p = streamgraph::cudarc::driver::result::malloc_async(cu, 256).map_err(failed)?;
            if self.free {
                streamgraph::cudarc::driver::result::free_async(p, cu).map_err(failed)?;
            }
        }
        Ok(())
    }
}

pipeline! {
    /// One call of an op that allocates.
    pipeline Allocating(y: &mut DeviceBuffer<u32>, op: &Allocates) {
        stream main;
        main: call op(&mut y);
    }
}

/// The capture refuses the allocation node with an error naming the statement and the op.
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn a_call_that_allocates_in_a_capture_is_refused() {
    let k = Kernels::new();
    let (origin, _x, mut y, _z) = setup(&k);
    let Err(e) = Capture::new(&origin).capture(Allocating::new(&mut y, &Allocates { free: true }))
    else {
        panic!("a call that allocates was captured");
    };
    let text = e.to_string();
    assert!(text.contains("call op(&mut y)"), "{text}");
    assert!(text.contains("allocation"), "{text}");
    // The capture's streams work afterwards.
    let stamp = Stamp {
        copy: &k.copy,
        add: &k.add,
    };
    let x = DeviceBuffer::<u32>::zeros(&k.device, 100).unwrap();
    let mut z = DeviceBuffer::<u32>::zeros(&k.device, 100).unwrap();
    Capture::new(&origin)
        .capture(Twice::new(&x, &mut y, &mut z, &stamp))
        .unwrap()
        .verify()
        .unwrap();
}

/// Random programs with `call` statements (`RandomOptions::calls`): each call is one operation
/// of the plan, writing its first operand and reading its second, as `RandomCallOp` declares.
/// (`capture_random_blocks` captures and verifies 1,200 such programs with device blocks.)
#[test]
fn random_programs_plan_their_calls() {
    use streamgraph::testing::{Call, RandomOptions, RandomProgram};
    let options = RandomOptions {
        calls: true,
        ..RandomOptions::default()
    };
    let mut calls = 0;
    for seed in 0..200u64 {
        let r = RandomProgram::with_options(seed, options.clone());
        let plan = r.plan().unwrap();
        assert_eq!(plan.len(), r.operation_count(), "seed {seed}");
        for op in plan.ops() {
            if let StatementKind::Call { .. } = op.statement.kind {
                calls += 1;
                let modes: Vec<_> = op.accesses.iter().map(|a| a.mode).collect();
                assert_eq!(modes, [AccessMode::Write, AccessMode::Read], "seed {seed}");
            }
        }
        assert!(r
            .calls
            .iter()
            .filter(|c| matches!(c, Call::Call { .. }))
            .all(|c| matches!(c.statement().kind, StatementKind::Call { op: "op" })));
    }
    assert!(calls > 200, "{calls} calls in 200 programs");
}

/// An op with scratch memory of its own (a library's workspace): every call of it writes the
/// scratch.
struct Scratchy {
    scratch: DeviceBuffer<u32>,
}

// SAFETY: issues nothing.
unsafe impl StreamOp for Scratchy {
    type Operands<'a> = (Out<'a, u32>,);

    fn issue(&self, _: &CallStream<'_>, _: &mut Self::Operands<'_>) -> streamgraph::Result<()> {
        Ok(())
    }

    fn scratch(&self) -> Option<streamgraph::MemoryRef<'_>> {
        Some(streamgraph::CopySource::<u32>::copy_source(&self.scratch))
    }
}

pipeline! {
    /// One op called on two streams that nothing orders, on buffers of their own.
    pipeline SharedOp(y: &mut DeviceBuffer<u32>, z: &mut DeviceBuffer<u32>, op: &Scratchy) {
        stream main;
        stream side;
        main: call op(&mut y);
        side: call op(&mut z);
    }
}

/// The compile-time check sees no race (the operands differ), the plan's does: both calls
/// write the op's scratch.
#[test]
fn two_unordered_calls_of_one_op_with_scratch_race() {
    let op = Scratchy {
        scratch: DeviceBuffer::for_planning(64).unwrap(),
    };
    let mut y = DeviceBuffer::<u32>::for_planning(16).unwrap();
    let mut z = DeviceBuffer::<u32>::for_planning(16).unwrap();
    let plan = Plan::build(&SharedOp::new(&mut y, &mut z, &op)).unwrap();
    let races = plan.check_races().unwrap_err().to_string();
    assert!(races.contains("call op"), "{races}");
}

/// Argument updates do not reach a call's nodes: `set_kernel_args` on a call says so and what
/// to do instead, and `update_args` captures a pipeline with calls again (as `update_with`).
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn argument_updates_do_not_reach_a_calls_nodes() {
    let k = Kernels::new();
    let (origin, x, mut y, mut z) = setup(&k);
    let stamp = Stamp {
        copy: &k.copy,
        add: &k.add,
    };
    let mut exec = Capture::new(&origin)
        .capture(Twice::new(&x, &mut y, &mut z, &stamp))
        .unwrap()
        .instantiate()
        .unwrap();
    let call = streamgraph::OpRef::new(&Twice::PROGRAM.statements[1]);
    let e = exec
        .set_kernel_args(call, &k.add, &[KernelArg::value(&1u32)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("is not a launch") && e.contains("update_with"),
        "{e}"
    );
    exec.update_args_with(|_| {}).unwrap();
    exec.update_with(|_| {}).unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
}

/// `y += times`, by `times` launches of the add kernel.
struct Repeat<'k> {
    add: &'k Kernel,
    times: u32,
}

// SAFETY: `times` launches of a kernel that adds to the first `n` elements of `y`, on the
// given stream only.
unsafe impl StreamOp for Repeat<'_> {
    type Operands<'a> = (Out<'a, u32>,);

    fn issue(
        &self,
        stream: &CallStream<'_>,
        (y,): &mut Self::Operands<'_>,
    ) -> streamgraph::Result<()> {
        let n = y.len() as u32;
        for _ in 0..self.times {
            stream.launch(
                self.add,
                config(n),
                &[y.arg(), KernelArg::value(&1u32), KernelArg::value(&n)],
            )?;
        }
        Ok(())
    }
}

/// `pipeline` captured by `capture`, instantiated and launched once on `origin`, finished.
fn replayed_once<P: Pipeline>(origin: &Stream, mut capture: Capture, pipeline: P) -> GraphExec<P> {
    let exec = capture.capture(pipeline).unwrap().instantiate().unwrap();
    exec.launch(origin).unwrap();
    origin.synchronize().unwrap();
    exec
}

/// An op of `times` launches of the add kernel.
fn repeat(k: &Kernels, times: u32) -> Repeat<'_> {
    Repeat { add: &k.add, times }
}

pipeline! {
    /// One call of a `Repeat`.
    pipeline Adds<'k>(y: &mut DeviceBuffer<u32>, op: &Repeat<'k>) {
        stream main;
        main: call op(&mut y);
    }
}

/// An op that issues another number of kernels after `update_with` changes the graph's
/// topology: refused as such by default, re-instantiated when asked.
#[test]
#[ignore = "needs a CUDA GPU"]
fn update_with_a_call_of_other_topology_reinstantiates_when_asked_values() {
    let k = Kernels::new();
    let (origin, _x, mut y, _z) = setup(&k);
    let (two, three) = (repeat(&k, 2), repeat(&k, 3));
    let mut exec = Capture::new(&origin)
        .capture(Adds::new(&mut y, &two))
        .unwrap()
        .instantiate()
        .unwrap();
    let e = exec.update_with(|p| p.op = &three).unwrap_err();
    assert!(
        matches!(e, Error::UpdateRejected { .. }),
        "a different number of kernels is a topology change: {e}"
    );
    exec.reinstantiate_on_topology_change(true);
    exec.update_with(|p| p.op = &three).unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(exec.pipeline().y.to_vec_on(&origin).unwrap(), vec![3; 100]);
}

/// An op that fails if it is ever issued.
struct MustNotRun;

// SAFETY: issues nothing.
unsafe impl StreamOp for MustNotRun {
    type Operands<'a> = (Out<'a, u32>, In<'a, u32>);

    fn issue(&self, _: &CallStream<'_>, _: &mut Self::Operands<'_>) -> streamgraph::Result<()> {
        Err(Error::InvalidArgument("the op was issued".into()))
    }
}

pipeline! {
    /// One call of an op that must not run.
    pipeline Guarded(x: &DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, op: &MustNotRun) {
        stream main;
        main: call op(&mut y, &x);
    }
}

/// A call on plan-only memory is refused before the op runs: an op would hand its made-up
/// addresses to a library.
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn a_call_on_plan_only_memory_is_refused() {
    let k = Kernels::new();
    let origin = Stream::new(&k.device, 0).unwrap();
    let x = DeviceBuffer::<u32>::for_planning(16).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&k.device, 16).unwrap();
    let e = Eager::new(&origin)
        .run(&Guarded::new(&x, &mut y, &MustNotRun))
        .unwrap_err();
    assert!(e.to_string().contains("made with `for_planning`"), "{e}");
    assert!(e.to_string().contains("call op(&mut y, &x)"), "{e}");
}

pipeline! {
    /// A fill, a call that issues nothing, and a call that issues two kernels, on one stream:
    /// the graph holds one node per call, though not one each.
    pipeline NoneThenTwo<'k>(y: &mut DeviceBuffer<u32>, none: &Repeat<'k>, two: &Repeat<'k>) {
        stream main;
        main: fill y = 5u32;
        main: call none(&mut y);
        main: call two(&mut y);
    }
}

/// A call that made no node beside one that made two: the node count alone would match one
/// node per call, but the first call's exit is the fill's node, so each call's nodes are
/// found back from its exit (none, and two), without listing the graph; `verify` compares
/// the graph with the plan's edges with the call that made no node contracted (the fill
/// before the two kernels).
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn a_call_that_makes_no_node_beside_one_that_makes_two() {
    let k = Kernels::new();
    let (origin, _x, mut y, _z) = setup(&k);
    let (none, two) = (repeat(&k, 0), repeat(&k, 2));
    let graph = Capture::new(&origin)
        .check(false)
        .capture(NoneThenTwo::new(&mut y, &none, &two))
        .unwrap();
    assert!(
        !graph.nodes_listed(),
        "the calls' nodes are found from their exits"
    );
    // The call that made no node stands apart; the fill is ordered before the two kernels.
    let dot = graph.to_dot().unwrap();
    assert!(dot.contains("c1 [label=\"main: call none(&mut y)"), "{dot}");
    assert!(dot.contains("c0 -> c2;"), "{dot}");
    assert!(!dot.contains("c1 ->") && !dot.contains("-> c1"), "{dot}");
    graph.verify().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_call_that_makes_no_node_beside_one_that_makes_two_values() {
    let k = Kernels::new();
    let (origin, _x, mut y, _z) = setup(&k);
    let (none, two) = (repeat(&k, 0), repeat(&k, 2));
    let exec = replayed_once(
        &origin,
        Capture::new(&origin),
        NoneThenTwo::new(&mut y, &none, &two),
    );
    assert_eq!(exec.pipeline().y.to_vec_on(&origin).unwrap(), vec![7; 100]);
}

/// A call that made one node, an allocation, is refused as the call that made it, as one of
/// several nodes is.
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn a_call_whose_one_node_allocates_is_refused() {
    let k = Kernels::new();
    let (origin, _x, mut y, _z) = setup(&k);
    let Err(e) = Capture::new(&origin).capture(Allocating::new(&mut y, &Allocates { free: false }))
    else {
        panic!("a call that allocates was captured");
    };
    let text = e.to_string();
    assert!(text.contains("call op(&mut y)"), "{text}");
    assert!(text.contains("allocation"), "{text}");
}

pipeline! {
    /// A call whose stream depends on two nodes when it starts (a fill of its own and, by the
    /// wait, the side stream's fill): `y = 5 + 2`, `z = 1`.
    pipeline FromTwo<'k>(y: &mut DeviceBuffer<u32>, z: &mut DeviceBuffer<u32>, two: &Repeat<'k>) {
        stream main;
        stream side;
        side: wait_stream main;
        side: fill z = 1u32;
        main: fill y = 5u32;
        main: wait_stream side;
        main: call two(&mut y);
    }
}

/// A call that starts from two nodes: its nodes are found back from its exit to both, without
/// listing the graph, and the graph is the plan's (both fills before the call).
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn a_call_that_starts_from_two_nodes_is_found_back_to_both() {
    let k = Kernels::new();
    let (origin, _x, mut y, mut z) = setup(&k);
    let two = repeat(&k, 2);
    let graph = Capture::new(&origin)
        .check(false)
        .capture(FromTwo::new(&mut y, &mut z, &two))
        .unwrap();
    assert!(
        !graph.nodes_listed(),
        "the call's nodes are found from its exit"
    );
    graph.verify().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_call_that_starts_from_two_nodes_is_found_back_to_both_values() {
    let k = Kernels::new();
    let (origin, _x, mut y, mut z) = setup(&k);
    let two = repeat(&k, 2);
    let exec = replayed_once(
        &origin,
        Capture::new(&origin),
        FromTwo::new(&mut y, &mut z, &two),
    );
    assert_eq!(exec.pipeline().y.to_vec_on(&origin).unwrap(), vec![7; 100]);
    assert_eq!(exec.pipeline().z.to_vec_on(&origin).unwrap(), vec![1; 100]);
}

/// A call of more nodes than a capture follows back from a call's exit: the graph's nodes are
/// listed instead, and the graph is the plan's all the same.
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn a_call_of_many_nodes_is_found_in_the_node_list() {
    let k = Kernels::new();
    let (origin, _x, mut y, _z) = setup(&k);
    let many = repeat(&k, 80);
    let graph = Capture::new(&origin)
        .check(false)
        .capture(Adds::new(&mut y, &many))
        .unwrap();
    assert!(
        graph.nodes_listed(),
        "80 nodes are over what a walk back follows"
    );
    graph.verify().unwrap();
    let dot = graph.to_dot().unwrap();
    assert!(dot.contains("main: call op(&mut y)"), "{dot}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_call_of_many_nodes_is_found_in_the_node_list_values() {
    let k = Kernels::new();
    let (origin, _x, mut y, _z) = setup(&k);
    let many = repeat(&k, 80);
    let exec = replayed_once(&origin, Capture::new(&origin), Adds::new(&mut y, &many));
    assert_eq!(exec.pipeline().y.to_vec_on(&origin).unwrap(), vec![80; 100]);
}

pipeline! {
    /// A call that makes no node, an event recorded after it and a call after that: what
    /// follows the call on its stream and through the event follows the fill before it.
    pipeline NoneBetween<'k>(y: &mut DeviceBuffer<u32>, z: &mut DeviceBuffer<u32>, none: &Repeat<'k>, two: &Repeat<'k>) {
        stream main;
        stream side;
        event e;
        side: wait_stream main;
        side: fill z = 1u32;
        main: wait_stream side;
        main: fill y = 5u32;
        main: call none(&mut y);
        main: record e;
        main: call two(&mut y);
        side: wait e;
        side: fill z = 2u32;
        main: wait_stream side;
    }
}

/// A checked capture of a call that makes no node before a record: the graph is the plan's
/// with the call contracted (the fill of `y` before the two kernels and, through the event,
/// before the side stream's second fill).
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn a_call_that_makes_no_node_is_verified_through() {
    let k = Kernels::new();
    let (origin, _x, mut y, mut z) = setup(&k);
    let (none, two) = (repeat(&k, 0), repeat(&k, 2));
    let graph = Capture::new(&origin)
        .check(true)
        .capture(NoneBetween::new(&mut y, &mut z, &none, &two))
        .unwrap();
    let report = graph.verify().unwrap();
    assert_eq!(report.operations, 5);
    let dot = graph.to_dot().unwrap();
    // Fills c0 (z) and c1 (y); c2 the call of none; c3 the two kernels; c4 the second fill.
    for edge in ["c0 -> c1;", "c1 -> c3;", "c1 -> c4;", "c0 -> c4;"] {
        assert!(dot.contains(edge), "{edge} in {dot}");
    }
    assert!(!dot.contains("c2 ->") && !dot.contains("-> c2"), "{dot}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_call_that_makes_no_node_is_verified_through_values() {
    let k = Kernels::new();
    let (origin, _x, mut y, mut z) = setup(&k);
    let (none, two) = (repeat(&k, 0), repeat(&k, 2));
    let exec = replayed_once(
        &origin,
        Capture::new(&origin).check(true),
        NoneBetween::new(&mut y, &mut z, &none, &two),
    );
    assert_eq!(exec.pipeline().y.to_vec_on(&origin).unwrap(), vec![7; 100]);
    assert_eq!(exec.pipeline().z.to_vec_on(&origin).unwrap(), vec![2; 100]);
}
