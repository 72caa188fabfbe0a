//! Observability: what a pipeline issues, shown to `tracing` subscribers (the `tracing`
//! feature) and to Nsight Systems as NVTX ranges (the `nvtx` feature).
//!
//! Executors call one hook per pipeline ([`pipeline`]: a run, a capture or a plan) and one per
//! statement issued ([`statement`]). Each returns a scope that ends the span or range when
//! dropped. Without either feature both hooks and their scopes are empty and compile to
//! nothing; with them, a hook costs a check of two statics (whether a subscriber takes spans
//! of the level, whether a profiler listens for NVTX ranges) when no one is listening.
//!
//! The `tracing` spans: `pipeline` (fields `name`, `mode` = `run`, `capture` or `plan`,
//! `location`) at level INFO and `statement` (fields `pipeline`, `statement` = the statement's
//! text, `location`, `stream` = the declared stream's name) at level DEBUG, under the `streamgraph`
//! target. The NVTX ranges are named `Pipeline (mode)` and `stream: statement`.

use crate::program::{Program, Statement};

/// What a pipeline-level scope covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// An eager run.
    Run,
    /// A capture into a CUDA graph.
    Capture,
    /// A plan built without issuing anything.
    Plan,
}

impl Mode {
    #[cfg_attr(not(any(feature = "tracing", feature = "nvtx")), allow(dead_code))]
    fn as_str(self) -> &'static str {
        match self {
            Mode::Run => "run",
            Mode::Capture => "capture",
            Mode::Plan => "plan",
        }
    }
}

/// Open while a pipeline or a statement is issued; dropping it ends the span and the range.
/// `None` while no one listens: then a hook is its checks alone, and dropping it a test of
/// one word.
#[must_use]
#[derive(Debug)]
pub(crate) struct Scope {
    _active: Option<Active>,
}

/// A scope someone listens to: its span (when a subscriber takes it) and whether an NVTX
/// range was opened.
#[derive(Debug)]
struct Active {
    #[cfg(feature = "tracing")]
    _span: Option<tracing::span::EnteredSpan>,
    #[cfg(feature = "nvtx")]
    nvtx: bool,
}

impl Drop for Active {
    #[inline(never)]
    fn drop(&mut self) {
        #[cfg(feature = "nvtx")]
        if self.nvtx {
            crate::ffi::nvtx::pop();
        }
    }
}

/// Whether a subscriber takes the spans of a statement (DEBUG) or of a pipeline (INFO), or a
/// profiler listens for NVTX ranges.
#[inline(always)]
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
fn listened(statement: bool) -> bool {
    #[cfg(feature = "tracing")]
    {
        let enabled = if statement {
            tracing::level_enabled!(tracing::Level::DEBUG)
        } else {
            tracing::level_enabled!(tracing::Level::INFO)
        };
        if enabled {
            return true;
        }
    }
    nvtx_available()
}

/// The hook of a pipeline being run, captured or planned.
#[inline]
pub(crate) fn pipeline(program: &'static Program, mode: Mode) -> Scope {
    if !listened(false) {
        return Scope { _active: None };
    }
    pipeline_scope(program, mode)
}

#[cold]
#[inline(never)]
#[cfg_attr(
    not(any(feature = "tracing", feature = "nvtx")),
    allow(unused_variables)
)]
fn pipeline_scope(program: &'static Program, mode: Mode) -> Scope {
    Scope {
        _active: Some(Active {
            #[cfg(feature = "tracing")]
            _span: tracing::level_enabled!(tracing::Level::INFO).then(|| {
                tracing::info_span!(
                    target: "streamgraph",
                    "pipeline",
                    name = program.name,
                    mode = mode.as_str(),
                    location = %program.location,
                )
                .entered()
            }),
            #[cfg(feature = "nvtx")]
            nvtx: crate::ffi::nvtx::push_with(|| format!("{} ({})", program.name, mode.as_str())),
        }),
    }
}

/// The hook of one statement issued: `program()` is the pipeline it belongs to, when known
/// (asked only when someone listens). Inlined into every issue, so that with no one listening
/// it is the checks alone.
#[inline(always)]
pub(crate) fn statement(
    program: impl FnOnce() -> Option<&'static Program>,
    stmt: &'static Statement,
) -> Scope {
    if !listened(true) {
        return Scope { _active: None };
    }
    statement_scope(program(), stmt)
}

#[cold]
#[inline(never)]
#[cfg_attr(
    not(any(feature = "tracing", feature = "nvtx")),
    allow(unused_variables)
)]
fn statement_scope(program: Option<&'static Program>, stmt: &'static Statement) -> Scope {
    #[cfg(any(feature = "tracing", feature = "nvtx"))]
    let stream = program
        .and_then(|p| p.streams.get(stmt.stream))
        .map_or("?", |s| s.name);
    Scope {
        _active: Some(Active {
            #[cfg(feature = "tracing")]
            _span: tracing::level_enabled!(tracing::Level::DEBUG).then(|| {
                tracing::debug_span!(
                    target: "streamgraph",
                    "statement",
                    pipeline = program.map_or("?", |p| p.name),
                    statement = stmt.text,
                    location = %stmt.location,
                    stream = stream,
                )
                .entered()
            }),
            #[cfg(feature = "nvtx")]
            nvtx: crate::ffi::nvtx::push_with(|| format!("{stream}: {}", stmt.text)),
        }),
    }
}

/// Whether NVTX ranges are emitted: the `nvtx` feature is on and the NVTX library loaded.
#[inline(always)]
pub(crate) fn nvtx_available() -> bool {
    #[cfg(feature = "nvtx")]
    return crate::ffi::nvtx::available();
    #[cfg(not(feature = "nvtx"))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Location, StatementKind, StreamDecl};

    static STREAMS: [StreamDecl; 1] = [StreamDecl {
        name: "main",
        location: Location::UNKNOWN,
    }];
    static STATEMENTS: [Statement; 1] = [Statement {
        id: 0,
        stream: 0,
        kind: StatementKind::Host,
        text: "main: host f",
        accesses: &[],
        location: Location::UNKNOWN,
    }];
    static PROGRAM: Program = Program {
        name: "Traced",
        streams: &STREAMS,
        events: &[],
        statements: &STATEMENTS,
        temps: &[],
        location: Location::UNKNOWN,
    };

    #[test]
    fn hooks_nest_and_end_without_a_subscriber_or_an_nvtx_library() {
        // Without a listener (and, on a machine without CUDA, without an NVTX library) the
        // scopes open and close quietly, in any nesting.
        let outer = pipeline(&PROGRAM, Mode::Run);
        for _ in 0..3 {
            let _s = statement(|| Some(&PROGRAM), &STATEMENTS[0]);
        }
        let _s = statement(|| None, &STATEMENTS[0]);
        drop(outer);
        let _ = nvtx_available();
        assert_eq!(Mode::Capture.as_str(), "capture");
    }
}
