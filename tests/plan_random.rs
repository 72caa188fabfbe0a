//! The seeded random-program generator that executor tests replay.
#![allow(clippy::unwrap_used)] // tests may unwrap

use streamgraph::testing::RandomProgram;
use streamgraph::testing::{Call, RandomOptions};
use streamgraph::Planner;
use streamgraph::{DeviceBuffer, Kernel, StatementKind};

fn texts(r: &RandomProgram) -> Vec<&'static str> {
    r.calls.iter().map(|c| c.statement().text).collect()
}

#[test]
fn the_same_seed_gives_the_same_program() {
    for seed in [0, 1, 42, u64::MAX] {
        let (a, b) = (RandomProgram::new(seed), RandomProgram::new(seed));
        assert_eq!(texts(&a), texts(&b));
        assert_eq!(a.plan().unwrap().edges(), b.plan().unwrap().edges());
    }
    assert_ne!(texts(&RandomProgram::new(1)), texts(&RandomProgram::new(2)));
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
        for (i, op) in plan.ops().iter().enumerate() {
            // The launch's scalar argument is the operation's index in issue order.
            let value = r
                .calls
                .iter()
                .filter_map(|c| match c {
                    Call::Launch { value, .. } | Call::Fill { value, .. } => Some(*value),
                    _ => None,
                })
                .nth(i);
            assert_eq!(value, Some(i as u32));
            assert_eq!(op.accesses.len(), 1);
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
        waits_on_unrecorded: false,
    };
    let mut fills = 0;
    for seed in 0..200 {
        let r = RandomProgram::with_options(seed, options.clone());
        assert_eq!(r.program.streams.len(), 3);
        assert_eq!(r.program.events.len(), 2);
        assert!(r.program.statements.len() <= 10);
        assert_eq!(r.calls.len(), r.program.statements.len(), "no loops");
        let mut recorded = [false; 2];
        for c in &r.calls {
            match *c {
                Call::Record(s) => {
                    if let StatementKind::Record { event } = s.kind {
                        recorded[event] = true;
                    }
                }
                Call::Wait(s) => {
                    let StatementKind::Wait { event } = s.kind else {
                        panic!()
                    };
                    assert!(recorded[event], "wait before any record in seed {seed}");
                }
                Call::Launch { kernel, buffer, .. } => assert!(kernel < 3 && buffer < 2),
                Call::Fill { buffer, .. } => {
                    assert!(buffer < 2);
                    fills += 1;
                }
                Call::WaitStream(_) => {}
            }
        }
        r.plan().unwrap();
    }
    assert!(fills > 0);
}

#[test]
fn replay_needs_enough_kernels_and_buffers() {
    let r = RandomProgram::new(7);
    let mut planner = Planner::new(r.program);
    let buffers: Vec<DeviceBuffer<u32>> = (0..4)
        .map(|_| DeviceBuffer::for_planning(16).unwrap())
        .collect();
    let err = r
        .replay(&mut planner, &[], &buffers, RandomProgram::launch_config())
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("needs 1 kernel(s) but 0 were given"),
        "{err}"
    );
    let kernels = [Kernel::for_planning("k0")];
    let err = r
        .replay(
            &mut planner,
            &kernels,
            &buffers[..2],
            RandomProgram::launch_config(),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("needs 4 buffer(s) but 2 were given"),
        "{err}"
    );
    r.replay(
        &mut planner,
        &kernels,
        &buffers,
        RandomProgram::launch_config(),
    )
    .unwrap();
    assert_eq!(planner.finish().edges(), r.plan().unwrap().edges());
}
