//! Pinned views (`PinnedBuffer::slice`, `slice_mut`) as copy sources and targets, eagerly and
//! in replays, under the buffer's DMA guard protocol; slices and `Vec`s of pinned buffers as
//! pipeline parameters.
//!
//! GPU tests: `cargo test --test pinned_views -- --ignored`.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use streamgraph::{
    capture, pipeline, Device, DeviceBuffer, Eager, Error, PinnedBuffer, Plan, Stream,
};

pipeline! {
    /// Uploads `host_in` chunk by chunk, then downloads the chunks in reverse order into
    /// `host_out`, chunk by chunk: every copy goes through views.
    pub pipeline Reverse(
        host_in: &PinnedBuffer<u32>,
        dev: &mut DeviceBuffer<u32>,
        host_out: &mut PinnedBuffer<u32>,
        chunks: usize,
        m: usize,
    ) {
        stream main;
        stream down;
        for c in 0..chunks {
            main: copy dev.slice_mut(c * m..(c + 1) * m) <- host_in.slice(c * m..(c + 1) * m);
        }
        down: wait_stream main;
        for c in 0..chunks {
            down: copy host_out.slice_mut(c * m..(c + 1) * m) <- dev.slice((chunks - 1 - c) * m..(chunks - c) * m);
        }
    }
}

pipeline! {
    /// Each buffer of `ins` through `dev` into the buffer of `outs` at the same index.
    pub pipeline Each(ins: &Vec<PinnedBuffer<u32>>, dev: &mut DeviceBuffer<u32>, outs: &mut [PinnedBuffer<u32>]) {
        stream main;
        for i in 0..ins.len() {
            main: copy dev <- ins[i];
            main: copy outs[i] <- dev;
        }
    }
}

const CHUNKS: usize = 6;
const M: usize = 1000;

fn reversed(input: &[u32]) -> Vec<u32> {
    input.chunks(M).rev().flatten().copied().collect()
}

#[test]
fn containers_of_pinned_buffers_are_parameters_and_plan_without_races() {
    let ins: Vec<PinnedBuffer<u32>> = (0..3)
        .map(|_| PinnedBuffer::for_planning(8).unwrap())
        .collect();
    let mut outs: Vec<PinnedBuffer<u32>> = (0..3)
        .map(|_| PinnedBuffer::for_planning(8).unwrap())
        .collect();
    let mut dev = DeviceBuffer::<u32>::for_planning(8).unwrap();
    let plan = Plan::build(&Each::new(&ins, &mut dev, &mut outs)).unwrap();
    assert_eq!(plan.len(), 6);
    plan.check_races().unwrap();

    let host_in = PinnedBuffer::<u32>::for_planning(CHUNKS * M).unwrap();
    let mut host_out = PinnedBuffer::<u32>::for_planning(CHUNKS * M).unwrap();
    let mut dev = DeviceBuffer::<u32>::for_planning(CHUNKS * M).unwrap();
    let plan = Plan::build(&Reverse::new(&host_in, &mut dev, &mut host_out, CHUNKS, M)).unwrap();
    assert_eq!(plan.len(), 2 * CHUNKS);
    plan.check_races().unwrap();
}

#[test]
fn pinned_views_copy_eagerly_without_a_gpu_as_planned_host_memory() {
    // Plan-only pinned buffers are ordinary heap memory: views of them still name their
    // sub-ranges (checked through a plan's accesses).
    let host_in = PinnedBuffer::<u32>::for_planning(4 * M).unwrap();
    let mut host_out = PinnedBuffer::<u32>::for_planning(4 * M).unwrap();
    let mut dev = DeviceBuffer::<u32>::for_planning(4 * M).unwrap();
    let plan = Plan::build(&Reverse::new(&host_in, &mut dev, &mut host_out, 4, M)).unwrap();
    let bytes: Vec<usize> = plan
        .ops()
        .iter()
        .flat_map(|op| op.accesses.iter().map(|a| a.range.bytes))
        .collect();
    assert!(bytes.iter().all(|&b| b == M * 4), "{bytes:?}");
}

fn setup() -> (Device, Stream) {
    let device = Device::new(None).unwrap();
    let stream = Stream::new(&device, 0).unwrap();
    (device, stream)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_views_copy_chunks_eagerly_and_in_replays() {
    let _serial = common::serial();
    let (device, origin) = setup();
    let input: Vec<u32> = (0..(CHUNKS * M) as u32).map(|i| i * 3 + 1).collect();
    let host_in = PinnedBuffer::from_slice(&device, &input).unwrap();
    let mut dev = DeviceBuffer::<u32>::zeros(&device, CHUNKS * M).unwrap();
    let mut host_out = PinnedBuffer::<u32>::zeros(&device, CHUNKS * M).unwrap();

    Eager::new(&origin)
        .run(&Reverse::new(&host_in, &mut dev, &mut host_out, CHUNKS, M))
        .unwrap();
    // The guard waits for the copies into the buffer (no synchronize needed).
    assert_eq!(&*host_out.as_slice().unwrap(), &reversed(&input)[..]);

    host_out.as_mut_slice().unwrap().fill(0);
    let graph = capture(
        &origin,
        Reverse::new(&host_in, &mut dev, &mut host_out, CHUNKS, M),
    )
    .unwrap();
    assert_eq!(graph.verify().unwrap().operations, 2 * CHUNKS);
    let exec = graph.instantiate().unwrap();
    exec.replay(&origin, 3).unwrap();
    assert_eq!(exec.pipeline().host_out.to_vec().unwrap(), reversed(&input));
    // A replay that would write the buffer while a guard of it lives is refused.
    {
        let seen = exec.pipeline().host_out.as_slice().unwrap();
        let refused = exec.launch(&origin).unwrap_err();
        assert!(matches!(refused, Error::PinnedBusy { .. }), "{refused}");
        assert_eq!(&*seen, &reversed(&input)[..]);
    }
    exec.launch(&origin).unwrap();
    drop(exec);
    assert_eq!(host_out.to_vec().unwrap(), reversed(&input));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn copies_into_a_view_respect_the_guards_of_its_buffer() {
    let _serial = common::serial();
    let (device, stream) = setup();
    let dev = DeviceBuffer::from_host(&device, &[7u32, 8, 9, 10]).unwrap();
    let mut host = PinnedBuffer::<u32>::zeros(&device, 8).unwrap();
    // A copy into a view while a guard of the buffer lives does not compile: only
    // `slice_mut`, which borrows the buffer exclusively, is a copy target
    // (`tests/ui/copy_into_shared_pinned_view.rs`); a replay that would write it while a guard
    // made through the graph's borrow lives is refused (above).
    stream.copy(&mut host.slice_mut(2..6), &dev).unwrap();
    // A mutable guard waits for every copy touching the buffer.
    {
        let mut all = host.as_mut_slice().unwrap();
        assert_eq!(&*all, &[0, 0, 7, 8, 9, 10, 0, 0]);
        all[7] = 42;
    }
    let mut back = DeviceBuffer::<u32>::zeros(&device, 2).unwrap();
    stream.copy(&mut back, &host.slice(6..)).unwrap();
    assert_eq!(back.to_vec_on(&stream).unwrap(), [0, 42]);
    assert_eq!(host.slice(1..4).to_vec().unwrap(), [0, 7, 8]);
    stream
        .copy(&mut host.slice_mut(..1), &dev.slice(..1))
        .unwrap();
    assert_eq!(host.to_vec().unwrap()[0], 7);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn containers_of_pinned_buffers_copy_eagerly_and_in_replays() {
    let _serial = common::serial();
    let (device, origin) = setup();
    let ins: Vec<PinnedBuffer<u32>> = (0..3u32)
        .map(|i| PinnedBuffer::from_slice(&device, &[i, i + 10, i + 20]).unwrap())
        .collect();
    let mut outs: Vec<PinnedBuffer<u32>> = (0..3)
        .map(|_| PinnedBuffer::zeros(&device, 3).unwrap())
        .collect();
    let mut dev = DeviceBuffer::<u32>::zeros(&device, 3).unwrap();
    Eager::new(&origin)
        .run(&Each::new(&ins, &mut dev, &mut outs))
        .unwrap();
    for (i, out) in outs.iter().enumerate() {
        let i = i as u32;
        assert_eq!(out.to_vec().unwrap(), [i, i + 10, i + 20]);
    }
    for out in &mut outs {
        out.as_mut_slice().unwrap().fill(0);
    }
    let exec = capture(&origin, Each::new(&ins, &mut dev, &mut outs))
        .unwrap()
        .instantiate()
        .unwrap();
    exec.launch(&origin).unwrap();
    drop(exec);
    for (i, out) in outs.iter().enumerate() {
        let i = i as u32;
        assert_eq!(out.to_vec().unwrap(), [i, i + 10, i + 20]);
    }
}
