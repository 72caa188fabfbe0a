//! Device blocks replayed many times: the shape of random program 284 of
//! `capture_random_blocks` (a launch, an `if`/`else` whose `else` nests an `if`, and `while`
//! loops on three streams issued twice each, one with an empty body), with each part
//! switchable, so that a fault seen once in a few dozen replays can be pinned on a part.
//!
//! In a binary of its own, one configuration per process: a device fault poisons the context.
//! `STREAMGRAPH_STRESS_PARTS` (a bit mask, default all 15) picks the parts and
//! `STREAMGRAPH_STRESS_REPLAYS` (default 200) the number of replays, each synchronized.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use streamgraph::{pipeline, Capture, DeviceBuffer, DeviceFlag, Kernel, Module, Stream};

/// Every launch adds 1 to `x[0]`, atomically: unordered launches still sum exactly.
const SOURCE: &str = r#"
extern "C" __global__ void add(unsigned* x) {
    atomicAdd(x, 1u);
}
"#;

/// The stress pipelines' kernel.
struct K {
    add: Kernel,
}

impl K {
    fn compiled(device: &streamgraph::Device) -> K {
        let module = Module::from_cuda_source(device, "stress", SOURCE).unwrap();
        // SAFETY: both pipelines launch add(unsigned*) with one buffer of u32.
        let add = unsafe { module.kernel("add").unwrap() };
        K { add }
    }
}

pipeline! {
    /// Program 284's shape: `branch` the `if`/`else` (else taken: `f0` is 0), `loops` the
    /// `while f2` loops with launches on two other streams, `empty` the empty `while f3`
    /// loops, `late` the `while f4` loops after the first launch.
    pipeline Shape(a: &mut DeviceBuffer<u32>, b: &mut DeviceBuffer<u32>, c: &mut DeviceBuffer<u32>,
                   d: &mut DeviceBuffer<u32>, e: &mut DeviceBuffer<u32>,
                   f0: &DeviceFlag, f1: &DeviceFlag, f2: &DeviceFlag, f3: &DeviceFlag, f4: &DeviceFlag,
                   k: &K, branch: bool, loops: bool, empty: bool, late: bool) {
        stream s0; stream s1; stream s2; stream s3;
        event done;

        s3: launch k.add<<<1, 1>>>(&mut a);
        if branch {
            s1: if f0 {
            } else {
                s2: if f1 {
                    s2: record done;
                }
                s1: launch k.add<<<1, 1>>>(&mut b);
            }
        }
        for _i in 0..2u32 {
            if loops {
                s2: while f2, limit = 2u32 {
                    s1: launch k.add<<<1, 1>>>(&mut c);
                    s3: launch k.add<<<1, 1>>>(&mut d);
                }
            }
            if empty {
                s0: while f3, limit = 2u32 {
                }
            }
        }
        if late {
            for _i in 0..2u32 {
                s3: while f4, limit = 2u32 {
                    s2: launch k.add<<<1, 1>>>(&mut e);
                }
            }
        }
    }
}

pipeline! {
    /// `width` device loops side by side, one per stream (up to 6), each issued `reps` times in
    /// a row on its stream, with `body` launches in each iteration.
    pipeline Wide(x0: &mut DeviceBuffer<u32>, x1: &mut DeviceBuffer<u32>, x2: &mut DeviceBuffer<u32>,
                  x3: &mut DeviceBuffer<u32>, x4: &mut DeviceBuffer<u32>, x5: &mut DeviceBuffer<u32>, f: &DeviceFlag, k: &K, width: u32, reps: u32, body: u32) {
        stream s0; stream s1; stream s2; stream s3; stream s4; stream s5;

        for _r in 0..reps {
            if width > 0 { s0: while f, limit = 2u32 { for _b in 0..body { s0: launch k.add<<<1, 1>>>(&mut x0); } } }
            if width > 1 { s1: while f, limit = 2u32 { for _b in 0..body { s1: launch k.add<<<1, 1>>>(&mut x1); } } }
            if width > 2 { s2: while f, limit = 2u32 { for _b in 0..body { s2: launch k.add<<<1, 1>>>(&mut x2); } } }
            if width > 3 { s3: while f, limit = 2u32 { for _b in 0..body { s3: launch k.add<<<1, 1>>>(&mut x3); } } }
            if width > 4 { s4: while f, limit = 2u32 { for _b in 0..body { s4: launch k.add<<<1, 1>>>(&mut x4); } } }
            if width > 5 { s5: while f, limit = 2u32 { for _b in 0..body { s5: launch k.add<<<1, 1>>>(&mut x5); } } }
        }
    }
}

fn env(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_shape_of_program_284_replays_many_times() {
    let _serial = common::serial();
    let parts = env("STREAMGRAPH_STRESS_PARTS", 15);
    let replays = env("STREAMGRAPH_STRESS_REPLAYS", 200);
    let [branch, loops, empty, late] = [1, 2, 4, 8].map(|bit| parts & bit != 0);
    let device = streamgraph::Device::new(None).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    let k = K::compiled(&device);
    let buffer = || DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let (mut a, mut b, mut c, mut d, mut e) = (buffer(), buffer(), buffer(), buffer(), buffer());
    let flag = |v| DeviceFlag::new(&device, v).unwrap();
    let (f0, f1, f2, f3, f4) = (flag(0), flag(1), flag(1), flag(1), flag(1));
    let graph = Capture::new(&origin)
        .capture(Shape::new(
            &mut a, &mut b, &mut c, &mut d, &mut e, &f0, &f1, &f2, &f3, &f4, &k, branch, loops,
            empty, late,
        ))
        .unwrap();
    graph.verify().unwrap();
    let exec = graph.instantiate().unwrap();
    for replay in 1..=replays {
        exec.launch(&origin)
            .unwrap_or_else(|err| panic!("parts {parts}: replay {replay}: {err}"));
        origin
            .synchronize()
            .unwrap_or_else(|err| panic!("parts {parts}: replay {replay}: {err}"));
    }
    let p = exec.pipeline();
    let read = |x: &DeviceBuffer<u32>| x.to_vec().unwrap()[0];
    let per_replay = [
        1,
        u32::from(branch),
        4 * u32::from(loops),
        4 * u32::from(loops),
        4 * u32::from(late),
    ];
    assert_eq!(
        [read(p.a), read(p.b), read(p.c), read(p.d), read(p.e)],
        per_replay.map(|n| n * replays),
        "parts {parts}"
    );
}

/// `Wide` with `STREAMGRAPH_STRESS_WIDTH` (default 6) loops side by side, each issued
/// `STREAMGRAPH_STRESS_REPS` times (default 2) with `STREAMGRAPH_STRESS_BODY` launches
/// (default 1) per iteration.
#[test]
#[ignore = "needs a CUDA GPU"]
fn loops_side_by_side_replay_many_times() {
    let _serial = common::serial();
    let width = env("STREAMGRAPH_STRESS_WIDTH", 6);
    let reps = env("STREAMGRAPH_STRESS_REPS", 2);
    let body = env("STREAMGRAPH_STRESS_BODY", 1);
    let replays = env("STREAMGRAPH_STRESS_REPLAYS", 200);
    let device = streamgraph::Device::new(None).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    let k = K::compiled(&device);
    let mut x: Vec<DeviceBuffer<u32>> = (0..6)
        .map(|_| DeviceBuffer::zeros(&device, 1).unwrap())
        .collect();
    let f = DeviceFlag::new(&device, 1).unwrap();
    let graph = Capture::new(&origin)
        .check(false)
        .capture({
            let [x0, x1, x2, x3, x4, x5] = &mut x[..] else { unreachable!() };
            Wide::new(x0, x1, x2, x3, x4, x5, &f, &k, width, reps, body)
        })
        .unwrap();
    graph.verify().unwrap();
    let exec = graph.instantiate().unwrap();
    let what = format!("width {width}, reps {reps}, body {body}");
    for replay in 1..=replays {
        exec.launch(&origin)
            .unwrap_or_else(|err| panic!("{what}: replay {replay}: {err}"));
        origin
            .synchronize()
            .unwrap_or_else(|err| panic!("{what}: replay {replay}: {err}"));
    }
    let p = exec.pipeline();
    let got: u32 = [&p.x0, &p.x1, &p.x2, &p.x3, &p.x4, &p.x5]
        .iter()
        .map(|x| x.to_vec().unwrap()[0])
        .sum();
    assert_eq!(got, width.min(6) * reps * 2 * body * replays, "{what}");
}
