//! Cross-statement rules, one function per rule.
//!
//! The data-race rule is built on [`race`], a pure analysis over a tiny model of the program
//! (streams, events, operations with their buffer accesses, records, waits, `wait_stream`s,
//! loops and branches) that follows the happens-before model (README "The model") exactly.

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod agree_tests;
mod blocks;
mod collectives;
mod data_races;
mod names;
pub mod race;
mod temps;
#[cfg(test)]
mod temps_tests;
#[cfg(test)]
mod tests;
mod waits;
mod writes;

use crate::model::{Errors, Program};

#[cfg(test)]
pub use data_races::MAX_RACE_DIAGNOSTICS;

/// Checks every rule, recording each violation in `errors`.
pub fn validate(program: &Program, errors: &mut Errors) {
    let before = errors.count();
    collectives::collectives_are_well_formed(program, errors);
    let collectives_well_formed = errors.count() == before;
    names::at_least_one_stream(program, errors);
    names::unique_names(program, errors);
    waits::waits_follow_records(program, errors);
    waits::wait_stream_names_another_stream(program, errors);
    writes::writes_go_through_mut_parameters(program, errors);
    blocks::bodies_hold_only_device_work(program, errors);
    blocks::block_events_stay_in_their_body(program, errors);
    blocks::signalled_loops_are_signalled_by_kernels(program, errors);
    temps::temps_are_written_before_read(program, errors);
    // A malformed collective is resolved as far as it goes (its root, its reduction): its
    // races wait for the fix, as those of a statement with an unknown name do.
    if collectives_well_formed {
        data_races::no_static_races(program, errors);
    }
}

/// `line:column` of a span (1-based column, as the runtime's `Location`).
pub fn line_column(span: proc_macro2::Span) -> (u32, u32) {
    let start = span.start();
    (start.line as u32, start.column as u32 + 1)
}
