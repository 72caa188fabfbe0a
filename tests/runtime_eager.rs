//! The eager issuer on a real GPU, with pipelines written by hand (the `Pipeline` trait
//! implemented directly over a static `Program`, as `pipeline!` generates it).
// Tests fail loudly on purpose: an unwrap names the failing call.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{ns, single, Kernels};
use streamgraph::__private::arg_write;
use streamgraph::{
    AccessMode, DeviceBuffer, Eager, EagerStats, Error, EventDecl, Issuer, KernelArg, Location,
    Pipeline, Program, Statement, StatementKind, StaticAccess, Stream, StreamDecl, StreamOptions,
};

const HERE: Location = Location {
    file: file!(),
    line: 0,
    column: 0,
};

const fn stream(name: &'static str) -> StreamDecl {
    StreamDecl {
        name,
        location: HERE,
    }
}

const fn statement(
    id: usize,
    stream: usize,
    kind: StatementKind,
    text: &'static str,
    accesses: &'static [StaticAccess],
) -> Statement {
    Statement {
        id,
        stream,
        kind,
        text,
        accesses,
        location: HERE,
    }
}

const fn access(buffer: &'static str, mode: AccessMode) -> StaticAccess {
    StaticAccess {
        buffer,
        mode,
        whole: true,
    }
}

/// `main` writes `x` slowly and records `ready`; `side` waits for it, then copies `x` into `y`
/// slowly. Only the wait orders the copy after the write, and only the join makes the copy
/// finish before later work on the origin.
static DIAMOND: Program = Program {
    name: "Diamond",
    streams: &[stream("main"), stream("side")],
    events: &[EventDecl {
        name: "ready",
        location: HERE,
    }],
    statements: &[
        statement(
            0,
            0,
            StatementKind::Launch {
                kernel: "k.spin_then_write",
            },
            "main: launch k.spin_then_write<<<1, 1>>>(T, &mut x, 7)",
            &[access("x", AccessMode::Write)],
        ),
        statement(
            1,
            0,
            StatementKind::Record { event: 0 },
            "main: record ready",
            &[],
        ),
        statement(
            2,
            1,
            StatementKind::Wait { event: 0 },
            "side: wait ready",
            &[],
        ),
        statement(
            3,
            1,
            StatementKind::Launch {
                kernel: "k.spin_then_copy",
            },
            "side: launch k.spin_then_copy<<<1, 1>>>(T, &mut y, &x, 1)",
            &[
                access("y", AccessMode::Write),
                access("x", AccessMode::Read),
            ],
        ),
    ],
    temps: &[],
    location: HERE,
};

struct Diamond<'a> {
    k: &'a Kernels,
    x: &'a mut DeviceBuffer<u32>,
    y: &'a mut DeviceBuffer<u32>,
}

impl Pipeline for Diamond<'_> {
    fn program(&self) -> &'static Program {
        &DIAMOND
    }

    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![
            StreamOptions::default(),
            StreamOptions {
                priority: -1,
                device: None,
            },
        ])
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let s = &DIAMOND.statements;
        // The side's spin is shorter than the main one: without the wait it would copy `x`
        // before it is written; without the join the origin would finish before the copy.
        let (slow, fast) = (
            ns(Duration::from_millis(100)),
            ns(Duration::from_millis(50)),
        );
        let (seven, one) = (7u32, 1u32);
        issuer.launch(
            &s[0],
            &self.k.spin_then_write,
            single(),
            &[
                KernelArg::value(&slow),
                arg_write(&self.x),
                KernelArg::value(&seven),
            ],
        )?;
        issuer.record(&s[1])?;
        issuer.wait(&s[2])?;
        issuer.launch(
            &s[3],
            &self.k.spin_then_copy,
            single(),
            &[
                KernelArg::value(&fast),
                arg_write(&self.y),
                KernelArg::read(&*self.x),
                KernelArg::value(&one),
            ],
        )
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_two_stream_pipeline_with_record_and_wait_gives_the_ordered_result() {
    let k = Kernels::new();
    let origin = Stream::new(&k.device, 0).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut eager = Eager::new(&origin);
    eager.check(true);
    eager
        .run(&Diamond {
            k: &k,
            x: &mut x,
            y: &mut y,
        })
        .unwrap();
    // Only the origin is synchronized: the join must have made it wait for `side`.
    origin.synchronize().unwrap();
    assert_eq!(y.to_vec_on(&origin).unwrap(), [7]);
    assert_eq!(
        eager.stats(),
        EagerStats {
            launches: 2,
            copies: 0,
            fills: 0,
            host_fns: 0,
            calls: 0,
            // fork, `record ready`, join; the lane's fork and join
            event_records: 5,
            // `wait ready` orders `side` after the fork as well: no separate fork wait.
            event_waits: 4, // `wait ready`, join; the lane's fork and join
        }
    );

    // A second run reuses the streams and starts after the first (fork from the origin).
    let mut z = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    eager
        .run(&Diamond {
            k: &k,
            x: &mut x,
            y: &mut z,
        })
        .unwrap();
    origin.synchronize().unwrap();
    assert_eq!(z.to_vec_on(&origin).unwrap(), [7]);
    assert_eq!(eager.stats().event_waits, 8);
}

/// `side` waits for `ready` before `main` records it: an empty snapshot, so no driver wait,
/// also on a second run (whose event still holds the first run's record).
static WAIT_FIRST: Program = Program {
    name: "WaitFirst",
    streams: &[stream("main"), stream("side")],
    events: &[EventDecl {
        name: "ready",
        location: HERE,
    }],
    statements: &[
        statement(
            0,
            1,
            StatementKind::Wait { event: 0 },
            "side: wait ready",
            &[],
        ),
        statement(
            1,
            1,
            StatementKind::Launch {
                kernel: "k.write_value",
            },
            "side: launch k.write_value<<<1, 1>>>(&mut y, 2)",
            &[access("y", AccessMode::Write)],
        ),
        statement(
            2,
            0,
            StatementKind::Launch {
                kernel: "k.write_value",
            },
            "main: launch k.write_value<<<1, 1>>>(&mut x, 1)",
            &[access("x", AccessMode::Write)],
        ),
        statement(
            3,
            0,
            StatementKind::Record { event: 0 },
            "main: record ready",
            &[],
        ),
        statement(
            4,
            1,
            StatementKind::WaitStream { stream: 0 },
            "side: wait_stream main",
            &[],
        ),
    ],
    temps: &[],
    location: HERE,
};

struct WaitFirst<'a> {
    k: &'a Kernels,
    x: &'a mut DeviceBuffer<u32>,
    y: &'a mut DeviceBuffer<u32>,
}

impl Pipeline for WaitFirst<'_> {
    fn program(&self) -> &'static Program {
        &WAIT_FIRST
    }

    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![StreamOptions::default(); 2])
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let s = &WAIT_FIRST.statements;
        let (one, two) = (1u32, 2u32);
        issuer.wait(&s[0])?;
        issuer.launch(
            &s[1],
            &self.k.write_value,
            single(),
            &[arg_write(&self.y), KernelArg::value(&two)],
        )?;
        issuer.launch(
            &s[2],
            &self.k.write_value,
            single(),
            &[arg_write(&self.x), KernelArg::value(&one)],
        )?;
        issuer.record(&s[3])?;
        issuer.wait_stream(&s[4])
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn waits_on_events_not_recorded_in_this_run_issue_nothing() {
    let k = Kernels::new();
    let origin = Stream::new(&k.device, 0).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let mut eager = Eager::new(&origin);
    let p = WaitFirst {
        k: &k,
        x: &mut x,
        y: &mut y,
    };
    for run in 1..=2u64 {
        eager.run(&p).unwrap();
        // Per run: fork (1 record, and 1 wait before `side`'s launch), `record ready` (1
        // record), `wait_stream` (1 record, 1 wait), join (1 record, 1 wait); `wait ready`
        // issues nothing; the lane's fork and join (1 record and 1 wait each).
        let stats = eager.stats();
        assert_eq!(stats.event_records, 6 * run, "run {run}: {stats:?}");
        assert_eq!(stats.event_waits, 5 * run, "run {run}: {stats:?}");
    }
    origin.synchronize().unwrap();
    assert_eq!(
        (x.to_vec_on(&origin).unwrap(), y.to_vec_on(&origin).unwrap()),
        (vec![1], vec![2])
    );
}

/// One stream: fill, copy, launch, host function. No fork, no join, no event call.
static SINGLE: Program = Program {
    name: "Single",
    streams: &[stream("main")],
    events: &[],
    statements: &[
        statement(
            0,
            0,
            StatementKind::Fill,
            "main: fill x = 5",
            &[access("x", AccessMode::Write)],
        ),
        statement(
            1,
            0,
            StatementKind::Copy,
            "main: copy y <- x",
            &[
                access("y", AccessMode::Write),
                access("x", AccessMode::Read),
            ],
        ),
        statement(
            2,
            0,
            StatementKind::Launch { kernel: "k.add" },
            "main: launch k.add<<<1, 256>>>(&mut y, 10, n)",
            &[access("y", AccessMode::Write)],
        ),
        statement(3, 0, StatementKind::Host, "main: host done", &[]),
    ],
    temps: &[],
    location: HERE,
};

struct Single<'a> {
    k: &'a Kernels,
    x: &'a mut DeviceBuffer<u32>,
    y: &'a mut DeviceBuffer<u32>,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Pipeline for Single<'_> {
    fn program(&self) -> &'static Program {
        &SINGLE
    }

    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![StreamOptions::default()])
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        use streamgraph::__private as p;
        let s = &SINGLE.statements;
        p::fill(issuer, &s[0], &self.x, 5u32)?;
        p::copy(issuer, &s[1], &self.y, &*self.x)?;
        let (ten, n) = (10u32, self.y.len() as u32);
        issuer.launch(
            &s[2],
            &self.k.add,
            common::linear(n),
            &[
                arg_write(&self.y),
                KernelArg::value(&ten),
                KernelArg::value(&n),
            ],
        )?;
        let done = self.done.clone();
        p::host(issuer, &s[3], move || {
            done.store(true, std::sync::atomic::Ordering::SeqCst)
        })
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_single_stream_pipeline_issues_no_event_calls() {
    let k = Kernels::new();
    let origin = Stream::new(&k.device, 0).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 300).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&k.device, 300).unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut eager = Eager::new(&origin);
    eager
        .run(&Single {
            k: &k,
            x: &mut x,
            y: &mut y,
            done: done.clone(),
        })
        .unwrap();
    origin.synchronize().unwrap();
    assert!(done.load(std::sync::atomic::Ordering::SeqCst));
    assert!(y.to_vec_on(&origin).unwrap().iter().all(|&v| v == 15));
    assert_eq!(
        eager.stats(),
        EagerStats {
            launches: 1,
            copies: 1,
            fills: 1,
            host_fns: 1,
            calls: 0,
            event_records: 2, // the lane's fork and join
            event_waits: 2
        }
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn errors_name_the_statement_that_failed() {
    let k = Kernels::new();
    let origin = Stream::new(&k.device, 0).unwrap();
    let mut x = DeviceBuffer::<u32>::zeros(&k.device, 300).unwrap();
    let mut y = DeviceBuffer::<u32>::zeros(&k.device, 299).unwrap(); // the copy's lengths differ
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut eager = Eager::new(&origin);
    let err = eager
        .run(&Single {
            k: &k,
            x: &mut x,
            y: &mut y,
            done,
        })
        .unwrap_err();
    match &err {
        Error::Statement { statement, source } => {
            assert_eq!(statement.id, 1, "{err}");
            assert!(matches!(**source, Error::InvalidArgument(_)), "{err}");
        }
        other => panic!("expected a statement error, got {other:?}"),
    }
    assert!(err.to_string().contains("main: copy y <- x"), "{err}");
    origin.synchronize().unwrap();
}
