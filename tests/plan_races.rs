//! Race detection on real address ranges.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod plan_support;

use std::collections::HashMap;
use std::time::Instant;

use plan_support::{plan, plan_all, plan_with, Region};
use streamgraph::AccessMode::{Read, Write};
use streamgraph::ProgramBuilder;
use streamgraph::{DeviceRange, Error};

#[test]
fn an_unordered_write_and_read_is_a_race_with_both_locations_and_a_fix() {
    let mut b = ProgramBuilder::new("Racy");
    b.file("src/racy.rs");
    let (main, side) = (b.stream("main"), b.stream("side"));
    b.launch(main, "k.scale", &[("x", Write)]);
    b.launch(side, "k.sum", &[("y", Write), ("x", Read)]);
    let program = b.build();
    let regions = HashMap::from([
        ("x", Region::new(0x1000, 0x400)),
        ("y", Region::new(0x2000, 0x400)),
    ]);
    let p = plan_with(program, &[0, 1], &regions);
    let races = p.races();
    assert_eq!(races.len(), 1);
    let r = &races[0];
    assert_eq!((r.first.op, r.second.op), (0, 1));
    assert_eq!(
        (r.first.stream_name, r.second.stream_name),
        ("main", "side")
    );
    assert_eq!(r.first.access.mode, Write);
    assert_eq!(r.second.access.mode, Read);
    assert_eq!(
        r.overlap(),
        DeviceRange {
            device: DeviceRange::PLANNING,
            ptr: 0x1000,
            bytes: 0x400
        }
    );

    let msg = streamgraph::Error::Race(races.clone()).to_string();
    for needle in [
        "found 1 data race",
        "`launch k.scale(&mut x)` at src/racy.rs:1:5 on stream `main` writes",
        "`launch k.sum(&mut y, &x)` at src/racy.rs:2:5 on stream `side` reads",
        "1024 byte(s) at 0x1000..0x1400 of planning memory",
        "record an event on `main` after the first and `wait` for it on `side` before the second",
        "`main: record main_done;`",
        "`side: wait main_done;`",
    ] {
        assert!(msg.contains(needle), "missing {needle:?} in:\n{msg}");
    }
    match p.check_races() {
        Err(err @ Error::Race(_)) => assert_eq!(err.to_string(), msg),
        other => panic!("expected a race, got {other:?}"),
    }
}

#[test]
fn ordered_pairs_are_not_races() {
    let mut b = ProgramBuilder::new("Ordered");
    let (main, side, third) = (b.stream("main"), b.stream("side"), b.stream("third"));
    let e = b.event("e");
    b.launch(main, "w", &[("x", Write)]); // op 0
    b.record(main, e);
    b.wait(side, e);
    b.launch(side, "r", &[("x", Read)]); // op 1, after 0 through e
    b.wait_stream(third, side);
    b.launch(third, "w2", &[("x", Write)]); // op 2, after 1 through wait_stream
    b.launch(main, "w3", &[("y", Write)]); // op 3, touches other memory
    let p = plan_all(b.build());
    assert!(
        p.races().is_empty(),
        "{}",
        streamgraph::Error::Race(p.races())
    );
    p.check_races().unwrap();
}

#[test]
fn reads_never_race_with_reads() {
    let mut b = ProgramBuilder::new("Reads");
    let (s0, s1, s2) = (b.stream("s0"), b.stream("s1"), b.stream("s2"));
    for s in [s0, s1, s2] {
        b.launch(s, "r", &[("x", Read)]);
    }
    assert!(plan_all(b.build()).races().is_empty());
}

#[test]
fn the_same_stream_is_always_ordered() {
    let mut b = ProgramBuilder::new("Same");
    let s0 = b.stream("s0");
    b.stream("s1");
    b.launch(s0, "w", &[("x", Write)]);
    b.launch(s0, "w", &[("x", Write)]);
    assert!(plan_all(b.build()).races().is_empty());
}

#[test]
fn aliasing_is_decided_on_addresses_not_names() {
    let mut b = ProgramBuilder::new("Alias");
    let (s0, s1, s2, s3) = (
        b.stream("s0"),
        b.stream("s1"),
        b.stream("s2"),
        b.stream("s3"),
    );
    b.launch(s0, "w", &[("whole", Write)]); // op 0: [0x1000, 0x1100)
    b.launch(s1, "r", &[("middle", Read)]); // op 1: [0x1080, 0x10c0), inside op 0's range
    b.launch(s2, "r", &[("after", Read)]); // op 2: [0x1100, 0x1200), adjacent, no overlap
    b.launch(s3, "r", &[("elsewhere", Read)]); // op 3: same addresses on device 1
    let program = b.build();
    let regions = HashMap::from([
        ("whole", Region::new(0x1000, 0x100)),
        ("middle", Region::new(0x1080, 0x40)),
        ("after", Region::new(0x1100, 0x100)),
        (
            "elsewhere",
            Region {
                device: 1,
                ptr: 0x1000,
                bytes: 0x100,
            },
        ),
    ]);
    let races = plan_with(program, &[0, 1, 2, 3], &regions).races();
    assert_eq!(
        races.len(),
        1,
        "{}",
        streamgraph::Error::Race(races.clone())
    );
    assert_eq!((races[0].first.op, races[0].second.op), (0, 1));
    assert_eq!(
        races[0].overlap(),
        DeviceRange {
            device: DeviceRange::PLANNING,
            ptr: 0x1080,
            bytes: 0x40
        }
    );
    assert!(streamgraph::Error::Race(races.clone())
        .to_string()
        .contains("64 byte(s) at 0x1080..0x10c0"));
}

#[test]
fn two_writes_through_overlapping_buffers_race() {
    let mut b = ProgramBuilder::new("Overlap");
    let (s0, s1) = (b.stream("s0"), b.stream("s1"));
    b.launch(s1, "w", &[("lo", Write)]); // [0, 0x300)
    b.launch(s0, "w", &[("hi", Write)]); // [0x200, 0x500)
    let regions = HashMap::from([
        ("lo", Region::new(0, 0x300)),
        ("hi", Region::new(0x200, 0x300)),
    ]);
    let races = plan_with(b.build(), &[0, 1], &regions).races();
    assert_eq!(races.len(), 1);
    assert_eq!(
        (races[0].first.stream_name, races[0].second.stream_name),
        ("s1", "s0")
    );
    assert_eq!(races[0].overlap().bytes, 0x100);
    assert!(streamgraph::Error::Race(races.clone())
        .to_string()
        .contains("record an event on `s1`"));
}

#[test]
fn one_race_per_pair_of_operations() {
    let mut b = ProgramBuilder::new("Pair");
    let (s0, s1) = (b.stream("s0"), b.stream("s1"));
    b.launch(s0, "w", &[("x", Write), ("x", Read)]);
    b.launch(s1, "w", &[("x", Write), ("x", Read)]);
    let races = plan_all(b.build()).races();
    assert_eq!(races.len(), 1);
    // Three unordered pairs of operations: 0-1 only once each.
    let mut b = ProgramBuilder::new("Three");
    let streams: Vec<usize> = (0..3).map(|i| b.stream(&format!("s{i}"))).collect();
    for &s in &streams {
        b.launch(s, "w", &[("x", Write)]);
    }
    let races = plan_all(b.build()).races();
    let pairs: Vec<(usize, usize)> = races.iter().map(|r| (r.first.op, r.second.op)).collect();
    assert_eq!(pairs, [(0, 1), (0, 2), (1, 2)]);
    assert!(streamgraph::Error::Race(races.clone())
        .to_string()
        .starts_with("found 3 data races"));
}

#[test]
fn a_race_carried_across_loop_iterations_is_found() {
    // for _ in 0..2 { main: launch produce(&mut x); record e; side: wait e; launch consume(&x) }
    // Iteration 2's produce overwrites x while iteration 1's consume may still read it.
    let mut b = ProgramBuilder::new("Carried");
    b.file("src/carried.rs");
    let (main, side) = (b.stream("main"), b.stream("side"));
    let e = b.event("e");
    b.launch(main, "produce", &[("x", Write)]);
    b.record(main, e);
    b.wait(side, e);
    b.launch(side, "consume", &[("x", Read)]);
    let program = b.build();
    let p = plan(program, &[0, 1, 2, 3, 0, 1, 2, 3]);
    let races = p.races();
    let pairs: Vec<(usize, usize)> = races.iter().map(|r| (r.first.op, r.second.op)).collect();
    assert_eq!(pairs, [(1, 2)]);
    let r = &races[0];
    assert_eq!((r.first.statement.id, r.first.occurrence), (3, 1));
    assert_eq!((r.second.statement.id, r.second.occurrence), (0, 2));
    let msg = streamgraph::Error::Race(races.clone()).to_string();
    assert!(
        msg.contains("`launch consume(&x)` at src/carried.rs:4:5 on stream `side` reads"),
        "{msg}"
    );
    assert!(
        msg.contains(
            "`launch produce(&mut x)` at src/carried.rs:1:5 (issue #2) on stream `main` writes"
        ),
        "{msg}"
    );
    assert!(msg.contains("record an event on `side`"), "{msg}");

    // The fix: main waits for side's consumer before producing again.
    let mut b = ProgramBuilder::new("Fixed");
    let (main, side) = (b.stream("main"), b.stream("side"));
    let (e, done) = (b.event("e"), b.event("side_done"));
    b.wait(main, done);
    b.launch(main, "produce", &[("x", Write)]);
    b.record(main, e);
    b.wait(side, e);
    b.launch(side, "consume", &[("x", Read)]);
    b.record(side, done);
    let body = [0, 1, 2, 3, 4, 5];
    let script: Vec<usize> = body.iter().cycle().take(18).copied().collect();
    assert!(plan(b.build(), &script).races().is_empty());
}

#[test]
fn empty_accesses_do_not_race() {
    let mut b = ProgramBuilder::new("Empty");
    let (s0, s1) = (b.stream("s0"), b.stream("s1"));
    b.launch(s0, "w", &[("x", Write)]);
    b.launch(s1, "w", &[("x", Write)]);
    let regions = HashMap::from([("x", Region::new(0x1000, 0))]);
    assert!(plan_with(b.build(), &[0, 1], &regions).races().is_empty());
    assert_eq!(
        streamgraph::Error::Race(Vec::new()).to_string(),
        "no data race"
    );
}

#[test]
fn thousands_of_operations_on_one_buffer_stay_fast() {
    // Four streams in lock step through one event per round: every pair is ordered, so the
    // check meets many overlapping accesses and must answer each from the vector clocks.
    let mut b = ProgramBuilder::new("Big");
    let streams: Vec<usize> = (0..4).map(|i| b.stream(&format!("s{i}"))).collect();
    let e = b.event("e");
    let mut script = Vec::new();
    for round in 0..1000 {
        let s = streams[round % 4];
        script.push(b.wait(s, e));
        script.push(b.launch(s, "k", &[("x", if round % 3 == 0 { Write } else { Read })]));
        script.push(b.record(s, e));
    }
    let program = b.build();
    let start = Instant::now();
    let p = plan(program, &script);
    assert_eq!(p.len(), 1000);
    assert!(p.races().is_empty());
    assert!(p.happens_before(0, 999));
    let elapsed = start.elapsed();
    assert!(
        elapsed.as_secs() < 20,
        "planning and race check took {elapsed:?}"
    );

    // Remove the synchronisation: every write now races with everything on other streams.
    let unsynced: Vec<usize> = script.iter().copied().filter(|&id| id % 3 == 1).collect();
    let p = plan(program, &unsynced);
    let races = p.races();
    assert!(races.len() > 10_000);
    assert!(races
        .iter()
        .all(|r| r.first.stream != r.second.stream && r.first.op < r.second.op));
}

#[test]
fn a_hundred_thousand_operations_on_one_buffer_are_checked_per_stream() {
    // The lock step of the test above, 100,000 rounds, all writes; in one round the wait is
    // left out. Comparing every pair would take 5·10⁹ steps (and a bit matrix of reachability 1.25 GB).
    let mut b = ProgramBuilder::new("Huge");
    let streams: Vec<usize> = (0..4).map(|i| b.stream(&format!("s{i}"))).collect();
    let e = b.event("e");
    let (mut body, mut loose) = (Vec::new(), Vec::new());
    for &s in &streams {
        let (wait, launch, record) = (
            b.wait(s, e),
            b.launch(s, "k", &[("x", Write)]),
            b.record(s, e),
        );
        body.push([wait, launch, record]);
        loose.push([launch, record]);
    }
    let program = b.build();
    let mut script = Vec::new();
    for round in 0..100_000 {
        if round == 50_000 {
            script.extend(loose[round % 4]);
        } else {
            script.extend(body[round % 4]);
        }
    }
    let p = plan(program, &script);
    assert_eq!(p.len(), 100_000);
    assert!(p.happens_before(0, 99_999));
    assert!(!p.happens_before(49_999, 50_000));
    let races = p.races();
    let pairs: Vec<(usize, usize)> = races.iter().map(|r| (r.first.op, r.second.op)).collect();
    // Round 50,000 follows only its own stream's previous round, so it races with the three
    // rounds before it; the next rounds follow it but, through the event, not those three.
    assert_eq!(
        pairs,
        [
            (49_997, 50_000),
            (49_998, 50_000),
            (49_998, 50_001),
            (49_999, 50_000),
            (49_999, 50_001),
            (49_999, 50_002),
        ]
    );
}
