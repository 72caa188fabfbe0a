//! The public entry points of a capture that hand back a [`Graph`]: [`Capture::capture`],
//! [`Capture::run`] with its [`CaptureOutcome`], and [`capture`].

use super::capture::Capture;
use super::{Graph, GraphCore};
use crate::error::{Error, Result};
use crate::issue::Pipeline;
use crate::stream::Stream;

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
    /// Captures `pipeline` into a CUDA graph that owns it.
    ///
    /// Errors: [`Error::Capture`] for capture faults (the capture is ended cleanly),
    /// [`Error::GraphMismatch`] when verification is on and the graph differs from the
    /// plan, [`Error::Race`] when verification is on and the pipeline has races, and the
    /// errors of issuing a statement.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{pipeline, Capture, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let mut capture = Capture::new(&stream); // its side streams and events serve every capture
    /// let graph = capture.capture(Fill::new(&mut x))?; // owns the pipeline, so the borrow of `x`
    /// graph.instantiate()?.replay(&stream, 10)?;
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn capture<P: Pipeline>(&mut self, pipeline: P) -> Result<Graph<P>> {
        let core = GraphCore::capture(self, &pipeline)?;
        Ok(Graph::new(core, pipeline, self.settings()))
    }

    /// Captures `pipeline`, or — with [`Capture::fallback_to_eager`] and a capture fault —
    /// runs it eagerly on the same streams and reports that it did.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{pipeline, Capture, CaptureOutcome, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// match Capture::new(&stream).fallback_to_eager(true).run(Fill::new(&mut x))? {
    ///     CaptureOutcome::Captured(graph) => graph.instantiate()?.launch(&stream)?,
    ///     CaptureOutcome::RanEagerly { fault, .. } => eprintln!("ran eagerly: {fault}"),
    /// }
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn run<P: Pipeline>(&mut self, pipeline: P) -> Result<CaptureOutcome<P>> {
        match GraphCore::capture(self, &pipeline) {
            Ok(core) => Ok(CaptureOutcome::Captured(Graph::new(
                core,
                pipeline,
                self.settings(),
            ))),
            Err(fault @ Error::Capture { .. }) if self.falls_back() => {
                self.run_eagerly(&pipeline)?;
                Ok(CaptureOutcome::RanEagerly { pipeline, fault })
            }
            Err(e) => Err(e),
        }
    }
}

/// Captures `pipeline` on `origin` with the default options ([`Capture::new`]).
///
/// # Examples
///
/// ```no_run
/// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
/// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>) { stream s; s: fill x = 1.0f32; } }
/// let stream = Stream::on(None, 0)?;
/// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
/// let exec = capture(&stream, Fill::new(&mut x))?.instantiate()?;
/// exec.replay(&stream, 10)?;
/// # Ok::<(), streamgraph::Error>(())
/// ```
pub fn capture<P: Pipeline>(origin: &Stream, pipeline: P) -> Result<Graph<P>> {
    Capture::new(origin).capture(pipeline)
}
