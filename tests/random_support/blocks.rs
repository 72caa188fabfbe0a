//! Shared by `capture_random_blocks` and `capture_random_switches`: random programs with device
//! blocks made of launches and ordering statements only, run over real memory by one
//! accumulating kernel, so that every run's result is independent of how unordered work
//! interleaves and the CPU can count what each run adds ([`expected_sums`]).
#![allow(dead_code)]

use streamgraph::testing::{Call, Memory, RandomMemory, RandomOptions, RandomProgram};
use streamgraph::{
    Capture, Device, DeviceBuffer, DeviceFlag, Error, Issuer, Kernel, Module, Pipeline, Program,
    StatementKind, Stream, StreamOptions,
};

/// Random programs with device blocks and only launches and ordering statements, so that an
/// accumulating kernel makes every run's result independent of how unordered work interleaves.
pub fn block_options() -> RandomOptions {
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
        ..RandomOptions::default()
    }
}

/// [`block_options`] with bodies made to exercise their fork and join
/// (`RandomOptions::body_orderings`) over up to five streams and four events: streams that
/// only wait inside bodies, events recorded in a body and waited for by the block's stream,
/// blocks nested three deep.
pub fn body_options() -> RandomOptions {
    RandomOptions {
        streams: (2, 5),
        events: (1, 4),
        max_statements: 64,
        body_orderings: true,
        ..block_options()
    }
}

/// The programs under `options`, from seed `first` on, that hold a statement `has` picks.
pub fn programs_with(
    options: RandomOptions,
    first: u64,
    has: impl Fn(&StatementKind) -> bool,
) -> impl Iterator<Item = RandomProgram> {
    (first..)
        .map(move |seed| RandomProgram::with_options(seed, options.clone()))
        .filter(move |r| r.program.statements.iter().any(|s| has(&s.kind)))
}

/// The number in environment variable `name`, else `default`.
pub fn var(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// How many programs a random suite runs: `STREAMGRAPH_TEST_PROGRAMS`, else `default`.
pub fn program_count(default: usize) -> usize {
    var("STREAMGRAPH_TEST_PROGRAMS", default as u64) as usize
}

/// A random program as a pipeline over real memory.
pub struct RandomPipeline<'a> {
    pub random: &'a RandomProgram,
    pub kernel: &'a Kernel,
    pub memory: RandomMemory<'a>,
}

impl Pipeline for RandomPipeline<'_> {
    fn program(&self) -> &'static Program {
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
pub fn accumulate(device: &Device) -> Kernel {
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
pub fn expected_sums(r: &RandomProgram, range: std::ops::Range<usize>, out: &mut [u64]) {
    let mut i = range.start;
    while i < range.end {
        match &r.calls[i] {
            // A launch on a temporary adds to the temporary, which is not read back.
            Call::Launch {
                memory: Memory::Buffer(b),
                value,
                ..
            } => out[*b] += u64::from(*value) + 1,
            Call::Block {
                statement,
                flag,
                limit,
                then,
                otherwise,
                ..
            } => {
                if let StatementKind::While {
                    signalled: true, ..
                } = statement.kind
                {
                    panic!(
                        "seed {}: a random signalled loop never ends: capture it only",
                        r.seed
                    );
                }
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
pub fn memory_of(r: &RandomProgram, device: &Device) -> (Vec<DeviceBuffer<u32>>, Vec<DeviceFlag>) {
    let buffers = (0..r.buffers())
        .map(|_| DeviceBuffer::zeros(device, r.buffer_len()).unwrap())
        .collect();
    let mut flags: Vec<DeviceFlag> = (0..r.flags().len())
        .map(|_| DeviceFlag::new(device, 0).unwrap())
        .collect();
    r.set_flags(&mut flags).unwrap();
    (buffers, flags)
}

/// Captures `r` over fresh memory and verifies its graph (the outer graph and every body
/// graph) against the plans, without running it; a graph that fails is named by its seed.
pub fn verify_capture(
    r: &RandomProgram,
    device: &Device,
    origin: &Stream,
    kernel: &Kernel,
) -> Result<(), String> {
    let (mut buffers, flags) = memory_of(r, device);
    let pipeline = RandomPipeline {
        random: r,
        kernel,
        memory: RandomMemory::new(&mut buffers, &mut []).with_flags(&flags),
    };
    let graph = Capture::new(origin)
        .check(false)
        .capture(pipeline)
        .unwrap_or_else(|e| panic!("seed {}: {e}", r.seed));
    graph
        .verify()
        .map_err(|e| format!("seed {}: {e}", r.seed))?;
    // An argument update with nothing changed walks every block's bodies and keeps the graph
    // as it is (a `call` of the random op, whose work `update_args` cannot compare, captures
    // again instead).
    let has_calls = r
        .program
        .statements
        .iter()
        .any(|s| matches!(s.kind, StatementKind::Call { .. }));
    if !has_calls {
        let mut exec = graph
            .instantiate()
            .unwrap_or_else(|e| panic!("seed {}: {e}", r.seed));
        exec.update_args_with(|_| {})
            .map_err(|e| format!("seed {}: update_args: {e}", r.seed))?;
        let stats = exec.stats();
        if (stats.updates, stats.reinstantiations, stats.nodes_set) != (0, 0, 0) {
            return Err(format!(
                "seed {}: an argument update that changed nothing changed the graph: {stats:?}",
                r.seed
            ));
        }
    }
    Ok(())
}

/// Runs `r` eagerly, captures it (outer and body graphs verified), and replays it `replays` times,
/// checking the buffers after the eager run and after each replay. With
/// `STREAMGRAPH_TEST_TRACE` set, the captured graph's DOT (bodies as clusters) is printed
/// before the first replay, so that a device fault leaves the shape that caused it behind.
pub fn run_program(
    r: &RandomProgram,
    device: &Device,
    origin: &Stream,
    kernel: &Kernel,
    replays: u64,
) {
    let seed = r.seed;
    let (mut buffers, flags) = memory_of(r, device);
    let mut expected = vec![0u64; r.buffers()];
    expected_sums(r, 0..r.calls.len(), &mut expected);
    let pipeline = RandomPipeline {
        random: r,
        kernel,
        memory: RandomMemory::new(&mut buffers, &mut []).with_flags(&flags),
    };
    let sums = |times: u64| -> Vec<Vec<u32>> {
        expected
            .iter()
            .map(|&e| vec![(e * times) as u32; r.buffer_len()])
            .collect()
    };
    // Read through the pipeline's borrow of the buffers (a graph holds it from the capture on).
    let read = |memory: &RandomMemory<'_>| -> Vec<Vec<u32>> {
        memory.buffers.iter().map(|b| b.to_vec().unwrap()).collect()
    };
    streamgraph::Eager::new(origin)
        .check(false) // the programs race on purpose (checks are on in debug builds)
        .run(&pipeline)
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    origin.synchronize().unwrap();
    if std::env::var_os("STREAMGRAPH_TEST_TRACE").is_some() {
        eprintln!("  eager done");
    }
    assert_eq!(read(&pipeline.memory), sums(1), "seed {seed}: eager");
    let graph = Capture::new(origin)
        .check(false)
        .capture(pipeline)
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    graph
        .verify()
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    if std::env::var_os("STREAMGRAPH_TEST_TRACE").is_some() {
        eprintln!("  captured and verified");
        eprintln!("{}", graph.to_dot().unwrap());
    }
    let exec = graph.instantiate().unwrap();
    // The graph adds to what the eager run left, one replay at a time.
    for times in 2..=replays + 1 {
        exec.launch(origin)
            .unwrap_or_else(|e| panic!("seed {seed}: replay {}: {e}", times - 1));
        finish(
            origin,
            &format!("seed {seed}: replay {}", times - 1),
            var("STREAMGRAPH_TEST_DEADLINE_MS", 0),
        );
        assert_eq!(
            read(&exec.pipeline().memory),
            sums(times),
            "seed {seed}: eager + {} replays",
            times - 1
        );
    }
}

/// Waits for `origin`'s work; given `deadline_ms` (0: no limit), a run that takes longer is
/// reported as one that does not end and the process exits with status 3 (a graph whose loop
/// never ends cannot be stopped from the host; the process's end frees it).
pub fn finish(origin: &Stream, what: &str, deadline_ms: u64) {
    if deadline_ms == 0 {
        return origin.synchronize().unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(deadline_ms);
    while !origin.query().unwrap() {
        if std::time::Instant::now() > deadline {
            eprintln!("{what}: not done after {deadline_ms} ms: the run does not end");
            std::process::exit(3);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
