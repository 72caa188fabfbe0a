//! Streams.
/// A stream.
#[derive(Debug)]
pub struct Stream {}
/// The current stream.
pub fn current_stream() {}
