//! Executors: issuers that run a pipeline for real (eagerly) or record it (capture).
pub mod capture;
pub mod eager;
