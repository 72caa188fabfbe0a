//! Device and pinned buffers, copies, fills and host functions, all in stream order.
// Tests fail loudly on purpose: an unwrap names the failing call.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use common::{linear, ns, single, Kernels};
use streamgraph::{
    CopySource, Device, DeviceBuffer, DeviceMemory, Error, Event, KernelArg, Memory, PinnedBuffer,
    Stream,
};

#[test]
#[ignore = "needs a CUDA GPU"]
fn buffers_round_trip_through_the_device() {
    let device = Device::new(None).unwrap();
    let data: Vec<u32> = (0..1000).collect();
    let mut x = DeviceBuffer::from_host(&device, &data).unwrap();
    assert_eq!(x.len(), 1000);
    assert_eq!(x.to_vec().unwrap(), data);
    let doubled: Vec<u32> = data.iter().map(|v| v * 2).collect();
    x.copy_from_host(&doubled).unwrap();
    assert_eq!(x.to_vec().unwrap(), doubled);
    assert!(matches!(
        x.copy_from_host(&data[..10]),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(
        DeviceBuffer::<f32>::zeros(&device, 3)
            .unwrap()
            .to_vec()
            .unwrap(),
        [0.0; 3]
    );
    let empty = DeviceBuffer::<u32>::zeros(&device, 0).unwrap();
    assert!(empty.is_empty() && empty.to_vec().unwrap().is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn slices_address_sub_ranges() {
    let device = Device::new(None).unwrap();
    let stream = Stream::new(&device, 0).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 100).unwrap();
    let middle = x.slice(10..20);
    assert_eq!(middle.len(), 10);
    assert_eq!(middle.range().ptr, x.range().ptr + 40);
    assert_eq!(middle.device_ptr(), x.device_ptr() + 40);
    let (middle_range, tail) = (middle.range(), middle.slice(8..).range());
    // Writes go through exclusive views of the same ranges.
    let mut middle = x.slice_mut(10..20);
    assert_eq!(middle.range(), middle_range);
    stream.fill(&mut middle, 5u32).unwrap();
    let mut last_two = x.slice_mut(18..20);
    assert_eq!(
        last_two.range(),
        tail,
        "a view of a view addresses its sub-range"
    );
    stream.fill(&mut last_two, 6u32).unwrap();
    let host = x.to_vec_on(&stream).unwrap();
    for (i, v) in host.iter().enumerate() {
        let expected = match i {
            10..=17 => 5,
            18..=19 => 6,
            _ => 0,
        };
        assert_eq!(*v, expected, "element {i}");
    }
    assert!(x.try_slice(90..101).is_err());
    assert!(std::panic::catch_unwind(|| x.slice(101..).len()).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fill_then_copy_back_gives_the_fill_value() {
    let device = Device::new(None).unwrap();
    let stream = Stream::new(&device, 0).unwrap();
    let mut words = DeviceBuffer::<u32>::zeros(&device, 1024).unwrap();
    let mut halves = DeviceBuffer::<i16>::zeros(&device, 1024).unwrap();
    let mut bytes = DeviceBuffer::<u8>::zeros(&device, 1023).unwrap();
    let mut floats = DeviceBuffer::<f32>::zeros(&device, 512).unwrap();
    stream.fill(&mut words, 0xdead_beef).unwrap();
    stream.fill(&mut halves, -2i16).unwrap();
    stream.fill(&mut bytes, 0xa5).unwrap();
    stream.fill(&mut floats, 1.5f32).unwrap();
    let mut pinned = PinnedBuffer::<u32>::zeros(&device, 1024).unwrap();
    stream.copy(&mut pinned, &words).unwrap();
    stream.synchronize().unwrap();
    assert!(pinned.as_slice().unwrap().iter().all(|&v| v == 0xdead_beef));
    assert!(halves.to_vec_on(&stream).unwrap().iter().all(|&v| v == -2));
    assert!(bytes.to_vec_on(&stream).unwrap().iter().all(|&v| v == 0xa5));
    assert!(floats.to_vec_on(&stream).unwrap().iter().all(|&v| v == 1.5));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn copies_run_in_stream_order_after_kernels() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut pinned = PinnedBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let t = ns(Duration::from_millis(100));
    let value = 42u32;
    let args = [
        KernelArg::value(&t),
        KernelArg::write(&mut x),
        KernelArg::value(&value),
    ];
    k.spin_then_write
        .launch_on(&stream, single(), &args)
        .unwrap();
    stream.copy(&mut y, &x).unwrap(); // device to device, after the slow write
    stream.copy(&mut pinned, &y).unwrap(); // device to pinned host
    stream.synchronize().unwrap();
    assert_eq!(&*pinned.as_slice().unwrap(), [42]);

    // Pageable sources are staged before the call returns.
    let n = 300u32;
    let mut z = DeviceBuffer::<u32>::zeros(&k.device, n as usize).unwrap();
    let source: Vec<u32> = (0..n).collect();
    stream.copy(&mut z, &source).unwrap();
    stream
        .copy(&mut z.slice_mut(0..3), &[7u32, 8, 9][..])
        .unwrap();
    let one = 1u32;
    k.add
        .launch_on(
            &stream,
            linear(n),
            &[
                KernelArg::write(&mut z),
                KernelArg::value(&one),
                KernelArg::value(&n),
            ],
        )
        .unwrap();
    let expected: Vec<u32> = [7, 8, 9].into_iter().chain(3..n).map(|v| v + 1).collect();
    assert_eq!(z.to_vec_on(&stream).unwrap(), expected);

    // Pinned to pinned, and pinned to device.
    let src = PinnedBuffer::from_slice(&k.device, &[1u32, 2, 3]).unwrap();
    let mut dst = PinnedBuffer::<u32>::zeros(&k.device, 3).unwrap();
    stream.copy(&mut dst, &src).unwrap();
    let mut w = DeviceBuffer::<u32>::zeros(&k.device, 3).unwrap();
    stream.copy(&mut w, &src).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(&*dst.as_slice().unwrap(), [1, 2, 3]);
    assert_eq!(w.to_vec_on(&stream).unwrap(), [1, 2, 3]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn copies_of_different_lengths_are_refused() {
    let device = Device::new(None).unwrap();
    let stream = Stream::new(&device, 0).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 4).unwrap();
    let y = DeviceBuffer::<u32>::zeros(&device, 5).unwrap();
    let err = stream.copy(&mut x, &y).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("16") && message.contains("20"),
        "{message}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_functions_see_the_data_of_the_preceding_copy() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut pinned = PinnedBuffer::<u32>::zeros(&k.device, 1).unwrap();
    // A host function must not call CUDA, so it cannot take the buffer's guard (which waits
    // on an event): it reads the pinned memory at its address, as the driver wrote it.
    let Memory::PinnedHost { ptr, bytes } = pinned.copy_source().memory() else {
        panic!("a pinned buffer is page-locked host memory")
    };
    assert_eq!(bytes, 4);
    let addr = ptr as usize;
    let t = ns(Duration::from_millis(100));
    let value = 9u32;
    let args = [
        KernelArg::value(&t),
        KernelArg::write(&mut x),
        KernelArg::value(&value),
    ];
    k.spin_then_write
        .launch_on(&stream, single(), &args)
        .unwrap();
    stream.copy(&mut pinned, &x).unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    stream
        .launch_host_fn(Arc::new(move || {
            // SAFETY: `addr` is the first `u32` of `pinned`, which lives until the stream is
            // synchronized below (after this function ran). The only copy into it is ordered
            // before this function on the stream (what the test checks), nothing writes it
            // afterwards, and no Rust reference to it exists meanwhile.
            let seen = unsafe { std::ptr::read_volatile(addr as *const u32) };
            let _ = tx.lock().unwrap().send(seen);
        }))
        .unwrap();
    let observed = rx.recv_timeout(Duration::from_secs(10));
    stream.synchronize().unwrap();
    assert_eq!(
        observed.unwrap(),
        9,
        "the host function ran before the copy finished"
    );
    assert_eq!(pinned.to_vec().unwrap(), [9]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn later_work_waits_for_a_host_function_and_panics_stay_contained() {
    let device = Device::new(None).unwrap();
    let stream = Stream::new(&device, 0).unwrap();
    let mut pinned = PinnedBuffer::<u32>::zeros(&device, 1).unwrap();
    let x = DeviceBuffer::from_host(&device, &[4u32]).unwrap();
    let (start, end) = (
        Event::with_timing(&device).unwrap(),
        Event::with_timing(&device).unwrap(),
    );
    start.record(&stream).unwrap();
    stream
        .launch_host_fn(Arc::new(|| std::thread::sleep(Duration::from_millis(100))))
        .unwrap();
    stream
        .launch_host_fn(Arc::new(|| panic!("a host function panics")))
        .unwrap();
    stream.copy(&mut pinned, &x).unwrap();
    end.record(&stream).unwrap();
    stream.synchronize().unwrap();
    let ms = start.elapsed_time(&end).unwrap();
    assert!(
        ms >= 90.0,
        "the copy did not wait for the host function: {ms} ms"
    );
    assert_eq!(
        &*pinned.as_slice().unwrap(),
        [4],
        "work after a panicking host function still ran"
    );
}
