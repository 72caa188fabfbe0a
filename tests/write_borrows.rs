//! Writes go through exclusive borrows (README "Safe code cannot cause undefined behaviour"):
//! a pipeline writes a part of a `&mut` parameter (`x.slice_mut(a..b)`, `xs[i]`) through the
//! `&&mut` its `issue(&self)` holds, and the plan sees exactly that range written. Runs without
//! a GPU (plan-only kernels and buffers). The routes that wrote through shared borrows are
//! compile-fail cases in `tests/ui/` (`copy_into_shared_device_view`,
//! `copy_into_shared_pinned_view`, `write_shared_under_mut`, `write_shared_alias`).
#![allow(clippy::unwrap_used)] // tests may unwrap

use streamgraph::{
    AccessMode, DeviceBuffer, DeviceMemory, DeviceRange, Error, Kernel, PinnedBuffer, Plan,
};

streamgraph::pipeline! {
    /// Copies into, fills and launches on parts of `x`, `xs[1]` and `h`.
    pipeline Parts(
        x: &mut DeviceBuffer<u32>,
        xs: &mut Vec<DeviceBuffer<u32>>,
        h: &mut PinnedBuffer<u32>,
        src: &DeviceBuffer<u32>,
        k: &Kernel,
        a: usize,
        b: usize,
    ) {
        stream main;
        main: copy x.slice_mut(a..b) <- src.slice(0..b - a);
        main: fill x.slice_mut(b..) = 7u32;
        main: launch k<<<1, 32>>>(&mut xs[1].slice_mut(a..b), &src);
        main: copy h.slice_mut(a..b) <- x.slice(a..b);
        main: copy x.slice(0..a) <- src.slice(0..a);
    }
}

streamgraph::pipeline! {
    /// Copies `y` into a part of `x`.
    pipeline Into(x: &mut DeviceBuffer<u32>, y: &DeviceBuffer<u32>, a: usize, b: usize) {
        stream main;
        main: copy x.slice_mut(a..b) <- y;
    }
}

streamgraph::pipeline! {
    /// Two streams write and read parts of `x` with no ordering between them.
    pipeline TwoParts(x: &mut DeviceBuffer<u32>, src: &DeviceBuffer<u32>, k: &Kernel, split: usize) {
        stream left;
        stream right;
        left: copy x.slice_mut(0..split) <- src.slice(0..split);
        right: launch k<<<1, 32>>>(&x.slice(4..8));
    }
}

fn device(m: &impl DeviceMemory, start: usize, len: usize) -> DeviceRange {
    let r = m.range();
    DeviceRange {
        ptr: r.ptr + 4 * start as u64,
        bytes: 4 * len,
        ..r
    }
}

#[test]
fn writes_to_parts_plan_the_range_they_name() {
    let k = Kernel::for_planning("k");
    let mut x = DeviceBuffer::<u32>::for_planning(16).unwrap();
    let mut xs = vec![
        DeviceBuffer::<u32>::for_planning(16).unwrap(),
        DeviceBuffer::<u32>::for_planning(16).unwrap(),
    ];
    let mut h = PinnedBuffer::<u32>::for_planning(16).unwrap();
    let src = DeviceBuffer::<u32>::for_planning(16).unwrap();
    let (xr, x1r) = (x.range(), xs[1].range());
    let plan = Plan::build(&Parts::new(&mut x, &mut xs, &mut h, &src, &k, 3, 10)).unwrap();
    let ops = plan.ops();
    assert_eq!(ops.len(), 5);
    let first_write = |i: usize| {
        let access = &ops[i].accesses[0];
        assert_eq!(access.mode, AccessMode::Write, "op {i}");
        access.range
    };
    let at = |r: DeviceRange, start: usize, len: usize| DeviceRange {
        ptr: r.ptr + 4 * start as u64,
        bytes: 4 * len,
        ..r
    };
    assert_eq!(first_write(0), at(xr, 3, 7), "copy x.slice_mut(3..10)");
    assert_eq!(first_write(1), at(xr, 10, 6), "fill x.slice_mut(10..)");
    assert_eq!(first_write(2), at(x1r, 3, 7), "&mut xs[1].slice_mut(3..10)");
    let pinned = first_write(3);
    assert_eq!(
        (pinned.device, pinned.bytes),
        (DeviceRange::HOST, 28),
        "copy h.slice_mut(3..10)"
    );
    assert_eq!(
        first_write(4),
        device(&x, 0, 3),
        "copy x.slice(0..3), a write"
    );
}

#[test]
fn a_written_part_out_of_bounds_is_a_typed_error_naming_the_statement() {
    let k = Kernel::for_planning("k");
    let mut x = DeviceBuffer::<u32>::for_planning(16).unwrap();
    let mut xs = vec![DeviceBuffer::<u32>::for_planning(16).unwrap()];
    let mut h = PinnedBuffer::<u32>::for_planning(16).unwrap();
    let src = DeviceBuffer::<u32>::for_planning(16).unwrap();
    // `xs[1]` does not exist: the launch (statement 2) fails, before anything panics.
    let err = Plan::build(&Parts::new(&mut x, &mut xs, &mut h, &src, &k, 3, 10)).unwrap_err();
    let Error::Statement { statement, source } = &err else {
        panic!("not a statement error: {err}")
    };
    assert_eq!(statement.id, 2, "{err}");
    assert!(matches!(**source, Error::InvalidArgument(_)), "{err}");
    assert!(
        err.to_string()
            .contains("index 1 is out of bounds of 1 buffers"),
        "{err}"
    );
    // `x.slice_mut(3..20)` of 16 elements: the copy fails (a slice panics; a written part is
    // checked).
    let y = DeviceBuffer::<u32>::for_planning(17).unwrap();
    let err = Plan::build(&Into::new(&mut x, &y, 3, 20)).unwrap_err();
    let Error::Statement { statement, source } = &err else {
        panic!("not a statement error: {err}")
    };
    assert_eq!(statement.text, "main: copy x.slice_mut(a..b) <- y", "{err}");
    assert!(matches!(**source, Error::InvalidArgument(_)), "{err}");
    assert!(
        err.to_string()
            .contains("out of bounds of a buffer of 16 elements"),
        "{err}"
    );
    let one = DeviceBuffer::<u32>::for_planning(1).unwrap();
    Plan::build(&Into::new(&mut x, &one, 15, 16)).unwrap();
}

#[test]
fn the_race_check_sees_a_written_part_as_a_write() {
    let k = Kernel::for_planning("k");
    let mut x = DeviceBuffer::<u32>::for_planning(16).unwrap();
    let src = DeviceBuffer::<u32>::for_planning(16).unwrap();
    // [0, 4) written, [4, 8) read: apart.
    Plan::build(&TwoParts::new(&mut x, &src, &k, 4))
        .unwrap()
        .check_races()
        .unwrap();
    // [0, 6) written while [4, 8) is read on the other stream: a race on `x`.
    let plan = Plan::build(&TwoParts::new(&mut x, &src, &k, 6)).unwrap();
    let races = plan.races();
    assert_eq!(races.len(), 1, "{plan}");
    assert_eq!(races[0].first.access.mode, AccessMode::Write);
    assert_eq!(races[0].first.access.range, device(&x, 0, 6));
    assert!(matches!(plan.check_races(), Err(Error::Race(_))));
    // The static model names the destination as a write of `x`.
    let copy = &TwoParts::PROGRAM.statements[0];
    assert!(
        copy.accesses
            .iter()
            .any(|a| a.buffer == "x" && a.mode == AccessMode::Write),
        "{:?}",
        copy.accesses
    );
}
