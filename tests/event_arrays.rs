//! Event arrays (`event ready[N];`): elements named by a constant or picked by a value at run
//! time (`wait loaded[c % 2]`), planned, checked, run eagerly and captured. The double-buffering
//! idiom: chunk `c` is uploaded into slot `c % 2`, worked on, downloaded, and a slot is reused
//! only after the chunk before it in that slot is done.
#![allow(clippy::unwrap_used)]
// tests may unwrap
// `Reuse` writes elements of `slots` picked at run time on two unordered streams: the warning
// `indexed_buffer_checked_at_run_time` says so, as it should.
#![allow(deprecated)]

mod common;

use streamgraph::{capture, pipeline, DeviceBuffer, Eager, Kernel, PinnedBuffer, Plan};

pipeline! {
    /// `slots` and `results` hold two chunks each; a slow copy (`spin_copy`) makes a slot
    /// reused too early show up as wrong values.
    pipeline Chunks(
        input: &PinnedBuffer<u32>,
        output: &mut PinnedBuffer<u32>,
        slots: &mut [DeviceBuffer<u32>],
        results: &mut [DeviceBuffer<u32>],
        spin_copy: &Kernel,
        add: &Kernel,
        chunks: usize,
        m: usize,
        ns: u64,
    ) {
        stream main;
        stream up;
        stream work;
        stream down;
        event loaded[2];
        event computed[2];
        event drained[2];
        main: record computed[0];
        main: record computed[1];
        main: record drained[0];
        main: record drained[1];
        for c in 0..chunks {
            up: wait computed[c % 2];
            up: copy slots[c % 2] <- input.slice(c * m..(c + 1) * m);
            up: record loaded[c % 2];
            work: wait loaded[c % 2];
            work: wait drained[c % 2];
            work: launch spin_copy<<<1, 1>>>(ns, &mut results[c % 2], &slots[c % 2], m as u32);
            work: launch add<<<(m as u32).div_ceil(256), 256>>>(&mut results[c % 2], c as u32 + 1, m as u32);
            work: record computed[c % 2];
            down: wait computed[c % 2];
            down: copy output.slice_mut(c * m..(c + 1) * m) <- results[c % 2];
            down: record drained[c % 2];
        }
    }
}

pipeline! {
    /// A wait on the element a value picks.
    pipeline Pick(i: i64) {
        stream a;
        stream b;
        event ready[2];
        a: record ready[0];
        a: record ready[1];
        b: wait ready[i];
    }
}

/// Operation indices of chunk `c`: its upload, slow copy, add and download.
fn ops(c: usize) -> [usize; 4] {
    [4 * c, 4 * c + 1, 4 * c + 2, 4 * c + 3]
}

#[test]
fn each_slot_is_ordered_by_its_own_events() {
    let m = 64;
    let chunks = 6;
    let input = PinnedBuffer::<u32>::for_planning(chunks * m).unwrap();
    let mut output = PinnedBuffer::<u32>::for_planning(chunks * m).unwrap();
    let d = || DeviceBuffer::<u32>::for_planning(m).unwrap();
    let (mut slots, mut results) = ([d(), d()], [d(), d()]);
    let (spin_copy, add) = (
        Kernel::for_planning("spin_then_copy"),
        Kernel::for_planning("add_u32"),
    );
    let plan = Plan::build(&Chunks::new(
        &input,
        &mut output,
        &mut slots,
        &mut results,
        &spin_copy,
        &add,
        chunks,
        m,
        0,
    ))
    .unwrap();
    assert_eq!(plan.len(), 4 * chunks);
    plan.check_races().unwrap();
    for c in 0..chunks {
        let [up, copy, added, down] = ops(c);
        assert!(
            plan.happens_before(up, copy),
            "chunk {c} is worked on after its upload"
        );
        assert!(plan.happens_before(added, down));
        if c + 2 < chunks {
            let [next_up, next_copy, ..] = ops(c + 2);
            // The slot's next chunk is uploaded after this one's work, written after its download.
            assert!(plan.happens_before(added, next_up), "chunk {c}");
            assert!(plan.happens_before(down, next_copy), "chunk {c}");
        }
        if c + 1 < chunks {
            // The other slot's next chunk does not wait for this one: they overlap.
            let [other_up, ..] = ops(c + 1);
            assert!(!plan.happens_before(copy, other_up), "chunk {c}");
            assert!(!plan.happens_before(down, other_up), "chunk {c}");
        }
    }
}

pipeline! {
    /// Two chunks written on `up` then on `work`, `work` waiting for the event `shift` picks:
    /// its own chunk's (`shift` 0) or the other one's.
    pipeline Reuse(slots: &mut [DeviceBuffer<u32>], k: &Kernel, shift: usize) {
        stream up;
        stream work;
        event loaded[2];
        for c in 0..2 {
            up: launch k<<<1, 1>>>(&mut slots[c % 2], 1u32, 1u32);
            up: record loaded[c % 2];
            work: wait loaded[(c + shift) % 2];
            work: launch k<<<1, 1>>>(&mut slots[c % 2], 2u32, 1u32);
        }
    }
}

/// The element is known when the pipeline is issued: the plan orders by the event it picks,
/// so the run-time check finds the race of a wait on the wrong slot's event.
#[test]
fn the_run_time_check_follows_the_element_picked() {
    let d = || DeviceBuffer::<u32>::for_planning(1).unwrap();
    let mut slots = [d(), d()];
    let k = Kernel::for_planning("add_u32");
    Plan::build(&Reuse::new(&mut slots, &k, 0))
        .unwrap()
        .check_races()
        .unwrap();
    let e = Plan::build(&Reuse::new(&mut slots, &k, 1))
        .unwrap()
        .check_races()
        .unwrap_err()
        .to_string();
    assert!(e.contains("race"), "{e}");
}

#[test]
fn an_index_out_of_range_is_an_error_naming_the_statement() {
    Plan::build(&Pick::new(1)).unwrap();
    for i in [2, -1] {
        let e = Plan::build(&Pick::new(i)).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "the index {i} picks no element of event array `ready`"
            )),
            "{e}"
        );
        assert!(e.contains("b: wait ready[i]"), "{e}");
    }
}

/// The double-buffering pipeline on the GPU: eagerly and three replays of its graph, each
/// compared with the CPU's answer.
#[test]
#[ignore = "needs a CUDA GPU"]
fn double_buffering_runs_eagerly_and_captured() {
    let k = common::Kernels::new();
    let origin = streamgraph::Stream::new(&k.device, 0).unwrap();
    let (m, chunks) = (4096, 9);
    let host: Vec<u32> = (0..(chunks * m) as u32).map(|i| i * 3).collect();
    let want: Vec<u32> = host
        .iter()
        .enumerate()
        .map(|(i, &x)| x + (i / m) as u32 + 1)
        .collect();
    let input = PinnedBuffer::from_slice(&k.device, &host).unwrap();
    let mut output = PinnedBuffer::<u32>::zeros(&k.device, chunks * m).unwrap();
    let d = || DeviceBuffer::<u32>::zeros(&k.device, m).unwrap();
    let (mut slots, mut results) = ([d(), d()], [d(), d()]);
    let ns = 200_000;
    Eager::new(&origin)
        .run(&Chunks::new(
            &input,
            &mut output,
            &mut slots,
            &mut results,
            &k.spin_then_copy,
            &k.add,
            chunks,
            m,
            ns,
        ))
        .unwrap();
    origin.synchronize().unwrap();
    assert_eq!(output.to_vec().unwrap(), want, "eager");
    output.as_mut_slice().unwrap().fill(0);
    let graph = capture(
        &origin,
        Chunks::new(
            &input,
            &mut output,
            &mut slots,
            &mut results,
            &k.spin_then_copy,
            &k.add,
            chunks,
            m,
            ns,
        ),
    )
    .unwrap();
    graph.verify().unwrap();
    let exec = graph.instantiate().unwrap();
    for replay in 1..=3 {
        exec.launch(&origin).unwrap();
        origin.synchronize().unwrap();
        assert_eq!(
            exec.pipeline().output.to_vec().unwrap(),
            want,
            "replay {replay}"
        );
    }
}
