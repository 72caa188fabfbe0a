//! `pipeline!` pipelines on the GPU: run eagerly, their results equal a host computation; run
//! eagerly and captured (`testing::compare`), the same number of eager runs and graph replays
//! from the same initial state leave bitwise-equal results, and every captured graph equals its
//! plan (`verify`).
//!
//! The kernels read, spin, then write `x * 31 + k`, so a missing dependency loses an update or
//! reorders two: a wrong value, not only a different schedule.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use streamgraph::{
    capture, pipeline, testing, Capture, Device, DeviceBuffer, Eager, Kernel, Module, PinnedBuffer,
    Stream,
};

const SOURCE: &str = r#"
__device__ void spin_ns(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}

// x[0] = x[0] * 31 + k, slowly: read, spin, write (order matters, updates can be lost).
extern "C" __global__ void slow_step(unsigned* x, unsigned k, unsigned long long ns) {
    unsigned v = x[0];
    spin_ns(ns);
    x[0] = v * 31u + k;
}

// dst[i] = src[i] * m + a for i < n, after a spin.
extern "C" __global__ void slow_affine(unsigned* dst, const unsigned* src, unsigned m, unsigned a, unsigned n, unsigned long long ns) {
    spin_ns(ns);
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i] * m + a;
}
"#;

struct Kernels {
    slow_step: Kernel,
    slow_affine: Kernel,
}

fn setup() -> (Device, Stream, Kernels) {
    let device = Device::new(None).unwrap();
    let stream = Stream::new(&device, 0).unwrap();
    let module = Module::from_cuda_source(&device, "capture_pipelines", SOURCE).unwrap();
    // SAFETY: the pipelines below pass (unsigned*, unsigned, unsigned long long) and
    // (unsigned*, const unsigned*, unsigned, unsigned, unsigned, unsigned long long).
    let kernels = unsafe {
        Kernels {
            slow_step: module.kernel("slow_step").unwrap(),
            slow_affine: module.kernel("slow_affine").unwrap(),
        }
    };
    (device, stream, kernels)
}

const SPIN: u64 = 200_000; // 0.2 ms
const RUNS: usize = 3;

/// What `slow_step` computes, on the host.
fn step(x: u32, k: u32) -> u32 {
    x.wrapping_mul(31).wrapping_add(k)
}

pipeline! {
    /// Ping-pong between two streams through two events, `steps` times.
    pipeline PingPong(x: &mut DeviceBuffer<u32>, k: &Kernels, steps: usize) {
        stream a;
        stream b;
        event a_done;
        event b_done;

        for _step in 0..steps {
            a: wait b_done;
            a: launch k.slow_step<<<1, 1>>>(&mut x, 1u32, SPIN);
            a: record a_done;
            b: wait a_done;
            b: launch k.slow_step<<<1, 1>>>(&mut x, 10u32, SPIN);
            b: record b_done;
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ping_pong_alternates_in_event_order() {
    let _serial = common::serial();
    let (device, stream, k) = setup();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut eager = Eager::new(&stream);
    eager.run(&PingPong::new(&mut x, &k, 8)).unwrap();
    eager.run(&PingPong::new(&mut x, &k, 8)).unwrap();
    stream.synchronize().unwrap();
    let want = (0..16).fold(0, |x, _| step(step(x, 1), 10));
    assert_eq!(x.to_vec().unwrap(), [want]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ping_pong_replays_like_eager_runs() {
    let _serial = common::serial();
    let (device, origin, k) = setup();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let report = testing::compare(&origin, &mut x, |x, run| {
        run.pipeline(PingPong::new(x, &k, 4))
    })
    .reset(|x| x.copy_from_host(&[0]))
    .output("x", |x| x.to_vec())
    .replays(RUNS)
    .run()
    .unwrap();
    assert_eq!((report.verified.operations, report.runs), (8, RUNS));
    // The last side compared: RUNS replays from 0, as many steps as RUNS eager runs.
    let want = (0..4 * RUNS).fold(0, |x, _| step(step(x, 1), 10));
    assert_eq!(x.to_vec().unwrap(), [want]);
}

pipeline! {
    /// Upload on a copy stream, two transforms on two compute streams, then a join on the
    /// origin: download and a host function.
    pipeline Fan(
        host_in: &PinnedBuffer<u32>,
        input: &mut DeviceBuffer<u32>,
        left: &mut DeviceBuffer<u32>,
        right: &mut DeviceBuffer<u32>,
        host_left: &mut PinnedBuffer<u32>,
        host_right: &mut PinnedBuffer<u32>,
        k: &Kernels,
        n: u32,
        runs: &Arc<AtomicUsize>,
    ) {
        stream main;
        stream upload;
        stream one(priority = -1);
        stream two(priority = 100);
        event loaded;

        upload: copy input <- host_in;
        upload: record loaded;
        one: wait loaded;
        one: launch k.slow_affine<<<1, 128>>>(&mut left, &input, 3u32, 1u32, n, SPIN);
        two: wait loaded;
        two: launch k.slow_affine<<<1, 128>>>(&mut right, &input, 5u32, 2u32, n, SPIN);
        main: wait_stream one;
        main: wait_stream two;
        main: copy host_left <- left;
        main: copy host_right <- right;
        main: host {
            let runs = Arc::clone(runs);
            move || {
                runs.fetch_add(1, Ordering::SeqCst);
            }
        };
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fan_out_and_join_give_host_checked_results() {
    let _serial = common::serial();
    let (device, stream, k) = setup();
    let n = 1000u32;
    let runs = Arc::new(AtomicUsize::new(0));
    let mut eager = Eager::new(&stream);
    for round in 0..3u32 {
        let values: Vec<u32> = (0..n).map(|i| i * 7 + round).collect();
        let host_in = PinnedBuffer::from_slice(&device, &values).unwrap();
        let fresh = || DeviceBuffer::<u32>::zeros(&device, n as usize).unwrap();
        let (mut input, mut left, mut right) = (fresh(), fresh(), fresh());
        let mut host_left = PinnedBuffer::<u32>::zeros(&device, n as usize).unwrap();
        let mut host_right = PinnedBuffer::<u32>::zeros(&device, n as usize).unwrap();
        let p = Fan::new(
            &host_in,
            &mut input,
            &mut left,
            &mut right,
            &mut host_left,
            &mut host_right,
            &k,
            n,
            &runs,
        );
        eager.run(&p).unwrap();
        stream.synchronize().unwrap();
        let want_left: Vec<u32> = values.iter().map(|v| v * 3 + 1).collect();
        let want_right: Vec<u32> = values.iter().map(|v| v * 5 + 2).collect();
        assert_eq!(
            &*host_left.as_slice().unwrap(),
            &want_left[..],
            "round {round}"
        );
        assert_eq!(
            &*host_right.as_slice().unwrap(),
            &want_right[..],
            "round {round}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), round as usize + 1);
    }
    let stats = eager.stats();
    assert_eq!(
        (stats.launches, stats.copies, stats.host_fns),
        (6, 9, 3),
        "{stats:?}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fan_out_replays_like_eager_runs_and_keeps_its_host_function() {
    let _serial = common::serial();
    let (device, origin, k) = setup();
    let n = 1000u32;
    let values: Vec<u32> = (0..n).map(|i| i * 7 + 3).collect();
    let host_in = PinnedBuffer::from_slice(&device, &values).unwrap();
    let fresh = || DeviceBuffer::<u32>::zeros(&device, n as usize).unwrap();
    let pinned = || PinnedBuffer::<u32>::zeros(&device, n as usize).unwrap();

    /// What `Fan` borrows mutably, read between runs.
    struct State {
        input: DeviceBuffer<u32>,
        left: DeviceBuffer<u32>,
        right: DeviceBuffer<u32>,
        host_left: PinnedBuffer<u32>,
        host_right: PinnedBuffer<u32>,
    }
    let mut state = State {
        input: fresh(),
        left: fresh(),
        right: fresh(),
        host_left: pinned(),
        host_right: pinned(),
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let zeros = vec![0u32; n as usize];
    let report = testing::compare(&origin, &mut state, |s, run| {
        run.pipeline(Fan::new(
            &host_in,
            &mut s.input,
            &mut s.left,
            &mut s.right,
            &mut s.host_left,
            &mut s.host_right,
            &k,
            n,
            &runs,
        ))
    })
    // Every side starts from zeroed results, so each must compute them itself.
    .reset(|s| {
        for b in [&mut s.input, &mut s.left, &mut s.right] {
            b.copy_from_host(&zeros)?;
        }
        s.host_left.as_mut_slice()?.fill(0);
        s.host_right.as_mut_slice()?.fill(0);
        Ok(())
    })
    .output("host_left", |s| s.host_left.to_vec())
    .output("host_right", |s| s.host_right.to_vec())
    .replays(RUNS)
    .run()
    .unwrap();
    println!("{report}");
    assert_eq!(report.verified.operations, 6);

    let want: Vec<u32> = values.iter().map(|v| v * 3 + 1).collect();
    assert_eq!(state.host_left.to_vec().unwrap(), want);
    let want: Vec<u32> = values.iter().map(|v| v * 5 + 2).collect();
    assert_eq!(state.host_right.to_vec().unwrap(), want);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        RUNS + 1 + RUNS,
        "the host function runs on every eager run and every replay"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_results_of_a_given_back_pipeline_wait_for_its_replays() {
    let _serial = common::serial();
    let (device, origin, k) = setup();
    let n = 1000u32;
    let values: Vec<u32> = (0..n).map(|i| i * 11 + 4).collect();
    let host_in = PinnedBuffer::from_slice(&device, &values).unwrap();
    let fresh = || DeviceBuffer::<u32>::zeros(&device, n as usize).unwrap();
    let (mut input, mut left, mut right) = (fresh(), fresh(), fresh());
    let mut host_left = PinnedBuffer::<u32>::zeros(&device, n as usize).unwrap();
    let mut host_right = PinnedBuffer::<u32>::zeros(&device, n as usize).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let p = Fan::new(
        &host_in,
        &mut input,
        &mut left,
        &mut right,
        &mut host_left,
        &mut host_right,
        &k,
        n,
        &runs,
    );
    let exec = capture(&origin, p).unwrap().instantiate().unwrap();
    // Replays on another stream, behind a long spin there: nothing is synchronized by hand.
    let other = Stream::new(&device, 0).unwrap();
    let mut gate = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let one = 1u32;
    let spin = 100_000_000u64; // 100 ms
    k.slow_step
        .launch_on(
            &other,
            streamgraph::LaunchConfig {
                grid: 1.into(),
                block: 1.into(),
                shared_mem_bytes: 0,
            },
            &[
                streamgraph::KernelArg::write(&mut gate),
                streamgraph::KernelArg::value(&one),
                streamgraph::KernelArg::value(&spin),
            ],
        )
        .unwrap();
    exec.replay(&other, 2).unwrap();
    // Giving the pipeline back does not wait; reading the pinned buffers must: the replays
    // copy into `host_left` and `host_right`.
    exec.into_pipeline();
    let want_left: Vec<u32> = values.iter().map(|v| v * 3 + 1).collect();
    let want_right: Vec<u32> = values.iter().map(|v| v * 5 + 2).collect();
    assert_eq!(&*host_left.as_slice().unwrap(), &want_left[..]);
    assert_eq!(&*host_right.as_slice().unwrap(), &want_right[..]);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

pipeline! {
    /// One stream: a chain of slow steps.
    pipeline Chain(x: &mut DeviceBuffer<u32>, k: &Kernels, n: usize) {
        stream main;
        for i in 0..n {
            main: launch k.slow_step<<<1, 1>>>(&mut x, i as u32, 1000u64);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_one_stream_pipeline_issues_no_event_calls() {
    let _serial = common::serial();
    let (device, stream, k) = setup();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut eager = Eager::new(&stream);
    eager.run(&Chain::new(&mut x, &k, 100)).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), [(0..100).fold(0, step)]);
    let stats = eager.stats();
    // One stream: only the lane's fork and join (a record and a wait each way).
    assert_eq!((stats.event_records, stats.event_waits), (2, 2));
    assert_eq!(stats.launches, 100);
}

pipeline! {
    /// A side stream whose last command is a record, and a stream that issues nothing.
    pipeline TailJoin(x: &mut DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, k: &Kernels) {
        stream main;
        stream side;
        stream unused;
        event done;

        side: launch k.slow_step<<<1, 1>>>(&mut y, 5u32, 50_000_000u64);
        side: record done;
        main: launch k.slow_step<<<1, 1>>>(&mut x, 1u32, 1000u64);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn joins_reuse_a_final_record_and_skip_unused_streams() {
    let _serial = common::serial();
    let (device, stream, k) = setup();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut eager = Eager::new(&stream);
    eager.run(&TailJoin::new(&mut x, &mut y, &k)).unwrap();
    // Only the origin is synchronized: the join through `done` must cover `side`'s 50 ms step.
    stream.synchronize().unwrap();
    assert_eq!(y.to_vec_on(&stream).unwrap(), [5]);
    let stats = eager.stats();
    // Records: the fork point and `done`; waits: `side`'s fork and the join on `done`; and the
    // lane's fork and join (a record and a wait each way).
    assert_eq!(
        (stats.event_records, stats.event_waits),
        (4, 4),
        "{stats:?}"
    );

    // Captured, the same pipeline is the same graph: two nodes, no edge.
    let mut gx = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut gy = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let graph = capture(&stream, TailJoin::new(&mut gx, &mut gy, &k)).unwrap();
    let report = graph.verify().unwrap();
    assert_eq!((report.operations, report.edges), (2, 0));
}

pipeline! {
    /// The origin waits for the side stream's last record itself: the join adds nothing.
    pipeline WaitedTail(x: &mut DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, k: &Kernels) {
        stream main;
        stream side;
        event done;

        side: launch k.slow_step<<<1, 1>>>(&mut y, 5u32, 50_000_000u64);
        side: record done;
        main: wait done;
        main: launch k.slow_step<<<1, 1>>>(&mut x, 1u32, 1000u64);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_join_the_origin_already_waited_for_issues_nothing() {
    let _serial = common::serial();
    let (device, stream, k) = setup();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut eager = Eager::new(&stream);
    eager.run(&WaitedTail::new(&mut x, &mut y, &k)).unwrap();
    eager.run(&WaitedTail::new(&mut x, &mut y, &k)).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(y.to_vec_on(&stream).unwrap(), [step(step(0, 5), 5)]);
    assert_eq!(x.to_vec_on(&stream).unwrap(), [step(step(0, 1), 1)]);
    let stats = eager.stats();
    // Per run: records of the fork point and `done`; waits of `side`'s fork and `main: wait
    // done`, which is the join too; the lane's fork and join.
    assert_eq!(
        (stats.event_records, stats.event_waits),
        (8, 8),
        "{stats:?}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_chain_replays_like_eager_runs_on_any_stream() {
    let _serial = common::serial();
    let (device, origin, k) = setup();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    testing::compare(&origin, &mut x, |x, run| {
        run.pipeline(Chain::new(x, &k, 50))
    })
    .reset(|x| x.copy_from_host(&[0]))
    .output("x", |x| x.to_vec())
    .replays(RUNS)
    .run()
    .unwrap();
    let eager_x = x.to_vec().unwrap();

    // Any stream of the device: replay on another one.
    let mut y = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let graph = capture(&origin, Chain::new(&mut y, &k, 50)).unwrap();
    graph.verify().unwrap();
    let exec = graph.instantiate().unwrap();
    let other = Stream::new(&device, 0).unwrap();
    exec.replay(&other, RUNS).unwrap();
    other.synchronize().unwrap();
    exec.into_pipeline();
    assert_eq!(y.to_vec().unwrap(), eager_x);
}

/// The record and wait calls `run` adds to `eager`'s counts.
fn event_calls_of(
    eager: &mut Eager,
    run: impl FnOnce(&mut Eager) -> streamgraph::Result<()>,
) -> (u64, u64) {
    let before = eager.stats();
    run(eager).unwrap();
    let after = eager.stats();
    (
        after.event_records - before.event_records,
        after.event_waits - before.event_waits,
    )
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_eager_issuer_runs_pipelines_in_turn_on_the_streams_it_kept_for_each() {
    let _serial = common::serial();
    let (device, stream, k) = setup();
    let zeros = || DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let (mut p, mut tx, mut ty, mut wx, mut wy, mut c) =
        (zeros(), zeros(), zeros(), zeros(), zeros(), zeros());
    let mut eager = Eager::new(&stream);
    // Four pipeline types in turn, three rounds: each run after the first round takes the
    // streams and events kept for its type while the others ran.
    for _ in 0..3 {
        eager.run(&PingPong::new(&mut p, &k, 2)).unwrap();
        let calls = event_calls_of(&mut eager, |e| e.run(&TailJoin::new(&mut tx, &mut ty, &k)));
        assert_eq!(calls, (4, 4));
        let calls = event_calls_of(&mut eager, |e| {
            e.run(&WaitedTail::new(&mut wx, &mut wy, &k))
        });
        assert_eq!(calls, (4, 4));
        eager.run(&Chain::new(&mut c, &k, 3)).unwrap();
    }
    // Only the origin is synchronized: every side stream's work must be joined into it.
    stream.synchronize().unwrap();
    let ping = (0..6).fold(0, |x, _| step(step(x, 1), 10));
    assert_eq!(p.to_vec_on(&stream).unwrap(), [ping]);
    assert_eq!(
        ty.to_vec_on(&stream).unwrap(),
        [(0..3).fold(0, |y, _| step(y, 5))]
    );
    assert_eq!(
        wy.to_vec_on(&stream).unwrap(),
        [(0..3).fold(0, |y, _| step(y, 5))]
    );
    assert_eq!(
        wx.to_vec_on(&stream).unwrap(),
        [(0..3).fold(0, |x, _| step(x, 1))]
    );
    let chain = (0..3).fold(0, |x, _| (0..3).fold(x, step));
    assert_eq!(c.to_vec_on(&stream).unwrap(), [chain]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_capture_issuer_captures_many_pipelines_and_eager_still_works_after() {
    let _serial = common::serial();
    let (device, origin, k) = setup();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut cap = Capture::new(&origin);
    for steps in 1..4 {
        let graph = cap.capture(PingPong::new(&mut x, &k, steps)).unwrap();
        assert_eq!(graph.len(), 2 * steps);
        graph.verify().unwrap();
    }
    // The streams are not capturing any more: eager work and synchronisation go through.
    let mut eager = Eager::new(&origin);
    eager.run(&PingPong::new(&mut x, &k, 1)).unwrap();
    origin.synchronize().unwrap();
    assert!(origin.query().unwrap());
}

pipeline! {
    /// One launch on a stream of the default priority, one on the most urgent stream the device
    /// has (the requested priority is clamped to its range).
    pipeline Prioritized(x: &mut DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, k: &Kernels) {
        stream main;
        stream urgent(priority = -1000);
        main: launch k.slow_step<<<1, 1>>>(&mut x, 1u32, SPIN);
        urgent: launch k.slow_step<<<1, 1>>>(&mut y, 2u32, SPIN);
    }
}

/// A captured kernel node keeps the priority of the stream it was captured on, which its
/// executable graph runs it at (instantiated with `CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY`),
/// as the eager run does; replays still compute what eager runs do.
#[test]
#[ignore = "needs a CUDA GPU"]
fn captured_kernel_nodes_keep_their_streams_priorities() {
    use streamgraph::cudarc::driver::sys;
    let _serial = common::serial();
    let (device, origin, k) = setup();
    let urgent = Stream::new(&device, -1000).unwrap().priority().unwrap();
    let (mut x, mut y) = (
        DeviceBuffer::<u32>::zeros(&device, 1).unwrap(),
        DeviceBuffer::<u32>::zeros(&device, 1).unwrap(),
    );
    let graph = capture(&origin, Prioritized::new(&mut x, &mut y, &k)).unwrap();
    graph.verify().unwrap();
    let raw = graph.as_raw().0;
    let mut count = 0usize;
    // SAFETY: the graph is alive while `graph` is; a null array asks for the count only.
    unsafe { sys::cuGraphGetNodes(raw, std::ptr::null_mut(), &mut count) }
        .result()
        .unwrap();
    let mut nodes = vec![std::ptr::null_mut(); count];
    // SAFETY: as above; `nodes` has room for `count` handles.
    unsafe { sys::cuGraphGetNodes(raw, nodes.as_mut_ptr(), &mut count) }
        .result()
        .unwrap();
    let mut priorities = Vec::new();
    for node in nodes {
        let mut kind = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: `node` is a node of the live graph; `kind` is a valid out-pointer.
        unsafe { sys::cuGraphNodeGetType(node, &mut kind) }
            .result()
            .unwrap();
        if kind != sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL {
            continue;
        }
        let mut value = std::mem::MaybeUninit::<sys::CUkernelNodeAttrValue>::zeroed();
        // SAFETY: `node` is a kernel node of the live graph; `value` has room for any
        // attribute's value.
        unsafe {
            sys::cuGraphKernelNodeGetAttribute(
                node,
                sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PRIORITY,
                value.as_mut_ptr(),
            )
        }
        .result()
        .unwrap();
        // SAFETY: the driver wrote the attribute's value, an `int` priority.
        priorities.push(unsafe { value.assume_init().priority });
    }
    priorities.sort_unstable();
    assert_eq!(priorities, [urgent.min(0), urgent.max(0)]);
    let exec = graph.instantiate().unwrap();
    exec.replay(&origin, 2).unwrap();
    origin.synchronize().unwrap();
    drop(exec);
    assert_eq!(x.to_vec().unwrap(), [step(step(0, 1), 1)]);
    assert_eq!(y.to_vec().unwrap(), [step(step(0, 2), 2)]);
}
