//! Events on a real GPU: timing, queries, and the errors of timing misuse.
// Tests fail loudly on purpose: an unwrap names the failing call.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{ns, single, Kernels};
use streamgraph::{Device, Error, Event, KernelArg, Stream};

#[test]
#[ignore = "needs a CUDA GPU"]
fn elapsed_time_measures_the_work_between_two_events() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let (start, end) = (
        Event::with_timing(&k.device).unwrap(),
        Event::with_timing(&k.device).unwrap(),
    );
    let t = ns(Duration::from_millis(20));
    start.record(&stream).unwrap();
    k.spin
        .launch_on(&stream, single(), &[KernelArg::value(&t)])
        .unwrap();
    end.record(&stream).unwrap();
    let ms = start.elapsed_time(&end).unwrap();
    assert!(
        (15.0..=200.0).contains(&ms),
        "a 20 ms spin measured {ms} ms"
    );
    assert!(
        end.query().unwrap(),
        "elapsed_time waited for the end event"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn events_without_timing_refuse_elapsed_time() {
    let device = Device::new(None).unwrap();
    let stream = Stream::new(&device, 0).unwrap();
    let plain = Event::new(&device).unwrap();
    let timed = Event::with_timing(&device).unwrap();
    assert!(!plain.is_timing() && timed.is_timing());
    plain.record(&stream).unwrap();
    timed.record(&stream).unwrap();
    assert!(matches!(
        plain.elapsed_time(&timed),
        Err(Error::TimingDisabled)
    ));
    assert!(matches!(
        timed.elapsed_time(&plain),
        Err(Error::TimingDisabled)
    ));
    let recorded = stream.record_event(None).unwrap();
    assert!(
        !recorded.is_timing(),
        "record_event(None) makes a timing-disabled event"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elapsed_time_needs_both_events_recorded() {
    let device = Device::new(None).unwrap();
    let stream = Stream::new(&device, 0).unwrap();
    let (start, end) = (
        Event::with_timing(&device).unwrap(),
        Event::with_timing(&device).unwrap(),
    );
    assert!(matches!(
        start.elapsed_time(&end),
        Err(Error::EventNotRecorded)
    ));
    start.record(&stream).unwrap();
    assert!(matches!(
        start.elapsed_time(&end),
        Err(Error::EventNotRecorded)
    ));
    end.record(&stream).unwrap();
    assert!(start.elapsed_time(&end).unwrap() >= 0.0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn query_and_synchronize_follow_the_recorded_work() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let e = Event::new(&k.device).unwrap();
    assert!(e.query().unwrap(), "a never-recorded event is complete");
    let t = ns(Duration::from_millis(200));
    k.spin
        .launch_on(&stream, single(), &[KernelArg::value(&t)])
        .unwrap();
    e.record(&stream).unwrap();
    assert!(
        !e.query().unwrap(),
        "the spin before the record is still running"
    );
    e.synchronize().unwrap();
    assert!(e.query().unwrap());
    assert!(
        stream.query().unwrap(),
        "nothing was queued after the record"
    );
}
