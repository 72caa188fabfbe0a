//! [`compare`]: a pipeline's eager runs against its captured graph's replays, outputs compared
//! element by element.

use std::any::Any;
use std::fmt;

use super::tolerance::{Compared, Tolerance};
use crate::error::{Error, Mismatch, Result};
use crate::exec::eager::Eager;
use crate::graph::Capture;
use crate::graph::VerifyReport;
use crate::issue::Pipeline;
use crate::stream::Stream;

/// Where the first difference between two outputs is: `(index or None for lengths, eager,
/// replayed, elements differing)`.
type Difference = (Option<usize>, String, String, usize);

/// An output as read: its elements (a `Vec<T>`, type-erased) and their count.
struct Read {
    values: Box<dyn Any>,
    len: usize,
}

/// Reads an output from the state.
type ReadFn<'a, S> = Box<dyn FnMut(&S) -> Result<Read> + 'a>;
/// Builds the pipeline from the state and hands it to the runner.
type BuildFn<'a, S> = Box<dyn FnMut(&mut S, &mut Runner<'_>) -> Result<()> + 'a>;
/// Brings the state back to its inputs.
type ResetFn<'a, S> = Box<dyn FnMut(&mut S) -> Result<()> + 'a>;

/// An output, and how to read and compare it.
struct Output<'a, S> {
    name: String,
    read: ReadFn<'a, S>,
    differ: fn(&dyn Any, &dyn Any, Tolerance) -> Option<Difference>,
}

fn differ<T: Compared>(eager: &dyn Any, replayed: &dyn Any, t: Tolerance) -> Option<Difference> {
    let (Some(eager), Some(replayed)) = (
        eager.downcast_ref::<Vec<T>>(),
        replayed.downcast_ref::<Vec<T>>(),
    ) else {
        return Some((None, "?".into(), "?".into(), 0));
    };
    if eager.len() != replayed.len() {
        return Some((
            None,
            format!("{} element(s)", eager.len()),
            format!("{} element(s)", replayed.len()),
            eager.len().abs_diff(replayed.len()),
        ));
    }
    let mut differing = eager
        .iter()
        .zip(replayed)
        .enumerate()
        .filter(|(_, (a, b))| !a.matches(b, t));
    let (index, (a, b)) = differing.next()?;
    Some((
        Some(index),
        format!("{a:?}"),
        format!("{b:?}"),
        1 + differing.count(),
    ))
}

/// How [`Runner::pipeline`] issues the pipeline it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// One eager run.
    Eager,
    /// A capture, its verification, and this many replays of one instantiation.
    Replay(usize),
}

/// Runs the pipeline the closure of [`compare`] builds: eagerly, or captured, verified and
/// replayed, as the comparison's phase asks.
#[derive(Debug)]
pub struct Runner<'r> {
    side: Side,
    origin: &'r Stream,
    eager: &'r mut Eager,
    capture: &'r mut Capture,
    /// The pipeline's name and the verification, once a pipeline was given.
    issued: Option<(&'static str, Option<VerifyReport>)>,
}

impl Runner<'_> {
    /// Issues `pipeline` as this phase asks and waits for it: one eager run, or a capture, a
    /// [`Graph::verify`](crate::Graph::verify), an instantiation and the phase's replays.
    /// Call it exactly once per call of the closure.
    pub fn pipeline<P: Pipeline>(&mut self, pipeline: P) -> Result<()> {
        if self.issued.is_some() {
            return Err(Error::InvalidArgument(
                "the closure given to `testing::compare` issued two pipelines in one call; build and issue exactly one".into(),
            ));
        }
        let name = pipeline.program().name;
        match self.side {
            Side::Eager => {
                self.eager.run(&pipeline)?;
                self.origin.synchronize()?;
                self.issued = Some((name, None));
            }
            Side::Replay(times) => {
                let graph = self.capture.capture(pipeline)?;
                let verified = graph.verify()?;
                let exec = graph.instantiate()?;
                exec.replay(self.origin, times)?;
                self.origin.synchronize()?;
                drop(exec);
                self.issued = Some((name, Some(verified)));
            }
        }
        Ok(())
    }

    /// Whether this call runs the pipeline eagerly (else it is captured and replayed).
    pub fn is_eager(&self) -> bool {
        self.side == Side::Eager
    }
}

/// What a successful [`Compare::run`] checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The pipeline's name.
    pub pipeline: &'static str,
    /// Eager runs, and replays of one graph, compared at the end (plus one run against one
    /// replay when this is more than 1).
    pub runs: usize,
    /// The captured graph's verification against the plan.
    pub verified: VerifyReport,
    /// The outputs compared: name and length.
    pub outputs: Vec<(String, usize)>,
    /// How elements were compared.
    pub tolerance: Tolerance,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outputs: Vec<String> = self
            .outputs
            .iter()
            .map(|(name, len)| format!("`{name}` ({len})"))
            .collect();
        write!(
            f,
            "pipeline `{}`: graph verified ({} operation(s), {} edge(s)); outputs {} equal ({}) after 1",
            self.pipeline,
            self.verified.operations,
            self.verified.edges,
            outputs.join(", "),
            self.tolerance
        )?;
        if self.runs > 1 {
            write!(f, " and after {}", self.runs)?;
        }
        f.write_str(" eager run(s) and graph replay(s)")
    }
}

/// The builder [`compare`] returns; [`Compare::run`] runs the comparison.
pub struct Compare<'a, S> {
    origin: Stream,
    state: &'a mut S,
    build: BuildFn<'a, S>,
    reset: Option<ResetFn<'a, S>>,
    outputs: Vec<Output<'a, S>>,
    runs: usize,
    tolerance: Tolerance,
}

impl<S> fmt::Debug for Compare<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compare")
            .field("origin", &self.origin)
            .field(
                "outputs",
                &self.outputs.iter().map(|o| &o.name).collect::<Vec<_>>(),
            )
            .field("runs", &self.runs)
            .field("tolerance", &self.tolerance)
            .finish_non_exhaustive()
    }
}

/// Compares a pipeline's eager runs with its captured graph's replays on `origin`.
///
/// `build` makes the pipeline from the state and hands it to the [`Runner`]
/// (`run.pipeline(P::new(&mut s.x, …))`). [`Compare::run`] then, with `N` =
/// [`Compare::replays`] (default 3):
///
/// 1. resets the state ([`Compare::reset`]), runs the pipeline eagerly `N` times, reading
///    the outputs after the first run and after the last;
/// 2. resets, captures the pipeline, verifies the graph against the plan
///    ([`Graph::verify`](crate::Graph::verify)), replays it once and compares the outputs with
///    the first eager run's;
/// 3. when `N > 1`: resets, captures again, replays `N` times, and compares with the last
///    eager run's.
///
/// Every failure is a typed error: the run's, the capture's, [`Error::GraphMismatch`] from the
/// verification, or [`Error::OutputMismatch`] naming the output, the number of runs and the
/// first differing index with both elements.
pub fn compare<'a, S, F>(origin: &Stream, state: &'a mut S, build: F) -> Compare<'a, S>
where
    F: FnMut(&mut S, &mut Runner<'_>) -> Result<()> + 'a,
{
    Compare {
        origin: origin.clone(),
        state,
        build: Box::new(build),
        reset: None,
        outputs: Vec::new(),
        runs: 3,
        tolerance: Tolerance::EXACT,
    }
}

impl<'a, S> Compare<'a, S> {
    /// Brings the state back to its inputs before each side runs (e.g. copies the input into
    /// a buffer the pipeline updates in place). Without it, each side starts from the state
    /// the previous one left, which is right only for pipelines whose outputs depend on their
    /// inputs alone.
    pub fn reset(mut self, reset: impl FnMut(&mut S) -> Result<()> + 'a) -> Self {
        self.reset = Some(Box::new(reset));
        self
    }

    /// An output to compare: `read` copies it to the host (e.g. `|s| s.y.to_vec()`).
    pub fn output<T: Compared>(
        mut self,
        name: &str,
        mut read: impl FnMut(&S) -> Result<Vec<T>> + 'a,
    ) -> Self {
        self.outputs.push(Output {
            name: name.to_owned(),
            read: Box::new(move |s| {
                let values = read(s)?;
                Ok(Read {
                    len: values.len(),
                    values: Box::new(values),
                })
            }),
            differ: differ::<T>,
        });
        self
    }

    /// `N`: how many eager runs are compared with how many replays of one graph (default 3;
    /// at least 1).
    pub fn replays(mut self, n: usize) -> Self {
        self.runs = n.max(1);
        self
    }

    /// How floats are compared (default [`Tolerance::EXACT`]: bitwise).
    pub fn tolerance(mut self, tolerance: Tolerance) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// Runs the comparison (see [`compare`]).
    pub fn run(mut self) -> Result<Report> {
        if self.outputs.is_empty() {
            return Err(Error::InvalidArgument(
                "`testing::compare` was given no output to compare; name at least one with `.output(name, |s| s.buffer.to_vec())`".into(),
            ));
        }
        let mut eager = Eager::new(&self.origin);
        let mut capture = Capture::new(&self.origin);
        let n = self.runs;

        // 1. Eager runs.
        self.do_reset()?;
        let mut name = "?";
        let mut first = Vec::new();
        for run in 1..=n {
            name = self.issue(Side::Eager, &mut eager, &mut capture)?.0;
            if run == 1 {
                first = self.read()?;
            }
        }
        let last = if n > 1 { Some(self.read()?) } else { None };

        // 2. One replay against one run; 3. N replays against N runs.
        let verified = self.replay_and_check(name, 1, &first, &mut eager, &mut capture)?;
        if let Some(last) = &last {
            self.replay_and_check(name, n, last, &mut eager, &mut capture)?;
        }
        let outputs = self
            .outputs
            .iter()
            .zip(&first)
            .map(|(o, read)| (o.name.clone(), read.len))
            .collect();
        Ok(Report {
            pipeline: name,
            runs: n,
            verified,
            outputs,
            tolerance: self.tolerance,
        })
    }

    /// Resets, captures, verifies, replays `times` times and compares with `expected`.
    fn replay_and_check(
        &mut self,
        name: &'static str,
        times: usize,
        expected: &[Read],
        eager: &mut Eager,
        capture: &mut Capture,
    ) -> Result<VerifyReport> {
        self.do_reset()?;
        let (_, verified) = self.issue(Side::Replay(times), eager, capture)?;
        let replayed = self.read()?;
        self.check(name, times, expected, &replayed)?;
        verified.ok_or_else(|| Error::InvalidArgument("the captured graph was not verified".into()))
    }

    fn do_reset(&mut self) -> Result<()> {
        match self.reset.as_mut() {
            Some(reset) => reset(self.state),
            None => Ok(()),
        }
    }

    fn issue(
        &mut self,
        side: Side,
        eager: &mut Eager,
        capture: &mut Capture,
    ) -> Result<(&'static str, Option<VerifyReport>)> {
        let mut runner = Runner {
            side,
            origin: &self.origin,
            eager,
            capture,
            issued: None,
        };
        (self.build)(self.state, &mut runner)?;
        runner.issued.ok_or_else(|| {
            Error::InvalidArgument(
                "the closure given to `testing::compare` issued no pipeline; call `run.pipeline(…)` with the pipeline it builds".into(),
            )
        })
    }

    fn read(&mut self) -> Result<Vec<Read>> {
        let state = &*self.state;
        self.outputs.iter_mut().map(|o| (o.read)(state)).collect()
    }

    fn check(
        &self,
        pipeline: &'static str,
        runs: usize,
        eager: &[Read],
        replayed: &[Read],
    ) -> Result<()> {
        for ((output, e), r) in self.outputs.iter().zip(eager).zip(replayed) {
            if let Some((index, eager, replayed, differing)) =
                (output.differ)(e.values.as_ref(), r.values.as_ref(), self.tolerance)
            {
                return Err(Error::OutputMismatch(Box::new(Mismatch {
                    pipeline,
                    output: output.name.clone(),
                    runs,
                    index,
                    eager,
                    replayed,
                    differing,
                    len: e.len,
                    compared: self.tolerance.to_string(),
                })));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_difference_is_found_with_its_index_and_the_count() {
        let a: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0];
        let b: Vec<f32> = vec![1.0, 2.5, 3.0, 4.5];
        assert_eq!(
            differ::<f32>(&a, &b, Tolerance::EXACT),
            Some((Some(1), "2.0".into(), "2.5".into(), 2))
        );
        assert_eq!(differ::<f32>(&a, &b, Tolerance::absolute(0.5)), None);
        assert_eq!(differ::<f32>(&a, &a.clone(), Tolerance::EXACT), None);
        let short: Vec<f32> = vec![1.0];
        assert_eq!(
            differ::<f32>(&a, &short, Tolerance::EXACT),
            Some((None, "4 element(s)".into(), "1 element(s)".into(), 3))
        );
        let ints: Vec<u32> = vec![7, 8];
        assert_eq!(
            differ::<u32>(&ints, &vec![7u32, 9], Tolerance::absolute(5.0)),
            Some((Some(1), "8".into(), "9".into(), 1))
        );
    }

    #[test]
    fn a_report_says_what_was_compared() {
        let report = Report {
            pipeline: "Scale",
            runs: 3,
            verified: VerifyReport {
                pipeline: "Scale",
                operations: 1,
                edges: 0,
            },
            outputs: vec![("x".into(), 1000)],
            tolerance: Tolerance::EXACT,
        };
        assert_eq!(
            report.to_string(),
            "pipeline `Scale`: graph verified (1 operation(s), 0 edge(s)); outputs `x` (1000) equal (bitwise) after 1 and after 3 eager run(s) and graph replay(s)"
        );
        assert_eq!(
            Tolerance::relative(1e-6).to_string(),
            "within 0e0 absolute + 1e-6 relative"
        );
    }
}
