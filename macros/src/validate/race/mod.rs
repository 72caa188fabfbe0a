//! The static race analysis: a pure function over a tiny model of a program.
//!
//! Straight-line programs follow the happens-before model (README "The model") exactly (frontiers per stream, snapshots per
//! event; at the start every stream's frontier is empty, as after the fork from the
//! origin). `straight_line_races`, the direct transcription the tests compare with, reports
//! every unordered conflicting pair.
//!
//! With control flow, [`certain_races`] reports a pair of statements only when it races on
//! **every** execution in which both run, where an execution takes either branch of each `if`
//! instance and runs each `for` instance either not at all or at least twice (so a loop body
//! is checked against its own next iteration, and a loop that happens to run once does not
//! excuse a loop-carried race). Accesses to sub-ranges (`whole == false`) are never reported:
//! only the run-time plan knows their addresses.
//!
//! The executions are never enumerated. Two passes decide the pairs:
//!
//! 1. **Over all paths at once.** One abstract state per program point: which statements may
//!    have run, and per stream and event which statements' latest runs may be ordered before
//!    it (exact over all paths) and may not be (over-approximated). `if`s join both branches;
//!    a loop's state is iterated to its fixed point, resuming from the previous visit's: a few
//!    passes over the body (each pass can only add facts, carried along the body's own
//!    record/wait chains), never a number of passes that grows with the stream count. Each
//!    statement keeps the facts about every conflicting partner as it is issued. Work:
//!    statements × (conflicting partners + streams + events) per pass. With the structure of
//!    the program (which statements always run in the same iteration, which can be kept apart)
//!    this decides nearly every pair: a race unordered on every path, a pair that some
//!    execution runs and orders, a pair that never runs together.
//! 2. **Per undecided pair, exactly.** The pair's own state (the streams and events that the
//!    latest run of each of the two statements reaches, whether each has run, and whether
//!    they have raced) is tiny, so the set of distinct states reachable at each point is
//!    followed, loops to their fixed point (memoised per loop and entry state); only the
//!    streams and events through which ordering can reach the two statements' streams are
//!    kept, and parts of the program that cannot change the state are skipped. Typically a
//!    pair whose first loop iteration races while later ones are ordered ends up here. A pair
//!    whose state set grows past [`MAX_STATES`] at some point is left undecided, as are the
//!    rest once the work of this pass passes [`MAX_PAIR_STEPS`]: the analysis then reports
//!    [`Analysis::complete`] `false`, and the run-time plan check decides those pairs.
//!
//! Pass 1 is sound for both answers (it over-approximates the paths), and pass 2 is exact, so
//! the answers are those of the executions described above (the tests check this against an
//! enumeration of executions, and against pass 2 alone).

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod differential;
#[cfg(test)]
mod enumerate;
mod model;
mod pass1;
mod pass2;
#[cfg(test)]
mod straight_line;
#[cfg(test)]
mod tests;

use model::{Model, Verdict};
use pass1::Pass1;

#[cfg(test)]
pub use straight_line::straight_line_races;

/// One buffer access of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Touch {
    /// Buffer identity (the parameter's index).
    pub buffer: usize,
    /// `true` for a write.
    pub write: bool,
    /// `true` for the whole buffer, `false` for a sub-range.
    pub whole: bool,
}

/// A command of the model (README "The model").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cmd {
    /// `op(stream)`: statement `stmt`, touching `touches`.
    Op {
        stmt: usize,
        stream: usize,
        touches: Vec<Touch>,
    },
    /// `record(event, stream)`.
    Record { stream: usize, event: usize },
    /// `wait(stream, event)`.
    Wait { stream: usize, event: usize },
    /// `wait_stream(stream, other)`.
    WaitStream { stream: usize, other: usize },
}

/// Control flow over commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow {
    /// One command.
    Cmd(Cmd),
    /// A `for` loop's body.
    Loop(Vec<Flow>),
    /// An `if` with its two branches (the second empty without `else`).
    If(Vec<Flow>, Vec<Flow>),
}

/// Two unordered conflicting operations: `first` was issued before `second`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Race {
    /// Statement issued first.
    pub first: usize,
    /// Statement issued second.
    pub second: usize,
    /// The buffer both touch.
    pub buffer: usize,
    /// Whether `first` writes it.
    pub first_writes: bool,
    /// Whether `second` writes it.
    pub second_writes: bool,
    /// Whether `first` comes from an earlier loop iteration than `second` (its statement
    /// is not before `second`'s in the source).
    pub loop_carried: bool,
}

/// What [`certain_races`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    /// The certain races, ordered by (lower statement, higher statement, buffer).
    pub races: Vec<Race>,
    /// `false` when some pair could not be decided within the limits (see the module
    /// documentation); such pairs are not reported and are left to the run-time plan.
    pub complete: bool,
}

/// Distinct states of one pair at one program point before pass 2 gives up on the pair.
pub const MAX_STATES: usize = 4096;
/// State transitions and program nodes pass 2 may visit over all pairs before it gives up on
/// the rest.
pub const MAX_PAIR_STEPS: u64 = 1 << 22;
/// Words pass 1 may touch before the analysis gives up on the whole program.
const MAX_PASS1_WORDS: u64 = 1 << 28;
/// Conflicting statement pairs the analysis keeps facts for before it gives up.
const MAX_PAIRS: usize = 1 << 22;

/// The races certain on every execution of `program` in which both statements run (see the
/// module documentation for the executions considered). Each statement id appears at most
/// once in `program`.
pub fn certain_races(streams: usize, events: usize, program: &[Flow]) -> Analysis {
    let model = Model::new(streams, events, program);
    let Some(mut pairs) = model.pairs() else {
        return Analysis {
            races: Vec::new(),
            complete: false,
        };
    };
    let mut pass1 = Pass1::new(&model, &mut pairs);
    let mut state = pass1.initial();
    if pass1.run(&model.tree, &mut state).is_err() {
        return Analysis {
            races: Vec::new(),
            complete: false,
        };
    }
    let mut complete = true;
    let mut steps = 0u64;
    let mut found = Vec::new();
    for pair in &pairs.list {
        let verdict = match model.verdict(pair) {
            Verdict::Clean => continue,
            Verdict::Race { forward: Some(f) } => Some(f),
            verdict => match model.exact(pair.a(), pair.b(), &mut steps) {
                Some(exact) => exact,
                None => {
                    if let Verdict::Race { .. } = verdict {
                        // Certain; some path may issue `a` first, unordered.
                        Some(true)
                    } else {
                        complete = false;
                        None
                    }
                }
            },
        };
        if let Some(forward) = verdict {
            model.push_races(pair, &pairs.conflicts, forward, &mut found);
        }
    }
    found.sort_by_key(|r: &Race| (r.first.min(r.second), r.first.max(r.second), r.buffer));
    found.dedup_by_key(|r| (r.first.min(r.second), r.first.max(r.second), r.buffer));
    Analysis {
        races: found,
        complete,
    }
}

/// Exactly [`certain_races`], with pass 2 deciding every conflicting pair: the reference the
/// tests compare pass 1's shortcuts with.
#[cfg(test)]
pub fn exhaustive_races(streams: usize, events: usize, program: &[Flow]) -> Option<Vec<Race>> {
    let model = Model::new(streams, events, program);
    let pairs = model.pairs()?;
    let mut steps = 0u64;
    let mut found = Vec::new();
    for pair in &pairs.list {
        if let Some(forward) = model.exact(pair.a(), pair.b(), &mut steps)? {
            model.push_races(pair, &pairs.conflicts, forward, &mut found);
        }
    }
    found.sort_by_key(|r: &Race| (r.first.min(r.second), r.first.max(r.second), r.buffer));
    Some(found)
}
