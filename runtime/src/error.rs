//! The runtime's one error type.

use crate::program::{Location, Statement};

/// Everything that can go wrong in the runtime. Messages say what went wrong, where (the
/// pipeline statement and its source location when there is one) and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library could not be loaded.
    #[error("no CUDA driver found: looked for {searched}; install the NVIDIA driver or run on a machine with a GPU")]
    NoDriver {
        /// The library names that were tried.
        searched: String,
    },
    /// NVRTC (the run-time CUDA C compiler) could not be loaded.
    #[error("NVRTC not found: looked for {searched}; install the CUDA toolkit's NVRTC or load PTX instead")]
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
    #[error("{}", crate::plan::format_races(.0))]
    Race(Vec<crate::plan::Race>),
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
    #[error("{}", crate::exec::capture::describe_fault(.fault, *.statement, *.after, .pipeline))]
    Capture {
        /// What went wrong.
        fault: crate::exec::capture::CaptureFault,
        /// The statement being issued when it happened, when there is one.
        statement: Option<&'static Statement>,
        /// The last statement issued before it happened, when the fault came from code
        /// between statements (or from the end of the capture).
        after: Option<&'static Statement>,
        /// The pipeline's name, when known.
        pipeline: Option<&'static str>,
    },
    /// A captured CUDA graph's dependencies differ from the pipeline's happens-before plan.
    #[error("{}", crate::graph::format_mismatch(.pipeline, .missing, .extra, .problems))]
    GraphMismatch {
        /// The pipeline's name.
        pipeline: &'static str,
        /// Edges of the plan that the captured graph lacks.
        missing: Vec<crate::graph::OpEdge>,
        /// Edges of the captured graph that the plan does not have.
        extra: Vec<crate::graph::OpEdge>,
        /// Other differences: nodes that map to no operation, orderings (reachability) that
        /// differ, operation counts.
        problems: Vec<String>,
    },
    /// An executable graph refused an update with a newly captured graph.
    #[error("{}", crate::graph::describe_rejection(.reason, *.statement))]
    UpdateRejected {
        /// Why the driver refused.
        reason: crate::graph::UpdateRejection,
        /// The statement whose node the driver named, when it named one.
        statement: Option<&'static Statement>,
    },
}

impl Error {
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

    /// A failed driver call. Failures that break a capture's rules (on this thread or, in
    /// global mode, on another thread that is capturing) become [`Error::Capture`], so they
    /// are explained in capture terms wherever they surface.
    pub(crate) fn driver(call: &'static str, source: cudarc::driver::DriverError) -> Error {
        match crate::exec::capture::CaptureFault::from_code(source.0) {
            Some(fault) => Error::Capture {
                fault,
                statement: None,
                after: None,
                pipeline: None,
            },
            None => Error::Driver { call, source },
        }
    }
}

/// `Result` with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::{sys::CUresult, DriverError};

    #[test]
    fn capture_rule_violations_become_capture_errors_wherever_they_surface() {
        let e = Error::driver(
            "cuMemAlloc",
            DriverError(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
        );
        assert!(matches!(e, Error::Capture { .. }), "{e:?}");
        let e = Error::driver(
            "cuStreamSynchronize",
            DriverError(CUresult::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT),
        );
        assert!(matches!(e, Error::Capture { .. }), "{e:?}");
        let e = Error::driver(
            "cuMemAlloc",
            DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY),
        );
        assert!(
            matches!(
                e,
                Error::Driver {
                    call: "cuMemAlloc",
                    ..
                }
            ),
            "{e:?}"
        );
    }
}
