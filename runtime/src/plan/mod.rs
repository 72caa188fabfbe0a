//! The happens-before plan (placeholder until the plan lands).
use crate::error::Error;
use crate::issue::Pipeline;

/// The happens-before model of one issue of a pipeline.
#[derive(Debug)]
pub struct Plan {}

impl Plan {
    /// Builds the model of `pipeline` by issuing it through the GPU-free planner.
    pub fn build<P: Pipeline + ?Sized>(_pipeline: &P) -> Result<Plan, Error> {
        Ok(Plan {})
    }

    /// Fails with [`Error::Race`] listing every unordered conflicting pair of operations.
    pub fn check_races(&self) -> Result<(), Error> {
        Ok(())
    }
}

/// Two operations on different streams touching overlapping memory, one writing, unordered.
#[derive(Debug)]
pub struct Race {}

/// Formats races for [`Error::Race`].
pub fn format_races(_races: &[Race]) -> String {
    String::new()
}
