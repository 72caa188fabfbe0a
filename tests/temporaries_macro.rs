//! Temporaries declared in `pipeline!`: where the macro places their allocation and release,
//! and the plans of pipelines that use them (no GPU needed).
// Tests fail loudly on purpose: an unwrap names the failing call.
#![allow(clippy::unwrap_used)]

mod common;

use common::Kernels;
use streamgraph::{
    capture, pipeline, DeviceBuffer, DeviceFlag, Eager, Kernel, Plan, StatementKind,
};

pipeline! {
    /// `h = x`, `y = h` on one stream.
    pipeline Through(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, n: usize) {
        stream main;
        temp h: f32[n];
        main: copy h <- x;
        main: copy y <- h;
    }
}

pipeline! {
    /// Three layers of activations, each freed once the next is written: at most two live.
    pipeline Layers(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &Kernel, n: usize) {
        stream main;
        temp a: f32[n];
        temp b: f32[n];
        temp c: f32[n];
        main: launch k<<<1u32, 1u32>>>(&mut a, &x);
        main: launch k<<<1u32, 1u32>>>(&mut b, &a);
        main: launch k<<<1u32, 1u32>>>(&mut c, &b);
        main: launch k<<<1u32, 1u32>>>(&mut y, &c);
    }
}

pipeline! {
    /// `h` written on `main`, read on `side` after a wait; freed where both uses are behind.
    pipeline TwoStreams(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, z: &mut DeviceBuffer<f32>, k: &Kernel, n: usize) {
        stream main;
        stream side;
        event written;
        temp h: f32[2 * n];
        main: launch k<<<1u32, 1u32>>>(&mut h, &x);
        main: record written;
        side: wait written;
        side: launch k<<<1u32, 1u32>>>(&mut z, &h.slice(0..n));
        main: launch k<<<1u32, 1u32>>>(&mut y, &h.slice(n..2 * n));
        main: fill y.slice_mut(0..1) = 0.0f32;
    }
}

fn texts(program: &streamgraph::Program) -> Vec<&'static str> {
    program.statements.iter().map(|s| s.text).collect()
}

#[test]
fn a_temporary_is_allocated_before_its_first_use_and_freed_after_its_last() {
    let p = Through::PROGRAM;
    assert_eq!(
        texts(p),
        [
            "main: alloc h",
            "main: copy h <- x",
            "main: copy y <- h",
            "main: free h"
        ]
    );
    assert_eq!(p.temps.len(), 1);
    assert_eq!((p.temps[0].name, p.temps[0].elem), ("h", "f32"));
    assert_eq!(p.statements[0].kind, StatementKind::Alloc { temp: 0 });
    assert_eq!(p.statements[3].kind, StatementKind::Free { temp: 0 });
    let x = DeviceBuffer::for_planning(64).unwrap();
    let mut y = DeviceBuffer::for_planning(64).unwrap();
    let plan = Plan::build(&Through::new(&x, &mut y, 64)).unwrap();
    assert_eq!(plan.temp_peak_bytes(), 256);
    plan.check_races().unwrap();
}

#[test]
fn each_temporary_is_freed_as_soon_as_its_last_use_is_behind() {
    let p = Layers::PROGRAM;
    let t = texts(p);
    let pos = |s: &str| t.iter().position(|x| *x == s).unwrap();
    assert!(pos("main: free a") < pos("main: alloc c"), "{t:?}");
    let x = DeviceBuffer::for_planning(64).unwrap();
    let mut y = DeviceBuffer::for_planning(64).unwrap();
    let k = Kernel::for_planning("k");
    let plan = Plan::build(&Layers::new(&x, &mut y, &k, 64)).unwrap();
    assert_eq!(plan.temp_peak_bytes(), 2 * 256);
}

#[test]
fn a_temporary_used_on_two_streams_is_freed_after_both_uses() {
    let p = TwoStreams::PROGRAM;
    let t = texts(p);
    assert_eq!(t[0], "main: alloc h", "{t:?}");
    // Nothing orders `side`'s read before `main`'s end: the free waits for `side` first.
    assert_eq!(
        &t[t.len() - 2..],
        ["main: wait_stream side", "main: free h"],
        "{t:?}"
    );
    let x = DeviceBuffer::for_planning(64).unwrap();
    let mut y = DeviceBuffer::for_planning(64).unwrap();
    let mut z = DeviceBuffer::for_planning(64).unwrap();
    let k = Kernel::for_planning("k");
    let plan = Plan::build(&TwoStreams::new(&x, &mut y, &mut z, &k, 32)).unwrap();
    plan.check_races().unwrap();
}

pipeline! {
    /// Two temporaries over two streams and a device branch: `a = x + k` on `main`, `b = a + 1`
    /// on `side` into `z`, then (when `go`) `a += 100` into `y`.
    pipeline Spread(x: &DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, z: &mut DeviceBuffer<u32>,
                    go: &mut DeviceFlag, copy: &Kernel, add: &Kernel, n: u32, k: u32) {
        stream main;
        stream side;
        event e;
        temp a: u32[n as usize];
        temp b: u32[n as usize];
        main: launch copy<<<n.div_ceil(256), 256>>>(&mut a, &x, n);
        main: launch add<<<n.div_ceil(256), 256>>>(&mut a, k, n);
        main: record e;
        side: wait e;
        side: launch copy<<<n.div_ceil(256), 256>>>(&mut b, &a, n);
        side: launch add<<<n.div_ceil(256), 256>>>(&mut b, 1u32, n);
        side: launch copy<<<n.div_ceil(256), 256>>>(&mut z, &b, n);
        main: launch copy<<<n.div_ceil(256), 256>>>(&mut y, &a, n);
        main: wait_stream side;
        main: fill go = 1u32;
        main: if go {
            main: launch add<<<n.div_ceil(256), 256>>>(&mut a, 100u32, n);
            main: launch copy<<<n.div_ceil(256), 256>>>(&mut y, &a, n);
        }
    }
}

#[test]
fn temporaries_over_two_streams_and_a_device_branch_are_placed_outside_it() {
    let t = texts(Spread::PROGRAM);
    let pos = |s: &str| t.iter().position(|x| *x == s).unwrap();
    assert_eq!(pos("main: alloc a"), 0, "{t:?}");
    assert!(pos("side: alloc b") > pos("side: wait e"), "{t:?}");
    assert_eq!(
        pos("side: free b"),
        pos("side: launch copy<<<n.div_ceil(256), 256>>>(&mut z, &b, n)") + 1,
        "{t:?}"
    );
    assert_eq!(t.last().copied(), Some("main: free a"), "{t:?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn temporaries_run_eagerly_and_replayed_give_the_cpu_values_values() {
    let k = Kernels::new();
    let stream = streamgraph::Stream::new(&k.device, 0).unwrap();
    k.device.set_temp_release_threshold(u64::MAX).unwrap();
    let n = 10_000u32;
    let host: Vec<u32> = (0..n).collect();
    let x = DeviceBuffer::from_host(&k.device, &host).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&k.device, n as usize).unwrap();
    let mut z = DeviceBuffer::<u32>::zeros(&k.device, n as usize).unwrap();
    let mut go = DeviceFlag::new(&k.device, 0).unwrap();
    let want = |add: u32| -> (Vec<u32>, Vec<u32>) {
        (
            host.iter().map(|v| v + add + 100).collect(),
            host.iter().map(|v| v + add + 1).collect(),
        )
    };
    let mut eager = Eager::new(&stream);
    eager.check(true);
    for add in [5u32, 7] {
        eager
            .run(&Spread::new(
                &x, &mut y, &mut z, &mut go, &k.copy, &k.add, n, add,
            ))
            .unwrap();
        let (wy, wz) = want(add);
        assert_eq!(y.to_vec_on(&stream).unwrap(), wy);
        assert_eq!(z.to_vec_on(&stream).unwrap(), wz);
    }

    let graph = capture(
        &stream,
        Spread::new(&x, &mut y, &mut z, &mut go, &k.copy, &k.add, n, 9),
    )
    .unwrap();
    graph.verify().unwrap();
    let mut exec = graph.instantiate().unwrap();
    assert_eq!(exec.temp_bytes(), 2 * 4 * n as usize);
    exec.replay(&stream, 3).unwrap();
    let (wy, wz) = want(9);
    assert_eq!(exec.pipeline().y.to_vec_on(&stream).unwrap(), wy);
    assert_eq!(exec.pipeline().z.to_vec_on(&stream).unwrap(), wz);
    // A new scalar of a launch outside the device branch: `update_args` walks the branch
    // (unchanged) and sets that launch's node in place, without a capture.
    exec.update_args_with(|p| p.k = 11).unwrap();
    assert_eq!((exec.stats().updates, exec.stats().args_updates), (0, 1));
    exec.launch(&stream).unwrap();
    let (wy, wz) = want(11);
    assert_eq!(exec.pipeline().y.to_vec_on(&stream).unwrap(), wy);
    assert_eq!(exec.pipeline().z.to_vec_on(&stream).unwrap(), wz);
    // A new capture, which a graph with temporaries cannot take in place...
    let err = exec.update_with(|p| p.k = 13).unwrap_err();
    assert!(err.to_string().contains("temporaries"), "{err}");
    // ...but can instantiate instead.
    exec.reinstantiate_on_topology_change(true);
    exec.update_with(|p| p.k = 13).unwrap();
    exec.launch(&stream).unwrap();
    let (wy, wz) = want(13);
    assert_eq!(exec.pipeline().y.to_vec_on(&stream).unwrap(), wy);
    assert_eq!(exec.pipeline().z.to_vec_on(&stream).unwrap(), wz);
    assert_eq!(exec.stats().reinstantiations, 1);
    exec.verify().unwrap();
    let plan = Plan::build(exec.pipeline()).unwrap();
    assert_eq!(plan.temp_peak_bytes(), 2 * 4 * n as usize);
}
