//! `pipeline!` pipelines run eagerly on the GPU, checked against host computations.
//!
//! The kernels read, spin, then write, so two of them running at once lose an update: a missing
//! dependency shows up as a wrong value, not only as a different schedule.
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use streamgraph::{pipeline, Device, DeviceBuffer, Eager, Kernel, Module, PinnedBuffer, Stream};

const SOURCE: &str = r#"
__device__ void spin_ns(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}

// x[0] += k, slowly: read, spin, write (a concurrent writer's update is lost).
extern "C" __global__ void slow_add(unsigned* x, unsigned k, unsigned long long ns) {
    unsigned v = x[0];
    spin_ns(ns);
    x[0] = v + k;
}

// dst[i] = src[i] * m + a for i < n, after a spin.
extern "C" __global__ void slow_affine(unsigned* dst, const unsigned* src, unsigned m, unsigned a, unsigned n, unsigned long long ns) {
    spin_ns(ns);
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i] * m + a;
}
"#;

struct Kernels {
    slow_add: Kernel,
    slow_affine: Kernel,
}

fn setup() -> (Device, Stream, Kernels) {
    let device = Device::new(None).unwrap();
    let stream = Stream::new(&device, 0).unwrap();
    let module = Module::from_cuda_source(&device, "pipeline_eager", SOURCE).unwrap();
    // SAFETY: the pipelines below pass (unsigned*, unsigned, unsigned long long) and
    // (unsigned*, const unsigned*, unsigned, unsigned, unsigned, unsigned long long).
    let kernels = unsafe {
        Kernels {
            slow_add: module.kernel("slow_add").unwrap(),
            slow_affine: module.kernel("slow_affine").unwrap(),
        }
    };
    (device, stream, kernels)
}

const SPIN: u64 = 2_000_000; // 2 ms

pipeline! {
    /// Ping-pong between two streams through two events, `steps` times.
    pipeline PingPong(x: &mut DeviceBuffer<u32>, k: &Kernels, steps: usize) {
        stream a;
        stream b;
        event a_done;
        event b_done;

        for _step in 0..steps {
            a: wait b_done;
            a: launch k.slow_add<<<1, 1>>>(&mut x, 1u32, SPIN);
            a: record a_done;
            b: wait a_done;
            b: launch k.slow_add<<<1, 1>>>(&mut x, 10u32, SPIN);
            b: record b_done;
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ping_pong_alternates_in_event_order() {
    let (device, stream, k) = setup();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut eager = Eager::new(&stream);
    eager.run(&PingPong::new(&mut x, &k, 8)).unwrap();
    eager.run(&PingPong::new(&mut x, &k, 8)).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), [2 * 8 * 11]);
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
    let (device, stream, k) = setup();
    let n = 1000u32;
    let mut runs_seen = 0;
    let runs = Arc::new(AtomicUsize::new(0));
    let mut eager = Eager::new(&stream);
    for round in 0..3u32 {
        let values: Vec<u32> = (0..n).map(|i| i * 7 + round).collect();
        let host_in = PinnedBuffer::from_slice(&device, &values).unwrap();
        let mut input = DeviceBuffer::<u32>::zeros(&device, n as usize).unwrap();
        let mut left = DeviceBuffer::<u32>::zeros(&device, n as usize).unwrap();
        let mut right = DeviceBuffer::<u32>::zeros(&device, n as usize).unwrap();
        let mut host_left = PinnedBuffer::<u32>::zeros(&device, n as usize).unwrap();
        let mut host_right = PinnedBuffer::<u32>::zeros(&device, n as usize).unwrap();
        eager
            .run(&Fan::new(
                &host_in,
                &mut input,
                &mut left,
                &mut right,
                &mut host_left,
                &mut host_right,
                &k,
                n,
                &runs,
            ))
            .unwrap();
        stream.synchronize().unwrap();
        runs_seen += 1;
        let want_left: Vec<u32> = values.iter().map(|v| v * 3 + 1).collect();
        let want_right: Vec<u32> = values.iter().map(|v| v * 5 + 2).collect();
        assert_eq!(host_left.as_slice(), &want_left[..], "round {round}");
        assert_eq!(host_right.as_slice(), &want_right[..], "round {round}");
        assert_eq!(runs.load(Ordering::SeqCst), runs_seen);
    }
    let stats = eager.stats();
    assert_eq!(stats.launches, 6);
    assert_eq!(stats.copies, 9);
    assert_eq!(stats.host_fns, 3);
}

pipeline! {
    /// One stream: a chain of slow adds. Eager issues no event calls for it.
    pipeline Chain(x: &mut DeviceBuffer<u32>, k: &Kernels, n: usize) {
        stream main;
        for i in 0..n {
            main: launch k.slow_add<<<1, 1>>>(&mut x, i as u32, 1000u64);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_one_stream_pipeline_issues_no_event_calls() {
    let (device, stream, k) = setup();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut eager = Eager::new(&stream);
    eager.run(&Chain::new(&mut x, &k, 100)).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), [(0..100).sum::<u32>()]);
    let stats = eager.stats();
    assert_eq!((stats.event_records, stats.event_waits), (0, 0));
    assert_eq!(stats.launches, 100);
}

pipeline! {
    /// A side stream whose last command is a record, and a stream that issues nothing.
    pipeline TailJoin(x: &mut DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, k: &Kernels) {
        stream main;
        stream side;
        stream unused;
        event done;

        side: launch k.slow_add<<<1, 1>>>(&mut y, 5u32, 50_000_000u64);
        side: record done;
        main: launch k.slow_add<<<1, 1>>>(&mut x, 1u32, 1000u64);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn joins_reuse_a_final_record_and_skip_unused_streams() {
    let (device, stream, k) = setup();
    let mut x = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let mut eager = Eager::new(&stream);
    eager.run(&TailJoin::new(&mut x, &mut y, &k)).unwrap();
    // Only the origin is synchronized: the join through `done` must cover `side`'s 50 ms add.
    stream.synchronize().unwrap();
    assert_eq!(y.to_vec_on(&stream).unwrap(), [5]);
    let stats = eager.stats();
    // Records: the fork point and `done`; waits: `side`'s fork and the join on `done`.
    assert_eq!(
        (stats.event_records, stats.event_waits),
        (2, 2),
        "{stats:?}"
    );
}
