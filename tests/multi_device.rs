//! A pipeline whose streams live on two GPUs (`stream far(device = ...)`): events and copies
//! cross devices; eager runs equal a host computation and equal the captured graph's replays.
//!
//! Needs two CUDA GPUs. On a machine with one it says so and checks nothing.
#![allow(clippy::unwrap_used)] // tests may unwrap

use streamgraph::{capture, pipeline, Device, DeviceBuffer, Eager, Kernel, Module, Stream};

const SOURCE: &str = r#"
__device__ void spin_ns(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}

// x[0] = x[0] * 31 + k, after a spin between the read and the write.
extern "C" __global__ void slow_step(unsigned* x, unsigned k, unsigned long long ns) {
    unsigned v = x[0];
    spin_ns(ns);
    x[0] = v * 31u + k;
}
"#;

struct Kernels {
    slow_step: Kernel,
}

fn kernels(device: &Device) -> Kernels {
    let module = Module::from_cuda_source(device, "multi_device", SOURCE).unwrap();
    // SAFETY: the pipeline passes (unsigned*, unsigned, unsigned long long).
    let slow_step = unsafe { module.kernel("slow_step").unwrap() };
    Kernels { slow_step }
}

const SPIN: u64 = 2_000_000; // 2 ms

fn step(x: u32, k: u32) -> u32 {
    x.wrapping_mul(31).wrapping_add(k)
}

pipeline! {
    /// A step on the origin's GPU, a copy to the other GPU and a step there, and the result
    /// copied back: every dependency crosses devices.
    pipeline TwoDevices(
        near_x: &mut DeviceBuffer<u32>,
        far_x: &mut DeviceBuffer<u32>,
        near_k: &Kernels,
        far_k: &Kernels,
        far_device: i32,
    ) {
        stream main;
        stream far(device = far_device);
        event produced;
        event consumed;

        main: launch near_k.slow_step<<<1, 1>>>(&mut near_x, 3u32, SPIN);
        main: record produced;
        far: wait produced;
        far: copy far_x <- near_x;
        far: launch far_k.slow_step<<<1, 1>>>(&mut far_x, 7u32, SPIN);
        far: record consumed;
        main: wait consumed;
        main: copy near_x <- far_x;
    }
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn a_pipeline_across_two_gpus_runs_eagerly_and_captured_alike() {
    if Device::count().unwrap() < 2 {
        eprintln!("one GPU only: the two-GPU pipeline is not exercised here");
        return;
    }
    let near = Device::new(Some(0)).unwrap();
    let far = Device::new(Some(1)).unwrap();
    let (near_k, far_k) = (kernels(&near), kernels(&far));
    let origin = Stream::new(&near, 0).unwrap();
    const RUNS: usize = 3;

    let mut near_x = DeviceBuffer::<u32>::zeros(&near, 1).unwrap();
    let mut far_x = DeviceBuffer::<u32>::zeros(&far, 1).unwrap();
    let mut eager = Eager::new(&origin);
    for _ in 0..RUNS {
        let p = TwoDevices::new(&mut near_x, &mut far_x, &near_k, &far_k, 1);
        eager.run(&p).unwrap();
    }
    // Only the origin is synchronized: the join must cover the other GPU's work.
    origin.synchronize().unwrap();
    let want = (0..RUNS).fold(0, |x, _| step(step(x, 3), 7));
    assert_eq!(near_x.to_vec_on(&origin).unwrap(), [want]);
    assert_eq!(far_x.to_vec().unwrap(), [want]);

    let mut graph_near = DeviceBuffer::<u32>::zeros(&near, 1).unwrap();
    let mut graph_far = DeviceBuffer::<u32>::zeros(&far, 1).unwrap();
    let p = TwoDevices::new(&mut graph_near, &mut graph_far, &near_k, &far_k, 1);
    let graph = capture(&origin, p).unwrap();
    let report = graph.verify().unwrap();
    assert_eq!((report.operations, report.edges), (4, 4));
    let exec = graph.instantiate().unwrap();
    exec.replay(&origin, RUNS).unwrap();
    origin.synchronize().unwrap();
    exec.into_pipeline();
    assert_eq!(graph_near.to_vec_on(&origin).unwrap(), [want]);
}
