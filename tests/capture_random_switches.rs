//! Random programs with device `switch` blocks (`RandomOptions::switches`) beside `while`/`if`
//! blocks: arms with and without `_`, values out of order and with gaps, indices no arm takes,
//! switches nested in other blocks' bodies and blocks in arms. Their plans nest a plan per arm;
//! captured (on a GPU or the stand-in driver), the outer graph and every arm's body graph are
//! verified against the plans; on the GPU an eager run and three replays add exactly what the
//! CPU's count of the arms the indices pick says.
//!
//! In a binary of its own: a device fault would poison the context of every later test in the
//! same process.
#![allow(clippy::unwrap_used)] // tests may unwrap

#[path = "random_support/blocks.rs"]
mod blocks;
mod common;

use blocks::{
    accumulate, block_options, body_options, program_count, programs_with, run_program,
    verify_capture,
};
use streamgraph::testing::{Block, Call, RandomOptions, RandomProgram};
use streamgraph::StatementKind;

/// Random programs with device blocks, switches among them, and only launches and ordering
/// statements, so that an accumulating kernel makes every run's result independent of how
/// unordered work interleaves.
fn switch_options() -> RandomOptions {
    RandomOptions {
        switches: true,
        ..block_options()
    }
}

/// [`switch_options`] with bodies made to exercise their fork and join and blocks nested one
/// level deeper, over up to five streams.
fn switch_body_options() -> RandomOptions {
    RandomOptions {
        switches: true,
        ..body_options()
    }
}

/// How many programs with a switch the suites run (`STREAMGRAPH_TEST_PROGRAMS` overrides it).
const PROGRAMS: usize = 600;

/// The first `count` programs under `options` that have a device `switch`.
fn programs_with_switches(
    options: RandomOptions,
    count: usize,
) -> impl Iterator<Item = RandomProgram> {
    programs_with(options, 0, |k| matches!(k, StatementKind::Switch { .. })).take(count)
}

/// What the switches of some random programs look like.
#[derive(Debug, Default)]
struct Tally {
    switches: usize,
    with_default: usize,
    gaps: usize,
    unmatched: usize,
    empty_arms: usize,
    nested: usize,
    blocks_in_arms: usize,
}

impl Tally {
    fn blocks(&mut self, blocks: &[Block], in_block: bool) {
        for b in blocks {
            match b {
                Block::Run(_) => {}
                Block::For { body, .. } | Block::If { body, .. } => self.blocks(body, in_block),
                Block::DeviceWhile { body, .. } => self.blocks(body, true),
                Block::DeviceIf {
                    then, otherwise, ..
                } => {
                    self.blocks(then, true);
                    self.blocks(otherwise, true);
                }
                Block::DeviceSwitch { index, arms, .. } => {
                    self.switches += 1;
                    self.nested += usize::from(in_block);
                    self.with_default += usize::from(arms.iter().any(|(v, _)| v.is_none()));
                    let mut values: Vec<u32> = arms.iter().filter_map(|(v, _)| *v).collect();
                    let in_order = values.windows(2).all(|w| w[0] + 1 == w[1]);
                    values.sort_unstable();
                    self.gaps += usize::from(!in_order || values.first().is_some_and(|&v| v > 0));
                    self.unmatched += usize::from(Block::switch_arm(arms, *index).is_none());
                    self.empty_arms += arms.iter().filter(|(_, body)| body.is_empty()).count();
                    self.blocks_in_arms += arms
                        .iter()
                        .flat_map(|(_, body)| body)
                        .filter(|b| !matches!(b, Block::Run(_)))
                        .count();
                    for (_, body) in arms {
                        self.blocks(body, true);
                    }
                }
            }
        }
    }
}

#[test]
fn random_programs_have_switches_with_a_plan_per_arm() {
    let mut t = Tally::default();
    for options in [switch_options(), switch_body_options()] {
        for r in programs_with_switches(options, 300) {
            t.blocks(&r.blocks, false);
            let plan = r.plan().unwrap_or_else(|e| panic!("seed {}: {e}", r.seed));
            assert_eq!(plan.len(), r.operation_count(), "seed {}", r.seed);
            // Every switch at the top level has one nested plan per arm.
            for (k, op) in plan.ops().iter().enumerate() {
                if let StatementKind::Switch { arms, .. } = op.statement.kind {
                    for arm in 0..arms.len() {
                        assert!(plan.body(k, arm).is_some(), "seed {}", r.seed);
                    }
                    assert!(plan.body(k, arms.len()).is_none(), "seed {}", r.seed);
                }
            }
            // The statements' arms are the generator's.
            for call in &r.calls {
                if let Call::Switch {
                    statement, arms, ..
                } = call
                {
                    let StatementKind::Switch { arms: declared, .. } = statement.kind else {
                        panic!("seed {}: {:?}", r.seed, statement.kind);
                    };
                    assert_eq!(declared.len(), arms.len(), "seed {}", r.seed);
                }
            }
        }
    }
    assert!(t.switches > 500, "{t:?}");
    assert!(
        t.with_default > 100 && t.with_default + 100 < t.switches,
        "{t:?}"
    );
    assert!(
        t.gaps > 100 && t.unmatched > 50 && t.empty_arms > 50,
        "{t:?}"
    );
    assert!(t.nested > 50 && t.blocks_in_arms > 50, "{t:?}");
}

// ---- With a driver ----

#[test]
#[ignore = "needs a CUDA driver (a GPU, or the stand-in driver of benches/stub-driver)"]
fn random_switch_programs_capture_as_planned() {
    let g = common::gpu();
    let kernel = accumulate(&g.device);
    let count = program_count(PROGRAMS);
    let mut failed = Vec::new();
    for options in [switch_options(), switch_body_options()] {
        for r in programs_with_switches(options, count / 2) {
            if let Err(e) = verify_capture(&r, &g.device, &g.origin, &kernel) {
                failed.push(e);
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} programs failed verify(), e.g.\n{}",
        failed.len(),
        failed[..failed.len().min(5)].join("\n")
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn random_switch_programs_run_eagerly_as_captured_values() {
    let g = common::gpu();
    let kernel = accumulate(&g.device);
    let count = program_count(PROGRAMS);
    for options in [switch_options(), switch_body_options()] {
        for r in programs_with_switches(options, count / 2) {
            run_program(&r, &g.device, &g.origin, &kernel, 3);
        }
    }
}
