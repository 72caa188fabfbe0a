//! Where `pipeline!` places temporaries' allocations and releases in the less common shapes:
//! items that may not run, collectives, event picks, generic element types, a stream named
//! `temp`; each checked on `PROGRAM` and against the plan's own race check (no GPU needed).
// Tests fail loudly on purpose: an unwrap names the failing call.
#![allow(clippy::unwrap_used)]

use streamgraph::{
    pipeline, AccessMode, Communicator, DeviceBuffer, Kernel, Plan, Pod, StatementKind,
};

fn texts(program: &streamgraph::Program) -> Vec<&'static str> {
    program.statements.iter().map(|s| s.text).collect()
}

fn buffer(n: usize) -> DeviceBuffer<f32> {
    DeviceBuffer::for_planning(n).unwrap()
}

pipeline! {
    /// `h` written on `main` and read on `side` in each of `rounds` rounds, maybe none.
    pipeline Rounds(y: &mut DeviceBuffer<f32>, k: &Kernel, n: usize, rounds: usize) {
        stream main;
        stream side;
        event written;
        temp h: f32[n];
        for _r in 0..rounds {
            main: wait_stream side;
            main: fill h = 0.0f32;
            main: record written;
            side: wait written;
            side: launch k<<<1, 1>>>(&mut y, &h);
        }
    }
}

#[test]
fn a_loop_that_may_not_run_leaves_the_free_ordered_after_the_allocation() {
    let t = texts(Rounds::PROGRAM);
    assert_eq!(t[0], "main: alloc h", "{t:?}");
    // `side` follows the allocation only through a round: with none, only a join orders it.
    assert_eq!(
        &t[t.len() - 2..],
        ["main: wait_stream side", "main: free h"],
        "{t:?}"
    );
    let k = Kernel::for_planning("k");
    for rounds in [0, 1, 3] {
        let mut y = buffer(16);
        let plan = Plan::build(&Rounds::new(&mut y, &k, 16, rounds)).unwrap();
        plan.check_races().unwrap();
        assert_eq!(plan.temp_peak_bytes(), 64, "{rounds} rounds");
    }
}

pipeline! {
    /// Each rank's part in a temporary, all-reduced in place, then copied out.
    pipeline Reduced(x: &DeviceBuffer<f32>, y0: &mut DeviceBuffer<f32>,
                     y1: &mut DeviceBuffer<f32>, comm: &Communicator, n: usize) {
        stream s0;
        stream s1;
        temp a: f32[n];
        temp b: f32[n];
        s0: copy a <- x;
        s1: copy b <- x;
        all_reduce(comm, sum) { s0: &mut a, s1: &mut b };
        s0: copy y0 <- a;
        s1: copy y1 <- b;
        s0: wait_stream s1;
    }
}

#[test]
fn collective_participants_are_uses_and_keep_their_numbering() {
    let p = Reduced::PROGRAM;
    assert_eq!(
        texts(p),
        [
            "s0: alloc a",
            "s0: copy a <- x",
            "s1: alloc b",
            "s1: copy b <- x",
            "all_reduce(comm, sum) { s0: &mut a, s1: &mut b }",
            "all_reduce(comm, sum) { s0: &mut a, s1: &mut b }",
            "s0: copy y0 <- a",
            "s0: free a",
            "s1: copy y1 <- b",
            "s1: free b",
            "s0: wait_stream s1",
        ]
    );
    for id in [4, 5] {
        let StatementKind::Collective { first, count, .. } = p.statements[id].kind else {
            panic!("expected a participant at {id}: {:?}", texts(p))
        };
        assert_eq!((first, count), (4, 2));
    }
    for (id, temp) in [(0, "a"), (7, "a"), (2, "b"), (9, "b")] {
        let a = p.statements[id].accesses;
        assert_eq!(a.len(), 1);
        assert_eq!(
            (a[0].buffer, a[0].mode, a[0].whole),
            (temp, AccessMode::Write, true)
        );
    }
    let x = buffer(8);
    let (mut y0, mut y1) = (buffer(8), buffer(8));
    let comm = Communicator::for_planning(2);
    let plan = Plan::build(&Reduced::new(&x, &mut y0, &mut y1, &comm, 8)).unwrap();
    plan.check_races().unwrap();
    assert_eq!(plan.temporaries().len(), 2);
}

pipeline! {
    /// A temporary picked up by an event array's element chosen at run time.
    pipeline Picked(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &Kernel, n: usize,
                    slot: usize) {
        stream main;
        stream side;
        event ready[2];
        temp h: f32[n];
        main: copy h <- x;
        main: launch k<<<1, 1>>>(&mut y, &h);
        main: record ready[slot];
        side: wait ready[1];
    }
}

#[test]
fn an_event_pick_after_an_allocation_names_its_own_statement() {
    let p = Picked::PROGRAM;
    let t = texts(p);
    assert_eq!(t[0], "main: alloc h", "{t:?}");
    let x = buffer(4);
    let k = Kernel::for_planning("k");
    let mut y = buffer(4);
    let error =
        Plan::build(&Picked::new(&x, &mut y, &k, 4, 7)).expect_err("slot 7 is out of the array");
    let streamgraph::Error::Statement { statement, .. } = &error else {
        panic!("expected the error of a statement: {error}")
    };
    assert_eq!(
        statement.text, "main: record ready[slot] (ready[0])",
        "{error}"
    );
}

pipeline! {
    /// A temporary of the pipeline's element type; a stream named `temp` and a temporary
    /// named `temp` (the keyword is contextual).
    pipeline Generic<T: Pod>(x: &DeviceBuffer<T>, y: &mut DeviceBuffer<T>, k: &Kernel,
                             n: usize) {
        stream temp;
        temp temp: T[n];
        temp: copy temp <- x;
        temp: launch k<<<1, 1>>>(&mut temp.slice_mut(0..1), &temp.slice(1..n));
        temp: copy y <- temp;
    }
}

#[test]
fn temporaries_take_generic_element_types_and_the_keyword_is_contextual() {
    let p = Generic::<f32>::PROGRAM;
    assert_eq!(p.temps.len(), 1);
    assert_eq!((p.temps[0].name, p.temps[0].elem), ("temp", "T"));
    assert_eq!(
        texts(p),
        [
            "temp: alloc temp",
            "temp: copy temp <- x",
            "temp: launch k<<<1, 1>>>(&mut temp.slice_mut(0..1), &temp.slice(1..n))",
            "temp: copy y <- temp",
            "temp: free temp",
        ]
    );
    let x = DeviceBuffer::<u32>::for_planning(8).unwrap();
    let mut y = DeviceBuffer::<u32>::for_planning(8).unwrap();
    let k = Kernel::for_planning("k");
    let plan = Plan::build(&Generic::new(&x, &mut y, &k, 8)).unwrap();
    plan.check_races().unwrap();
    assert_eq!(plan.temp_peak_bytes(), 32);
}
