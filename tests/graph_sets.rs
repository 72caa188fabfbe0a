//! Graph sets: one graph of one pipeline per key, captured on a key's first launch, at most
//! so many held (least recently used dropped), launched one at a time so that their
//! temporaries share graph memory. Bucketing needs no GPU; the rest runs on one (tests named
//! `_values` read results back; the others also run on the stand-in driver).
// Tests fail loudly on purpose: an unwrap names the failing call.
#![allow(clippy::unwrap_used)]

mod common;

use std::any::Any;
use std::sync::Arc;

use common::Kernels;
use streamgraph::cudarc::driver::sys::CUstreamCaptureMode as CaptureMode;
use streamgraph::{
    capture, pipeline, Buckets, CallStream, DeviceBuffer, Eager, Error, GraphSet, Kernel,
    KernelArg, LaunchConfig, Out, Plan, Result, Stream, StreamOp,
};

pipeline! {
    /// `y[..n] = x[..n] + k + 1` through a temporary over two streams: `h = x + k` on `main`,
    /// `y = h + 1` on `side`.
    pipeline Step(x: &DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, copy: &Kernel, add: &Kernel,
                  n: u32, k: u32) {
        stream main;
        stream side;
        event written;
        temp h: u32[n as usize];
        main: launch copy<<<n.div_ceil(256), 256>>>(&mut h, &x, n);
        main: launch add<<<n.div_ceil(256), 256>>>(&mut h, k, n);
        main: record written;
        side: wait written;
        side: launch copy<<<n.div_ceil(256), 256>>>(&mut y, &h, n);
        side: launch add<<<n.div_ceil(256), 256>>>(&mut y, 1u32, n);
    }
}

pipeline! {
    /// Another pipeline type, for the refusal of mixed sets.
    pipeline Other(y: &mut DeviceBuffer<u32>) {
        stream main;
        main: fill y = 0u32;
    }
}

pipeline! {
    /// `write`: after `ns` of spinning, `y[0] = 7`; otherwise `z[0] = y[0]`.
    pipeline Handoff(y: &mut DeviceBuffer<u32>, z: &mut DeviceBuffer<u32>, spin_then_write: &Kernel,
                     copy: &Kernel, write: bool, ns: u64) {
        stream main;
        if write {
            main: launch spin_then_write<<<1u32, 1u32>>>(ns, &mut y, 7u32);
        } else {
            main: launch copy<<<1u32, 1u32>>>(&mut z, &y, 1u32);
        }
    }
}

/// Input `0, 1, 2, …` of the largest size, and its output.
fn buffers(k: &Kernels, len: usize) -> (Vec<u32>, DeviceBuffer<u32>, DeviceBuffer<u32>) {
    let host: Vec<u32> = (0..len as u32).collect();
    let x = DeviceBuffer::from_host(&k.device, &host).unwrap();
    let y = DeviceBuffer::<u32>::zeros(&k.device, len).unwrap();
    (host, x, y)
}

/// What `Step` leaves in `y` (poisoned with `u32::MAX` beforehand) for a batch of `n`.
fn expected(host: &[u32], n: usize, k: u32) -> Vec<u32> {
    host.iter()
        .enumerate()
        .map(|(i, v)| if i < n { v + k + 1 } else { u32::MAX })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn thirty_two_keys_replay_their_graphs_as_eager_runs_compute_values() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let buckets = Buckets::multiples_of(96, 32 * 96).unwrap();
    assert_eq!(buckets.len(), 32);
    let (host, x, mut y) = buffers(&k, buckets.largest());
    let mut set = GraphSet::new(&stream, 32);
    // Requests of every size, twice over (the second round replays what the first captured),
    // each padded to its bucket; `k` differs per request so that stale values would show.
    for (round, requests) in [(0u32, 1..=32usize), (1, 1..=32)] {
        for r in requests.rev() {
            let n = r * 96 - (r % 7);
            let bucket = buckets.bucket_for(n).unwrap();
            let add = 1000 * round + r as u32;
            y.copy_from_host_on(&stream, &vec![u32::MAX; y.len()])
                .unwrap();
            set.launch(
                &stream,
                bucket.size,
                &Step::new(&x, &mut y, &k.copy, &k.add, bucket.size as u32, add),
            )
            .unwrap();
            let replayed = y.to_vec_on(&stream).unwrap();
            assert_eq!(
                replayed,
                expected(&host, bucket.size, add),
                "bucket {}",
                bucket.size
            );
            // The same pipeline run eagerly leaves the same values.
            y.copy_from_host_on(&stream, &vec![u32::MAX; y.len()])
                .unwrap();
            Eager::new(&stream)
                .run(&Step::new(
                    &x,
                    &mut y,
                    &k.copy,
                    &k.add,
                    bucket.size as u32,
                    add,
                ))
                .unwrap();
            assert_eq!(
                y.to_vec_on(&stream).unwrap(),
                replayed,
                "bucket {}",
                bucket.size
            );
        }
    }
    for &size in buckets.sizes() {
        let stats = set.stats(&size).unwrap();
        assert_eq!(
            (stats.captures, stats.instantiations, stats.launches),
            (1, 1, 2),
            "{size}"
        );
        assert_eq!(
            stats.args_updates, 1,
            "{size}: the second round's `k` set in place"
        );
        assert_eq!(stats.temp_bytes, 4 * size);
        set.verify(
            &size,
            &Step::new(&x, &mut y, &k.copy, &k.add, size as u32, 0),
        )
        .unwrap();
    }
    assert_eq!((set.len(), set.dropped()), (32, 0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_least_recently_launched_graph_makes_room() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let (_, x, mut y) = buffers(&k, 1024);
    let mut set = GraphSet::new(&stream, 4);
    let mut launch = |set: &mut GraphSet<u32>, n: u32| {
        set.launch(&stream, n, &Step::new(&x, &mut y, &k.copy, &k.add, n, 1))
            .unwrap();
    };
    for n in [64, 128, 192, 256] {
        launch(&mut set, n);
    }
    launch(&mut set, 64); // 64 is the most recent now: 128 goes first
    launch(&mut set, 320);
    launch(&mut set, 384);
    assert_eq!(set.held_keys(), [256, 64, 320, 384]);
    assert_eq!(set.dropped(), 2);
    let dropped = set.stats(&128).unwrap();
    assert!(!dropped.held);
    assert_eq!(
        (dropped.captures, dropped.launches, dropped.temp_bytes),
        (1, 1, 0)
    );
    // Launched again, it is captured again; its counts go on.
    launch(&mut set, 128);
    let again = set.stats(&128).unwrap();
    assert_eq!(
        (again.captures, again.instantiations, again.launches),
        (2, 2, 2)
    );
    assert!(again.held);
    assert_eq!(set.held_keys(), [64, 320, 384, 128]);
    set.set_capacity(2).unwrap();
    assert_eq!(set.held_keys(), [384, 128]);
    assert!(set.remove(&384).unwrap());
    assert_eq!((set.len(), set.stats(&384)), (1, None));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_set_holds_one_pipeline_type() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let (_, x, mut y) = buffers(&k, 256);
    let mut set = GraphSet::new(&stream, 4);
    set.launch(&stream, 1, &Step::new(&x, &mut y, &k.copy, &k.add, 256, 1))
        .unwrap();
    let err = set.launch(&stream, 2, &Other::new(&mut y)).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("`Step`") && text.contains("`Other`"),
        "{text}"
    );
    let missing = set.verify(&9, &Step::new(&x, &mut y, &k.copy, &k.add, 256, 1));
    assert!(missing
        .unwrap_err()
        .to_string()
        .contains("no graph of key 9"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn prepared_keys_are_captured_before_their_first_launch() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let buckets = Buckets::powers_of_two(512).unwrap();
    let (_, x, mut y) = buffers(&k, buckets.largest());
    let mut set = GraphSet::new(&stream, 8);
    let prepared = set
        .prepare_all(buckets.sizes().iter().copied(), |&n, prepare| {
            prepare.pipeline(&Step::new(&x, &mut y, &k.copy, &k.add, n as u32, 3))
        })
        .unwrap();
    assert_eq!(
        (prepared.keys, prepared.captured, prepared.dropped),
        (10, 10, 2)
    );
    assert_eq!(set.held_keys(), [4, 8, 16, 32, 64, 128, 256, 512]);
    // Prepared again: nothing captured anew.
    let again = set
        .prepare_all([8usize, 16], |&n, prepare| {
            prepare.pipeline(&Step::new(&x, &mut y, &k.copy, &k.add, n as u32, 3))
        })
        .unwrap();
    assert_eq!((again.captured, again.dropped), (0, 0));
    set.launch(&stream, 16, &Step::new(&x, &mut y, &k.copy, &k.add, 16, 3))
        .unwrap();
    let stats = set.stats(&16).unwrap();
    assert_eq!((stats.captures, stats.launches), (1, 1));
    assert!(stats.capture_time > std::time::Duration::ZERO);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn launches_on_other_streams_run_after_the_previous_graph_values() {
    let k = Kernels::new();
    let (first, second) = (
        Stream::new(&k.device, 0).unwrap(),
        Stream::new(&k.device, 0).unwrap(),
    );
    let mut y = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut z = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut set = GraphSet::new(&first, 2);
    let mut step = |set: &mut GraphSet<bool>, stream: &Stream, write: bool| {
        let handoff = Handoff::new(
            &mut y,
            &mut z,
            &k.spin_then_write,
            &k.copy,
            write,
            50_000_000,
        );
        set.launch(stream, write, &handoff).unwrap();
    };
    step(&mut set, &first, true); // 50 ms, then y = 7
    step(&mut set, &second, false); // z = y: after the first graph, though on another stream
    assert_eq!(z.to_vec_on(&second).unwrap(), [7]);
}

/// The plan's peak of [`Step`] at `n`, rounded up to the 2 MiB a set maps memory in.
fn mapped_peak(k: &Kernels, x: &DeviceBuffer<u32>, y: &mut DeviceBuffer<u32>, n: u32) -> usize {
    let plan = Plan::build(&Step::new(x, y, &k.copy, &k.add, n, 1)).unwrap();
    assert_eq!(plan.temp_layout(256).extent, plan.temp_peak_bytes());
    plan.temp_peak_bytes().next_multiple_of(2 << 20)
}

/// A set's temporaries take one block of device memory as large as its largest graph's
/// peak, in 2 MiB steps, whatever the order keys come in; graphs dropped to a bound give
/// back what no held graph reaches; no graph memory is used (no memory nodes). Measured by
/// the device's free memory too.
#[test]
#[ignore = "needs a CUDA GPU"]
fn dropping_graphs_returns_their_temporaries_memory_values() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    // 1 KiB (one 2 MiB granule), 4, 64 and 128 MiB of temporaries.
    let mib = 1 << 20;
    let sizes: [u32; 4] = [256, mib, 16 * mib, 32 * mib];
    let (_, x, mut y) = buffers(&k, 32 * mib as usize);
    let peaks: Vec<usize> = sizes
        .iter()
        .map(|&n| mapped_peak(&k, &x, &mut y, n))
        .collect();
    assert_eq!(peaks, [2 << 20, 4 << 20, 64 << 20, 128 << 20]);
    stream.synchronize().unwrap();
    k.device.trim_graph_memory().unwrap();
    let (free_before, _) = k.device.memory_info().unwrap();
    let mut set = GraphSet::new(&stream, 4);
    // Smaller keys first: the block grows with each, and every graph stays valid.
    for (i, &n) in sizes.iter().enumerate() {
        set.launch(&stream, n, &Step::new(&x, &mut y, &k.copy, &k.add, n, 1))
            .unwrap();
        assert_eq!(set.temp_memory(), peaks[i], "after key {n}");
    }
    for &n in &sizes {
        let add = 5 + n;
        set.launch(&stream, n, &Step::new(&x, &mut y, &k.copy, &k.add, n, add))
            .unwrap();
        let got = y.to_vec_on(&stream).unwrap();
        assert!(
            got[..n as usize]
                .iter()
                .enumerate()
                .all(|(i, &v)| v == i as u32 + add + 1),
            "key {n} after the block grew"
        );
    }
    stream.synchronize().unwrap();
    let (free_held, _) = k.device.memory_info().unwrap();
    let graph = set.graph_memory().unwrap();
    assert_eq!(
        graph.used, 0,
        "{graph:?}: a set's graphs make no memory nodes"
    );
    let taken = free_before.saturating_sub(free_held);
    // Bound to one graph (the last launched, the largest): nothing to give back; then to the
    // smallest: the rest goes back.
    set.set_capacity(1).unwrap();
    assert_eq!(set.held_keys(), [sizes[3]]);
    assert_eq!(set.temp_memory(), peaks[3]);
    set.remove(&sizes[3]).unwrap();
    set.launch(
        &stream,
        sizes[0],
        &Step::new(&x, &mut y, &k.copy, &k.add, sizes[0], 1),
    )
    .unwrap();
    assert_eq!(
        set.temp_memory(),
        peaks[0],
        "a dropped graph's memory goes back"
    );
    stream.synchronize().unwrap();
    let (free_bounded, _) = k.device.memory_info().unwrap();
    println!(
        "set memory: four graphs held {} MiB (the device's free memory {} MiB less; largest plan peak {} MiB); the smallest alone: {} MiB ({} MiB less than before the set)",
        peaks[3] >> 20,
        taken >> 20,
        (sizes[3] as usize * 4) >> 20,
        set.temp_memory() >> 20,
        free_before.saturating_sub(free_bounded) >> 20
    );
    // The driver's own bookkeeping moves the free count by a few MiB at most.
    assert!(
        taken >= peaks[3] && taken <= peaks[3] + (8 << 20),
        "free memory fell by {taken} bytes for a set of {} bytes",
        peaks[3]
    );
    assert!(
        free_before.saturating_sub(free_bounded) <= peaks[0] + (8 << 20),
        "free memory still {} bytes less after the bound",
        free_before.saturating_sub(free_bounded)
    );
}

/// `y += by` by one launch of the add kernel; what decides its work is `by` (its parameter
/// bytes when `fixed`) and the value it keeps.
struct Bump<'k> {
    add: &'k Kernel,
    by: u32,
    kept: Arc<u8>,
    fixed: bool,
}

// SAFETY: one launch of the add kernel on the given stream, within `y`'s length.
unsafe impl StreamOp for Bump<'_> {
    type Operands<'a> = (Out<'a, u32>,);

    fn issue(&self, stream: &CallStream<'_>, (y,): &mut Self::Operands<'_>) -> Result<()> {
        let n = y.len() as u32;
        let config = LaunchConfig {
            grid: n.div_ceil(64).max(1).into(),
            block: 64u32.into(),
            shared_mem_bytes: 0,
        };
        stream.launch(
            self.add,
            config,
            &[y.arg(), KernelArg::value(&self.by), KernelArg::value(&n)],
        )
    }

    fn keep(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        Some(self.kept.clone())
    }

    fn fixed_work(&self, parameters: &mut Vec<u8>) -> bool {
        parameters.extend_from_slice(&self.by.to_le_bytes());
        self.fixed
    }
}

pipeline! {
    /// One call of a `Bump`, then `k` added by a launch.
    pipeline Bumped<'k>(y: &mut DeviceBuffer<u32>, op: &Bump<'k>, add: &Kernel, k: u32) {
        stream main;
        main: call op(&mut y);
        main: launch add<<<1u32, 64u32>>>(&mut y, k, 64u32);
    }
}

/// An argument update keeps a call's nodes when the op says its work is fixed and the same
/// op, parameters and operands come again; anything else is captured again.
#[test]
#[ignore = "needs a CUDA GPU"]
fn argument_updates_keep_a_call_whose_work_is_fixed() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&k.device, 64).unwrap();
    let mut z = DeviceBuffer::<u32>::zeros(&k.device, 64).unwrap();
    let op = |by, fixed| Bump {
        add: &k.add,
        by,
        kept: Arc::new(0),
        fixed,
    };
    let (one, two) = (op(1, true), op(2, true));
    let mut exec = capture(&stream, Bumped::new(&mut y, &one, &k.add, 5))
        .unwrap()
        .instantiate()
        .unwrap();
    // A new scalar of the launch, the call unchanged: one node set, no capture.
    exec.update_args_with(|p| p.k = 6).unwrap();
    assert_eq!((exec.stats().updates, exec.stats().args_updates), (0, 1));
    // Another op: captured again.
    exec.update_args_with(|p| p.op = &two).unwrap();
    assert_eq!(exec.stats().updates, 1);
    // The same op on other memory: captured again.
    exec.update_args(Bumped::new(&mut z, &two, &k.add, 6))
        .unwrap();
    assert_eq!(exec.stats().updates, 2);
    // An op whose work cannot be compared: captured again each time.
    let opaque = op(2, false);
    exec.update_args_with(|p| p.op = &opaque).unwrap();
    exec.update_args_with(|_| {}).unwrap();
    assert_eq!(exec.stats().updates, 4);
    exec.verify().unwrap();
    drop(exec);

    // Through a graph set: the second launch of a key sets the changed launch only.
    let mut set = GraphSet::new(&stream, 2);
    set.launch(&stream, 0u8, &Bumped::new(&mut y, &one, &k.add, 5))
        .unwrap();
    set.launch(&stream, 0u8, &Bumped::new(&mut y, &one, &k.add, 7))
        .unwrap();
    let stats = set.stats(&0).unwrap();
    assert_eq!(
        (stats.captures, stats.args_updates, stats.launches),
        (1, 1, 2)
    );
    // A changed parameter of the op's own: captured again.
    let mut changed = op(1, true);
    changed.kept = one.kept.clone();
    changed.by = 3;
    set.launch(&stream, 0u8, &Bumped::new(&mut y, &changed, &k.add, 7))
        .unwrap();
    assert_eq!(set.stats(&0).unwrap().captures, 2);
}

pipeline! {
    /// A `Bump` of a temporary between two copies: `y[..n] += by` by way of `h`.
    pipeline BumpedTemp<'k>(y: &mut DeviceBuffer<u32>, op: &Bump<'k>, copy: &Kernel, n: u32) {
        stream main;
        temp h: u32[n as usize];
        main: launch copy<<<n.div_ceil(64), 64u32>>>(&mut h, &y, n);
        main: call op(&mut h);
        main: launch copy<<<n.div_ceil(64), 64u32>>>(&mut y, &h, n);
    }
}

/// A set places its graphs' temporaries in its own memory, which makes no memory nodes: the
/// graphs verify against their plans with the allocations and releases as no node, the
/// memory grows with the largest key (2 MiB steps) and shrinks when the graphs reaching
/// furthest are dropped, and a key captured again (an op changed) updates its executable
/// graph in place, its temporaries where they were.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_set_places_temporaries_in_memory_of_its_own() {
    let k = Kernels::new();
    let stream = Stream::new(&k.device, 0).unwrap();
    let mib = 1 << 20;
    let mut y = DeviceBuffer::<u32>::zeros(&k.device, 2 * mib).unwrap();
    let bump = |by| Bump {
        add: &k.add,
        by,
        kept: Arc::new(0),
        fixed: true,
    };
    let (one, two) = (bump(1), bump(2));
    let mut set = GraphSet::new(&stream, 3);
    assert_eq!(set.temp_memory(), 0);
    // 4 KiB, 4 MiB and 8 MiB of temporaries.
    for (n, mapped) in [
        (1024u32, 2 * mib),
        (mib as u32, 4 * mib),
        (2 * mib as u32, 8 * mib),
    ] {
        set.launch(&stream, n, &BumpedTemp::new(&mut y, &one, &k.copy, n))
            .unwrap();
        assert_eq!(set.temp_memory(), mapped, "key {n}");
        let report = set
            .verify(&n, &BumpedTemp::new(&mut y, &one, &k.copy, n))
            .unwrap();
        assert!(report.edges > 0, "{report:?}");
        assert_eq!(set.stats(&n).unwrap().temp_bytes, 4 * n as usize);
    }
    assert_eq!(set.graph_memory().unwrap().used, 0);
    // Another op: the key is captured again, and the new graph applied in place.
    let n = mib as u32;
    set.launch(&stream, n, &BumpedTemp::new(&mut y, &two, &k.copy, n))
        .unwrap();
    let stats = set.stats(&n).unwrap();
    assert_eq!((stats.captures, stats.instantiations), (2, 1), "{stats:?}");
    set.verify(&n, &BumpedTemp::new(&mut y, &two, &k.copy, n))
        .unwrap();
    // The largest key dropped: its memory goes back, the rest stays.
    set.remove(&(2 * mib as u32)).unwrap();
    assert_eq!(set.temp_memory(), 4 * mib);
    set.set_capacity(1).unwrap();
    assert_eq!(set.held_keys(), [n]);
    assert_eq!(set.temp_memory(), 4 * mib);
    set.remove(&n).unwrap();
    assert_eq!(set.temp_memory(), 0);
}

/// A launch on a stream that other code captures is refused before anything is queued on
/// it: that capture gets no wait for the previous launch's stream.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_launch_on_a_stream_captured_by_other_code_is_refused() {
    let k = Kernels::new();
    let (first, second) = (
        Stream::new(&k.device, 0).unwrap(),
        Stream::new(&k.device, 0).unwrap(),
    );
    let (_, x, mut y) = buffers(&k, 256);
    let mut set = GraphSet::new(&first, 2);
    set.launch(&first, 256, &Step::new(&x, &mut y, &k.copy, &k.add, 256, 1))
        .unwrap();
    second
        .as_cudarc()
        .begin_capture(CaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    let refused = set.launch(
        &second,
        256,
        &Step::new(&x, &mut y, &k.copy, &k.add, 256, 1),
    );
    // The foreign capture ends cleanly: nothing of the set's (no wait on the first
    // stream's event) invalidated it.
    second
        .as_cudarc()
        .end_capture(streamgraph::cudarc::driver::sys::CUgraphInstantiate_flags(
            0,
        ))
        .unwrap();
    assert!(
        matches!(refused, Err(Error::StreamCapturing { .. })),
        "{refused:?}"
    );
    assert_eq!(set.stats(&256).unwrap().launches, 1);
}
