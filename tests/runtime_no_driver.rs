//! Without a CUDA driver every entry point returns `Error::NoDriver`, and nothing panics.
//!
//! These run in CPU CI. On a machine with a driver they check the opposite: the same entry
//! points succeed (or fail for another reason than a missing driver).
// Tests fail loudly on purpose: an unwrap names the failing call.
#![allow(clippy::unwrap_used)]

use streamgraph::{
    current_stream, Device, DeviceBuffer, Error, Event, Module, PinnedBuffer, Stream,
};

fn is_no_driver<T: std::fmt::Debug>(result: Result<T, Error>) -> bool {
    matches!(result, Err(Error::NoDriver { .. }))
}

#[test]
fn every_entry_point_reports_a_missing_driver() {
    let present = Device::driver_available();
    let checks: Vec<(&str, bool)> = vec![
        ("Device::count", is_no_driver(Device::count())),
        ("Device::new(None)", is_no_driver(Device::new(None))),
        ("Device::new(Some(0))", is_no_driver(Device::new(Some(0)))),
        ("Device::new(Some(-1))", is_no_driver(Device::new(Some(-1)))),
        ("Stream::on", is_no_driver(Stream::on(None, 0))),
        (
            "Stream::on(Some(0), -3)",
            is_no_driver(Stream::on(Some(0), -3)),
        ),
        ("current_stream", is_no_driver(current_stream())),
        (
            "Event::new",
            is_no_driver(Device::new(None).and_then(|d| Event::new(&d))),
        ),
        (
            "Event::with_timing",
            is_no_driver(Device::new(None).and_then(|d| Event::with_timing(&d))),
        ),
        (
            "Module::from_cuda_source",
            is_no_driver(Device::new(None).and_then(|d| {
                Module::from_cuda_source(&d, "m", "extern \"C\" __global__ void k() {}")
            })),
        ),
        (
            "DeviceBuffer::zeros",
            is_no_driver(Device::new(None).and_then(|d| DeviceBuffer::<f32>::zeros(&d, 16))),
        ),
        (
            "DeviceBuffer::from_host",
            is_no_driver(Device::new(None).and_then(|d| DeviceBuffer::from_host(&d, &[1u32, 2]))),
        ),
        (
            "PinnedBuffer::zeros",
            is_no_driver(Device::new(None).and_then(|d| PinnedBuffer::<u8>::zeros(&d, 16))),
        ),
    ];
    for (entry, no_driver) in checks {
        assert_eq!(
            no_driver, !present,
            "{entry}: driver present = {present}, but NoDriver returned = {no_driver}"
        );
    }
}

#[test]
fn the_missing_driver_error_says_what_was_searched_and_what_to_do() {
    if Device::driver_available() {
        assert!(Device::count().is_ok());
        return;
    }
    let err = Device::new(None).unwrap_err();
    let Error::NoDriver { searched } = &err else { panic!("expected NoDriver, got {err:?}") };
    assert!(searched.contains("libcuda.so"), "searched: {searched}");
    let message = err.to_string();
    assert!(
        message.starts_with("no CUDA driver found: `libcuda.so"),
        "{message}"
    );
    assert!(message.contains("install the NVIDIA driver"), "{message}");
    // One short line: the library wanted, not every name tried.
    assert!(message.len() < 160 && !message.contains('\n'), "{message}");
}

#[test]
fn asking_twice_gives_the_same_answer() {
    assert_eq!(Device::driver_available(), Device::driver_available());
    assert_eq!(
        is_no_driver(Device::count()),
        is_no_driver(Device::count()),
        "the driver check is cached, not flaky"
    );
}
