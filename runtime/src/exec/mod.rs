//! Executors: issuers that run a pipeline for real (eagerly) or record it (capture).
pub(crate) mod book;
pub mod capture;
pub mod eager;
