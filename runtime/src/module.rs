//! Kernels.
/// A module.
#[derive(Debug)]
pub struct Module {}
/// A kernel.
#[derive(Debug)]
pub struct Kernel {}
