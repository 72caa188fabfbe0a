//! Capture: a pipeline recorded into a CUDA graph (`cuStreamBeginCapture`) instead of run.
//!
//! [`Capture`] issues a pipeline through the same path as [`crate::Eager`] — the same side
//! streams, events, fork, statements and join — while the issuer's lane is capturing (a stream
//! of its own at the origin's priority, on which the origin's statements go: no other code can
//! end that capture or add to it; `exec/lane.rs`), so the
//! captured graph's dependencies are exactly the happens-before model of [`crate::Plan`] (the
//! driver's own rules). Once the capture has ended it checks that the graph holds as many
//! nodes as the statements made, and the graph reads its nodes back when it first needs them
//! (`cuGraphGetNodes`, which lists them in the order the operations created them), so the
//! [`Graph`] knows the statement and occurrence of every node: for [`Graph::verify`],
//! pictures, update errors and
//! [`GraphExec::set_kernel_args`](crate::GraphExec::set_kernel_args). With
//! `Capture::cross_check_nodes` (a test hook of the `testing` feature) it also asks the driver
//! after each operation which node the operation created (`cuStreamGetCaptureInfo_v3`) and
//! refuses a graph whose two maps differ.
//!
//! Streams and events are created before the capture begins and reused by later captures,
//! as [`crate::Eager`] does. Host functions are kept alive by the graph: they run on every
//! replay.
//!
//! Everything that can go wrong during a capture is an [`Error::Capture`] naming a
//! [`CaptureFault`] and the statement (and its `file:line:col`) when there is one. On any
//! failure the capture is ended, its partial graph destroyed, and the side streams replaced,
//! so the origin and later runs work as before. With [`Capture::fallback_to_eager`],
//! [`Capture::run`] runs the pipeline eagerly instead and says so ([`CaptureOutcome`]).
//!
//! ```no_run
//! use streamgraph::{Capture, CaptureMode, Pipeline, Stream};
//!
//! /// Captures a pipeline once and replays it `n` times on its origin.
//! fn replay<P: Pipeline>(origin: &Stream, pipeline: P, n: usize) -> streamgraph::Result<P> {
//!     let graph = Capture::new(origin).mode(CaptureMode::ThreadLocal).capture(pipeline)?;
//!     graph.verify()?; // edges and ordering equal the plan's
//!     let exec = graph.instantiate()?;
//!     exec.replay(origin, n)?;
//!     origin.synchronize()?;
//!     Ok(exec.into_pipeline())
//! }
//! ```

use std::panic::resume_unwind;
use std::sync::Arc;

use super::blocks;
use super::book::{BookSizes, NodeBook, Recording};
use super::placement::place_temps;
use super::GraphCore;
use crate::error::{CaptureFault, Error, Result};
use crate::exec::eager::Eager;
use crate::exec::expect::Expected;
use crate::ffi::arena::TempArena;
use crate::ffi::capture::{self as gffi, CaptureModeRaw, EndFailed};
use crate::ffi::conditional::CondKernels;
use crate::ffi::graph::OwnedGraph;
use crate::ffi::keep::Keep;
use crate::ffi::status::{stream_capture_status, CaptureStatus};
use crate::issue::Pipeline;
use crate::plan::Plan;
use crate::program::{Program, Statement};
use crate::stream::Stream;

/// How a capture restricts "potentially unsafe" driver calls (allocations, synchronous
/// calls) in other code while it runs. See
/// [`cuStreamBeginCapture`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CaptureMode {
    /// Unsafe calls are refused on the capturing thread only (the default).
    #[default]
    ThreadLocal,
    /// Unsafe calls are refused on every thread while the capture runs.
    Global,
    /// No call is refused; the caller ensures nothing unsafe happens.
    Relaxed,
}

impl CaptureMode {
    fn raw(self) -> CaptureModeRaw {
        match self {
            CaptureMode::ThreadLocal => CaptureModeRaw::ThreadLocal,
            CaptureMode::Global => CaptureModeRaw::Global,
            CaptureMode::Relaxed => CaptureModeRaw::Relaxed,
        }
    }
}

/// A capture error without pipeline context yet (the capture adds it).
pub(crate) fn fault_error(fault: CaptureFault) -> Error {
    Error::capture(fault)
}

/// Fills in the pipeline and the statement context of capture errors ([`Error::driver`] already
/// turned the driver's capture codes into [`Error::Capture`]).
pub(crate) fn normalize(
    e: Error,
    program: &'static Program,
    after: Option<&'static Statement>,
) -> Error {
    let pipeline = Some(program.name);
    match e {
        Error::Statement { statement, source } => match *source {
            Error::Capture {
                fault,
                statement: s,
                after: a,
                ..
            } => Error::Capture {
                fault,
                statement: s.or(Some(statement)),
                after: a,
                pipeline,
            },
            other => Error::Statement {
                statement,
                source: Box::new(other),
            },
        },
        Error::Capture {
            fault,
            statement,
            after: a,
            ..
        } => Error::Capture {
            fault,
            statement,
            after: a.or(if statement.is_none() { after } else { None }),
            pipeline,
        },
        other => other,
    }
}

/// A capture that ended well: the driver's graph, the book that recorded it, and the plan to
/// verify it against (when verification is on).
pub(crate) struct Captured {
    graph: OwnedGraph,
    book: Box<NodeBook>,
    program: &'static Program,
    origin: Stream,
    plan: Option<Box<Plan>>,
    /// The memory the temporaries were placed in.
    arena: Option<Arc<TempArena>>,
}

/// The settings a graph keeps to capture its pipeline again (for updates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CaptureSettings {
    pub(crate) mode: CaptureMode,
    pub(crate) verify: bool,
}

impl CaptureSettings {
    /// A capture with these settings on `origin`, placing temporaries in `arena` (the
    /// memory of the graph captured before), if any.
    pub(crate) fn capture(&self, origin: &Stream, arena: Option<Arc<TempArena>>) -> Capture {
        let mut capture = Capture::new(origin).mode(self.mode).check(self.verify);
        capture.arena = arena;
        capture
    }
}

/// Captures pipelines into CUDA graphs on an origin stream and the side streams it creates.
///
/// ```no_run
/// use streamgraph::{pipeline, Capture, CaptureMode, DeviceBuffer, Stream};
///
/// pipeline! {
///     /// Fills `x` with ones.
///     pipeline Fill(x: &mut DeviceBuffer<f32>) {
///         stream main;
///         main: fill x = 1.0f32;
///     }
/// }
///
/// let stream = Stream::on(None, 0)?;
/// let mut x = DeviceBuffer::zeros(&stream.device(), 1000)?;
/// let mut capture = Capture::new(&stream)
///     .mode(CaptureMode::ThreadLocal)
///     .check(true)               // compare each graph with the plan, edge for edge
///     .fallback_to_eager(false);
/// let graph = capture.capture(Fill::new(&mut x))?;
/// assert_eq!(graph.len(), 1); // one node: the fill
/// # Ok::<(), streamgraph::Error>(())
/// ```
#[derive(Debug)]
pub struct Capture {
    eager: Eager,
    mode: CaptureMode,
    verify: bool,
    fallback: bool,
    /// Whether captures cross-check their node maps (`Capture::cross_check_nodes`).
    cross_check: bool,
    /// What the previous capture's book held: the room the next one starts with.
    sizes: BookSizes,
    /// The book of the previous capture, once its graph took what it keeps: the next
    /// capture's, without allocating it anew.
    spare: Option<Box<NodeBook>>,
    /// The built-in kernels of captured device blocks, loaded before the first capture that
    /// needs them.
    kernels: Option<Arc<CondKernels>>,
    /// A graph set's memory (or a graph's, when capturing it again): temporaries are placed
    /// in it at their plan's offsets instead of being memory nodes (see `ffi/arena.rs`).
    pub(crate) arena: Option<Arc<TempArena>>,
    /// Whether each graph gets memory of its own for its temporaries
    /// ([`Capture::own_temp_memory`]), where no `arena` is given.
    own_temps: bool,
}

impl Capture {
    /// A capture issuer whose pipelines are captured on `origin`: thread-local mode, checked
    /// in debug builds only (`STREAMGRAPH_CHECKS=1` or `0` sets the default), no eager
    /// fallback.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{pipeline, Capture, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let graph = Capture::new(&stream).capture(Fill::new(&mut x))?;
    /// assert_eq!(graph.len(), 1);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn new(origin: &Stream) -> Capture {
        let mut eager = Eager::new(origin);
        eager.check(false);
        Capture {
            eager,
            mode: CaptureMode::default(),
            verify: crate::exec::checks_by_default(),
            fallback: false,
            cross_check: false,
            sizes: BookSizes::default(),
            spare: None,
            kernels: None,
            arena: None,
            own_temps: false,
        }
    }

    /// Whether each capture also asks the driver, after every operation, which graph node the
    /// operation created (`cuStreamGetCaptureInfo_v3`), and fails with [`Error::Pipeline`]
    /// unless that map equals the one read back once at the end (nodes in creation order).
    /// Off by default: the end-of-capture map alone is exact on the drivers streamgraph
    /// supports, and this mode exists to keep proving it (the random-program GPU suite runs
    /// with it). It costs one driver call per operation. A test hook: only with the
    /// `testing` feature.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Capture, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let capture = Capture::new(&stream).cross_check_nodes(true); // a driver call per operation
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    #[cfg(feature = "testing")]
    pub fn cross_check_nodes(mut self, on: bool) -> Self {
        self.cross_check = on;
        self
    }

    /// The capture mode (default [`CaptureMode::ThreadLocal`]).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Capture, CaptureMode, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let capture = Capture::new(&stream).mode(CaptureMode::Relaxed); // no call is refused
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn mode(mut self, mode: CaptureMode) -> Self {
        self.mode = mode;
        self
    }

    /// Whether every capture checks its graph against the pipeline's plan (what
    /// `Graph::verify` does) and refuses pipelines with races. On by default in debug builds,
    /// off in release builds; `STREAMGRAPH_CHECKS=1` or `0` sets the default (see the crate
    /// docs).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{pipeline, Capture, DeviceBuffer, Error, Stream};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>) { stream a; stream b;
    ///     a: fill x.slice_mut(0..3) = 1.0f32; b: fill x.slice_mut(2..4) = 2.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 4)?;
    /// let captured = Capture::new(&stream).check(true).capture(P::new(&mut x));
    /// assert!(matches!(captured, Err(Error::Race(_)))); // refused before the capture begins
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn check(mut self, on: bool) -> Self {
        self.verify = on;
        self
    }

    /// Whether each graph this capture makes keeps its temporaries in device memory of its
    /// own instead of graph memory nodes. Off by default.
    ///
    /// Memory nodes take graph memory, which the driver reserves in granules (32 MiB on
    /// driver 580) and shares between graphs that do not run at once: many graphs cost about
    /// one graph's peak, but a graph whose temporaries peak at 256 KiB holds 32 MiB. With
    /// this on, the graph's temporaries sit at the offsets of its plan's layout
    /// ([`Plan::temp_layout`]) in memory the graph owns, in the driver's allocation
    /// granularity (2 MiB on Hopper), shared with no other graph: one graph holds about its
    /// peak ([`GraphExec::temp_memory`](crate::GraphExec::temp_memory)), and its allocations
    /// and releases make no nodes (they verify as operations without nodes), so a capture
    /// again applies in place (`update`) where its graph keeps its shape. Launches of one
    /// executable graph never overlap, and one instantiated anew replaces the old one only
    /// after the old one's launches have finished, so its temporaries are never in use twice
    /// at once. A [`GraphSet`](crate::GraphSet) does this for all its graphs in one memory.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{pipeline, Capture, DeviceBuffer, Stream};
    /// pipeline! { pipeline Twice(y: &mut DeviceBuffer<f32>) {
    ///     stream s;
    ///     temp t: f32[y.len()];
    ///     s: copy t <- y;
    ///     s: copy y <- t;
    /// } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut y = DeviceBuffer::<f32>::zeros(&stream.device(), 1 << 16)?; // 256 KiB
    /// let graph = Capture::new(&stream).own_temp_memory(true).capture(Twice::new(&mut y))?;
    /// let exec = graph.instantiate()?;
    /// assert_eq!(exec.temp_memory(), 2 << 20); // one 2 MiB granule, not a 32 MiB one
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn own_temp_memory(mut self, on: bool) -> Self {
        self.own_temps = on;
        self
    }

    /// Whether [`Capture::run`] runs the pipeline eagerly when capturing it fails with an
    /// [`Error::Capture`]. Off by default.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Capture, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// let capture = Capture::new(&stream).fallback_to_eager(true); // for `Capture::run`
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn fallback_to_eager(mut self, on: bool) -> Self {
        self.fallback = on;
        self
    }

    /// The origin stream.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Capture, Stream};
    /// let stream = Stream::on(None, 0)?;
    /// assert_eq!(Capture::new(&stream).origin(), &stream);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn origin(&self) -> &Stream {
        self.eager.origin()
    }

    /// Whether a capture fault falls back to an eager run ([`Capture::fallback_to_eager`]).
    pub(crate) fn falls_back(&self) -> bool {
        self.fallback
    }

    /// Runs `pipeline` eagerly on the capture's streams (the fallback).
    pub(crate) fn run_eagerly<P: Pipeline + ?Sized>(&mut self, pipeline: &P) -> Result<()> {
        self.eager.run(pipeline)
    }

    pub(crate) fn settings(&self) -> CaptureSettings {
        CaptureSettings {
            mode: self.mode,
            verify: self.verify,
        }
    }

    /// Captures `pipeline` into a graph (without the pipeline value), with the plan to verify
    /// it against when verification is on.
    pub(crate) fn capture_core<P: Pipeline + ?Sized>(&mut self, pipeline: &P) -> Result<Captured> {
        let program = pipeline.program();
        // A checked capture captures exactly what its plan saw issued (`Expected`).
        self.eager.expect = None;
        // A pipeline with temporaries is always checked for races on them: a use outside a
        // temporary's live range, which only the plan rules out for every issuer, would touch
        // freed memory.
        let (mut placed, mut arena) = (None, None);
        let expect = if self.verify || !program.temps.is_empty() {
            let plan = Plan::build(pipeline)?;
            if self.verify {
                plan.check_races()?;
            } else {
                plan.check_temp_races()?;
            }
            // In a graph set's memory (or the graph's own) the temporaries sit where the plan's
            // layout puts them: mapped before the capture begins (not allowed while it runs).
            if !plan.temporaries().is_empty() {
                arena = self.arena.clone();
                placed = place_temps(&plan, &mut arena, self.own_temps, self.eager.origin())
                    .map_err(|e| normalize(e, program, None))?;
                if placed.is_none() {
                    arena = None;
                }
            }
            Some(Box::new(Expected::new(Box::new(plan))))
        } else {
            None
        };
        if self.mode == CaptureMode::Global {
            // Before any stream is made: this thread may be inside another global capture.
            crate::ffi::GlobalCapture::may_begin()
                .map_err(|fault| normalize(fault_error(fault), program, None))?;
        }
        self.eager.prepare_for(pipeline)?;
        let counters = blocks::prepare(&mut self.kernels, self.eager.origin(), program)
            .map_err(|e| normalize(e, program, None))?;
        let origin = self.eager.origin().clone();
        // Captured on the issuer's own stream, which no other code can end the capture of.
        let lane = self.eager.lane().clone();
        // A global-mode capture holds off streamgraph's unsafe calls on other threads (one
        // inside another on this thread was refused above: it would wait for itself forever).
        let _global = match self.mode {
            CaptureMode::Global => Some(
                crate::ffi::GlobalCapture::begin()
                    .map_err(|fault| normalize(fault_error(fault), program, None))?,
            ),
            CaptureMode::ThreadLocal | CaptureMode::Relaxed => None,
        };
        let id = match gffi::begin_capture(lane.as_cudarc(), self.mode.raw()) {
            Ok(id) => Some(id),
            Err(e) => {
                // Asked only when beginning failed: a stream that is capturing already (this
                // issuer's origin inside its own capture, or a stream joined to another one).
                let error = match stream_capture_status(lane.as_cudarc()) {
                    Ok(CaptureStatus::None) | Err(_) => Error::driver("cuStreamBeginCapture", e),
                    Ok(_) => fault_error(CaptureFault::AlreadyCapturing),
                };
                return Err(normalize(error, program, None));
            }
        };
        let mut book = match self.spare.take() {
            Some(mut book) => {
                book.reset(program, self.sizes, self.cross_check, self.mode.raw());
                book
            }
            None => Box::new(NodeBook::new(
                program,
                self.sizes,
                self.cross_check,
                self.mode.raw(),
            )),
        };
        let placement = placed.map(|(placement, lease)| {
            // The graph holds the memory its temporaries are in until its launches finish.
            book.keep.hold_other(Arc::new(lease));
            placement
        });
        let mut recording = Recording {
            book,
            kernels: self.kernels.clone(),
            counters,
            placement,
        };
        self.eager.expect = expect;
        let issued = self.eager.issue_prepared(pipeline, &mut recording);
        // The counters stay until the capture has ended (the graph keeps them then).
        let Recording {
            mut book,
            counters: _counters,
            ..
        } = recording;
        let expected = self.eager.expect.take();
        let issued = match issued {
            Ok(issued) => issued,
            Err(payload) => {
                // The pipeline panicked: its side streams are joined; end the capture (the
                // partial graph is destroyed) and let the panic go on.
                drop(gffi::end_capture(lane.as_cudarc(), book.take_keep(), id));
                self.recover(&lane);
                resume_unwind(payload);
            }
        };
        let issued = issued.and_then(|()| expected.as_ref().map_or(Ok(()), |e| e.finish()));
        let plan = expected.map(|e| e.into_plan());
        let last = book.last;
        let keep = book.take_keep();
        let ended = gffi::end_capture(lane.as_cudarc(), keep, id);
        let captured = match (issued, ended) {
            (Ok(()), Ok(graph)) => Ok((graph, book)),
            // Whatever the statements' error, other code ending the capture explains it.
            (_, Err(EndFailed::EndedElsewhere)) => Err(fault_error(CaptureFault::EndedElsewhere)),
            // A partial graph is destroyed as it drops here.
            (Err(e), _) => Err(e),
            (Ok(()), Err(EndFailed::Driver(e))) => Err(Error::driver("cuStreamEndCapture", e)),
        };
        let captured = captured.and_then(|(graph, mut book)| {
            // Work issued into the capture by code outside the statements makes nodes the
            // graph cannot account for (nor keep their memory alive): refused. The node map
            // is read back when first needed (`GraphCore::node_map`), or made now: in
            // cross-check mode (compared with the driver's reports), and to find the nodes of
            // `call`s not found back from their exits (`NodeBook::account_nodes`).
            book.account_nodes(&graph)?
                .map_err(|what| Error::Pipeline {
                    message: format!("the capture of pipeline `{}` {what}", program.name),
                    location: program.location,
                })?;
            Ok((graph, book))
        });
        match captured {
            Ok((graph, book)) => {
                self.sizes = book.sizes();
                Ok(Captured {
                    graph,
                    book,
                    program,
                    origin,
                    plan,
                    arena,
                })
            }
            Err(e) => {
                self.recover(&lane);
                Err(normalize(e, program, last))
            }
        }
    }

    /// After a failed capture: make sure the lane is left capturing nothing and start the next
    /// run with fresh streams and events.
    fn recover(&mut self, lane: &Stream) {
        if !matches!(
            stream_capture_status(lane.as_cudarc()),
            Ok(CaptureStatus::None)
        ) {
            drop(gffi::end_capture(lane.as_cudarc(), Keep::default(), None));
        }
        self.eager.forget_streams();
    }
}

impl GraphCore {
    /// Captures `pipeline` with `capture` and, when verification is on, checks the graph
    /// against the plan.
    pub(crate) fn capture<P: Pipeline + ?Sized>(
        capture: &mut Capture,
        pipeline: &P,
    ) -> Result<GraphCore> {
        let Captured {
            graph,
            mut book,
            program,
            origin,
            plan,
            arena,
        } = capture.capture_core(pipeline)?;
        let recorded = book.finish(&graph);
        // The next capture's book, without allocating it anew.
        capture.spare = Some(book);
        let core = GraphCore::new(graph, program, origin, recorded, arena);
        if let Some(plan) = plan {
            core.verify_against(&plan)?;
        }
        Ok(core)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::plan::ProgramBuilder;

    #[test]
    fn capture_errors_name_the_statement_and_the_pipeline() {
        let mut b = ProgramBuilder::new("Faulty");
        let s0 = b.stream("s0");
        b.launch(s0, "k", &[]);
        let program = b.build();
        let stmt = &program.statements[0];
        // What `Error::driver` makes of `CUDA_ERROR_STREAM_CAPTURE_ISOLATION` (see `ffi`).
        let raw = fault_error(CaptureFault::ExternalEvent).in_statement(stmt);
        let e = normalize(raw, program, None);
        let Error::Capture {
            fault,
            statement,
            pipeline,
            ..
        } = &e
        else {
            panic!("{e:?}")
        };
        assert_eq!(*fault, CaptureFault::ExternalEvent);
        assert!(std::ptr::eq(statement.unwrap(), stmt));
        assert_eq!(*pipeline, Some("Faulty"));
        let msg = e.to_string();
        assert!(msg.contains("pipeline `Faulty`"), "{msg}");
        assert!(msg.contains(stmt.text), "{msg}");
        assert!(msg.contains(&stmt.location.to_string()), "{msg}");
        assert!(msg.contains("recorded outside the capture"), "{msg}");

        // A fault at the end of the capture names the last statement issued.
        let end = fault_error(CaptureFault::Unjoined);
        let e = normalize(end, program, Some(stmt));
        assert!(matches!(
            e,
            Error::Capture {
                fault: CaptureFault::Unjoined,
                statement: None,
                after: Some(_),
                ..
            }
        ));
        assert!(e.to_string().contains("after statement"), "{e}");
        assert!(e.to_string().contains("not joined"), "{e}");

        // Other errors stay what they are.
        let other = Error::InvalidArgument("not a capture fault".into());
        assert!(matches!(
            normalize(other, program, None),
            Error::InvalidArgument(_)
        ));

        // A pageable copy keeps its statement and gains the pipeline.
        let pageable = Error::Capture {
            fault: CaptureFault::PageableMemory,
            statement: Some(stmt),
            after: None,
            pipeline: None,
        };
        let e = normalize(pageable.in_statement(stmt), program, None);
        assert!(matches!(
            e,
            Error::Capture {
                fault: CaptureFault::PageableMemory,
                statement: Some(_),
                pipeline: Some("Faulty"),
                ..
            }
        ));
        assert!(e.to_string().contains("PinnedBuffer"), "{e}");
    }

    #[test]
    fn messages_are_lowercase_without_final_period() {
        let faults = [
            CaptureFault::SynchronizeWhileCapturing,
            CaptureFault::QueryWhileCapturing,
            CaptureFault::ExternalEvent,
            CaptureFault::CapturedEvent,
            CaptureFault::Unjoined,
            CaptureFault::WrongThread,
            CaptureFault::Unsupported,
            CaptureFault::Invalidated,
            CaptureFault::Implicit,
            CaptureFault::Merge,
            CaptureFault::Unmatched,
            CaptureFault::PageableMemory,
            CaptureFault::AlreadyCapturing,
            CaptureFault::NestedGlobalCapture,
        ];
        for f in faults {
            let text = f.explanation();
            assert!(text.starts_with(|c: char| c.is_lowercase()), "{text}");
            assert!(!text.ends_with('.'), "{text}");
            let e = fault_error(f).to_string();
            assert!(e.starts_with("capture failed: "), "{e}");
        }
    }

    #[test]
    fn settings_default_to_thread_local() {
        assert_eq!(CaptureMode::default(), CaptureMode::ThreadLocal);
    }
}
