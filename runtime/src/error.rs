//! The runtime's one error type, and the vocabulary of the faults, rejections and mismatches
//! it carries. Every message is formatted here, from the data the error holds.

use std::fmt::{self, Write as _};

use crate::operand::{BufferAccess, DeviceRange};
use crate::program::{AccessMode, Location, OpRef, Statement};

/// Everything that can go wrong in the runtime. Messages say what went wrong, where (the
/// pipeline statement and its source location when there is one) and what to do.
///
/// ```
/// use streamgraph::{DeviceBuffer, Error};
/// # fn main() -> streamgraph::Result<()> {
/// // Sizes from users are checked: a typed error, not an overflow or a huge allocation.
/// let err = DeviceBuffer::<f64>::for_planning(usize::MAX).unwrap_err();
/// assert!(matches!(err, Error::InvalidArgument(_)));
/// println!("{err}"); // what went wrong and what to do
/// # Ok(())
/// # }
/// ```
///
/// `{:?}` prints the same message as `{}`, so that `fn main() -> Result<(), Error>`, `unwrap`
/// and `expect` say what went wrong and what to do; match on the variant for its data.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library could not be loaded.
    #[error("no CUDA driver found: {} could not be loaded; install the NVIDIA driver or run on a machine with a GPU", wanted(.searched))]
    NoDriver {
        /// The library names that were tried.
        searched: String,
    },
    /// The NCCL library could not be loaded (collectives need it).
    #[error("NCCL not found: {} could not be loaded; install NCCL (`libnccl.so.2`) or put the directory that holds it on the library path (e.g. `site-packages/nvidia/nccl/lib` of a PyTorch environment)", wanted(.searched))]
    NoNccl {
        /// The library names that were tried.
        searched: String,
    },
    /// An NCCL call failed.
    #[error(
        "NCCL call `{call}` failed: {code}; run with `NCCL_DEBUG=WARN` for NCCL's own account"
    )]
    Nccl {
        /// The NCCL function.
        call: &'static str,
        /// The `ncclResult_t` it returned.
        code: String,
    },
    /// A CUDA library an op needs could not be loaded (`libcublas`, `libcublasLt`); nothing
    /// was called.
    #[error("{name} not found: {} could not be loaded; install the CUDA toolkit's {name} or put the directory that holds it on the library path (the GPU machine's CUDA 13 libraries, e.g. `libcublas.so.13`, load from the standard path)", wanted(.searched))]
    NoLibrary {
        /// The library, e.g. `libcublas`.
        name: &'static str,
        /// The library names that were tried.
        searched: String,
    },
    /// A call of a CUDA library (cuBLAS, cuBLASLt) failed.
    #[error("{call} failed: {status}")]
    Library {
        /// The library function, e.g. `cublasSgemm_v2`.
        call: &'static str,
        /// The status it returned, e.g. `CUBLAS_STATUS_NOT_SUPPORTED`.
        status: String,
    },
    /// NVRTC (the run-time CUDA C compiler) could not be loaded.
    #[error("NVRTC not found: {} could not be loaded; install the CUDA toolkit's NVRTC or load PTX instead", wanted(.searched))]
    NoNvrtc {
        /// The library names that were tried.
        searched: String,
    },
    /// The driver loaded but reports no device.
    #[error("the CUDA driver reports no device")]
    NoDevice,
    /// A device ordinal outside `0..count`.
    #[error("device {ordinal} does not exist: the driver reports {count} device(s)")]
    InvalidDevice {
        /// The ordinal asked for.
        ordinal: i32,
        /// How many devices there are.
        count: i32,
    },
    /// A driver call failed.
    #[error("{call} failed: {source}")]
    Driver {
        /// The driver function, e.g. `cuStreamSynchronize`.
        call: &'static str,
        /// The driver's error.
        #[source]
        source: cudarc::driver::DriverError,
    },
    /// CUDA C source did not compile.
    #[error("CUDA C compilation failed for module `{module}`:\n{log}")]
    Compile {
        /// A name for the module (for messages).
        module: String,
        /// NVRTC's log.
        log: String,
    },
    /// A module has no kernel of this name.
    #[error(
        "module `{module}` has no kernel named `{name}`; declare it `extern \"C\" __global__`"
    )]
    KernelNotFound {
        /// The module's name.
        module: String,
        /// The missing kernel.
        name: String,
    },
    /// `elapsed_time` on an event created without timing.
    #[error("event was created with timing disabled; create it with `Event::with_timing` to measure elapsed time")]
    TimingDisabled,
    /// `elapsed_time` on an event that has not been recorded.
    #[error("event has not been recorded yet; record both events before asking for elapsed time")]
    EventNotRecorded,
    /// Two objects belong to different devices where one is required.
    #[error("{what}: objects belong to device {left} and device {right}")]
    DeviceMismatch {
        /// What was attempted.
        what: &'static str,
        /// One device.
        left: i32,
        /// The other.
        right: i32,
    },
    /// An argument is out of range or inconsistent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An error raised while issuing one statement of a pipeline.
    #[error("in pipeline statement `{}` at {}: {source}", statement.text, statement.location)]
    Statement {
        /// The statement.
        statement: &'static Statement,
        /// What went wrong.
        #[source]
        source: Box<Error>,
    },
    /// The plan found operations on different streams that touch the same memory unordered.
    #[error("{}", format_races(.0))]
    Race(Vec<Race>),
    /// A pipeline-level problem that has a source location but no single statement.
    #[error("{message} (pipeline declared at {location})")]
    Pipeline {
        /// What went wrong and what to do.
        message: String,
        /// Where the pipeline was declared.
        location: Location,
    },
    /// A plan-only kernel or buffer (`for_planning`) was issued for real.
    #[error("this {what} was made with `for_planning` and can only be planned; load a real one to run or capture the pipeline")]
    PlanningOnly {
        /// `kernel` or `buffer`.
        what: &'static str,
    },
    /// Capturing a pipeline into a CUDA graph failed; the capture was ended and its partial
    /// graph destroyed, and the streams are usable again.
    #[error("{}", describe_fault(.fault, *.statement, *.after, .pipeline))]
    Capture {
        /// What went wrong.
        fault: CaptureFault,
        /// The statement being issued when it happened, when there is one.
        statement: Option<&'static Statement>,
        /// The last statement issued before it happened, when the fault came from code
        /// between statements (or from the end of the capture).
        after: Option<&'static Statement>,
        /// The pipeline's name, when known.
        pipeline: Option<&'static str>,
    },
    /// A captured CUDA graph's dependencies differ from the pipeline's happens-before plan.
    #[error("{}", format_mismatch(.pipeline, .missing, .extra, .problems))]
    GraphMismatch {
        /// The pipeline's name.
        pipeline: &'static str,
        /// Edges of the plan that the captured graph lacks.
        missing: Vec<OpEdge>,
        /// Edges of the captured graph that the plan does not have.
        extra: Vec<OpEdge>,
        /// Other differences: nodes that map to no operation, orderings (reachability) that
        /// differ, operation counts.
        problems: Vec<String>,
    },
    /// A `PinnedBuffer` whose copies a graph of other code may run (a capture of a pipeline
    /// that other code ended, [`CaptureFault::EndedElsewhere`]) is never borrowed again.
    #[error("a PinnedBuffer cannot {action}: a graph that other code captured from a pipeline's copies (the capture was ended outside streamgraph) may copy to or from it at any time, so its memory stays out of Rust's reach and is never freed; use another buffer")]
    PinnedAbandoned {
        /// What was refused.
        action: &'static str,
    },
    /// A copy or graph launch would race with a live Rust borrow of a `PinnedBuffer` (or a
    /// borrow with a copy); nothing was issued.
    #[error("a PinnedBuffer cannot {action} while {holder} of it is alive; drop that borrow first (copies into a pinned buffer need every `as_slice`/`as_mut_slice` guard of it gone)")]
    PinnedBusy {
        /// What was refused.
        action: &'static str,
        /// The borrow in the way.
        holder: &'static str,
    },
    /// An output of a pipeline differs between its eager runs and its captured graph's
    /// replays (`testing::compare`, the `testing` feature).
    #[error("{0}")]
    OutputMismatch(Box<Mismatch>),
    /// Work was refused because its stream is being captured into a CUDA graph that
    /// streamgraph did not begin (e.g. by cudarc's `CudaStream::begin_capture`, or by a
    /// pipeline's own code). Such a graph would replay the work after the memory, host
    /// functions and kernels it names are gone: nothing keeps them alive. Nothing was issued;
    /// or, when the capture began while the work was being issued, that capture was
    /// invalidated, so that it yields no graph; or (an eager run whose origin a capture took
    /// after the run's fork) the run's work ran outside that capture, on the issuer's own
    /// streams, and had finished when the error came back.
    #[error("{what} was refused: its stream is being captured into a CUDA graph that streamgraph did not begin (e.g. by cudarc's `CudaStream::begin_capture`), and that graph would outlive the memory and functions the work names; end that capture first, or put the work in a pipeline and capture it with `streamgraph::capture`, whose graphs keep what they use alive")]
    StreamCapturing {
        /// What was refused, e.g. `"Stream::copy"`.
        what: &'static str,
    },
    /// A pipeline issued a statement differently from the issue its checks judged (the
    /// happens-before plan built by [`crate::Eager::check`] or [`crate::Capture::check`]):
    /// another statement, or other memory. Nothing from that statement on was issued.
    #[error("pipeline `{pipeline}` issued {found} where the checked issue had {expected}: a pipeline must issue the same statements on the same memory every time it is issued (a parameter with interior mutability, such as a `Cell` feeding a range, changed between the check and the run); nothing from there on was issued")]
    IssueChanged {
        /// The pipeline's name.
        pipeline: &'static str,
        /// What the checked issue had at this point.
        expected: String,
        /// What the run issued instead.
        found: String,
    },
    /// Streamgraph broke one of its own invariants: a bug in streamgraph, not in the program
    /// (kept apart from [`Error::InvalidArgument`], which is the caller's to mend).
    #[error("internal error in streamgraph: {invariant}; this is a bug in streamgraph, not in the pipeline: please report it with the pipeline that showed it")]
    Internal {
        /// The invariant that did not hold.
        invariant: &'static str,
    },
    /// An executable graph refused an update with a newly captured graph.
    #[error("{}", describe_rejection(.reason, *.statement))]
    UpdateRejected {
        /// Why the driver refused.
        reason: UpdateRejection,
        /// The statement whose node the driver named, when it named one.
        statement: Option<&'static Statement>,
    },
}

/// Where an output of a pipeline first differs between eager runs and graph replays (see
/// [`Error::OutputMismatch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The pipeline's name.
    pub pipeline: &'static str,
    /// The output's name, as given to the comparison.
    pub output: String,
    /// How many times the pipeline ran on each side before the outputs were read.
    pub runs: usize,
    /// The first index whose elements differ; `None` when the lengths differ.
    pub index: Option<usize>,
    /// The eager run's element there (or length), as `Debug` prints it.
    pub eager: String,
    /// The replayed graph's element there (or length), as `Debug` prints it.
    pub replayed: String,
    /// How many elements differ in all.
    pub differing: usize,
    /// The output's length.
    pub len: usize,
    /// How elements were compared: `bitwise`, or the tolerance.
    pub compared: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let runs = |what: &str| match self.runs {
            1 => format!("1 {what}"),
            n => format!("{n} {what}s"),
        };
        write!(
            f,
            "pipeline `{}`: output `{}` after {} differs from {}",
            self.pipeline,
            self.output,
            runs("graph replay"),
            runs("eager run")
        )?;
        match self.index {
            Some(i) => write!(
                f,
                " at index {i}: eager {}, replayed {} ({} of {} element(s) differ, compared {})",
                self.eager, self.replayed, self.differing, self.len, self.compared
            )?,
            None => write!(
                f,
                " in length: eager {}, replayed {}",
                self.eager, self.replayed
            )?,
        }
        f.write_str("; the captured graph orders or issues something differently from the eager run (run with `STREAMGRAPH_CHECKS=1` to check races), or the output depends on state the comparison does not reset")
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Error {
    /// Whether this is what a machine without CUDA gives: no driver, no device, no NVRTC, no
    /// library an op needs or no NCCL ([`Error::NoDriver`], [`Error::NoDevice`],
    /// [`Error::NoNvrtc`], [`Error::NoLibrary`], [`Error::NoNccl`]). Programs that can do
    /// something useful without a GPU (plan, print, skip) test for it.
    ///
    /// ```
    /// use streamgraph::{Device, Error};
    ///
    /// match Device::new(None) {
    ///     Ok(device) => println!("running on device {}", device.ordinal()),
    ///     Err(e) if e.is_unavailable() => println!("no GPU here ({e}): planning only"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok::<(), Error>(())
    /// ```
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            Error::NoDriver { .. }
                | Error::NoDevice
                | Error::NoNvrtc { .. }
                | Error::NoLibrary { .. }
                | Error::NoNccl { .. }
        )
    }

    /// A capture fault without pipeline context yet (the capture adds it).
    pub(crate) fn capture(fault: CaptureFault) -> Error {
        Error::Capture {
            fault,
            statement: None,
            after: None,
            pipeline: None,
        }
    }

    /// Wraps `self` as raised by `statement` (unless it already names one).
    pub fn in_statement(self, statement: &'static Statement) -> Error {
        match self {
            e @ Error::Statement { .. } => e,
            e => Error::Statement {
                statement,
                source: Box::new(e),
            },
        }
    }
}

/// What went wrong during a capture (see [`Error::Capture`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CaptureFault {
    /// `synchronize` of a stream that is capturing: nothing has run yet, so there is nothing
    /// to wait for.
    SynchronizeWhileCapturing,
    /// `query` of a stream that is capturing.
    QueryWhileCapturing,
    /// A wait on an event recorded outside the capture (`CUDA_ERROR_STREAM_CAPTURE_ISOLATION`).
    ExternalEvent,
    /// A query, synchronize or elapsed-time of an event recorded inside the capture
    /// (`CUDA_ERROR_CAPTURED_EVENT`).
    CapturedEvent,
    /// Work forked from the capture was not joined back into the origin before the end
    /// (`CUDA_ERROR_STREAM_CAPTURE_UNJOINED`).
    Unjoined,
    /// The capture was ended on another thread than it began on
    /// (`CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD`).
    WrongThread,
    /// A call that cannot be captured (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`).
    Unsupported,
    /// An earlier illegal call invalidated the capture (`CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`).
    Invalidated,
    /// A disallowed implicit dependency on the capture, e.g. through the legacy default
    /// stream or another thread in global mode (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`).
    Implicit,
    /// Two independent captures were merged (`CUDA_ERROR_STREAM_CAPTURE_MERGE`).
    Merge,
    /// The capture was ended on another stream than its origin
    /// (`CUDA_ERROR_STREAM_CAPTURE_UNMATCHED`).
    Unmatched,
    /// A copy from or to pageable host memory, which a graph cannot replay.
    PageableMemory,
    /// The origin stream was already capturing when the capture began.
    AlreadyCapturing,
    /// A [`crate::CaptureMode::Global`] capture was begun on a thread that is running one
    /// already (e.g. from a hand-written pipeline's `issue`): the second would wait for the
    /// first, which cannot end before it, so it is refused before it begins.
    NestedGlobalCapture,
    /// The capture was ended by other code while the pipeline's statements were issued (e.g.
    /// cudarc's `end_capture` on the origin, from a statement's expression or another thread):
    /// a graph of that code may hold what the statements captured.
    EndedElsewhere,
}

impl CaptureFault {
    /// What happened and what to do, in the pipeline's terms.
    pub fn explanation(&self) -> &'static str {
        match self {
            CaptureFault::SynchronizeWhileCapturing => {
                "a stream was synchronized while it was being captured (nothing runs during a capture, so there is nothing to wait for); synchronize after the capture, e.g. after launching the graph"
            }
            CaptureFault::QueryWhileCapturing => {
                "a stream was queried while it was being captured; query it after the capture"
            }
            CaptureFault::ExternalEvent => {
                "a stream waited on an event recorded outside the capture; record the event inside the pipeline, or wait for it on the origin before capturing"
            }
            CaptureFault::CapturedEvent => {
                "an event recorded inside the capture was queried, synchronized or timed; only streams may wait on it until the graph runs"
            }
            CaptureFault::Unjoined => {
                "work forked from the capture was not joined back into the origin stream; make every stream that waited on captured work join the origin (e.g. `wait_stream`) before the pipeline ends"
            }
            CaptureFault::WrongThread => {
                "the capture was ended on another thread than the one that began it; end it on the same thread or capture in `CaptureMode::Relaxed`"
            }
            CaptureFault::Unsupported => {
                "a call that cannot be captured was made (e.g. an allocation, a synchronous copy, or a synchronize or query of a stream, also one not captured); move it out of the pipeline or use `CaptureMode::Relaxed` if it is safe"
            }
            CaptureFault::Invalidated => {
                "an earlier illegal call invalidated the capture (e.g. another thread's allocation or synchronization in `CaptureMode::Global`); make that call before or after the capture"
            }
            CaptureFault::Implicit => {
                "a call would have made implicit dependencies on the capture (the legacy default stream, or another thread in `CaptureMode::Global`); use streamgraph's non-blocking streams or `CaptureMode::ThreadLocal`"
            }
            CaptureFault::Merge => {
                "two independent captures were merged by a wait; do not wait across captures"
            }
            CaptureFault::Unmatched => {
                "the capture was ended on another stream than the one it began on"
            }
            CaptureFault::PageableMemory => {
                "a copy names pageable host memory (a slice or `Vec`), which a graph cannot replay; use a `PinnedBuffer`"
            }
            CaptureFault::AlreadyCapturing => {
                "the origin stream is already capturing; end that capture first or capture on another stream"
            }
            CaptureFault::EndedElsewhere => {
                "the capture was ended by other code (e.g. cudarc's `end_capture` on the origin stream) while the pipeline's statements were issued; what they captured is kept allocated for good, and pinned buffers they copied refuse host access from now on, since that code's graph may still use them; do not end or begin captures on a stream a pipeline is being captured on"
            }
            CaptureFault::NestedGlobalCapture => {
                "a global-mode capture was begun inside another global-mode capture on the same thread (e.g. by a pipeline's `issue` capturing another stream), which would wait for the outer one forever; capture the inner pipeline in `CaptureMode::ThreadLocal` or `CaptureMode::Relaxed`, or outside the other capture's `issue`"
            }
        }
    }
}

/// The library a missing-library error wanted, in one short phrase: the first name tried and
/// how many others were (all of them are in the error's `searched` field).
fn wanted(searched: &str) -> String {
    let mut names = searched.split(", ").filter(|n| !n.is_empty());
    match (names.next(), names.count()) {
        (None, _) => "the library".to_owned(),
        (Some(first), 0) => format!("`{first}`"),
        (Some(first), more) => format!("`{first}` (or {more} other name(s) tried)"),
    }
}

/// The message of [`Error::Capture`].
fn describe_fault(
    fault: &CaptureFault,
    statement: Option<&'static Statement>,
    after: Option<&'static Statement>,
    pipeline: &Option<&'static str>,
) -> String {
    let mut out = String::from("capture");
    if let Some(name) = pipeline {
        let _ = write!(out, " of pipeline `{name}`");
    }
    out.push_str(" failed");
    if let Some(s) = statement {
        let _ = write!(out, " in statement `{}` at {}", s.text, s.location);
    } else if let Some(s) = after {
        let _ = write!(out, " after statement `{}` at {}", s.text, s.location);
    }
    let _ = write!(out, ": {}", fault.explanation());
    out
}

/// Why an executable graph refused an update ([`Error::UpdateRejected`]); the driver's
/// `CUgraphExecUpdateResult`, in the pipeline's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UpdateRejection {
    /// Nodes or edges were added or removed: the pipeline issued a different program.
    TopologyChanged,
    /// An operation changed kind (e.g. a launch became a copy).
    NodeTypeChanged,
    /// A launch calls another kernel.
    FunctionChanged,
    /// Parameters changed in a way that cannot be updated (e.g. a copy between other
    /// devices or kinds of memory).
    ParametersChanged,
    /// Something about the node cannot be updated at all.
    NotSupported,
    /// A launch's kernel changed in a way that cannot be updated.
    UnsupportedFunctionChange,
    /// A launch's attributes changed.
    AttributesChanged,
    /// The graph holds temporaries: their memory nodes keep the addresses they were captured
    /// with, so a new capture cannot be applied in place.
    MemoryNodes,
    /// The driver refused without a specific reason.
    Other,
}

impl UpdateRejection {
    /// What changed, in the pipeline's terms.
    pub fn explanation(&self) -> &'static str {
        match self {
            UpdateRejection::TopologyChanged => "topology changed: the pipeline issued other operations or other dependencies than the graph holds",
            UpdateRejection::NodeTypeChanged => "an operation changed kind",
            UpdateRejection::FunctionChanged => "kernel node's function changed",
            UpdateRejection::ParametersChanged => "parameters not updatable (e.g. a copy between other kinds of memory or devices)",
            UpdateRejection::NotSupported => "the node cannot be updated",
            UpdateRejection::UnsupportedFunctionChange => "kernel node's function changed in a way that cannot be updated",
            UpdateRejection::AttributesChanged => "kernel node's launch attributes changed",
            UpdateRejection::MemoryNodes => "the pipeline has temporaries, whose memory nodes keep the addresses they were captured with: a new capture cannot be applied in place; `update_args` keeps them (scalar and buffer changes of launches), `reinstantiate_on_topology_change(true)` instantiates the new capture instead",
            UpdateRejection::Other => "the driver refused the update",
        }
    }
}

/// The message of [`Error::UpdateRejected`].
fn describe_rejection(reason: &UpdateRejection, statement: Option<&'static Statement>) -> String {
    let mut out = format!("graph update rejected: {}", reason.explanation());
    if let Some(s) = statement {
        let _ = write!(out, " at statement `{}` at {}", s.text, s.location);
    }
    out.push_str("; turn on `GraphExec::reinstantiate_on_topology_change(true)` to instantiate the new graph instead");
    out
}

/// An operation in a verification report: an [`OpRef`] with its index in issue order (the
/// plan's node number, as in [`Graph::ops`](crate::Graph::ops)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpInfo {
    /// Index in issue order.
    pub index: usize,
    /// The operation.
    pub op: OpRef,
}

impl fmt::Display for OpInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.op.statement;
        write!(f, "`{}` #{} at {}", s.text, self.op.occurrence, s.location)
    }
}

/// A dependency edge between two operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpEdge {
    /// The operation that must finish first.
    pub from: OpInfo,
    /// The operation that waits for it.
    pub to: OpInfo,
}

impl fmt::Display for OpEdge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {}", self.from, self.to)
    }
}

/// The message of [`Error::GraphMismatch`].
fn format_mismatch(
    pipeline: &str,
    missing: &[OpEdge],
    extra: &[OpEdge],
    problems: &[String],
) -> String {
    let mut out = format!(
        "the captured graph of pipeline `{pipeline}` differs from its happens-before plan: {} missing edge(s), {} extra edge(s)",
        missing.len(),
        extra.len()
    );
    for e in missing {
        let _ = write!(out, "\n  missing: {e}");
    }
    for e in extra {
        let _ = write!(out, "\n  extra: {e}");
    }
    for p in problems {
        let _ = write!(out, "\n  {p}");
    }
    out.push_str("\n  compare the pictures of `Graph::to_dot_beside_plan`; a pipeline must issue the same work on every run");
    out
}

/// Two operations on different streams touching overlapping memory, at least one writing,
/// with no happens-before path between them: their effects depend on timing.
#[derive(Debug, Clone)]
pub struct Race {
    /// The operation issued first.
    pub first: RaceSide,
    /// The operation issued second.
    pub second: RaceSide,
}

/// One operation of a [`Race`] and the access that conflicts.
#[derive(Debug, Clone)]
pub struct RaceSide {
    /// The operation's index in the plan's operations.
    pub op: usize,
    /// Its statement.
    pub statement: &'static Statement,
    /// Which issue of the statement, from 1.
    pub occurrence: u32,
    /// Its stream (index into [`crate::Program::streams`]).
    pub stream: usize,
    /// The stream's name.
    pub stream_name: &'static str,
    /// The conflicting access.
    pub access: BufferAccess,
}

impl Race {
    /// The bytes both sides touch.
    pub fn overlap(&self) -> DeviceRange {
        let (a, b) = (self.first.access.range, self.second.access.range);
        let start = a.ptr.max(b.ptr);
        let end = (a.ptr.saturating_add(a.bytes as u64)).min(b.ptr.saturating_add(b.bytes as u64));
        DeviceRange {
            device: a.device,
            ptr: start,
            bytes: end.saturating_sub(start) as usize,
        }
    }
}

/// Formats races for [`crate::Error::Race`]: for each, both statements and where they are,
/// their streams, the bytes they share, and how to order them.
pub(crate) fn format_races(races: &[Race]) -> String {
    let mut out = match races.len() {
        0 => return "no data race".to_owned(),
        1 => "found 1 data race".to_owned(),
        n => format!("found {n} data races"),
    };
    out.push_str(": operations on different streams touch the same memory, at least one writing, and nothing orders them");
    for (i, race) in races.iter().enumerate() {
        let (a, b) = (&race.first, &race.second);
        let overlap = race.overlap();
        let _ = write!(
            out,
            "\n  {}. {} and {} the {} byte(s) at {:#x}..{:#x} of {}",
            i + 1,
            describe(a),
            describe(b),
            overlap.bytes,
            overlap.ptr,
            overlap.ptr.saturating_add(overlap.bytes as u64),
            memory_name(overlap.device),
        );
        let event = format!("{}_done", a.stream_name);
        let _ = write!(
            out,
            "\n     fix: record an event on `{sa}` after the first and `wait` for it on `{sb}` before the second \
             (e.g. declare `event {event};`, add `{sa}: record {event};` after line {la} and `{sb}: wait {event};` before line {lb})",
            sa = a.stream_name,
            sb = b.stream_name,
            la = a.statement.location.line,
            lb = b.statement.location.line,
        );
    }
    out
}

fn describe(side: &RaceSide) -> String {
    let verb = match side.access.mode {
        AccessMode::Read => "reads",
        AccessMode::Write => "writes",
    };
    let issue = if side.occurrence > 1 {
        format!(" (issue #{})", side.occurrence)
    } else {
        String::new()
    };
    format!(
        "`{}` at {}{issue} on stream `{}` {verb}",
        side.statement.text, side.statement.location, side.stream_name
    )
}

fn memory_name(device: i32) -> String {
    match device {
        DeviceRange::HOST => "host memory".to_owned(),
        DeviceRange::PLANNING => "planning memory".to_owned(),
        d => format!("device {d}"),
    }
}

/// `Result` with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
