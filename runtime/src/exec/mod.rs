//! Executors: issuers that run a pipeline for real (eagerly) or record it (capture).
use std::sync::OnceLock;

pub(crate) mod book;
pub mod capture;
pub mod eager;
pub(crate) mod expect;

/// Whether executors check by default: [`crate::Eager`] builds each pipeline's plan and refuses
/// races before a run, [`crate::Capture`] also compares each captured graph with the plan.
/// Off unless the environment variable `STREAMGRAPH_CHECKS` is `1` (read once): the same in
/// debug and release builds. `Eager::check` and `Capture::check` set it per executor.
pub(crate) fn checks_by_default() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("STREAMGRAPH_CHECKS").is_ok_and(|v| matches!(v.trim(), "1" | "on" | "true"))
    })
}
