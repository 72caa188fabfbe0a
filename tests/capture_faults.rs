//! Capture faults on the GPU: each returns its typed `Error::Capture` naming the statement,
//! the capture is ended cleanly, and the streams work afterwards (a later eager run and a
//! later capture succeed).
//!
//! The pipelines are written by hand (the `Pipeline` trait directly), because each one
//! misbehaves in code between its statements in a way `pipeline!` would not let it.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use common::{single, Kernels};
use streamgraph::__private::arg_write;
use streamgraph::ProgramBuilder;
use streamgraph::{
    AccessMode, Capture, CaptureFault, CaptureMode, CaptureOutcome, DeviceBuffer, Eager, Error,
    Event, Issuer, KernelArg, Pipeline, Program, Stream, StreamOptions,
};

/// What the pipeline does wrong after its first statement.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Misdeed {
    Nothing,
    Synchronize,
    Query,
    WaitExternalEvent,
    Unjoined,
    Allocate,
    PageableCopy,
    OtherThreadAllocates,
}

/// `main: launch write(&mut x, 1)`, then the misdeed, then `main: copy x <- host` (only for
/// `PageableCopy`) and `side: launch write(&mut y, 2)` after `side: wait_stream main`.
fn program() -> &'static Program {
    use std::sync::OnceLock;
    static PROGRAM: OnceLock<&'static Program> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let mut b = ProgramBuilder::new("Faulty");
        let (main, side) = (b.stream("main"), b.stream("side"));
        b.launch(main, "k.write_value", &[("x", AccessMode::Write)]);
        b.copy(main, "x", "host");
        b.wait_stream(side, main);
        b.launch(side, "k.write_value", &[("y", AccessMode::Write)]);
        b.build()
    })
}

struct Faulty<'a> {
    k: &'a Kernels,
    x: &'a mut DeviceBuffer<u32>,
    y: &'a mut DeviceBuffer<u32>,
    origin: Stream,
    extra: Stream,
    external: Event,
    misdeed: Misdeed,
}

impl Pipeline for Faulty<'_> {
    fn program(&self) -> &'static Program {
        program()
    }

    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![StreamOptions::default(); 2])
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let s = &program().statements;
        let (one, two) = (1u32, 2u32);
        issuer.launch(
            &s[0],
            &self.k.write_value,
            single(),
            &[arg_write(&self.x), KernelArg::value(&one)],
        )?;
        match self.misdeed {
            Misdeed::Nothing => {}
            Misdeed::Synchronize => self.origin.synchronize()?,
            Misdeed::Query => {
                self.origin.query()?;
            }
            Misdeed::WaitExternalEvent => self.origin.wait_event(&self.external)?,
            Misdeed::Unjoined => {
                // `extra` joins the capture through an event recorded in it, gets work, and
                // is never joined back. The work goes straight to the driver: streamgraph's
                // own entry points refuse a stream that a capture they did not make holds.
                self.external.record(&self.origin)?;
                self.extra.wait_event(&self.external)?;
                // SAFETY: `y` is a live device buffer of 4 bytes that outlives the capture
                // (whose partial graph is destroyed when it fails); `extra` is a live stream.
                unsafe {
                    cudarc::driver::result::memset_d8_async(
                        self.y.device_ptr(),
                        0,
                        4,
                        self.extra.as_cudarc().cu_stream(),
                    )
                }
                .map_err(|e| Error::InvalidArgument(format!("cuMemsetD8Async: {e:?}")))?;
            }
            Misdeed::Allocate => {
                DeviceBuffer::<u32>::zeros(&self.k.device, 16)?;
            }
            Misdeed::PageableCopy => {
                let host = vec![7u32; 1];
                streamgraph::__private::copy(issuer, &s[1], &self.x, &host)?;
            }
            Misdeed::OtherThreadAllocates => {
                let device = self.k.device.clone();
                let other =
                    std::thread::spawn(move || DeviceBuffer::<u32>::zeros(&device, 16).map(drop))
                        .join()
                        .unwrap();
                println!("the other thread's allocation during a global capture: {other:?}");
                // The other thread learns why, in capture terms, not as a raw driver code.
                assert!(
                    matches!(other, Err(Error::Capture { .. })),
                    "the other thread's allocation: {other:?}"
                );
            }
        }
        issuer.wait_stream(&s[2])?;
        issuer.launch(
            &s[3],
            &self.k.write_value,
            single(),
            &[arg_write(&self.y), KernelArg::value(&two)],
        )
    }
}

struct Setup {
    k: Kernels,
    origin: Stream,
    extra: Stream,
    external: Event,
    x: DeviceBuffer<u32>,
    y: DeviceBuffer<u32>,
}

fn setup() -> Setup {
    let k = Kernels::new();
    let origin = Stream::new(&k.device, 0).unwrap();
    let extra = Stream::new(&k.device, 0).unwrap();
    let external = Event::new(&k.device).unwrap();
    external.record(&origin).unwrap(); // recorded outside any capture
    origin.synchronize().unwrap();
    let x = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    let y = DeviceBuffer::<u32>::zeros(&k.device, 1).unwrap();
    Setup {
        k,
        origin,
        extra,
        external,
        x,
        y,
    }
}

impl Setup {
    fn pipeline(&mut self, misdeed: Misdeed) -> Faulty<'_> {
        Faulty {
            k: &self.k,
            x: &mut self.x,
            y: &mut self.y,
            origin: self.origin.clone(),
            extra: self.extra.clone(),
            external: self.external.clone(),
            misdeed,
        }
    }

    /// After a fault: the same capture issuer captures a well-behaved pipeline, an eager run
    /// works, the origin synchronizes.
    fn still_works(&mut self, capture: &mut Capture) {
        let origin = self.origin.clone();
        let graph = capture.capture(self.pipeline(Misdeed::Nothing)).unwrap();
        graph.verify().unwrap();
        let exec = graph.instantiate().unwrap();
        exec.launch(&origin).unwrap();
        drop(exec);
        let mut eager = Eager::new(&origin);
        eager.run(&self.pipeline(Misdeed::Nothing)).unwrap();
        self.origin.synchronize().unwrap();
        assert!(self.origin.query().unwrap());
        assert_eq!(self.x.to_vec_on(&self.origin).unwrap(), [1]);
        assert_eq!(self.y.to_vec_on(&self.origin).unwrap(), [2]);
    }
}

fn expect_fault<T>(result: Result<T, Error>, allowed: &[CaptureFault]) -> Error {
    let Err(e) = result else {
        panic!("expected a capture fault among {allowed:?}, but the capture succeeded")
    };
    match &e {
        Error::Capture {
            fault, pipeline, ..
        } => {
            assert!(
                allowed.contains(fault),
                "fault {fault:?} not among {allowed:?}: {e}"
            );
            assert_eq!(*pipeline, Some("Faulty"), "{e}");
        }
        other => panic!("expected a capture fault among {allowed:?}, got: {other}"),
    }
    println!("{e}");
    e
}

/// A pipeline's code that waits on its origin for an event recorded outside the capture, or
/// forks another stream from the origin and leaves that unjoined, leaves the capture alone: the
/// capture runs on the issuer's own stream, which no pipeline code reaches (those were capture
/// faults while captures ran on the origin).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_pipelines_code_touching_its_origin_leaves_the_capture_alone() {
    for misdeed in [Misdeed::WaitExternalEvent, Misdeed::Unjoined] {
        let mut s = setup();
        let mut capture = Capture::new(&s.origin).check(false);
        let graph = capture
            .capture(s.pipeline(misdeed))
            .unwrap_or_else(|e| panic!("{misdeed:?}: {e}"));
        graph.verify().unwrap();
        drop(graph);
        s.still_works(&mut capture);
        s.extra.synchronize().unwrap();
    }
}

/// A pipeline's code that synchronizes or queries its origin (or any stream) in a capture: the
/// driver forbids a thread with a capture of its own (thread-local mode) every synchronize and
/// query and invalidates the capture (seen on an H100, driver 580), which fails naming the
/// statement before the call and saying what to do; the issuer captures and runs afterwards.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_synchronize_or_query_in_a_pipelines_code_is_a_typed_fault() {
    for misdeed in [Misdeed::Synchronize, Misdeed::Query] {
        let mut s = setup();
        let mut capture = Capture::new(&s.origin).check(false);
        let e = expect_fault(
            capture.capture(s.pipeline(misdeed)),
            &[CaptureFault::Unsupported],
        );
        let Error::Capture { after, .. } = &e else { unreachable!() };
        assert!(
            after.is_some_and(|a| a.id == 0),
            "{misdeed:?}: names the statement before the call: {e}"
        );
        assert!(e.to_string().contains("a synchronize or query"), "{e}");
        s.still_works(&mut capture);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_uncapturable_call_is_a_typed_fault() {
    let mut s = setup();
    let mut capture = Capture::new(&s.origin);
    expect_fault(
        capture.capture(s.pipeline(Misdeed::Allocate)),
        &[CaptureFault::Unsupported, CaptureFault::Invalidated],
    );
    s.still_works(&mut capture);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_pageable_copy_names_its_statement() {
    let mut s = setup();
    // Unchecked: the misdeed copies from a fresh host vector on every issue, which a checked
    // capture refuses (other memory than its plan saw) before the copy is tried.
    let mut capture = Capture::new(&s.origin).check(false);
    let e = expect_fault(
        capture.capture(s.pipeline(Misdeed::PageableCopy)),
        &[CaptureFault::PageableMemory],
    );
    let Error::Capture { statement, .. } = &e else { unreachable!() };
    assert_eq!(statement.map(|s| s.id), Some(1), "{e}");
    assert!(e.to_string().contains("copy x <- host"), "{e}");
    s.still_works(&mut capture);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn another_threads_allocation_in_global_mode_is_a_typed_fault() {
    let mut s = setup();
    let mut capture = Capture::new(&s.origin).mode(CaptureMode::Global);
    // streamgraph refuses the other thread's allocation while its global capture runs (the
    // pipeline asserts that the other thread learns why, as a capture error), before the
    // driver sees it: the capture is not invalidated and succeeds.
    let graph = capture.capture(s.pipeline(Misdeed::OtherThreadAllocates));
    assert!(graph.is_ok(), "{:?}", graph.err());
    drop(graph);
    s.still_works(&mut capture);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fallback_runs_eagerly_and_says_so() {
    let mut s = setup();
    let mut capture = Capture::new(&s.origin).fallback_to_eager(true);
    s.origin.fill(&mut s.x, 0u32).unwrap();
    let outcome = capture.run(s.pipeline(Misdeed::Allocate)).unwrap();
    let CaptureOutcome::RanEagerly { fault, .. } = &outcome else {
        panic!("expected an eager run, but the pipeline was captured")
    };
    assert!(!outcome.is_captured());
    assert!(matches!(
        fault,
        Error::Capture {
            fault: CaptureFault::Unsupported | CaptureFault::Invalidated,
            ..
        }
    ));
    drop(outcome);
    s.origin.synchronize().unwrap();
    assert_eq!(s.x.to_vec_on(&s.origin).unwrap(), [1], "the eager run ran");
    // Without a fault the same call captures.
    let outcome = capture.run(s.pipeline(Misdeed::Nothing)).unwrap();
    assert!(outcome.is_captured());
    s.still_works(&mut capture);
}

/// A pipeline that captures another pipeline on its own origin from inside its issue.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_capture_inside_another_on_the_same_origin_captures_too() {
    let mut s = setup();
    // A pipeline that captures another pipeline (on buffers of its own) on its own origin from
    // inside its issue.
    let mut other = setup();
    struct Nested<'a> {
        origin: Stream,
        inner: std::cell::Cell<Option<Faulty<'a>>>,
        outer: Faulty<'a>,
    }
    impl Pipeline for Nested<'_> {
        fn program(&self) -> &'static Program {
            program()
        }
        fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
            std::borrow::Cow::Owned(vec![StreamOptions::default(); 2])
        }
        fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
            if let Some(inner) = self.inner.take() {
                Capture::new(&self.origin).capture(inner).map(drop)?;
            }
            self.outer.issue(issuer)
        }
    }
    let mut capture = Capture::new(&s.origin).check(false);
    let nested = Nested {
        origin: s.origin.clone(),
        inner: std::cell::Cell::new(Some(other.pipeline(Misdeed::Nothing))),
        outer: s.pipeline(Misdeed::Nothing),
    };
    // Each capture runs on its issuer's own stream: the one inside does not meet the other.
    let graph = capture.capture(nested).unwrap();
    graph.verify().unwrap();
    drop(graph);
    s.still_works(&mut capture);
}

/// A hand-written pipeline whose `issue` begins a global-mode capture of another stream while
/// its own global-mode capture runs: the inner one waited for the process-wide lock that the
/// outer one holds on the same thread, forever. Now it is refused at once with a typed fault,
/// before it touches the driver, and the outer capture goes on. With a deadline, so that a
/// regression fails instead of hanging.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_global_capture_inside_another_on_the_same_thread_is_refused() {
    common::within(
        Duration::from_secs(60),
        "a global capture begun inside another",
        || {
            let mut s = setup();
            struct NestedGlobal<'a> {
                s: RefCell<&'a mut Setup>,
                inner: Rc<RefCell<Option<Result<(), Error>>>>,
            }
            impl Pipeline for NestedGlobal<'_> {
                fn program(&self) -> &'static Program {
                    program()
                }
                fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
                    std::borrow::Cow::Owned(vec![StreamOptions::default(); 2])
                }
                fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
                    let mut s = self.s.borrow_mut();
                    let extra = s.extra.clone();
                    let inner = Capture::new(&extra)
                        .mode(CaptureMode::Global)
                        .capture(s.pipeline(Misdeed::Nothing))
                        .map(drop);
                    *self.inner.borrow_mut() = Some(inner);
                    s.pipeline(Misdeed::Nothing).issue(issuer)
                }
            }
            let inner = Rc::new(RefCell::new(None));
            let mut capture = Capture::new(&s.origin)
                .mode(CaptureMode::Global)
                .check(false);
            let graph = capture
                .capture(NestedGlobal {
                    s: RefCell::new(&mut s),
                    inner: inner.clone(),
                })
                .unwrap();
            let e = match inner.borrow_mut().take() {
                Some(Err(e)) => e,
                other => panic!("the inner global capture was not refused: {other:?}"),
            };
            println!("{e}");
            assert!(
                matches!(
                    e,
                    Error::Capture {
                        fault: CaptureFault::NestedGlobalCapture,
                        pipeline: Some("Faulty"),
                        ..
                    }
                ),
                "{e}"
            );
            drop(graph);
            s.still_works(&mut capture);
            // Once the outer capture has ended, the thread may begin a global capture again.
            let extra = s.extra.clone();
            Capture::new(&extra)
                .mode(CaptureMode::Global)
                .capture(s.pipeline(Misdeed::Nothing))
                .unwrap();
        },
    );
}
