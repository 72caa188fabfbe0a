//! Collectives on GPUs through NCCL (README "Collectives across GPUs"): a single-rank
//! communicator through every collective on one GPU, eagerly and captured (verified and
//! replayed), and an all-reduce over two GPUs.
//!
//! Needs a CUDA GPU and NCCL (`libnccl.so.2` on the library path; the tests build the runtime
//! with its `nccl` feature). The two-GPU test says so and checks nothing on a machine with one
//! GPU.
#![allow(clippy::unwrap_used)] // tests may unwrap

use streamgraph::{pipeline, Capture, Communicator, Device, DeviceBuffer, Eager, Stream};

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
fn a_single_rank_communicator_captures_every_collective_and_replays_it() {
    let device = Device::new(Some(0)).unwrap();
    let comm = Communicator::init_all(std::slice::from_ref(&device)).unwrap();
    let n = 4096;
    let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut a = DeviceBuffer::from_host(&device, &data).unwrap();
    let mut b = DeviceBuffer::<f32>::zeros(&device, n).unwrap();
    let mut g = DeviceBuffer::<f32>::zeros(&device, n).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    // NCCL sets a communicator up on its first call, which a capture does not allow.
    Eager::new(&origin)
        .run(&OneRank::new(&mut a, &mut b, &mut g, &comm))
        .unwrap();
    origin.synchronize().unwrap();
    // The graph must compute b and g itself.
    b.copy_from_host(&vec![0.0; n]).unwrap();
    g.copy_from_host(&vec![0.0; n]).unwrap();
    let graph = Capture::new(&origin)
        .check(true)
        .capture(OneRank::new(&mut a, &mut b, &mut g, &comm))
        .unwrap();
    let report = graph.verify().unwrap();
    println!("{report:?}");
    assert_eq!(report.operations, 5);
    println!("{}", graph.to_dot().unwrap());
    let mut exec = graph.instantiate().unwrap();
    for replay in 1..=100 {
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        // With one rank every collective copies its input along the chain a → b → g → b → a.
        let p = exec.pipeline();
        assert_eq!(p.b.to_vec().unwrap(), data, "replay {replay}");
        assert_eq!(p.g.to_vec().unwrap(), data, "replay {replay}");
        assert_eq!(p.a.to_vec().unwrap(), data, "replay {replay}");
    }
    // An update captures anew (NCCL's nodes are not updated in place) and still verifies.
    exec.update_with(|_| {}).unwrap();
    assert_eq!(exec.stats().updates, 1);
    exec.verify().unwrap();
    exec.launch(&origin).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(exec.pipeline().g.to_vec().unwrap(), data);
}

pipeline! {
    /// A collective between a fill and a copy on two streams of one device.
    pipeline Mixed(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, z: &mut DeviceBuffer<f32>,
                   comm: &Communicator, v: f32) {
        stream main;
        stream side;
        event summed;

        main: fill x = v;
        all_reduce(comm, sum) { main: &x => &mut y };
        main: record summed;
        side: wait summed;
        side: copy z <- y;
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_collective_between_a_fill_and_a_copy_on_two_streams_is_captured_updated_and_verified() {
    let device = Device::new(Some(0)).unwrap();
    let comm = Communicator::init_all(std::slice::from_ref(&device)).unwrap();
    let n = 1 << 16;
    let mut x = DeviceBuffer::<f32>::zeros(&device, n).unwrap();
    let mut y = DeviceBuffer::<f32>::zeros(&device, n).unwrap();
    let mut z = DeviceBuffer::<f32>::zeros(&device, n).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    Eager::new(&origin)
        .run(&Mixed::new(&mut x, &mut y, &mut z, &comm, 2.0))
        .unwrap();
    origin.synchronize().unwrap();
    assert_eq!(z.to_vec().unwrap(), vec![2.0; n]);
    z.copy_from_host(&vec![0.0; n]).unwrap();
    let mut exec = Capture::new(&origin)
        .check(true)
        .cross_check_nodes(true)
        .capture(Mixed::new(&mut x, &mut y, &mut z, &comm, 3.0))
        .unwrap()
        .instantiate()
        .unwrap();
    exec.verify().unwrap();
    exec.replay(&origin, 1000).unwrap();
    origin.synchronize().unwrap();
    assert_eq!(exec.pipeline().z.to_vec().unwrap(), vec![3.0; n]);
    // New fill values: each update captures anew, NCCL's nodes included.
    for v in [4.0f32, 5.0, 6.0] {
        exec.update_with(|p| p.v = v).unwrap();
        exec.verify().unwrap();
        exec.replay(&origin, 10).unwrap();
        origin.synchronize().unwrap();
        assert_eq!(
            exec.pipeline().z.to_vec().unwrap(),
            vec![v; n],
            "after the update to {v}"
        );
    }
    println!("{:?}", exec.stats());
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
