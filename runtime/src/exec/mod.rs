//! Executors: issuers that run a pipeline for real (eagerly) or record it (capture).
use std::sync::OnceLock;

pub mod eager;
pub(crate) mod expect;
pub(crate) mod frame;
pub(crate) mod record;

/// Whether executors check by default: [`crate::Eager`] builds each pipeline's plan and refuses
/// races before a run, [`crate::Capture`] also compares each captured graph with the plan.
/// On in debug builds and off in release builds, like overflow checks; the environment
/// variable `STREAMGRAPH_CHECKS` (`1` or `0`, read once) overrides that. `Eager::check` and
/// `Capture::check` set it per executor.
pub(crate) fn checks_by_default() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        match std::env::var("STREAMGRAPH_CHECKS")
            .as_deref()
            .map(str::trim)
        {
            Ok("1" | "on" | "true") => true,
            Ok("0" | "off" | "false") => false,
            _ => cfg!(debug_assertions),
        }
    })
}
