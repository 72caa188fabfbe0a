//! Executors: issuers that run a pipeline for real.
pub mod eager;
