//! The seeded random-program generator that executor tests replay.
#![allow(clippy::unwrap_used)] // tests may unwrap

#[path = "random_support/mod.rs"]
mod random_support;

use std::collections::BTreeMap;

use random_support::{launch_ancestors, ops, random_order, simulate, Model, Words};
use streamgraph::testing::{
    Block, Call, Memory, Place, RandomMemory, RandomOptions, RandomProgram,
};
use streamgraph::StatementKind;
use streamgraph::{AccessMode, DeviceBuffer, DeviceRange, Kernel, PinnedBuffer, Planner};

/// A call, described without its statement's identity (so that two programs compare).
fn describe(c: &Call) -> String {
    let text = c.statement().text;
    let stream = c.statement().stream;
    match *c {
        Call::Launch {
            kernel,
            memory,
            mode,
            value,
            ..
        } => format!("{stream}: {text} k{kernel} {memory:?} {mode:?} {value}"),
        Call::Fill {
            memory,
            start,
            end,
            value,
            ..
        } => format!("{stream}: {text} {memory:?}[{start}..{end}] {value}"),
        Call::Copy {
            dst, src, value, ..
        } => format!("{stream}: {text} {dst:?} <- {src:?} {value}"),
        Call::Host { value, .. } => format!("{stream}: {text} {value}"),
        _ => format!("{stream}: {text}"),
    }
}

fn describe_all(r: &RandomProgram) -> Vec<String> {
    r.calls.iter().map(describe).collect()
}

fn memory(r: &RandomProgram) -> (Vec<DeviceBuffer<u32>>, Vec<PinnedBuffer<u32>>) {
    let buffers = (0..r.buffers())
        .map(|_| DeviceBuffer::for_planning(r.buffer_len()).unwrap())
        .collect();
    let pinned = (0..r.pinned())
        .map(|_| PinnedBuffer::for_planning(r.pinned_len()).unwrap())
        .collect();
    (buffers, pinned)
}

#[test]
fn the_same_seed_gives_the_same_program() {
    for seed in [0, 1, 42, u64::MAX] {
        let (a, b) = (RandomProgram::new(seed), RandomProgram::new(seed));
        assert_eq!(describe_all(&a), describe_all(&b));
        assert_eq!(a.blocks, b.blocks);
        assert_eq!(a.plan().unwrap().edges(), b.plan().unwrap().edges());
    }
    assert_ne!(
        describe_all(&RandomProgram::new(1)),
        describe_all(&RandomProgram::new(2))
    );
}

#[test]
fn programs_cover_what_the_design_asks_for() {
    let (mut loops, mut rerecords, mut unrecorded_waits, mut wait_streams) = (0, 0, 0, 0);
    for seed in 0..500 {
        let r = RandomProgram::new(seed);
        let p = r.program;
        assert!((2..=6).contains(&p.streams.len()));
        assert!((1..=4).contains(&p.events.len()));
        assert!((1..=64).contains(&p.statements.len()));
        let plan = r.plan().unwrap();
        assert_eq!(plan.len(), r.operation_count());
        let ops = ops(&r);
        for (i, op) in plan.ops().iter().enumerate() {
            // Every operation's value is its index in issue order, and it touches what its
            // kind does: a launch or fill one range, a copy two, a host function none.
            assert_eq!(ops[i].value(), Some(i as u32));
            assert!(ops[i].statement().same(op.statement));
            let accesses = match ops[i] {
                Call::Launch { .. } | Call::Fill { .. } => 1,
                Call::Copy { .. } => 2,
                _ => 0,
            };
            assert_eq!(op.accesses.len(), accesses, "seed {seed}, {}", op.label);
        }
        for op in 0..plan.len() {
            assert!(plan
                .final_frontier()
                .iter()
                .any(|&f| f == op || plan.happens_before(op, f)));
        }
        if plan.ops().iter().any(|o| o.occurrence > 1) {
            loops += 1;
        }
        let mut recorded = vec![0; p.events.len()];
        for c in &r.calls {
            match (c, c.statement().kind) {
                (Call::Record(_), StatementKind::Record { event }) => {
                    recorded[event] += 1;
                    if recorded[event] == 2 {
                        rerecords += 1;
                    }
                }
                (Call::Wait(_), StatementKind::Wait { event }) if recorded[event] == 0 => {
                    unrecorded_waits += 1
                }
                (Call::WaitStream(_), StatementKind::WaitStream { stream }) => {
                    assert_ne!(stream, c.statement().stream);
                    wait_streams += 1;
                }
                _ => {}
            }
        }
    }
    assert!(loops > 100, "{loops}");
    assert!(rerecords > 100, "{rerecords}");
    assert!(unrecorded_waits > 100, "{unrecorded_waits}");
    assert!(wait_streams > 100, "{wait_streams}");
}

/// What one generated program holds, counted.
#[derive(Debug, Default)]
struct Tally {
    programs: usize,
    statements: BTreeMap<&'static str, usize>,
    operations: usize,
    repeated_ops: usize,
    repeated_statements: usize,
    unissued: usize,
    programs_with_unissued: usize,
    fors: usize,
    ifs_taken: usize,
    ifs_not_taken: usize,
    nested: usize,
    racy_programs: usize,
}

impl Tally {
    fn count(&mut self, kind: &'static str) {
        *self.statements.entry(kind).or_default() += 1;
    }

    fn blocks(&mut self, blocks: &[Block], depth: usize) {
        for b in blocks {
            match b {
                Block::Run(_) => {}
                Block::For { body, .. } => {
                    self.fors += 1;
                    self.nested += usize::from(depth > 0);
                    self.blocks(body, depth + 1);
                }
                Block::If { taken, body } => {
                    if *taken {
                        self.ifs_taken += 1;
                    } else {
                        self.ifs_not_taken += 1;
                    }
                    self.nested += usize::from(depth > 0);
                    self.blocks(body, depth + 1);
                }
                Block::DeviceWhile { body, .. } => self.blocks(body, depth + 1),
                Block::DeviceIf {
                    then, otherwise, ..
                } => {
                    self.blocks(then, depth + 1);
                    self.blocks(otherwise, depth + 1);
                }
                Block::DeviceSwitch { arms, .. } => {
                    for (_, body) in arms {
                        self.blocks(body, depth + 1);
                    }
                }
            }
        }
    }
}

/// The statement kind of a generated statement, by its first issue (or its text).
fn kind_of(r: &RandomProgram, id: usize) -> &'static str {
    let s = &r.program.statements[id];
    let call = r.calls.iter().find(|c| c.statement().id == id);
    match (s.kind, call) {
        (StatementKind::Launch { .. }, Some(Call::Launch { mode, .. })) => match mode {
            AccessMode::Read => "launch (read)",
            AccessMode::Write => "launch (write)",
        },
        (StatementKind::Launch { .. }, _) => "launch (unissued)",
        (StatementKind::Fill, Some(&Call::Fill { start, end, .. })) => {
            if start == 0 && end == r.buffer_len() {
                "fill (whole)"
            } else {
                "fill (part)"
            }
        }
        (StatementKind::Fill, _) => "fill (unissued)",
        (StatementKind::Copy, Some(&Call::Copy { dst, src, .. })) => {
            match (dst.is_pinned(), src.is_pinned()) {
                (true, _) => "copy device->pinned",
                (_, true) => "copy pinned->device",
                _ if dst.memory == src.memory => "copy device->device (same buffer)",
                _ if dst.len() == r.buffer_len() => "copy device->device (whole)",
                _ => "copy device->device (parts)",
            }
        }
        (StatementKind::Copy, _) => "copy (unissued)",
        (StatementKind::Host, _) => "host",
        (StatementKind::Call { .. }, _) => "call",
        (
            StatementKind::While { .. } | StatementKind::If { .. } | StatementKind::Switch { .. },
            _,
        ) => "device block",
        (StatementKind::Collective { .. }, _) => "collective",
        (StatementKind::Record { .. }, _) => "record",
        (StatementKind::Wait { .. }, _) => "wait",
        (StatementKind::WaitStream { .. }, _) => "wait_stream",
        (StatementKind::Alloc { .. }, _) => "alloc",
        (StatementKind::Free { .. }, _) => "free",
    }
}

fn check_places(r: &RandomProgram, dst: Place, src: Place) {
    let seed = r.seed;
    assert_eq!(dst.len(), src.len(), "seed {seed}");
    assert!(!dst.is_empty(), "seed {seed}");
    for p in [dst, src] {
        match p.memory {
            Memory::Pinned(h) => {
                assert!(h < r.pinned(), "seed {seed}");
                assert_eq!(p.range(), 0..r.pinned_len(), "seed {seed}");
            }
            Memory::Buffer(b) => {
                assert!(b < r.buffers(), "seed {seed}");
                assert!(p.end <= r.buffer_len(), "seed {seed}");
            }
            Memory::Temp(t) => panic!("seed {seed}: temporary {t} without temporaries"),
        }
    }
    assert!(
        !(dst.is_pinned() && src.is_pinned()),
        "seed {seed}: no host-to-host copies"
    );
    if dst.memory == src.memory {
        assert!(
            dst.end <= src.start || src.end <= dst.start,
            "seed {seed}: a copy within one buffer overlaps itself: {dst:?} <- {src:?}"
        );
    }
}

/// Plans of 2,000 seeds build, their calls are well-formed, and every feature appears: the
/// counts are printed (`--nocapture`).
#[test]
fn two_thousand_programs_plan_and_use_every_feature() {
    let mut t = Tally::default();
    for seed in 0..2000 {
        let r = RandomProgram::new(seed);
        let plan = r.plan().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(plan.len(), r.operation_count(), "seed {seed}");
        t.programs += 1;
        t.operations += plan.len();
        t.repeated_ops += plan.ops().iter().filter(|o| o.occurrence > 1).count();
        t.repeated_statements += plan.ops().iter().filter(|o| o.occurrence == 2).count();
        let unissued = r.unissued();
        t.unissued += unissued.len();
        t.programs_with_unissued += usize::from(!unissued.is_empty());
        t.racy_programs += usize::from(!plan.races().is_empty());
        t.blocks(&r.blocks, 0);
        for id in 0..r.program.statements.len() {
            t.count(kind_of(&r, id));
        }
        // The blocks cover the statements once, in order.
        let mut next = 0;
        fn runs(blocks: &[Block], next: &mut usize, seed: u64) {
            for b in blocks {
                match b {
                    Block::Run(range) => {
                        assert_eq!(range.start, *next, "seed {seed}");
                        assert!(range.end > range.start, "seed {seed}");
                        *next = range.end;
                    }
                    Block::For { times, body } => {
                        assert!((2..=3).contains(times), "seed {seed}");
                        runs(body, next, seed);
                    }
                    Block::If { body, .. } => runs(body, next, seed),
                    Block::DeviceWhile { header, body, .. } => {
                        assert_eq!(*header, *next, "seed {seed}");
                        *next = header + 1;
                        runs(body, next, seed);
                    }
                    Block::DeviceIf {
                        header,
                        then,
                        otherwise,
                        ..
                    } => {
                        assert_eq!(*header, *next, "seed {seed}");
                        *next = header + 1;
                        runs(then, next, seed);
                        runs(otherwise, next, seed);
                    }
                    Block::DeviceSwitch { header, arms, .. } => {
                        assert_eq!(*header, *next, "seed {seed}");
                        *next = header + 1;
                        for (_, body) in arms {
                            runs(body, next, seed);
                        }
                    }
                }
            }
        }
        runs(&r.blocks, &mut next, seed);
        assert_eq!(next, r.program.statements.len(), "seed {seed}");
        for c in &r.calls {
            match *c {
                Call::Fill {
                    memory: Memory::Buffer(buffer),
                    start,
                    end,
                    ..
                } => {
                    assert!(buffer < r.buffers() && start < end && end <= r.buffer_len())
                }
                Call::Copy { dst, src, .. } => check_places(&r, dst, src),
                Call::Launch {
                    memory: Memory::Buffer(buffer),
                    kernel,
                    ..
                } => {
                    assert!(buffer < r.buffers() && kernel < r.kernels())
                }
                Call::Fill { .. }
                | Call::Launch { .. }
                | Call::Alloc { .. }
                | Call::Free { .. } => {
                    panic!(
                        "seed {seed}: a temporary without temporaries: {}",
                        describe(c)
                    )
                }
                _ => {}
            }
        }
    }
    println!("{t:#?}");
    let kinds = [
        "launch (read)",
        "launch (write)",
        "fill (whole)",
        "fill (part)",
        "copy device->device (whole)",
        "copy device->device (parts)",
        "copy device->device (same buffer)",
        "copy pinned->device",
        "copy device->pinned",
        "host",
        "record",
        "wait",
        "wait_stream",
    ];
    for kind in kinds {
        let n = t.statements.get(kind).copied().unwrap_or(0);
        assert!(n > 200, "{kind}: {n}");
    }
    assert!(t.repeated_ops > 2000, "{t:?}");
    assert!(t.programs_with_unissued > 200, "{t:?}");
    assert!(
        t.fors > 500 && t.ifs_taken > 300 && t.ifs_not_taken > 300,
        "{t:?}"
    );
    assert!(t.nested > 200, "{t:?}");
    assert!(t.racy_programs > 200, "{t:?}");
}

/// `if`s not taken issue nothing, `for`s issue their body `times` times: the plan's
/// occurrences count exactly the issues the blocks describe.
#[test]
fn occurrences_follow_the_blocks() {
    fn issues(blocks: &[Block], times: usize, out: &mut Vec<usize>) {
        for b in blocks {
            match b {
                Block::Run(range) => range.clone().for_each(|s| out[s] += times),
                Block::For { times: t, body } => issues(body, times * t, out),
                Block::If { taken, body } => issues(body, times * usize::from(*taken), out),
                Block::DeviceWhile { header, body, .. } => {
                    out[*header] += times;
                    issues(body, times, out);
                }
                Block::DeviceIf {
                    header,
                    then,
                    otherwise,
                    ..
                } => {
                    out[*header] += times;
                    issues(then, times, out);
                    issues(otherwise, times, out);
                }
                Block::DeviceSwitch { header, arms, .. } => {
                    out[*header] += times;
                    for (_, body) in arms {
                        issues(body, times, out);
                    }
                }
            }
        }
    }
    for seed in 0..300 {
        let r = RandomProgram::new(seed);
        let mut want = vec![0; r.program.statements.len()];
        issues(&r.blocks, 1, &mut want);
        let mut got = vec![0; r.program.statements.len()];
        for c in &r.calls {
            got[c.statement().id] += 1;
        }
        assert_eq!(got, want, "seed {seed}");
        let plan = r.plan().unwrap();
        for op in plan.ops() {
            assert!(
                op.occurrence as usize <= want[op.statement.id],
                "seed {seed}"
            );
        }
        for s in r.unissued() {
            assert_eq!(want[s.id], 0, "seed {seed}");
            assert!(plan.ops().iter().all(|o| !o.statement.same(s)));
        }
    }
}

#[test]
fn options_are_respected() {
    let options = RandomOptions {
        streams: (3, 3),
        events: (2, 2),
        max_statements: 10,
        buffers: 2,
        kernels: 3,
        fills: true,
        loops: false,
        conditionals: false,
        waits_on_unrecorded: false,
        ..RandomOptions::default()
    };
    let mut fills = 0;
    // The two device (and two pinned) buffers, no temporary.
    let two = |m: Memory| matches!(m, Memory::Buffer(i) | Memory::Pinned(i) if i < 2);
    for seed in 0..200 {
        let r = RandomProgram::with_options(seed, options.clone());
        assert_eq!(r.program.streams.len(), 3);
        assert_eq!(r.program.events.len(), 2);
        assert!(r.program.statements.len() <= 10);
        assert_eq!(
            r.calls.len(),
            r.program.statements.len(),
            "no loops, no ifs"
        );
        assert!(r.blocks.iter().all(|b| matches!(b, Block::Run(_))));
        let mut recorded = [false; 2];
        for c in &r.calls {
            match *c {
                Call::Record(s) => {
                    if let StatementKind::Record { event } = s.kind {
                        recorded[event] = true;
                    }
                }
                Call::Wait(s) => {
                    let StatementKind::Wait { event } = s.kind else { panic!() };
                    assert!(recorded[event], "wait before any record in seed {seed}");
                }
                Call::Launch { kernel, memory, .. } => assert!(kernel < 3 && two(memory)),
                Call::Fill { memory, .. } => {
                    assert!(two(memory));
                    fills += 1;
                }
                Call::Copy { dst, src, .. } => assert!(two(dst.memory) && two(src.memory)),
                _ => {}
            }
        }
        r.plan().unwrap();
    }
    assert!(fills > 0);
}

/// Each knob turns its feature off, and waits on never-recorded events stay off across
/// `if`s and loops.
#[test]
fn every_feature_can_be_turned_off() {
    let off = RandomOptions {
        fills: false,
        copies: false,
        host_copies: false,
        host_fns: false,
        sub_ranges: false,
        loops: false,
        conditionals: false,
        waits_on_unrecorded: false,
        ..RandomOptions::default()
    };
    for seed in 0..300 {
        let r = RandomProgram::with_options(seed, off.clone());
        assert_eq!(r.pinned(), 0);
        assert_eq!(r.calls.len(), r.program.statements.len(), "seed {seed}");
        for c in &r.calls {
            assert!(
                matches!(
                    c,
                    Call::Launch { .. } | Call::Record(_) | Call::Wait(_) | Call::WaitStream(_)
                ),
                "seed {seed}: {}",
                describe(c)
            );
        }
        r.plan().unwrap();
    }
    // One at a time: the others stay on.
    let one_off = |f: fn(&mut RandomOptions)| {
        let mut o = RandomOptions::default();
        f(&mut o);
        (0..300).map(move |seed| RandomProgram::with_options(seed, o.clone()))
    };
    for r in one_off(|o| o.fills = false) {
        assert!(r.calls.iter().all(|c| !matches!(c, Call::Fill { .. })));
    }
    for r in one_off(|o| o.copies = false) {
        assert!(r.calls.iter().all(|c| match c {
            Call::Copy { dst, src, .. } => dst.is_pinned() || src.is_pinned(),
            _ => true,
        }));
    }
    for r in one_off(|o| o.host_copies = false) {
        assert!(r.calls.iter().all(|c| match c {
            Call::Copy { dst, src, .. } => !dst.is_pinned() && !src.is_pinned(),
            _ => true,
        }));
    }
    for r in one_off(|o| o.pinned = 0) {
        assert!(r.calls.iter().all(|c| match c {
            Call::Copy { dst, src, .. } => !dst.is_pinned() && !src.is_pinned(),
            _ => true,
        }));
    }
    for r in one_off(|o| o.host_fns = false) {
        assert!(r.calls.iter().all(|c| !matches!(c, Call::Host { .. })));
    }
    for r in one_off(|o| o.sub_ranges = false) {
        let whole = r.buffer_len();
        assert!(r.calls.iter().all(|c| match *c {
            Call::Fill { start, end, .. } => (start, end) == (0, whole),
            Call::Copy { dst, src, .. } if !dst.is_pinned() && !src.is_pinned() =>
                dst.range() == (0..whole) && src.range() == (0..whole),
            Call::Copy { dst, src, .. } => dst.start == 0 && src.start == 0,
            _ => true,
        }));
    }
    for r in one_off(|o| o.loops = false) {
        assert!(r.plan().unwrap().ops().iter().all(|o| o.occurrence == 1));
    }
    for r in one_off(|o| o.conditionals = false) {
        assert!(r.unissued().is_empty());
    }
    for r in one_off(|o| o.waits_on_unrecorded = false) {
        let mut recorded = vec![false; r.program.events.len()];
        for c in &r.calls {
            match c.statement().kind {
                StatementKind::Record { event } => recorded[event] = true,
                StatementKind::Wait { event } => assert!(recorded[event], "seed {}", r.seed),
                _ => {}
            }
        }
    }
}

#[test]
fn replay_needs_enough_kernels_and_memory() {
    let r = RandomProgram::new(7);
    let mut planner = Planner::new(r.program);
    let (mut buffers, mut pinned) = memory(&r);
    let err = r
        .replay(
            &mut planner,
            &[],
            &RandomMemory::new(&mut buffers, &mut pinned),
            RandomProgram::launch_config(),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("needs 1 kernel(s) but 0 were given"),
        "{err}"
    );
    let kernels = [Kernel::for_planning("k0")];
    let cases = [
        (2, 2, "needs 4 buffer(s) but 2 were given"),
        (4, 1, "needs 2 pinned buffer(s) but 1 were given"),
    ];
    for (device, host, message) in cases {
        let err = r
            .replay(
                &mut planner,
                &kernels,
                &RandomMemory::new(&mut buffers[..device], &mut pinned[..host]),
                RandomProgram::launch_config(),
            )
            .unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
    }
    let mut short: Vec<DeviceBuffer<u32>> = (0..4)
        .map(|_| DeviceBuffer::for_planning(8).unwrap())
        .collect();
    let err = r
        .replay(
            &mut planner,
            &kernels,
            &RandomMemory::new(&mut short, &mut pinned),
            RandomProgram::launch_config(),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("needs buffers of 16 elements but buffer 0 has 8"),
        "{err}"
    );
    r.replay(
        &mut planner,
        &kernels,
        &RandomMemory::new(&mut buffers, &mut pinned),
        RandomProgram::launch_config(),
    )
    .unwrap();
    assert_eq!(planner.finish().edges(), r.plan().unwrap().edges());
}

/// Host functions run the memory's hook with their operation index; copies and fills touch the
/// ranges their calls name.
#[test]
fn replays_issue_what_the_calls_say() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    for seed in 0..100 {
        let r = RandomProgram::new(seed);
        let (mut buffers, mut pinned) = memory(&r);
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&runs);
        let mem = RandomMemory::new(&mut buffers, &mut pinned).with_host(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        let mut planner = Planner::new(r.program);
        r.replay(
            &mut planner,
            &[Kernel::for_planning("k0")],
            &mem,
            RandomProgram::launch_config(),
        )
        .unwrap();
        let plan = planner.finish();
        // The planner keeps no host function: nothing ran.
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        let device = |b: usize, j: usize| {
            let range = streamgraph::DeviceMemory::range(&buffers[b]);
            (range.ptr + 4 * j as u64, range.device)
        };
        for (op, call) in ops(&r).iter().enumerate() {
            let accesses = &plan.ops()[op].accesses;
            match *call {
                Call::Fill {
                    memory: Memory::Buffer(buffer),
                    start,
                    end,
                    ..
                } => {
                    let (ptr, dev) = device(buffer, start);
                    assert_eq!(
                        accesses[0].range,
                        DeviceRange {
                            device: dev,
                            ptr,
                            bytes: 4 * (end - start)
                        }
                    );
                }
                Call::Copy { dst, src, .. } => {
                    for (a, p) in accesses.iter().zip([dst, src]) {
                        assert_eq!(a.range.bytes, 4 * p.len());
                        match p.memory {
                            Memory::Pinned(_) => assert_eq!(a.range.device, DeviceRange::HOST),
                            Memory::Buffer(b) => {
                                assert_eq!((a.range.ptr, a.range.device), device(b, p.start))
                            }
                            Memory::Temp(_) => unreachable!("no temporaries"),
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

/// The GPU test compares only what no race decides. Every order the plan allows must leave
/// those values as issue order does; race-free programs are compared whole; and enough is
/// compared for the comparison to mean something.
#[test]
fn values_no_race_decides_are_the_same_in_every_order_the_plan_allows() {
    let (mut clean, mut words, mut clean_obs, mut reads) = (0, 0, 0, 0);
    let mut differing_orders = 0;
    for seed in 0..400 {
        let r = RandomProgram::new(seed);
        let plan = r.plan().unwrap();
        let model = Model::new(&r, &plan);
        let ops = ops(&r);
        let ancestors = launch_ancestors(&ops, &plan);
        if plan.races().is_empty() {
            assert!(model.clean_words.iter().all(|&c| c), "seed {seed}");
            assert!(model.clean_obs.iter().all(|&c| c), "seed {seed}");
        }
        for k in 0..10 {
            let order = random_order(&plan, seed * 100 + k);
            let outcome = simulate(&Words::of(&r), &ops, &ancestors, order);
            let diffs = model.differences(&outcome);
            assert!(diffs.is_empty(), "seed {seed}, order {k}: {diffs:?}");
            differing_orders += usize::from(outcome != model.expected);
        }
        clean += model.clean_words.iter().filter(|&&c| c).count();
        words += model.clean_words.len();
        for (op, c) in ops.iter().enumerate() {
            if let Call::Launch {
                mode: AccessMode::Read,
                ..
            } = c
            {
                reads += 1;
                clean_obs += usize::from(model.clean_obs[op]);
            }
        }
    }
    println!(
        "clean final words: {clean} of {words}; clean observations: {clean_obs} of {reads}; orders whose racy values differ: {differing_orders}"
    );
    assert!(
        differing_orders > 100,
        "races change values: {differing_orders}"
    );
    assert!(clean * 2 > words, "{clean} of {words} words are compared");
    assert!(
        clean_obs * 4 > reads,
        "{clean_obs} of {reads} observations are compared"
    );
}
