//! Temporaries declared in `pipeline!`: where the macro places their allocation and release,
//! and the plans of pipelines that use them (no GPU needed).
// Tests fail loudly on purpose: an unwrap names the failing call.
#![allow(clippy::unwrap_used)]

use streamgraph::{pipeline, DeviceBuffer, Kernel, Plan, StatementKind};

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
