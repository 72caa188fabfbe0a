//! The eager issuer: [`crate::Eager`] (`eager.rs`) issues a pipeline's statements on real
//! streams, with the streams, events and fork/join bookkeeping of its issuing frame
//! (`frame.rs`), through one issuing path that tells a recorder what it issued (`record.rs`;
//! checked runs compare each statement with the plan, `expect.rs`). A graph is made by
//! capturing: the capture, its book, block and collective capture, verification and DOT live
//! in `graph/`, which plugs its recorder into this path; `exec/` issues.
use std::sync::OnceLock;

pub(crate) mod collective;
pub mod eager;
pub(crate) mod expect;
pub(crate) mod frame;
mod lane;
pub(crate) mod record;
mod temps;

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
