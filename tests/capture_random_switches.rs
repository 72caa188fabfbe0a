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

mod common;

use streamgraph::testing::{Block, Call, Memory, RandomMemory, RandomOptions, RandomProgram};
use streamgraph::{
    Capture, DeviceBuffer, DeviceFlag, Error, Issuer, Kernel, Module, Pipeline, StatementKind,
    Stream, StreamOptions,
};

/// Random programs with device blocks, switches among them, and only launches and ordering
/// statements, so that an accumulating kernel makes every run's result independent of how
/// unordered work interleaves.
fn switch_options() -> RandomOptions {
    RandomOptions {
        streams: (1, 4),
        events: (0, 3),
        max_statements: 40,
        buffers: 3,
        buffer_len: 4,
        fills: false,
        copies: false,
        host_copies: false,
        host_fns: false,
        sub_ranges: false,
        device_blocks: true,
        switches: true,
        ..RandomOptions::default()
    }
}

/// [`switch_options`] with bodies made to exercise their fork and join and blocks nested one
/// level deeper, over up to five streams.
fn switch_body_options() -> RandomOptions {
    RandomOptions {
        streams: (2, 5),
        events: (1, 4),
        max_statements: 64,
        body_orderings: true,
        ..switch_options()
    }
}

/// How many programs with a switch the suites run (`STREAMGRAPH_TEST_PROGRAMS` overrides it).
const PROGRAMS: usize = 600;

fn program_count() -> usize {
    std::env::var("STREAMGRAPH_TEST_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(PROGRAMS)
}

/// The first `count` programs under `options` that have a device `switch`.
fn programs_with_switches(
    options: RandomOptions,
    count: usize,
) -> impl Iterator<Item = RandomProgram> {
    (0..)
        .map(move |seed| RandomProgram::with_options(seed, options.clone()))
        .filter(|r| {
            r.program
                .statements
                .iter()
                .any(|s| matches!(s.kind, StatementKind::Switch { .. }))
        })
        .take(count)
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

struct RandomPipeline<'a> {
    random: &'a RandomProgram,
    kernel: &'a Kernel,
    memory: RandomMemory<'a>,
}

impl Pipeline for RandomPipeline<'_> {
    fn program(&self) -> &'static streamgraph::Program {
        self.random.program
    }
    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![
            StreamOptions::default();
            self.random.program.streams.len()
        ])
    }
    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let kernels = vec![self.kernel.clone(); self.random.kernels()];
        self.random.replay(
            issuer,
            &kernels,
            &self.memory,
            RandomProgram::launch_config(),
        )
    }
}

/// The accumulating kernel every launch of a random program runs.
fn accumulate(device: &streamgraph::Device) -> Kernel {
    let module = Module::from_cuda_source(
        device,
        "accumulate",
        r#"extern "C" __global__ void acc(unsigned* b, unsigned v) {
            for (unsigned i = 0; i < 4u; ++i) atomicAdd(&b[i], v + 1u);
        }"#,
    )
    .unwrap();
    // SAFETY: `replay` launches it with (buffer of u32, u32), the C signature above.
    unsafe { module.kernel("acc").unwrap() }
}

/// What one eager run adds to each buffer (the CPU's count): every launch adds `value + 1` to
/// each element, a `while` body runs `limit` times, an `if` runs the branch its flag picks, a
/// `switch` the arm its index picks (or none).
fn expected_sums(r: &RandomProgram, range: std::ops::Range<usize>, out: &mut [u64]) {
    let mut i = range.start;
    while i < range.end {
        match &r.calls[i] {
            Call::Launch {
                memory: Memory::Buffer(b),
                value,
                ..
            } => out[*b] += u64::from(*value) + 1,
            Call::Block {
                flag,
                limit,
                then,
                otherwise,
                ..
            } => {
                match limit {
                    Some(l) => {
                        for _ in 0..*l {
                            expected_sums(r, then.clone(), out);
                        }
                    }
                    None if r.flags()[*flag] != 0 => expected_sums(r, then.clone(), out),
                    None => expected_sums(r, otherwise.clone(), out),
                }
                i = then.end.max(otherwise.end);
                continue;
            }
            Call::Switch {
                statement,
                flag,
                arms,
                ..
            } => {
                if let Some(k) = statement.kind.switch_arm(r.flags()[*flag]) {
                    expected_sums(r, arms[k].clone(), out);
                }
                i = arms.iter().fold(i + 1, |e, a| e.max(a.end));
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

/// Memory for `r`: its buffers zeroed, its flags set.
fn memory_of(
    r: &RandomProgram,
    device: &streamgraph::Device,
) -> (Vec<DeviceBuffer<u32>>, Vec<DeviceFlag>) {
    let buffers = (0..r.buffers())
        .map(|_| DeviceBuffer::zeros(device, r.buffer_len()).unwrap())
        .collect();
    let mut flags: Vec<DeviceFlag> = (0..r.flags().len())
        .map(|_| DeviceFlag::new(device, 0).unwrap())
        .collect();
    r.set_flags(&mut flags).unwrap();
    (buffers, flags)
}

#[test]
#[ignore = "needs a CUDA driver (a GPU, or the stand-in driver of benches/stub-driver)"]
fn random_switch_programs_capture_as_planned() {
    let _serial = common::serial();
    let device = streamgraph::Device::new(None).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    let kernel = accumulate(&device);
    let count = program_count();
    let mut failed = Vec::new();
    for options in [switch_options(), switch_body_options()] {
        for r in programs_with_switches(options, count / 2) {
            let (mut buffers, flags) = memory_of(&r, &device);
            let pipeline = RandomPipeline {
                random: &r,
                kernel: &kernel,
                memory: RandomMemory::new(&mut buffers, &mut []).with_flags(&flags),
            };
            let graph = Capture::new(&origin)
                .check(false)
                .capture(pipeline)
                .unwrap_or_else(|e| panic!("seed {}: {e}", r.seed));
            if let Err(e) = graph.verify() {
                failed.push(format!("seed {}: {e}", r.seed));
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
    let _serial = common::serial();
    let device = streamgraph::Device::new(None).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    let kernel = accumulate(&device);
    let count = program_count();
    for options in [switch_options(), switch_body_options()] {
        for r in programs_with_switches(options, count / 2) {
            let seed = r.seed;
            let (mut buffers, flags) = memory_of(&r, &device);
            let mut expected = vec![0u64; r.buffers()];
            expected_sums(&r, 0..r.calls.len(), &mut expected);
            let sums = |times: u64| -> Vec<Vec<u32>> {
                expected
                    .iter()
                    .map(|&e| vec![(e * times) as u32; r.buffer_len()])
                    .collect()
            };
            let read = |memory: &RandomMemory<'_>| -> Vec<Vec<u32>> {
                memory.buffers.iter().map(|b| b.to_vec().unwrap()).collect()
            };
            let pipeline = RandomPipeline {
                random: &r,
                kernel: &kernel,
                memory: RandomMemory::new(&mut buffers, &mut []).with_flags(&flags),
            };
            streamgraph::Eager::new(&origin)
                .check(false) // the programs race on purpose
                .run(&pipeline)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            origin.synchronize().unwrap();
            assert_eq!(read(&pipeline.memory), sums(1), "seed {seed}: eager");
            let graph = Capture::new(&origin)
                .check(false)
                .capture(pipeline)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            graph
                .verify()
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            let exec = graph.instantiate().unwrap();
            for times in 2..=4 {
                exec.launch(&origin).unwrap();
                origin.synchronize().unwrap();
                assert_eq!(
                    read(&exec.pipeline().memory),
                    sums(times),
                    "seed {seed}: eager + {} replays",
                    times - 1
                );
            }
        }
    }
}
