//! Events.
/// A CUDA event.
#[derive(Debug)]
pub struct Event {}
