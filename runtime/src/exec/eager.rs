//! Eager execution.
/// Eager issuer.
#[derive(Debug)]
pub struct Eager {}
