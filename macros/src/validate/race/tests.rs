//! Unit tests of the analysis on small programs.

use super::{certain_races, straight_line_races, Cmd, Flow, Race, Touch};

/// The certain races of a program the analysis decides completely.
fn certain(streams: usize, events: usize, program: &[Flow]) -> Vec<Race> {
    let analysis = certain_races(streams, events, program);
    assert!(analysis.complete);
    analysis.races
}

fn op(stmt: usize, stream: usize, touches: &[(usize, bool)]) -> Cmd {
    Cmd::Op {
        stmt,
        stream,
        touches: touches
            .iter()
            .map(|&(buffer, write)| Touch {
                buffer,
                write,
                whole: true,
            })
            .collect(),
    }
}

#[test]
fn unordered_write_and_read_race() {
    let p = [op(0, 0, &[(0, true)]), op(1, 1, &[(0, false)])];
    let races = straight_line_races(2, 0, &p);
    assert_eq!(
        races,
        [Race {
            first: 0,
            second: 1,
            buffer: 0,
            first_writes: true,
            second_writes: false,
            loop_carried: false
        }]
    );
}

#[test]
fn record_and_wait_order_the_pair() {
    let p = [
        op(0, 0, &[(0, true)]),
        Cmd::Record {
            stream: 0,
            event: 0,
        },
        Cmd::Wait {
            stream: 1,
            event: 0,
        },
        op(1, 1, &[(0, false)]),
    ];
    assert!(straight_line_races(2, 1, &p).is_empty());
}

#[test]
fn wait_before_the_record_does_not_order() {
    let p = [
        Cmd::Record {
            stream: 0,
            event: 0,
        },
        op(0, 0, &[(0, true)]),
        Cmd::Wait {
            stream: 1,
            event: 0,
        },
        op(1, 1, &[(0, false)]),
    ];
    assert_eq!(straight_line_races(2, 1, &p).len(), 1);
}

#[test]
fn re_record_overwrites_the_snapshot() {
    let p = [
        op(0, 0, &[(0, true)]),
        Cmd::Record {
            stream: 0,
            event: 0,
        },
        Cmd::Record {
            stream: 2,
            event: 0,
        },
        Cmd::Wait {
            stream: 1,
            event: 0,
        },
        op(1, 1, &[(0, false)]),
    ];
    assert_eq!(straight_line_races(3, 1, &p).len(), 1);
}

#[test]
fn wait_stream_and_transitive_paths_order() {
    let p = [
        op(0, 0, &[(0, true)]),
        Cmd::WaitStream {
            stream: 2,
            other: 0,
        },
        op(1, 2, &[]),
        Cmd::WaitStream {
            stream: 1,
            other: 2,
        },
        op(2, 1, &[(0, true)]),
    ];
    assert!(straight_line_races(3, 0, &p).is_empty());
}

#[test]
fn reads_do_not_race_and_sub_ranges_are_not_decided() {
    let p = [op(0, 0, &[(0, false)]), op(1, 1, &[(0, false)])];
    assert!(straight_line_races(2, 0, &p).is_empty());
    let sub = Cmd::Op {
        stmt: 1,
        stream: 1,
        touches: vec![Touch {
            buffer: 0,
            write: true,
            whole: false,
        }],
    };
    assert!(straight_line_races(2, 0, &[op(0, 0, &[(0, true)]), sub]).is_empty());
}

#[test]
fn loop_body_is_checked_against_its_next_iteration() {
    // for _ { main: write x; main: record e; side: wait e; side: read x; }
    // Iteration k+1's write is not ordered after iteration k's read.
    let body = vec![
        Flow::Cmd(op(0, 0, &[(0, true)])),
        Flow::Cmd(Cmd::Record {
            stream: 0,
            event: 0,
        }),
        Flow::Cmd(Cmd::Wait {
            stream: 1,
            event: 0,
        }),
        Flow::Cmd(op(1, 1, &[(0, false)])),
    ];
    let races = certain(2, 2, &[Flow::Loop(body.clone())]);
    assert_eq!(races.len(), 1);
    assert_eq!(
        (races[0].first, races[0].second, races[0].loop_carried),
        (1, 0, true)
    );
    // Adding the back edge (side records, main waits at the top) removes the race.
    let mut fixed = vec![Flow::Cmd(Cmd::Wait {
        stream: 0,
        event: 1,
    })];
    fixed.extend(body);
    fixed.push(Flow::Cmd(Cmd::Record {
        stream: 1,
        event: 1,
    }));
    assert!(certain(2, 2, &[Flow::Loop(fixed)]).is_empty());
}

#[test]
fn branches_report_only_races_on_every_path() {
    let write = Flow::Cmd(op(0, 0, &[(0, true)]));
    let read = Flow::Cmd(op(1, 1, &[(0, false)]));
    let order = vec![
        Flow::Cmd(Cmd::Record {
            stream: 0,
            event: 0,
        }),
        Flow::Cmd(Cmd::Wait {
            stream: 1,
            event: 0,
        }),
    ];
    // Ordered on one path only: not reported.
    let maybe = [write.clone(), Flow::If(order.clone(), vec![]), read.clone()];
    assert!(certain(2, 1, &maybe).is_empty());
    // Ordered on both paths: not reported.
    let both = [write.clone(), Flow::If(order.clone(), order), read.clone()];
    assert!(certain(2, 1, &both).is_empty());
    // Unordered on every path where both run: reported, even inside a branch.
    let inside = [write, Flow::If(vec![read], vec![])];
    assert_eq!(certain(2, 1, &inside).len(), 1);
}

#[test]
fn a_loop_that_may_not_run_does_not_excuse_nor_accuse() {
    // The wait inside the loop orders the pair only when the loop runs: not certain.
    let p = [
        Flow::Cmd(op(0, 0, &[(0, true)])),
        Flow::Cmd(Cmd::Record {
            stream: 0,
            event: 0,
        }),
        Flow::Loop(vec![Flow::Cmd(Cmd::Wait {
            stream: 1,
            event: 0,
        })]),
        Flow::Cmd(op(1, 1, &[(0, false)])),
    ];
    assert!(certain(2, 1, &p).is_empty());
}
