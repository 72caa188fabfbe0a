//! Capture: a pipeline recorded into a CUDA graph (`cuStreamBeginCapture`) instead of run.
//!
//! [`Capture`] issues a pipeline through the same path as [`crate::Eager`] — the same side
//! streams, events, fork, statements and join — while the origin stream is capturing, so the
//! captured graph's dependencies are exactly the happens-before model of DESIGN.md §2 (the
//! driver's own rules). After each operation it asks the driver which node the operation
//! created (`cuStreamGetCaptureInfo_v3` on that stream: right after an operation its
//! dependency set is exactly the new node), so the [`Graph`] knows the statement and
//! occurrence of every node: for [`Graph::verify`], pictures, update errors and
//! [`GraphExec::set_kernel_args`](crate::GraphExec::set_kernel_args).
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
//! use streamgraph_runtime::{Capture, CaptureMode, Pipeline, Stream};
//!
//! /// Captures a pipeline once and replays it `n` times on its origin.
//! fn replay<P: Pipeline>(origin: &Stream, pipeline: P, n: usize) -> streamgraph_runtime::Result<P> {
//!     let graph = Capture::new(origin).mode(CaptureMode::ThreadLocal).capture(pipeline)?;
//!     graph.verify()?; // edges and ordering equal the plan's
//!     let exec = graph.instantiate()?;
//!     exec.replay(origin, n)?;
//!     origin.synchronize()?;
//!     Ok(exec.into_pipeline())
//! }
//! ```

use std::panic::resume_unwind;

use crate::error::{CaptureFault, Error, Result};
use crate::exec::eager::{Eager, Issued};
use crate::ffi::graph::{self as gffi, CaptureModeRaw, CaptureStatus, Keep, NodeHandle};
use crate::graph::{Graph, GraphCore};
use crate::issue::Pipeline;
use crate::operand::{DeviceRange, HostFn, Memory};
use crate::plan::Plan;
use crate::program::{AccessMode, Program, Statement};
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
    Error::Capture {
        fault,
        statement: None,
        after: None,
        pipeline: None,
    }
}

/// The error of a copy statement that names pageable host memory during a capture.
pub(crate) fn pageable_fault(stmt: &'static Statement) -> Error {
    Error::Capture {
        fault: CaptureFault::PageableMemory,
        statement: Some(stmt),
        after: None,
        pipeline: None,
    }
}

/// Refuses `fault` (a synchronize or query) on a stream that is capturing.
pub(crate) fn refuse_while_capturing(stream: &Stream, fault: CaptureFault) -> Result<()> {
    match gffi::stream_capture_status(stream.as_cudarc()) {
        Ok(CaptureStatus::None) => Ok(()),
        Ok(_) => Err(fault_error(fault)),
        // A capture code (e.g. an implicit dependency in global mode) becomes its fault.
        Err(e) => Err(Error::driver("cuStreamIsCapturing", e)),
    }
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

/// One captured operation: the statement issue it came from and its graph node.
#[derive(Debug, Clone)]
pub(crate) struct CapturedOp {
    /// The statement.
    pub(crate) statement: &'static Statement,
    /// Which issue of the statement, from 1.
    pub(crate) occurrence: u32,
    /// The stream index it was issued on.
    pub(crate) stream: usize,
    /// Its node; `None` for an empty copy or fill, which issues nothing.
    pub(crate) node: Option<NodeHandle>,
    /// For launches: the kernel, its configuration and number of arguments, from which
    /// `GraphExec::set_kernel_args` rebuilds the node's parameters without asking the driver.
    pub(crate) launch: Option<LaunchShape>,
}

/// The captured shape of a launch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchShape {
    pub(crate) func: crate::ffi::FunctionHandle,
    pub(crate) config: crate::operand::LaunchConfig,
    pub(crate) args: usize,
}

/// What a capture learns while the pipeline is issued: the node of every operation, and
/// what the graph must keep (memory, modules, host functions) for its replays.
#[derive(Debug)]
pub(crate) struct NodeBook {
    pub(crate) ops: Vec<CapturedOp>,
    occurrences: Vec<u32>,
    pub(crate) keep: Keep,
    pub(crate) memory: std::collections::BTreeSet<DeviceRange>,
    pub(crate) last: Option<&'static Statement>,
}

impl NodeBook {
    pub(crate) fn new(program: &'static Program) -> NodeBook {
        NodeBook {
            ops: Vec::new(),
            occurrences: vec![0; program.statements.len()],
            keep: Keep::default(),
            memory: std::collections::BTreeSet::new(),
            last: None,
        }
    }

    /// How many operations made a graph node.
    pub(crate) fn nodes(&self) -> usize {
        self.ops.iter().filter(|op| op.node.is_some()).count()
    }

    /// Books the operation `stmt` just issued on `stream`.
    pub(crate) fn note(
        &mut self,
        stmt: &'static Statement,
        stream: &Stream,
        issued: Issued<'_, '_>,
    ) -> Result<()> {
        self.last = Some(stmt);
        let occurrence = match self.occurrences.get_mut(stmt.id) {
            Some(count) => {
                *count += 1;
                *count
            }
            None => {
                return Err(Error::InvalidArgument(format!(
                    "statement id {} is not part of the pipeline being captured",
                    stmt.id
                )))
            }
        };
        let mut launch = None;
        let mut empty = false;
        match issued {
            Issued::Launch(kernel, config, a) => {
                launch = Some(LaunchShape {
                    func: kernel.handle(),
                    config,
                    args: a.len(),
                });
                if let Some(module) = kernel.cuda_module() {
                    self.keep.hold_module(module);
                }
                for arg in a {
                    if let Some(access) = arg.access() {
                        self.remember(access.range);
                        self.keep
                            .hold(arg.holder(), access.mode == AccessMode::Write);
                    }
                }
            }
            Issued::Copy(dst, src) => {
                empty = dst.memory().bytes() == 0;
                for (side, write) in [(dst, true), (src, false)] {
                    if let Memory::Device(r) = side.memory() {
                        self.remember(r);
                    }
                    self.keep.hold(side.holder(), write);
                }
            }
            Issued::Fill(dst) => {
                empty = dst.memory().bytes() == 0;
                if let Memory::Device(r) = dst.memory() {
                    self.remember(r);
                }
                self.keep.hold(dst.holder(), true);
            }
            Issued::Host => {}
        }
        let node = if empty {
            None
        } else {
            let tip = gffi::capture_tip(stream.as_cudarc())
                .map_err(|e| Error::driver("cuStreamGetCaptureInfo", e))?;
            match tip.status {
                CaptureStatus::Active => {}
                CaptureStatus::Invalidated => return Err(fault_error(CaptureFault::Invalidated)),
                CaptureStatus::None => return Err(fault_error(CaptureFault::Unjoined)),
            }
            match tip.single {
                Some(node) => Some(node),
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "after the operation the capturing stream depends on {} nodes instead of the one it created; the stream was used by other code during the capture",
                        tip.count
                    )))
                }
            }
        };
        self.ops.push(CapturedOp {
            statement: stmt,
            occurrence,
            stream: stmt.stream,
            node,
            launch,
        });
        Ok(())
    }

    /// Launches a host function the graph keeps alive.
    pub(crate) fn launch_host_fn(&mut self, stream: &Stream, f: HostFn) -> Result<()> {
        gffi::launch_kept_host_fn(stream.as_cudarc(), f, &mut self.keep)
    }

    fn remember(&mut self, range: DeviceRange) {
        if range.bytes > 0 {
            self.memory.insert(range);
        }
    }
}

/// The settings a graph keeps to capture its pipeline again (for updates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CaptureSettings {
    pub(crate) mode: CaptureMode,
    pub(crate) verify: bool,
}

/// Captures pipelines into CUDA graphs on an origin stream and the side streams it creates.
#[derive(Debug)]
pub struct Capture {
    eager: Eager,
    mode: CaptureMode,
    verify: bool,
    fallback: bool,
}

/// What [`Capture::run`] did.
#[derive(Debug)]
pub enum CaptureOutcome<P> {
    /// The pipeline was captured.
    Captured(Graph<P>),
    /// Capturing failed with `fault` ([`Error::Capture`]); the capture was ended and the
    /// pipeline ran eagerly on the same streams instead (only with
    /// [`Capture::fallback_to_eager`]).
    RanEagerly {
        /// The pipeline, which ran eagerly.
        pipeline: P,
        /// Why capturing failed.
        fault: Error,
    },
}

impl<P> CaptureOutcome<P> {
    /// Whether the pipeline was captured (rather than run eagerly).
    pub fn is_captured(&self) -> bool {
        matches!(self, CaptureOutcome::Captured(_))
    }
}

impl Capture {
    /// A capture issuer whose pipelines are captured on `origin`: thread-local mode, verified
    /// in debug builds, no eager fallback.
    pub fn new(origin: &Stream) -> Capture {
        let mut eager = Eager::new(origin);
        eager.check_plan(false);
        Capture {
            eager,
            mode: CaptureMode::default(),
            verify: cfg!(debug_assertions),
            fallback: false,
        }
    }

    /// The capture mode (default [`CaptureMode::ThreadLocal`]).
    pub fn mode(mut self, mode: CaptureMode) -> Self {
        self.mode = mode;
        self
    }

    /// Whether every capture checks its graph against the pipeline's plan
    /// ([`Graph::verify`]) and refuses pipelines with races. On by default in debug builds.
    pub fn verify(mut self, on: bool) -> Self {
        self.verify = on;
        self
    }

    /// Whether [`Capture::run`] runs the pipeline eagerly when capturing it fails with an
    /// [`Error::Capture`]. Off by default.
    pub fn fallback_to_eager(mut self, on: bool) -> Self {
        self.fallback = on;
        self
    }

    /// The origin stream.
    pub fn origin(&self) -> &Stream {
        self.eager.origin()
    }

    pub(crate) fn settings(&self) -> CaptureSettings {
        CaptureSettings {
            mode: self.mode,
            verify: self.verify,
        }
    }

    /// Captures `pipeline` into a CUDA graph that owns it.
    ///
    /// Errors: [`Error::Capture`] for capture faults (the capture is ended cleanly),
    /// [`Error::GraphMismatch`] when verification is on and the graph differs from the
    /// plan, [`Error::Race`] when verification is on and the pipeline has races, and the
    /// errors of issuing a statement.
    pub fn capture<P: Pipeline>(&mut self, pipeline: P) -> Result<Graph<P>> {
        let core = self.capture_core(&pipeline)?;
        Ok(Graph::new(core, pipeline, self.settings()))
    }

    /// Captures `pipeline`, or — with [`Capture::fallback_to_eager`] and a capture fault —
    /// runs it eagerly on the same streams and reports that it did.
    pub fn run<P: Pipeline>(&mut self, pipeline: P) -> Result<CaptureOutcome<P>> {
        match self.capture_core(&pipeline) {
            Ok(core) => Ok(CaptureOutcome::Captured(Graph::new(
                core,
                pipeline,
                self.settings(),
            ))),
            Err(fault @ Error::Capture { .. }) if self.fallback => {
                self.eager.run(&pipeline)?;
                Ok(CaptureOutcome::RanEagerly { pipeline, fault })
            }
            Err(e) => Err(e),
        }
    }

    /// Captures `pipeline` into a graph (without the pipeline value).
    pub(crate) fn capture_core<P: Pipeline + ?Sized>(&mut self, pipeline: &P) -> Result<GraphCore> {
        let program = pipeline.program();
        let plan = if self.verify {
            let plan = Plan::build(pipeline)?;
            plan.check_races()?;
            Some(plan)
        } else {
            None
        };
        self.eager.prepare_for(pipeline)?;
        let origin = self.eager.origin().clone();
        match gffi::stream_capture_status(origin.as_cudarc()) {
            Ok(CaptureStatus::None) => {}
            Ok(_) => {
                return Err(normalize(
                    fault_error(CaptureFault::AlreadyCapturing),
                    program,
                    None,
                ))
            }
            Err(e) => {
                return Err(normalize(
                    Error::driver("cuStreamIsCapturing", e),
                    program,
                    None,
                ))
            }
        }
        gffi::begin_capture(origin.as_cudarc(), self.mode.raw())
            .map_err(|e| normalize(Error::driver("cuStreamBeginCapture", e), program, None))?;
        self.eager.book = Some(NodeBook::new(program));
        let issued = self.eager.issue_prepared(pipeline);
        let book = self.eager.book.take();
        let issued = match issued {
            Ok(issued) => issued,
            Err(payload) => {
                // The pipeline panicked: its side streams are joined; end the capture (the
                // partial graph is destroyed) and let the panic go on.
                let keep = book.map(|b| b.keep).unwrap_or_default();
                drop(gffi::end_capture(origin.as_cudarc(), keep));
                self.recover(&origin);
                resume_unwind(payload);
            }
        };
        let last = book.as_ref().and_then(|b| b.last);
        let captured = match book {
            Some(mut book) => {
                let keep = std::mem::take(&mut book.keep);
                let ended = gffi::end_capture(origin.as_cudarc(), keep);
                match (issued, ended) {
                    (Ok(()), Ok(graph)) => Ok((graph, book)),
                    // A partial graph is destroyed as it drops here.
                    (Err(e), _) => Err(e),
                    (Ok(()), Err(e)) => Err(Error::driver("cuStreamEndCapture", e)),
                }
            }
            None => {
                drop(gffi::end_capture(origin.as_cudarc(), Keep::default()));
                Err(Error::InvalidArgument(
                    "the capture's node book went missing".into(),
                ))
            }
        };
        let captured = captured.and_then(|(graph, book)| {
            // Work issued into the capture by code outside the statements makes nodes the
            // graph cannot account for (nor keep their memory alive): refuse the graph.
            let nodes = graph
                .node_count()
                .map_err(|e| Error::driver("cuGraphGetNodes", e))?;
            if nodes != book.nodes() {
                return Err(Error::Pipeline {
                    message: format!(
                        "the capture of pipeline `{}` holds {nodes} graph node(s) but its statements issued {}: work was issued into the capture by code outside the pipeline's statements (e.g. a launch or a graph launch on the capturing stream inside `issue`); issue all work through the issuer",
                        program.name,
                        book.nodes()
                    ),
                    location: program.location,
                });
            }
            Ok((graph, book))
        });
        match captured {
            Ok((graph, book)) => {
                let core = GraphCore::new(graph, book, program, origin);
                if let Some(plan) = plan {
                    core.verify_against(&plan)?;
                }
                Ok(core)
            }
            Err(e) => {
                self.recover(&origin);
                Err(normalize(e, program, last))
            }
        }
    }

    /// After a failed capture: make sure no stream is left capturing and start the next run
    /// with fresh side streams and events.
    fn recover(&mut self, origin: &Stream) {
        if !matches!(
            gffi::stream_capture_status(origin.as_cudarc()),
            Ok(CaptureStatus::None)
        ) {
            drop(gffi::end_capture(origin.as_cudarc(), Keep::default()));
        }
        self.eager.forget_streams();
    }
}

/// Captures `pipeline` on `origin` with the default options ([`Capture::new`]).
pub fn capture<P: Pipeline>(origin: &Stream, pipeline: P) -> Result<Graph<P>> {
    Capture::new(origin).capture(pipeline)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::plan::ProgramBuilder;

    #[test]
    fn driver_codes_map_to_faults() {
        use cudarc::driver::sys::CUresult as R;
        let cases = [
            (
                R::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                CaptureFault::Unsupported,
            ),
            (
                R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                CaptureFault::Invalidated,
            ),
            (R::CUDA_ERROR_STREAM_CAPTURE_MERGE, CaptureFault::Merge),
            (
                R::CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
                CaptureFault::Unmatched,
            ),
            (
                R::CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
                CaptureFault::Unjoined,
            ),
            (
                R::CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
                CaptureFault::ExternalEvent,
            ),
            (
                R::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
                CaptureFault::Implicit,
            ),
            (R::CUDA_ERROR_CAPTURED_EVENT, CaptureFault::CapturedEvent),
            (
                R::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
                CaptureFault::WrongThread,
            ),
        ];
        for (code, fault) in cases {
            assert_eq!(CaptureFault::from_code(code), Some(fault));
        }
        assert_eq!(CaptureFault::from_code(R::CUDA_ERROR_INVALID_VALUE), None);
        assert_eq!(CaptureFault::from_code(R::CUDA_SUCCESS), None);
    }

    #[test]
    fn driver_errors_become_capture_errors_naming_the_statement() {
        use cudarc::driver::sys::CUresult as R;
        use cudarc::driver::DriverError;
        let mut b = ProgramBuilder::new("Faulty");
        let s0 = b.stream("s0");
        b.launch(s0, "k", &[]);
        let program = b.build();
        let stmt = &program.statements[0];
        let raw = Error::driver(
            "cuStreamWaitEvent",
            DriverError(R::CUDA_ERROR_STREAM_CAPTURE_ISOLATION),
        )
        .in_statement(stmt);
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
        let end = Error::driver(
            "cuStreamEndCapture",
            DriverError(R::CUDA_ERROR_STREAM_CAPTURE_UNJOINED),
        );
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

        // Other driver errors stay driver errors.
        let other = Error::driver("cuLaunchKernel", DriverError(R::CUDA_ERROR_INVALID_VALUE));
        assert!(matches!(
            normalize(other, program, None),
            Error::Driver { .. }
        ));

        // A pageable copy keeps its statement and gains the pipeline.
        let e = normalize(pageable_fault(stmt).in_statement(stmt), program, None);
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
