//! Collectives on GPUs through NCCL (README "Collectives across GPUs"): a single-rank
//! communicator through every collective on one GPU, and an all-reduce over two GPUs.
//!
//! Needs a CUDA GPU and NCCL (`libnccl.so.2` on the library path; the tests build the runtime
//! with its `nccl` feature). The two-GPU test says so and checks nothing on a machine with one
//! GPU.
#![allow(clippy::unwrap_used)] // tests may unwrap

use streamgraph::{capture, pipeline, Communicator, Device, DeviceBuffer, Eager, Stream};

pipeline! {
    /// One rank: every collective, out of place where it must be.
    pipeline OneRank(
        a: &mut DeviceBuffer<f32>,
        b: &mut DeviceBuffer<f32>,
        g: &mut DeviceBuffer<f32>,
        comm: &Communicator,
    ) {
        stream s;

        all_reduce(comm, sum) { s: &mut a };
        all_reduce(comm, max) { s: &a => &mut b };
        all_gather(comm) { s: &b => &mut g };
        reduce_scatter(comm, sum) { s: &g => &mut b };
        broadcast(comm, root = s) { s: &b => &mut a };
    }
}

pipeline! {
    /// Two ranks on two devices: the element-wise sum on both.
    pipeline TwoRanks(x0: &mut DeviceBuffer<f32>, x1: &mut DeviceBuffer<f32>, comm: &Communicator,
                      d1: i32) {
        stream s0;
        stream s1(device = d1);

        all_reduce(comm, sum) { s0: &mut x0, s1: &mut x1 };
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_single_rank_communicator_runs_every_collective_eagerly() {
    let device = Device::new(Some(0)).unwrap();
    let comm = Communicator::init_all(std::slice::from_ref(&device)).unwrap();
    assert_eq!((comm.local_ranks(), comm.ranks()), (1, 1));
    let data: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let mut a = DeviceBuffer::from_host(&device, &data).unwrap();
    let mut b = DeviceBuffer::<f32>::zeros(&device, 1024).unwrap();
    let mut g = DeviceBuffer::<f32>::zeros(&device, 1024).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    Eager::new(&origin)
        .run(&OneRank::new(&mut a, &mut b, &mut g, &comm))
        .unwrap();
    origin.synchronize().unwrap();
    // With one rank every collective copies its input.
    assert_eq!(a.to_vec().unwrap(), data);
    assert_eq!(b.to_vec().unwrap(), data);
    assert_eq!(g.to_vec().unwrap(), data);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_capture_of_a_collective_is_refused_with_a_typed_error_naming_the_statement() {
    let device = Device::new(Some(0)).unwrap();
    let comm = Communicator::init_all(std::slice::from_ref(&device)).unwrap();
    let mut a = DeviceBuffer::<f32>::zeros(&device, 16).unwrap();
    let mut b = DeviceBuffer::<f32>::zeros(&device, 16).unwrap();
    let mut g = DeviceBuffer::<f32>::zeros(&device, 16).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    let err = capture(&origin, OneRank::new(&mut a, &mut b, &mut g, &comm))
        .map(drop)
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("not captured"), "{text}");
    assert!(text.contains("all_reduce(comm, sum)"), "{text}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_planning_communicator_cannot_run() {
    let device = Device::new(Some(0)).unwrap();
    let comm = Communicator::for_planning(1);
    let mut a = DeviceBuffer::<f32>::zeros(&device, 16).unwrap();
    let mut b = DeviceBuffer::<f32>::zeros(&device, 16).unwrap();
    let mut g = DeviceBuffer::<f32>::zeros(&device, 16).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    let err = Eager::new(&origin)
        .run(&OneRank::new(&mut a, &mut b, &mut g, &comm))
        .unwrap_err();
    assert!(err.to_string().contains("for_planning"), "{err}");
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_gpus_all_reduce_eagerly_to_the_expected_sum() {
    if Device::count().unwrap() < 2 {
        eprintln!("skipped: this test needs two GPUs, the machine has fewer");
        return;
    }
    let d0 = Device::new(Some(0)).unwrap();
    let d1 = Device::new(Some(1)).unwrap();
    let comm = Communicator::init_all(&[d0.clone(), d1.clone()]).unwrap();
    let n = 1 << 20;
    let h0: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let h1: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.5).collect();
    let mut x0 = DeviceBuffer::from_host(&d0, &h0).unwrap();
    let mut x1 = DeviceBuffer::from_host(&d1, &h1).unwrap();
    let origin = Stream::new(&d0, 0).unwrap();
    let mut eager = Eager::new(&origin);
    eager
        .run(&TwoRanks::new(&mut x0, &mut x1, &comm, 1))
        .unwrap();
    origin.synchronize().unwrap();
    let expected: Vec<f32> = h0.iter().zip(&h1).map(|(a, b)| a + b).collect();
    assert_eq!(x0.to_vec().unwrap(), expected);
    assert_eq!(x1.to_vec().unwrap(), expected);
    // 1,000 more runs: each doubles both (x0 == x1 after each), so every non-zero element
    // overflows to infinity and zeros stay zero.
    for _ in 0..1000 {
        eager
            .run(&TwoRanks::new(&mut x0, &mut x1, &comm, 1))
            .unwrap();
    }
    origin.synchronize().unwrap();
    let after = x0.to_vec().unwrap();
    assert_eq!(after, x1.to_vec().unwrap());
    for (i, (&got, &sum)) in after.iter().zip(&expected).enumerate() {
        let want = if sum == 0.0 { 0.0 } else { f32::INFINITY };
        assert_eq!(got, want, "element {i}");
    }
}
