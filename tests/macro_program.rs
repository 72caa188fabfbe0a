//! The `pipeline!` macro through the facade: the generated static program, stream options
//! and the order in which `issue` calls the issuer. Runs without a GPU (plan-only kernels and
//! buffers).
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use streamgraph::{
    AccessMode, DeviceBuffer, DeviceRange, Error, FillPattern, HostFn, Issuer, Kernel, KernelArg,
    LaunchConfig, MemoryMut, MemoryRef, Pipeline, Statement, StatementKind, StaticAccess,
    StreamOptions,
};

/// Kernels of the test pipelines.
struct Kernels {
    scale: Kernel,
    axpy: Kernel,
}

fn kernels() -> Kernels {
    Kernels {
        scale: Kernel::for_planning("scale"),
        axpy: Kernel::for_planning("axpy"),
    }
}

fn grid(n: u32) -> u32 {
    n.div_ceil(256)
}

streamgraph::pipeline! {
    /// Scale `x` while `y` is updated on a side stream; join at the end.
    pub pipeline Diamond(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &Kernels, n: u32) {
        stream main;
        stream side(priority = -1);
        event ready;

        main: launch k.scale<<<grid(n), 256>>>(&mut x, 2.0f32, n);
        main: record ready;
        side: wait ready;
        side: launch k.axpy<<<n / 256 + 1, (256, 1), 64>>>(&mut y, &x, 0.5f32, n);
        side: fill y = 0.0f32;
        main: wait_stream side;
    }
}

/// What a recording issuer saw.
#[derive(Debug, PartialEq)]
enum Call {
    Launch {
        stmt: usize,
        kernel: String,
        config: LaunchConfig,
        args: Vec<Option<AccessMode>>,
    },
    Fill {
        stmt: usize,
        dst: DeviceRange,
        pattern: FillPattern,
    },
    Host {
        stmt: usize,
    },
    Record {
        stmt: usize,
    },
    Wait {
        stmt: usize,
    },
    WaitStream {
        stmt: usize,
    },
}

#[derive(Default)]
struct Recorder {
    calls: Vec<Call>,
    fail_at: Option<usize>,
}

impl Recorder {
    fn check(&self, stmt: &'static Statement) -> Result<(), Error> {
        if self.fail_at == Some(stmt.id) {
            return Err(Error::InvalidArgument("refused".into()));
        }
        Ok(())
    }
}

impl Issuer for Recorder {
    fn launch(
        &mut self,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<(), Error> {
        self.check(stmt)?;
        self.calls.push(Call::Launch {
            stmt: stmt.id,
            kernel: kernel.name().to_owned(),
            config,
            args: args.iter().map(|a| a.access().map(|a| a.mode)).collect(),
        });
        Ok(())
    }
    fn copy(
        &mut self,
        _: &'static Statement,
        _: MemoryMut<'_>,
        _: MemoryRef<'_>,
    ) -> Result<(), Error> {
        unreachable!("no copies in these pipelines")
    }
    fn fill(
        &mut self,
        stmt: &'static Statement,
        dst: MemoryMut<'_>,
        pattern: FillPattern,
    ) -> Result<(), Error> {
        self.check(stmt)?;
        let streamgraph::Memory::Device(dst) = dst.memory() else {
            panic!("a fill of host memory: {:?}", dst.memory())
        };
        self.calls.push(Call::Fill {
            stmt: stmt.id,
            dst,
            pattern,
        });
        Ok(())
    }
    fn host(&mut self, stmt: &'static Statement, f: HostFn) -> Result<(), Error> {
        self.check(stmt)?;
        f();
        self.calls.push(Call::Host { stmt: stmt.id });
        Ok(())
    }
    fn record(&mut self, stmt: &'static Statement) -> Result<(), Error> {
        self.check(stmt)?;
        self.calls.push(Call::Record { stmt: stmt.id });
        Ok(())
    }
    fn wait(&mut self, stmt: &'static Statement) -> Result<(), Error> {
        self.check(stmt)?;
        self.calls.push(Call::Wait { stmt: stmt.id });
        Ok(())
    }
    fn wait_stream(&mut self, stmt: &'static Statement) -> Result<(), Error> {
        self.check(stmt)?;
        self.calls.push(Call::WaitStream { stmt: stmt.id });
        Ok(())
    }
}

/// The line of the `main: launch k.scale` statement above.
const DIAMOND_FIRST_LINE: u32 = 39;

#[test]
fn program_describes_streams_events_and_statements() {
    let p = Diamond::PROGRAM;
    assert_eq!(p.name, "Diamond");
    assert_eq!(
        p.streams.iter().map(|s| s.name).collect::<Vec<_>>(),
        ["main", "side"]
    );
    assert_eq!(
        p.events.iter().map(|e| e.name).collect::<Vec<_>>(),
        ["ready"]
    );
    let kinds: Vec<(usize, StatementKind)> =
        p.statements.iter().map(|s| (s.stream, s.kind)).collect();
    assert_eq!(
        kinds,
        [
            (0, StatementKind::Launch { kernel: "k.scale" }),
            (0, StatementKind::Record { event: 0 }),
            (1, StatementKind::Wait { event: 0 }),
            (1, StatementKind::Launch { kernel: "k.axpy" }),
            (1, StatementKind::Fill),
            (0, StatementKind::WaitStream { stream: 1 }),
        ]
    );
    for (i, s) in p.statements.iter().enumerate() {
        assert_eq!(s.id, i);
    }
    assert_eq!(
        p.statements[0].text,
        "main: launch k.scale<<<grid(n), 256>>>(&mut x, 2.0f32, n)"
    );
    assert_eq!(
        p.statements[3].text,
        "side: launch k.axpy<<<n / 256 + 1, (256, 1), 64>>>(&mut y, &x, 0.5f32, n)"
    );
    assert_eq!(p.statements[4].text, "side: fill y = 0.0f32");
    assert_eq!(
        p.statements[3].accesses,
        [
            StaticAccess {
                buffer: "y",
                mode: AccessMode::Write,
                whole: true
            },
            StaticAccess {
                buffer: "x",
                mode: AccessMode::Read,
                whole: true
            },
        ]
    );
    assert_eq!(
        p.statements[4].accesses,
        [StaticAccess {
            buffer: "y",
            mode: AccessMode::Write,
            whole: true
        }]
    );
    assert!(p.statements[1].accesses.is_empty());
}

#[test]
fn locations_are_real_lines_and_columns() {
    let p = Diamond::PROGRAM;
    assert!(
        p.location.file.ends_with("macro_program.rs"),
        "{}",
        p.location.file
    );
    let lines: Vec<u32> = p.statements.iter().map(|s| s.location.line).collect();
    let first = DIAMOND_FIRST_LINE;
    assert_eq!(
        lines,
        [first, first + 1, first + 2, first + 3, first + 4, first + 5]
    );
    assert!(
        p.statements.iter().all(|s| s.location.column == 9),
        "{:?}",
        p.statements[0].location
    );
    assert_eq!(p.location.line, 34);
    assert_eq!(p.streams[1].location.line, 36);
    assert_eq!(
        p.statements[0].to_string(),
        format!(
            "`{}` at {}:{first}:9",
            p.statements[0].text, p.location.file
        )
    );
}

#[test]
fn stream_options_evaluate_the_declarations() {
    let (mut x, mut y, k) = (
        DeviceBuffer::for_planning(4).unwrap(),
        DeviceBuffer::for_planning(4).unwrap(),
        kernels(),
    );
    let d = Diamond::new(&mut x, &mut y, &k, 4);
    assert_eq!(
        *d.stream_options(),
        [
            StreamOptions {
                priority: 0,
                device: None
            },
            StreamOptions {
                priority: -1,
                device: None
            }
        ]
    );
}

streamgraph::pipeline! {
    pipeline Plain(x: &mut DeviceBuffer<f32>) {
        stream main;
        stream side;
        side: fill x = 1.0f32;
        main: wait_stream side;
    }
}

#[test]
fn stream_options_without_declarations_are_borrowed() {
    let mut x = DeviceBuffer::for_planning(4).unwrap();
    let options = Plain::new(&mut x).stream_options();
    // A constant: asking for it on every run allocates nothing.
    assert!(matches!(options, std::borrow::Cow::Borrowed(_)));
    assert_eq!(*options, [StreamOptions::DEFAULT; 2]);
    let (mut y, k) = (DeviceBuffer::for_planning(4).unwrap(), kernels());
    let d = Diamond::new(&mut x, &mut y, &k, 4);
    assert!(matches!(d.stream_options(), std::borrow::Cow::Owned(_)));
}

#[test]
fn issue_calls_the_issuer_in_program_order() {
    let (mut x, mut y, k) = (
        DeviceBuffer::for_planning(1000).unwrap(),
        DeviceBuffer::for_planning(1000).unwrap(),
        kernels(),
    );
    let y_range = streamgraph::DeviceMemory::range(&y);
    let d = Diamond::new(&mut x, &mut y, &k, 1000);
    let mut r = Recorder::default();
    d.issue(&mut r).unwrap();
    let dim = |x, y| streamgraph::Dim3 { x, y, z: 1 };
    assert_eq!(
        r.calls,
        [
            Call::Launch {
                stmt: 0,
                kernel: "scale".into(),
                config: LaunchConfig {
                    grid: dim(4, 1),
                    block: dim(256, 1),
                    shared_mem_bytes: 0
                },
                args: vec![Some(AccessMode::Write), None, None],
            },
            Call::Record { stmt: 1 },
            Call::Wait { stmt: 2 },
            Call::Launch {
                stmt: 3,
                kernel: "axpy".into(),
                config: LaunchConfig {
                    grid: dim(4, 1),
                    block: dim(256, 1),
                    shared_mem_bytes: 64
                },
                args: vec![Some(AccessMode::Write), Some(AccessMode::Read), None, None],
            },
            Call::Fill {
                stmt: 4,
                dst: y_range,
                pattern: FillPattern::U32(0)
            },
            Call::WaitStream { stmt: 5 },
        ]
    );
}

#[test]
fn issuer_errors_name_the_statement_and_stop_the_issue() {
    let (mut x, mut y, k) = (
        DeviceBuffer::for_planning(4).unwrap(),
        DeviceBuffer::for_planning(4).unwrap(),
        kernels(),
    );
    let d = Diamond::new(&mut x, &mut y, &k, 4);
    let mut r = Recorder {
        fail_at: Some(3),
        ..Recorder::default()
    };
    let err = d.issue(&mut r).unwrap_err();
    match &err {
        Error::Statement { statement, .. } => assert_eq!(statement.id, 3),
        other => panic!("expected a statement error, got {other:?}"),
    }
    assert!(err.to_string().contains("side: launch k.axpy"), "{err}");
    assert_eq!(r.calls.len(), 3);
}

streamgraph::pipeline! {
    pipeline Control(x: &mut DeviceBuffer<f32>, k: &Kernels, chunks: u32, flag: bool, hits: &Arc<AtomicUsize>) {
        stream main;
        stream side(priority = chunks as i32 - 10, device = 0);
        event done;

        for i in 0..chunks {
            side: wait done;
            side: fill x = 1.0f32;
            side: host { let h = Arc::clone(hits); move || { h.fetch_add(1, Ordering::SeqCst); } };
            side: record done;
            main: wait done;
            main: launch k.scale<<<i + 1, 32>>>(&mut x, i);
            main: record done;
        }
        if flag {
            main: wait_stream side;
        } else if chunks > 100 {
            side: wait done;
        } else {
            side: wait_stream main;
        }
    }
}

#[test]
fn loops_and_branches_are_issued_as_control_flow() {
    let mut x = DeviceBuffer::for_planning(8).unwrap();
    let k = kernels();
    let hits = Arc::new(AtomicUsize::new(0));
    let p = Control::new(&mut x, &k, 2, true, &hits);
    assert_eq!(
        *p.stream_options(),
        [
            StreamOptions {
                priority: 0,
                device: None
            },
            StreamOptions {
                priority: -8,
                device: Some(0)
            }
        ]
    );
    let mut r = Recorder::default();
    p.issue(&mut r).unwrap();
    let ids: Vec<usize> = r
        .calls
        .iter()
        .map(|c| match c {
            Call::Launch { stmt, .. }
            | Call::Fill { stmt, .. }
            | Call::Host { stmt }
            | Call::Record { stmt }
            | Call::Wait { stmt }
            | Call::WaitStream { stmt } => *stmt,
        })
        .collect();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    let Call::Launch { config, .. } = &r.calls[12] else {
        panic!("expected the second launch")
    };
    assert_eq!(config.grid.x, 2);

    let mut r = Recorder::default();
    Control::new(&mut x, &k, 0, false, &hits)
        .issue(&mut r)
        .unwrap();
    assert_eq!(r.calls, [Call::WaitStream { stmt: 9 }]);
    assert_eq!(
        Control::PROGRAM.statements[9].kind,
        StatementKind::WaitStream { stream: 0 }
    );
    assert_eq!(Control::PROGRAM.statements[2].kind, StatementKind::Host);
}
