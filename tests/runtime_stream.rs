//! The stream contract (the crate docs' "The stream contract") on a real GPU: priorities, `query`, `wait_event`,
//! `wait_stream` and the current-stream scope. Spin kernels make missing ordering visible.
// Tests fail loudly on purpose: an unwrap names the failing call.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::{ns, single, Kernels};
use streamgraph::{current_stream, Device, DeviceBuffer, Event, KernelArg, Stream};

/// Queues `spin(d)` on `stream`.
fn spin(k: &Kernels, stream: &Stream, d: Duration) {
    let t = ns(d);
    k.spin
        .launch_on(stream, single(), &[KernelArg::value(&t)])
        .unwrap();
}

/// Queues `spin_then_write(d, out, value)` on `stream`.
fn spin_then_write(
    k: &Kernels,
    stream: &Stream,
    d: Duration,
    out: &mut DeviceBuffer<u32>,
    value: u32,
) {
    let t = ns(d);
    let args = [
        KernelArg::value(&t),
        KernelArg::write(out),
        KernelArg::value(&value),
    ];
    k.spin_then_write
        .launch_on(stream, single(), &args)
        .unwrap();
}

/// Queues `dst[0] = src[0]` on `stream`.
fn copy_first(k: &Kernels, stream: &Stream, dst: &mut DeviceBuffer<u32>, src: &DeviceBuffer<u32>) {
    let n = 1u32;
    let args = [
        KernelArg::write(dst),
        KernelArg::read(src),
        KernelArg::value(&n),
    ];
    k.copy.launch_on(stream, single(), &args).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn priorities_are_clamped_into_the_device_range() {
    let device = Device::new(None).unwrap();
    let (least, greatest) = device.stream_priority_range().unwrap();
    assert!(
        greatest <= least,
        "lower numbers are higher priorities: ({least}, {greatest})"
    );
    assert_eq!(
        Stream::new(&device, -1000).unwrap().priority().unwrap(),
        greatest
    );
    assert_eq!(
        Stream::new(&device, 1000).unwrap().priority().unwrap(),
        least
    );
    assert_eq!(
        Stream::on(None, i32::MIN).unwrap().priority().unwrap(),
        greatest
    );
    assert_eq!(
        Stream::on(Some(-1), i32::MAX).unwrap().priority().unwrap(),
        least
    );
    if least - greatest >= 2 {
        let middle = greatest + 1;
        assert_eq!(
            Stream::new(&device, middle).unwrap().priority().unwrap(),
            middle
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn query_is_false_while_work_runs_and_never_blocks() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    assert!(stream.query().unwrap(), "an empty stream is done");
    spin(&k, &stream, Duration::from_millis(200));
    let asked = Instant::now();
    assert!(!stream.query().unwrap(), "the spin kernel is still running");
    assert!(
        asked.elapsed() < Duration::from_millis(50),
        "query blocked for {:?}",
        asked.elapsed()
    );
    stream.synchronize().unwrap();
    assert!(stream.query().unwrap(), "synchronize waited for the kernel");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn synchronize_waits_for_the_streams_work() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let started = Instant::now();
    spin(&k, &stream, Duration::from_millis(100));
    stream.synchronize().unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(90),
        "returned after {:?}",
        started.elapsed()
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wait_event_orders_later_work_after_the_recorded_work() {
    let k = Kernels::new();
    let (a, b) = (
        Stream::new(&k.device, 0).unwrap(),
        Stream::new(&k.device, 0).unwrap(),
    );
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut seen = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    spin_then_write(&k, &a, Duration::from_millis(100), &mut x, 7);
    let e = a.record_event(None).unwrap();
    let asked = Instant::now();
    b.wait_event(&e).unwrap();
    assert!(
        asked.elapsed() < Duration::from_millis(50),
        "wait_event blocked the host"
    );
    copy_first(&k, &b, &mut seen, &x);
    b.synchronize().unwrap();
    assert_eq!(
        seen.to_vec_on(&b).unwrap(),
        [7],
        "b's kernel ran before a's write"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn recording_again_after_a_wait_does_not_change_what_was_waited_for() {
    let k = Kernels::new();
    let (a, b) = (
        Stream::new(&k.device, 0).unwrap(),
        Stream::new(&k.device, 0).unwrap(),
    );
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut seen = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let e = Event::new(&k.device).unwrap();
    spin_then_write(&k, &a, Duration::from_millis(50), &mut x, 1);
    e.record(&a).unwrap();
    b.wait_event(&e).unwrap();
    // A long spin, then a second record: the wait above must keep the first snapshot.
    spin(&k, &a, Duration::from_millis(1000));
    let same = a.record_event(Some(&e)).unwrap();
    assert_eq!(
        same, e,
        "record_event(Some(e)) records and returns e itself"
    );
    copy_first(&k, &b, &mut seen, &x);
    b.synchronize().unwrap();
    assert_eq!(
        seen.to_vec_on(&b).unwrap(),
        [1],
        "b waited for the first record"
    );
    assert!(
        !a.query().unwrap(),
        "b waited for the re-recorded snapshot (a's long spin)"
    );
    a.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn waiting_on_a_never_recorded_event_does_not_block() {
    let k = Kernels::new();
    let (a, b) = (
        Stream::new(&k.device, 0).unwrap(),
        Stream::new(&k.device, 0).unwrap(),
    );
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    spin(&k, &a, Duration::from_millis(1000));
    let never = Event::new(&k.device).unwrap();
    b.wait_event(&never).unwrap();
    let value = 5u32;
    k.write_value
        .launch_on(
            &b,
            single(),
            &[KernelArg::write(&mut x), KernelArg::value(&value)],
        )
        .unwrap();
    b.synchronize().unwrap();
    assert_eq!(x.to_vec_on(&b).unwrap(), [5]);
    assert!(
        !a.query().unwrap(),
        "b's work waited for unrelated work on a"
    );
    a.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wait_stream_waits_for_work_queued_at_call_time_only() {
    let k = Kernels::new();
    let (a, b) = (
        Stream::new(&k.device, 0).unwrap(),
        Stream::new(&k.device, 0).unwrap(),
    );
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut seen = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    spin_then_write(&k, &a, Duration::from_millis(100), &mut x, 3);
    let asked = Instant::now();
    b.wait_stream(&a).unwrap();
    assert!(
        asked.elapsed() < Duration::from_millis(50),
        "wait_stream blocked the host"
    );
    spin(&k, &a, Duration::from_millis(1000)); // later work: b must not wait for it
    copy_first(&k, &b, &mut seen, &x);
    b.synchronize().unwrap();
    assert_eq!(
        seen.to_vec_on(&b).unwrap(),
        [3],
        "b did not wait for a's earlier work"
    );
    assert!(!a.query().unwrap(), "b also waited for a's later work");
    a.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn scope_routes_stream_less_launches_and_restores() {
    let k = Kernels::new();
    let s = Stream::new(&k.device, 0).unwrap();
    let outside = current_stream().unwrap();
    assert_ne!(outside, s);
    let t = ns(Duration::from_millis(300));
    s.scope(|| {
        assert_eq!(current_stream().unwrap(), s);
        k.spin.launch(single(), &[KernelArg::value(&t)]).unwrap();
    });
    assert!(!s.query().unwrap(), "the scoped launch did not go to s");
    assert_eq!(
        current_stream().unwrap(),
        outside,
        "the scope was not restored"
    );
    s.synchronize().unwrap();

    // Outside the scope a stream-less launch goes elsewhere: s stays idle.
    k.spin.launch(single(), &[KernelArg::value(&t)]).unwrap();
    assert!(s.query().unwrap(), "an unscoped launch went to s");
    k.device.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn scopes_nest_and_guards_restore_even_after_a_panic() {
    let device = Device::new(None).unwrap();
    let (s1, s2) = (
        Stream::new(&device, 0).unwrap(),
        Stream::new(&device, 0).unwrap(),
    );
    let outside = current_stream().unwrap();
    s1.scope(|| {
        s2.scope(|| assert_eq!(current_stream().unwrap(), s2));
        assert_eq!(current_stream().unwrap(), s1);
        let guard = s2.enter();
        assert_eq!(current_stream().unwrap(), s2);
        drop(guard);
        assert_eq!(current_stream().unwrap(), s1);
    });
    assert_eq!(current_stream().unwrap(), outside);
    let caught = std::panic::catch_unwind(|| s1.scope(|| panic!("inside a scope")));
    assert!(caught.is_err());
    assert_eq!(
        current_stream().unwrap(),
        outside,
        "a panic left the scope active"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn streams_know_their_device_and_wrap_cudarc() {
    let device = Device::new(Some(0)).unwrap();
    assert_eq!(device.ordinal(), 0);
    assert!(Device::count().unwrap() >= 1);
    assert!(!device.name().unwrap().is_empty());
    assert!(matches!(
        Device::new(Some(Device::count().unwrap())),
        Err(streamgraph::Error::InvalidDevice { .. })
    ));
    let s = Stream::new(&device, 0).unwrap();
    assert_eq!(s.device(), device);
    let again = Stream::from_cudarc(s.as_cudarc().clone());
    assert_eq!(again, s);
    assert_ne!(Stream::default_stream(&device), s);
    assert_ne!(Stream::per_thread(&device), Stream::default_stream(&device));
    assert!(Stream::per_thread(&device).query().unwrap());
}

/// Standalone work on more streams than a thread keeps lanes for (16) takes over idle lanes
/// instead of making one per call: rounds of fills over 24 streams, each fill waited for (so
/// that every lane kept is idle whatever the GPU's speed), make 16 lanes at most in the first
/// round and none after.
#[test]
#[ignore = "needs a CUDA GPU (or the stand-in driver)"]
fn work_on_many_streams_takes_over_idle_lanes() {
    let device = Device::new(None).unwrap();
    let streams: Vec<Stream> = (0..24).map(|_| Stream::new(&device, 0).unwrap()).collect();
    let mut bufs: Vec<DeviceBuffer<u32>> = (0..24)
        .map(|_| DeviceBuffer::zeros(&device, 64).unwrap())
        .collect();
    let made = streamgraph::testing::lanes_made;
    let before = made();
    let mut after_first = 0;
    for round in 0..4u32 {
        for (s, b) in streams.iter().zip(&mut bufs) {
            s.fill(b, round).unwrap();
            s.synchronize().unwrap();
        }
        if round == 0 {
            after_first = made();
        }
    }
    let (first, later) = (after_first - before, made() - after_first);
    assert!(
        first <= 16,
        "{first} lanes made for 24 streams, one at a time"
    );
    assert_eq!(
        later, 0,
        "lanes made in three more rounds over the same 24 streams"
    );
}
