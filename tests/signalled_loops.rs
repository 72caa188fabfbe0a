//! Signalled loops (README "Loops and branches on the device"): `while FLAG, signalled { … }`,
//! whose kernels set the loop's condition as they write the flag (`streamgraph_signal`), so
//! that the captured body ends without the built-in kernel that reads the flag back. Eager runs
//! against replays, a loop that never runs, a signalled loop nested in a plain one, a kernel
//! that signals after the loop (outside any graph), and the captured graph's shape.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use cudarc::driver::sys;
use streamgraph::{
    capture, pipeline, Capture, Device, DeviceBuffer, DeviceFlag, Eager, Error, Kernel, Module,
    Stream,
};

/// CUDA C of the kernels (after `streamgraph::SIGNAL_HEADER`).
const SOURCE: &str = r#"
// left[0] -= 1; go = (left[0] != 0), the loop's condition too inside a signalled loop
extern "C" __global__ void countdown(unsigned* left, unsigned* go) {
    unsigned v = left[0] - 1u;
    left[0] = v;
    streamgraph_signal(go, v != 0u ? 1u : 0u);
}
// x[0] += k
extern "C" __global__ void add(unsigned* x, unsigned k) {
    x[0] += k;
}
// x[0] = v
extern "C" __global__ void put(unsigned* x, unsigned v) {
    x[0] = v;
}
"#;

/// The kernels.
#[derive(Debug)]
pub struct S {
    countdown: Kernel,
    add: Kernel,
    put: Kernel,
}

fn gpu() -> (Device, Stream, S) {
    let device = Device::new(None).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    let module = Module::from_signalling_source(&device, "signalled_loops", SOURCE).unwrap();
    // SAFETY: every launch below passes the C signatures above: (unsigned*, unsigned*),
    // (unsigned*, unsigned), (unsigned*, unsigned).
    let s = unsafe {
        S {
            countdown: module.kernel("countdown").unwrap(),
            add: module.kernel("add").unwrap(),
            put: module.kernel("put").unwrap(),
        }
    };
    (device, origin, s)
}

pipeline! {
    /// Counts `left` down from `n` in a signalled loop on `main` while `side` adds 1 to `x` per
    /// iteration; `start` is the flag before the loop (0: the loop never runs).
    pipeline Countdown(left: &mut DeviceBuffer<u32>, x: &mut DeviceBuffer<u32>,
                       go: &mut DeviceFlag, s: &S, n: u32, start: u32) {
        stream main;
        stream side;
        event e;
        main: fill x = 0u32;
        main: launch s.put<<<1, 1>>>(&mut left, n);
        main: fill go = start;
        main: while go, signalled {
            main: record e;
            side: wait e;
            side: launch s.add<<<1, 1>>>(&mut x, 1u32);
            main: launch s.countdown<<<1, 1>>>(&mut left, &mut go);
            main: wait_stream side;
        }
    }
}

pipeline! {
    /// A signalled loop of `n` iterations in each of `rounds` iterations of a plain loop (its
    /// own flag, stopped by its limit): `x` ends at `rounds · n`.
    pipeline Nested(left: &mut DeviceBuffer<u32>, x: &mut DeviceBuffer<u32>, go: &mut DeviceFlag,
                    outer: &mut DeviceFlag, s: &S, n: u32, rounds: u32) {
        stream main;
        main: fill x = 0u32;
        main: fill outer = 1u32;
        main: while outer, limit = rounds {
            main: launch s.put<<<1, 1>>>(&mut left, n);
            main: fill go = 1u32;
            main: while go, signalled {
                main: launch s.add<<<1, 1>>>(&mut x, 1u32);
                main: launch s.countdown<<<1, 1>>>(&mut left, &mut go);
            }
        }
    }
}

pipeline! {
    /// The countdown kernel alone, outside any loop: its signal only writes the flag.
    pipeline Once(left: &mut DeviceBuffer<u32>, go: &mut DeviceFlag, s: &S) {
        stream main;
        main: launch s.countdown<<<1, 1>>>(&mut left, &mut go);
    }
}

fn read(b: &DeviceBuffer<u32>) -> u32 {
    b.to_vec().unwrap()[0]
}

/// The graph's top-level node count.
fn top_nodes(graph: streamgraph::GraphHandle) -> usize {
    let mut count = 0usize;
    // SAFETY: the graph is alive (its `Graph` is, in the caller); a null array asks for the
    // count only.
    unsafe { sys::cuGraphGetNodes(graph.0, std::ptr::null_mut(), &mut count) }
        .result()
        .unwrap();
    count
}

/// The captured loop verifies against its plan (outer graph and body) without the closing
/// kernel of a plain loop's body, with the memset that clears the loop's handle after its node.
/// Runs on the stand-in driver too (`.ci/stand-in-tests`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn signalled_loops_capture_without_a_closing_kernel() {
    let _serial = common::serial();
    let (device, origin, s) = gpu();
    let mut left = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut go = DeviceFlag::new(&device, 0).unwrap();
    let graph = Capture::new(&origin)
        .check(true)
        .capture(Countdown::new(&mut left, &mut x, &mut go, &s, 4, 1))
        .unwrap();
    let report = graph.verify().unwrap();
    // Three statements before the loop and the loop; the body's two launches (its record,
    // wait and join order them and make no node).
    assert_eq!(report.operations, 4 + 2, "{report:?}");
    // The fill of `x`, the `put`, the fill of `go`, the built-in kernel, the WHILE node and
    // the memset after it.
    assert_eq!(top_nodes(graph.as_raw()), 6);
    let dot = graph.to_dot().unwrap();
    assert!(dot.contains("body of main: while go, signalled"), "{dot}");
    let mut outer = DeviceFlag::new(&device, 0).unwrap();
    let nested = capture(
        &origin,
        Nested::new(&mut left, &mut x, &mut go, &mut outer, &s, 3, 2),
    )
    .unwrap();
    nested.verify().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn signalled_loops_run_eagerly_and_replayed_values() {
    let _serial = common::serial();
    let (device, origin, s) = gpu();
    let mut left = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut go = DeviceFlag::new(&device, 0).unwrap();
    for n in [1u32, 2, 7, 100] {
        Eager::new(&origin)
            .check(true)
            .run(&Countdown::new(&mut left, &mut x, &mut go, &s, n, 1))
            .unwrap();
        origin.synchronize().unwrap();
        assert_eq!(
            (read(&left), read(&x), go.get().unwrap()),
            (0, n, 0),
            "eager, {n}"
        );
    }
    // Never entered: the flag is clear before the loop.
    Eager::new(&origin)
        .run(&Countdown::new(&mut left, &mut x, &mut go, &s, 5, 0))
        .unwrap();
    origin.synchronize().unwrap();
    assert_eq!((read(&left), read(&x)), (5, 0), "eager, not entered");

    let mut exec = capture(
        &origin,
        Countdown::new(&mut left, &mut x, &mut go, &s, 3, 1),
    )
    .unwrap()
    .instantiate()
    .unwrap();
    for n in [3u32, 1, 50, 2] {
        exec.update_args_with(|p| p.n = n).unwrap();
        for _ in 0..2 {
            exec.launch(&origin).unwrap();
            origin.synchronize().unwrap();
            let p = exec.pipeline();
            assert_eq!(
                (read(p.left), read(p.x), p.go.get().unwrap()),
                (0, n, 0),
                "replay, {n}"
            );
        }
    }
    exec.update_args_with(|p| p.start = 0).unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(
        (read(exec.pipeline().left), read(exec.pipeline().x)),
        (2, 0),
        "not entered"
    );
    drop(exec);

    // After the graph's loops, the flag holds no handle: the same kernel run eagerly only
    // writes the flag.
    left.copy_from_host(&[3]).unwrap();
    Eager::new(&origin)
        .run(&Once::new(&mut left, &mut go, &s))
        .unwrap();
    origin.synchronize().unwrap();
    assert_eq!((read(&left), go.get().unwrap()), (2, 1));

    let mut outer = DeviceFlag::new(&device, 0).unwrap();
    Eager::new(&origin)
        .run(&Nested::new(
            &mut left, &mut x, &mut go, &mut outer, &s, 4, 3,
        ))
        .unwrap();
    origin.synchronize().unwrap();
    assert_eq!(read(&x), 12, "nested, eager");
    let exec = capture(
        &origin,
        Nested::new(&mut left, &mut x, &mut go, &mut outer, &s, 4, 3),
    )
    .unwrap()
    .instantiate()
    .unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(read(exec.pipeline().x), 12, "nested, replayed");
}

#[test]
fn compiling_signalling_kernels_without_nvrtc_is_a_typed_error() {
    let Ok(device) = Device::new(None) else {
        return; // no driver: nothing to compile with
    };
    match Module::from_signalling_source(&device, "bad", "not CUDA C") {
        Err(Error::Compile { module, .. }) => assert_eq!(module, "bad"),
        Err(Error::NoNvrtc { .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn signalled_loops_are_while_statements_marked_signalled() {
    use streamgraph::StatementKind;
    let statements = &Countdown::PROGRAM.statements;
    assert_eq!(statements[3].text, "main: while go, signalled");
    assert_eq!(
        statements[3].kind,
        StatementKind::While {
            end: statements.len(),
            signalled: true
        }
    );
    let nested = &Nested::PROGRAM.statements;
    let kinds: Vec<_> = nested
        .iter()
        .filter_map(|s| match s.kind {
            StatementKind::While { signalled, .. } => Some(signalled),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [false, true]);
}
