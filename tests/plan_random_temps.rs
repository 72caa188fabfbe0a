//! Random programs with temporaries (`RandomOptions::temps`), planned without a GPU: each
//! temporary is allocated once at the top level before every use and released once after
//! every use, in the happens-before order of the plan as in issue order; no race touches a
//! temporary (neither its allocation or release nor its uses, which never race with one
//! another); the plan's peak lies between the largest temporary and all of them together;
//! every read of a temporary follows a write of it in every order the plan allows, and the
//! values the model predicts are those of every such order. A use moved before the
//! allocation or after the release, on a stream nothing orders there, is a race with it.
#![allow(clippy::unwrap_used)] // tests may unwrap

#[path = "random_support/mod.rs"]
mod random_support;

use std::collections::{BTreeMap, BTreeSet};

use random_support::{launch_ancestors, ops, random_order, simulate, Model, Words};
use streamgraph::testing::{Call, Memory, RandomOptions, RandomProgram};
use streamgraph::{AccessMode, DeviceRange, Plan, StatementKind};

/// The default programs, with 0 to 3 temporaries of 1 to 32 elements (the buffers have 16).
fn temp_options() -> RandomOptions {
    RandomOptions {
        temps: (0, 3),
        ..RandomOptions::default()
    }
}

/// Programs with device blocks whose bodies exercise their orderings, fills, copies and
/// `call`s, and temporaries (used in bodies too).
fn block_temp_options() -> RandomOptions {
    RandomOptions {
        streams: (2, 5),
        events: (1, 4),
        buffers: 3,
        buffer_len: 4,
        host_copies: false,
        host_fns: false,
        device_blocks: true,
        body_orderings: true,
        calls: true,
        temps: (1, 3),
        temp_len: (4, 8),
        ..RandomOptions::default()
    }
}

/// Without sub-ranges: every fill and copy is whole, so temporaries of another length than
/// the buffers are copied only to and from temporaries of their own length.
fn whole_temp_options() -> RandomOptions {
    RandomOptions {
        sub_ranges: false,
        temps: (1, 3),
        temp_len: (12, 20),
        ..RandomOptions::default()
    }
}

/// The indices of the calls outside every device block's bodies.
fn top_level(r: &RandomProgram) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < r.calls.len() {
        out.push(i);
        i = match &r.calls[i] {
            Call::Block {
                then, otherwise, ..
            } => then.end.max(otherwise.end).max(i + 1),
            _ => i + 1,
        };
    }
    out
}

/// The temporaries a top-level call uses (a device block: its bodies'), with whether it
/// writes each; an allocation and a release are not uses.
fn temp_uses(r: &RandomProgram, i: usize) -> BTreeMap<usize, bool> {
    let calls: Vec<&Call> = match &r.calls[i] {
        Call::Block {
            then, otherwise, ..
        } => r.calls[then.start.min(otherwise.start)..then.end.max(otherwise.end)]
            .iter()
            .collect(),
        Call::Alloc { .. } | Call::Free { .. } => Vec::new(),
        call => vec![call],
    };
    let mut uses = BTreeMap::new();
    for c in calls {
        for (m, mode) in c.touches() {
            if let Memory::Temp(t) = m {
                *uses.entry(t).or_insert(false) |= mode == AccessMode::Write;
            }
        }
    }
    uses
}

/// Where temporary `t` is allocated and released: the calls' indices.
fn alloc_and_free(r: &RandomProgram, t: usize) -> (usize, usize) {
    let find = |want: fn(&Call) -> Option<usize>| {
        let at: Vec<usize> = (0..r.calls.len())
            .filter(|&i| want(&r.calls[i]) == Some(t))
            .collect();
        assert_eq!(at.len(), 1, "seed {}: temporary {t} once: {at:?}", r.seed);
        at[0]
    };
    let alloc = find(|c| match *c {
        Call::Alloc { temp, .. } => Some(temp),
        _ => None,
    });
    let free = find(|c| match *c {
        Call::Free { temp, .. } => Some(temp),
        _ => None,
    });
    (alloc, free)
}

/// The address range the plan gave each temporary (its allocation's access).
fn temp_ranges(plan: &Plan) -> Vec<DeviceRange> {
    let mut ranges: Vec<(usize, DeviceRange)> = plan
        .temporaries()
        .iter()
        .map(|t| (t.temp, plan.ops()[t.alloc].accesses[0].range))
        .collect();
    ranges.sort_by_key(|&(t, _)| t);
    ranges.into_iter().map(|(_, r)| r).collect()
}

fn overlaps(a: DeviceRange, b: DeviceRange) -> bool {
    a.device == b.device && a.ptr < b.ptr + b.bytes as u64 && b.ptr < a.ptr + a.bytes as u64
}

/// What the programs of one suite hold, counted.
#[derive(Debug, Default)]
struct Tally {
    programs: usize,
    temps: usize,
    /// Uses by kind (the fill after each allocation not counted).
    uses: BTreeMap<&'static str, usize>,
    /// Temporaries used (beyond that fill) on more than one stream.
    on_several_streams: usize,
    /// Temporaries used inside a device block's body.
    in_bodies: usize,
    /// Statements using a temporary issued more than once (in `for`s).
    repeated: usize,
    /// Releases on the origin right after `wait_stream`s on the origin.
    after_waits: usize,
    /// Programs whose plan's peak is below the sum of their temporaries.
    reused: usize,
    /// Programs whose plan has no race at all.
    race_free: usize,
}

impl Tally {
    fn count(&mut self, kind: &'static str) {
        *self.uses.entry(kind).or_default() += 1;
    }
}

/// What a use of a temporary is, for the tally.
fn kind_of(call: &Call) -> Option<&'static str> {
    let temp = |m: Memory| matches!(m, Memory::Temp(_));
    Some(match *call {
        Call::Launch {
            memory,
            mode: AccessMode::Read,
            ..
        } if temp(memory) => "launch reads",
        Call::Launch { memory, .. } if temp(memory) => "launch writes",
        Call::Fill { memory, .. } if temp(memory) => "fill",
        Call::Copy { dst, src, .. } => match (dst.memory, src.memory) {
            (Memory::Temp(a), Memory::Temp(b)) if a == b => "copy within a temporary",
            (Memory::Temp(_), Memory::Temp(_)) => "copy between temporaries",
            (Memory::Temp(_), Memory::Buffer(_)) => "copy buffer -> temporary",
            (Memory::Buffer(_), Memory::Temp(_)) => "copy temporary -> buffer",
            (Memory::Temp(_), Memory::Pinned(_)) => "copy pinned -> temporary",
            (Memory::Pinned(_), Memory::Temp(_)) => "copy temporary -> pinned",
            _ => return None,
        },
        Call::Call { dst, src, .. } if temp(dst) || temp(src) => "call",
        _ => return None,
    })
}

/// Checks one program's temporaries against its plan (see the module); adds to `tally`.
fn check(r: &RandomProgram, tally: &mut Tally) {
    let seed = r.seed;
    let plan = r.plan().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert_eq!(plan.len(), r.operation_count(), "seed {seed}");
    let lens = r.temps();
    let top = top_level(r);
    tally.programs += 1;
    tally.temps += lens.len();

    // The plan's temporaries: one each, released, of its size.
    let planned = plan.temporaries();
    assert_eq!(planned.len(), lens.len(), "seed {seed}");
    for p in planned {
        assert_eq!(p.bytes, 4 * lens[p.temp], "seed {seed}");
        assert!(p.free.is_some(), "seed {seed}");
    }
    let peak = plan.temp_peak_bytes();
    let (largest, sum) = (
        lens.iter().max().map_or(0, |l| 4 * l),
        lens.iter().map(|l| 4 * l).sum::<usize>(),
    );
    assert!(
        largest <= peak && peak <= sum,
        "seed {seed}: peak {peak}, largest {largest}, all {sum}"
    );
    tally.reused += usize::from(peak < sum);

    // Each temporary: allocated and released once at the top level, every use after the one
    // and before the other, in issue order and in the plan's happens-before order.
    for (t, &len) in lens.iter().enumerate() {
        let (alloc, free) = alloc_and_free(r, t);
        assert!(top.contains(&alloc) && top.contains(&free), "seed {seed}");
        let op = |i: usize| r.calls[i].value().unwrap() as usize;
        let (alloc_op, free_op) = (op(alloc), op(free));
        // The first use: the whole fill right after the allocation, on its stream.
        match r.calls[alloc + 1] {
            Call::Fill {
                memory: Memory::Temp(u),
                start: 0,
                end,
                statement,
                ..
            } if u == t && end == len => {
                assert_eq!(statement.stream, r.calls[alloc].statement().stream);
            }
            ref c => panic!("seed {seed}: temporary {t} is not filled first: {c:?}"),
        }
        let mut streams = BTreeSet::new();
        for &i in &top {
            if !temp_uses(r, i).contains_key(&t) {
                continue;
            }
            assert!(
                alloc < i && i < free,
                "seed {seed}: call {i} uses t{t} outside"
            );
            assert!(
                plan.happens_before(alloc_op, op(i)) && plan.happens_before(op(i), free_op),
                "seed {seed}: call {i} is not ordered between t{t}'s allocation and release"
            );
            if i != alloc + 1 {
                streams.insert(r.calls[i].statement().stream);
            }
        }
        tally.on_several_streams += usize::from(streams.len() > 1);
        let free_stmt = r.calls[free].statement();
        if free_stmt.stream == 0
            && free > 0
            && matches!(r.calls[free - 1], Call::WaitStream(s) if s.stream == 0)
        {
            tally.after_waits += 1;
        }
    }
    // Uses inside device bodies, in loops, by kind.
    for &i in &top {
        if let Call::Block {
            then, otherwise, ..
        } = &r.calls[i]
        {
            let body = then.start.min(otherwise.start)..then.end.max(otherwise.end);
            let used: BTreeSet<usize> = temp_uses(r, i).into_keys().collect();
            tally.in_bodies += used.len();
            for c in &r.calls[body] {
                if let Some(kind) = kind_of(c) {
                    tally.count(kind);
                }
            }
        } else if let Some(kind) = kind_of(&r.calls[i])
            && !matches!(r.calls[i - 1], Call::Alloc { .. })
        {
            tally.count(kind);
        }
    }
    tally.repeated += plan
        .ops()
        .iter()
        .filter(|o| {
            o.occurrence == 2
                && o.statement
                    .accesses
                    .iter()
                    .any(|a| a.buffer.starts_with('t'))
        })
        .count();

    // No race touches a temporary: neither its allocation or release nor its memory.
    let ranges = temp_ranges(&plan);
    let races = plan.races();
    tally.race_free += usize::from(races.is_empty());
    for race in &races {
        for side in [&race.first, &race.second] {
            assert!(
                !matches!(
                    side.statement.kind,
                    StatementKind::Alloc { .. } | StatementKind::Free { .. }
                ),
                "seed {seed}: a race with an allocation or release: {race:?}"
            );
        }
        assert!(
            !ranges.iter().any(|&t| overlaps(t, race.overlap())),
            "seed {seed}: a race on a temporary: {} and {}",
            race.first.statement.text,
            race.second.statement.text
        );
    }
}

/// 2,000 programs of each suite plan, their temporaries placed as the module says, and every
/// use of temporaries appears (the counts are printed with `--nocapture`).
#[test]
fn two_thousand_programs_place_their_temporaries_and_plan() {
    for (name, options, kinds) in [
        (
            "default",
            temp_options(),
            &[
                "launch reads",
                "launch writes",
                "fill",
                "copy within a temporary",
                "copy between temporaries",
                "copy buffer -> temporary",
                "copy temporary -> buffer",
                "copy pinned -> temporary",
                "copy temporary -> pinned",
            ][..],
        ),
        (
            "device blocks",
            block_temp_options(),
            &["launch reads", "launch writes", "fill", "call"][..],
        ),
        (
            "whole copies",
            whole_temp_options(),
            &["launch reads", "launch writes", "fill"][..],
        ),
    ] {
        let mut tally = Tally::default();
        for seed in 0..2000 {
            check(
                &RandomProgram::with_options(seed, options.clone()),
                &mut tally,
            );
        }
        println!("{name}: {tally:#?}");
        for kind in kinds {
            let n = tally.uses.get(kind).copied().unwrap_or(0);
            assert!(n > 50, "{name}: {kind}: {n}");
        }
        assert!(tally.temps > 2000, "{name}: {tally:?}");
        assert!(tally.on_several_streams > 200, "{name}: {tally:?}");
        assert!(tally.after_waits > 50, "{name}: {tally:?}");
        assert!(tally.reused > 100, "{name}: {tally:?}");
        assert!(tally.repeated > 100, "{name}: {tally:?}");
        if options.device_blocks {
            assert!(tally.in_bodies > 200, "{name}: {tally:?}");
        }
    }
}

/// Without sub-ranges, copies between a temporary and a buffer are whole and of one length.
#[test]
fn whole_copies_join_memory_of_one_length() {
    let mut other_lengths = 0;
    for seed in 0..500 {
        let r = RandomProgram::with_options(seed, whole_temp_options());
        for c in &r.calls {
            if let Call::Copy { dst, src, .. } = *c {
                if dst.is_pinned() || src.is_pinned() {
                    continue;
                }
                assert_eq!(dst.range(), 0..r.len_of(dst.memory), "seed {seed}");
                assert_eq!(src.range(), 0..r.len_of(src.memory), "seed {seed}");
            }
            if let Call::Fill {
                memory, start, end, ..
            } = *c
            {
                assert_eq!(start..end, 0..r.len_of(memory), "seed {seed}");
            }
        }
        other_lengths += r.temps().iter().filter(|&&l| l != r.buffer_len()).count();
    }
    assert!(other_lengths > 500, "{other_lengths}");
}

/// The same seed gives the same program; and a program with temporaries is the program
/// without them, some operands swapped for temporaries and the temporaries' statements
/// (allocations, fills, releases and the waits before a release) added.
#[test]
fn temporaries_add_to_the_program_of_the_seed() {
    for seed in 0..300 {
        for options in [temp_options(), block_temp_options()] {
            let with = RandomProgram::with_options(seed, options.clone());
            let again = RandomProgram::with_options(seed, options.clone());
            let texts = |r: &RandomProgram| -> Vec<String> {
                r.calls.iter().map(|c| format!("{c:?}")).collect()
            };
            assert_eq!(texts(&with), texts(&again), "seed {seed}");
            let without = RandomProgram::with_options(
                seed,
                RandomOptions {
                    temps: (0, 0),
                    ..options
                },
            );
            // Each statement of the program without is one of the program with, in order, on
            // the same stream, of the same kind.
            let mut it = with.program.statements.iter();
            for s in without.program.statements {
                let kind = std::mem::discriminant(&s.kind);
                assert!(
                    it.any(|w| w.stream == s.stream && std::mem::discriminant(&w.kind) == kind),
                    "seed {seed}: {} is missing",
                    s.text
                );
            }
            let added = with.program.statements.len() - without.program.statements.len();
            assert!(added >= 3 * with.temps().len(), "seed {seed}");
        }
    }
}

/// Every order the plan allows reads no temporary unwritten (`simulate` panics where one
/// would) and computes the values the model predicts wherever no race decides them; the
/// values that pass through temporaries are among them.
#[test]
fn temporaries_hold_what_the_model_says_in_every_order_the_plan_allows() {
    let (mut through_temps, mut clean_through_temps) = (0, 0);
    for seed in 0..1000 {
        let r = RandomProgram::with_options(seed, temp_options());
        let plan = r.plan().unwrap();
        let model = Model::new(&r, &plan);
        let ops = ops(&r);
        let ancestors = launch_ancestors(&ops, &plan);
        for k in 0..10 {
            let order = random_order(&plan, seed * 100 + k);
            let outcome = simulate(&Words::of(&r), &ops, &ancestors, order);
            let diffs = model.differences(&outcome);
            assert!(diffs.is_empty(), "seed {seed}, order {k}: {diffs:?}");
        }
        // Reads of temporaries: every one is clean (temporaries never race).
        for (op, c) in ops.iter().enumerate() {
            if let Call::Launch {
                memory: Memory::Temp(_),
                mode: AccessMode::Read,
                ..
            } = c
            {
                through_temps += 1;
                clean_through_temps += usize::from(model.clean_obs[op]);
            }
        }
    }
    println!("{clean_through_temps} of {through_temps} reads of temporaries compared");
    assert!(through_temps > 200, "{through_temps}");
    // A read of a temporary is unclean only when a copy into it read racy buffer words.
    assert!(
        clean_through_temps * 10 > through_temps * 8,
        "{clean_through_temps} of {through_temps}"
    );
}

/// `r` with call `from` moved to index `to` (earlier): the device blocks in between move one
/// call on, with their bodies.
fn moved(r: &RandomProgram, from: usize, to: usize) -> RandomProgram {
    assert!(to < from);
    let mut m = r.clone();
    let call = m.calls.remove(from);
    m.calls.insert(to, call);
    for c in &mut m.calls[to + 1..=from] {
        if let Call::Block {
            then, otherwise, ..
        } = c
        {
            *then = then.start + 1..then.end + 1;
            *otherwise = otherwise.start + 1..otherwise.end + 1;
        }
    }
    m
}

/// Whether `plan` reports a race between statements `a` and `b`.
fn races_between(plan: &Plan, a: usize, b: usize) -> bool {
    plan.races().iter().any(|race| {
        let pair = [race.first.statement.id, race.second.statement.id];
        pair.contains(&a) && pair.contains(&b)
    })
}

/// Mutations: a use moved to right after its temporary's allocation, on another stream
/// (which nothing orders after the allocation yet), races with the allocation; the release
/// moved to right after the last use, when that use is on another stream, races with it.
#[test]
fn a_use_moved_outside_the_live_range_races_with_the_allocation_or_release() {
    let (mut before, mut after) = (0, 0);
    for seed in 0..2000 {
        for options in [temp_options(), block_temp_options()] {
            let r = RandomProgram::with_options(seed, options);
            let top = top_level(&r);
            for t in 0..r.temps().len() {
                let (alloc, free) = alloc_and_free(&r, t);
                let alloc_stmt = r.calls[alloc].statement();
                let free_stmt = r.calls[free].statement();
                let users: Vec<usize> = top
                    .iter()
                    .copied()
                    .filter(|&i| i != alloc + 1 && temp_uses(&r, i).contains_key(&t))
                    .collect();
                // Moved before the fill, a use of `t` alone (another temporary may not be
                // allocated yet).
                let alone = |i: usize| temp_uses(&r, i).len() == 1;
                // Before the allocation's fill, on another stream.
                if let Some(&u) = users.iter().find(|&&i| {
                    alone(i)
                        && !matches!(r.calls[i], Call::Block { .. })
                        && r.calls[i].statement().stream != alloc_stmt.stream
                }) {
                    let m = moved(&r, u, alloc + 1);
                    let plan = m.plan().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                    assert!(
                        races_between(&plan, alloc_stmt.id, r.calls[u].statement().id),
                        "seed {seed}: {} moved after {} does not race with it",
                        r.calls[u].statement().text,
                        alloc_stmt.text
                    );
                    before += 1;
                }
                // The release right after the last use, on another stream.
                if let Some(&last) = users.last() {
                    let stmt = r.calls[last].statement();
                    let end = match &r.calls[last] {
                        Call::Block {
                            then, otherwise, ..
                        } => then.end.max(otherwise.end),
                        _ => last + 1,
                    };
                    if stmt.stream != free_stmt.stream && end < free {
                        let m = moved(&r, free, end);
                        let plan = m.plan().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                        assert!(
                            races_between(&plan, free_stmt.id, stmt.id),
                            "seed {seed}: {} moved after {} does not race with it",
                            free_stmt.text,
                            stmt.text
                        );
                        after += 1;
                    }
                }
            }
        }
    }
    println!("{before} uses moved before their allocation, {after} releases moved before a use");
    assert!(before > 500 && after > 100, "{before} {after}");
}

/// The layout a graph set places temporaries by (`Plan::temp_layout`), over 2,000 programs of
/// each suite, aligned to 4 bytes (the temporaries' own sizes) and to 256 (a graph set's): two
/// temporaries share bytes only when one is released before the other is allocated; every
/// offset and span is aligned; the block is at least the peak (the heaviest set of
/// temporaries live at once needs room side by side) and at most the sum, and at 4 bytes
/// mostly the peak itself.
#[test]
fn temporaries_laid_out_in_one_block_share_bytes_only_when_ordered() {
    let (mut shared, mut at_peak, mut programs) = (0, 0, 0);
    for options in [temp_options(), block_temp_options(), whole_temp_options()] {
        for seed in 0..2000 {
            let r = RandomProgram::with_options(seed, options.clone());
            let plan = r.plan().unwrap();
            let temps = plan.temporaries();
            if temps.is_empty() {
                continue;
            }
            programs += 1;
            let reach = plan.graph_reach();
            let before = |a: usize, b: usize| {
                temps[a]
                    .free
                    .is_some_and(|f| reach.reaches(f, temps[b].alloc))
            };
            for align in [4, 256] {
                let layout = plan.temp_layout(align);
                assert_eq!(layout.offsets.len(), temps.len(), "seed {seed}");
                let span = |i: usize| temps[i].bytes.max(1).next_multiple_of(align);
                for i in 0..temps.len() {
                    assert_eq!(layout.offsets[i] % align, 0, "seed {seed}");
                    assert!(layout.offsets[i] + span(i) <= layout.extent, "seed {seed}");
                    for j in i + 1..temps.len() {
                        let (a, b) = (layout.offsets[i], layout.offsets[j]);
                        if a < b + span(j) && b < a + span(i) {
                            assert!(
                                before(i, j) || before(j, i),
                                "seed {seed}: temporaries {i} and {j} share bytes but may be live at once"
                            );
                            shared += 1;
                        }
                    }
                }
                let peak = plan.temp_peak_bytes();
                let sum: usize = (0..temps.len()).map(span).sum();
                assert!(
                    layout.extent >= peak && layout.extent <= sum,
                    "seed {seed}: block {} against peak {peak} and sum {sum}",
                    layout.extent
                );
                if align == 4 {
                    at_peak += usize::from(layout.extent == peak);
                }
            }
        }
    }
    println!(
        "{programs} programs with temporaries: {shared} pairs share bytes, {at_peak} blocks at the peak"
    );
    assert!(shared > 1000, "{shared}");
    assert!(at_peak > programs * 9 / 10, "{at_peak} of {programs}");
}
