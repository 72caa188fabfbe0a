//! Property test on the GPU: 2,000 random programs (up to 6 streams and 64 statements:
//! launches, fills and device-to-device copies of whole buffers and sub-ranges, copies between
//! pinned host buffers and device memory, host functions, records, re-records, waits on
//! recorded and never-recorded events, `wait_stream`s, in `for` loops and `if`s) are run
//! eagerly and captured; every captured graph must equal the plan edge for edge (`verify`),
//! and the eager run and three replays of the graph must leave the values a host simulation
//! computes, and run every host function once per run in an order the plan allows. Each
//! capture also proves that the node map read back once at its end (creation order) equals the
//! driver's report after every operation (`Capture::cross_check_nodes`).
//!
//! Programs hold up to three temporaries (`RandomOptions::temps`) of 1 to 32 elements, used in
//! place of buffers by launches, fills and copies (to and from buffers, pinned buffers and
//! each other) on the streams the program orders after their allocation and before their
//! release: run eagerly from the stream-ordered pool, captured as graph memory nodes that
//! `verify` checks; what passes through them reaches the buffers and observations compared.
//!
//! Each launch `i` reads the slots of every launch that happens before it, spins, then writes
//! `slots[i] = hash(i, those slots)`; a launch that writes its buffer fills it with values
//! derived from that hash, one that reads it writes a hash of what it read to `obs[i]`. A
//! dropped dependency lets an operation run before one it must follow: it reads a slot still
//! 0, or a buffer not yet written or copied: a wrong value, not only a failed `verify`
//! (`dropped_orderings_show_in_the_values` checks that this is seen).
//!
//! Random programs race: operations on different streams may touch the same words unordered.
//! Slots never race (each launch writes its own and reads only those of launches ordered
//! before it). For the buffers, `random_support::Model` decides word by word which values no
//! race decides — all writes of the word totally ordered, the last one writing a value that
//! itself depends on no race (a copy's source words read with every write of them ordered
//! with the copy) — and only those words, and only the observations of launches that read
//! none but such values, are compared; everything else is left out, in the eager run and in
//! the replays alike. `plan_random` checks the model against every order the plan allows.
#![allow(clippy::unwrap_used)] // tests may unwrap

mod common;
#[path = "random_support/mod.rs"]
mod random_support;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use random_support::{launch_ancestors, ops, Model, Outcome, Words};
use streamgraph::__private::{arg_write, copy_with, fill, place};
use streamgraph::testing::{self, Call, RandomMemory, RandomOptions, RandomProgram};
use streamgraph::{
    AccessMode, Capture, CopySource, Device, DeviceBuffer, Eager, Error, GraphSet, Issuer, Kernel,
    KernelArg, Module, PinnedBuffer, Pipeline, Plan, Program, ProgramBuilder, Stream,
    StreamOptions,
};

const SOURCE: &str = r#"
__device__ unsigned mix(unsigned h, unsigned v) {
    h ^= v + 0x9e3779b9u + (h << 6) + (h >> 2);
    return h * 0x85ebca6bu;
}

extern "C" __global__ void node(unsigned* slots, const unsigned* offsets, const unsigned* preds,
                                unsigned op, unsigned long long ns, unsigned* buf, unsigned len,
                                unsigned write, unsigned* obs) {
    unsigned h = mix(0x12345u, op);
    for (unsigned i = offsets[op]; i < offsets[op + 1]; ++i) h = mix(h, slots[preds[i]]);
    unsigned slot = h | 1u;
    unsigned o = mix(slot, 0xabcdu);
    if (!write) for (unsigned j = 0; j < len; ++j) o = mix(o, buf[j]);
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
    if (write) for (unsigned j = 0; j < len; ++j) buf[j] = mix(slot, j);
    else obs[op] = o | 1u;
    slots[op] = slot;
}
"#;

/// What the host functions of one program record: how often they ran, and when each last ran.
struct HostLog {
    runs: AtomicUsize,
    clock: AtomicU64,
    stamps: Vec<AtomicU64>,
}

impl HostLog {
    fn new(ops: usize) -> Arc<HostLog> {
        Arc::new(HostLog {
            runs: AtomicUsize::new(0),
            clock: AtomicU64::new(0),
            stamps: (0..ops).map(|_| AtomicU64::new(0)).collect(),
        })
    }
}

/// A random program as a pipeline: its calls, with launches of `node`.
struct RandomPipe<'a> {
    random: &'a RandomProgram,
    memory: RandomMemory<'a>,
    kernel: &'a Kernel,
    slots: &'a mut DeviceBuffer<u32>,
    offsets: &'a DeviceBuffer<u32>,
    preds: &'a DeviceBuffer<u32>,
    obs: &'a mut DeviceBuffer<u32>,
    spin: u64,
}

impl Pipeline for RandomPipe<'_> {
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
        let config = RandomProgram::launch_config();
        self.random
            .replay_with(issuer, &self.memory, |issuer, call, operands| {
                let Call::Launch {
                    statement,
                    memory,
                    mode,
                    value,
                    ..
                } = *call
                else {
                    return Ok(());
                };
                // A device buffer or a temporary, of its own length.
                let len = operands.len(memory)? as u32;
                let arg = operands.arg(memory, mode)?;
                let write = u32::from(mode == AccessMode::Write);
                issuer.launch(
                    statement,
                    self.kernel,
                    config,
                    &[
                        arg_write(&self.slots),
                        KernelArg::read(self.offsets),
                        KernelArg::read(self.preds),
                        KernelArg::value(&value),
                        KernelArg::value(&self.spin),
                        arg,
                        KernelArg::value(&len),
                        KernelArg::value(&write),
                        arg_write(&self.obs),
                    ],
                )
            })
    }
}

/// Puts every buffer back as it started, in stream order on the origin (a graph holding the
/// buffers may still be replayed): `b_i <- init_i`, `h_p <- pinit_p`, `fill slots = 0`,
/// `fill obs = 0`. It writes them through the exclusive borrows of the pipeline that uses them
/// (`GraphExec::pipeline` of a graph that holds it).
struct Reset<'a> {
    program: &'static Program,
    pipe: &'a RandomPipe<'a>,
    initial: &'a [DeviceBuffer<u32>],
    initial_pinned: &'a [DeviceBuffer<u32>],
}

impl Reset<'_> {
    fn program(buffers: usize, pinned: usize) -> &'static Program {
        let mut b = ProgramBuilder::new("Reset");
        let main = b.stream("main");
        for i in 0..buffers {
            b.copy(main, &format!("b{i}"), &format!("init{i}"));
        }
        for p in 0..pinned {
            b.copy(main, &format!("h{p}"), &format!("pinit{p}"));
        }
        b.fill(main, "slots");
        b.fill(main, "obs");
        b.build()
    }
}

impl Pipeline for Reset<'_> {
    fn program(&self) -> &'static Program {
        self.program
    }

    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![StreamOptions::default()])
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let mut s = self.program.statements.iter();
        let memory = &self.pipe.memory;
        let source = CopySource::<u32>::copy_source_of;
        for (b, init) in self.initial.iter().enumerate().take(memory.buffers.len()) {
            let dst = place(&memory.buffers).index(b);
            copy_with(issuer, s.next().unwrap(), dst, init, source)?;
        }
        for (p, init) in self
            .initial_pinned
            .iter()
            .enumerate()
            .take(memory.pinned.len())
        {
            let dst = place(&memory.pinned).index(p);
            copy_with(issuer, s.next().unwrap(), dst, init, source)?;
        }
        fill(issuer, s.next().unwrap(), &self.pipe.slots, 0u32)?;
        fill(issuer, s.next().unwrap(), &self.pipe.obs, 0u32)
    }
}

/// The GPU, the kernel and the memory every program uses.
struct Rig {
    device: Device,
    origin: Stream,
    kernel: Kernel,
    initial: Vec<DeviceBuffer<u32>>,
    initial_pinned: Vec<DeviceBuffer<u32>>,
    reset: &'static Program,
    _module: Module,
}

/// The buffers every program's launches, copies and fills write.
struct Memory {
    buffers: Vec<DeviceBuffer<u32>>,
    pinned: Vec<PinnedBuffer<u32>>,
}

impl Rig {
    fn new(options: &RandomOptions) -> (Rig, Memory) {
        let device = Device::new(None).unwrap();
        let origin = Stream::new(&device, 0).unwrap();
        let module = Module::from_cuda_source(&device, "capture_random", SOURCE).unwrap();
        // SAFETY: every launch passes (unsigned*, const unsigned*, const unsigned*, unsigned,
        // unsigned long long, unsigned*, unsigned, unsigned, unsigned*), the kernel's C
        // signature.
        let kernel = unsafe { module.kernel("node").unwrap() };
        let shape = RandomProgram::with_options(0, options.clone());
        let words = Words::of(&shape);
        let initial: Vec<DeviceBuffer<u32>> = (0..words.buffers)
            .map(|b| {
                let values: Vec<u32> = (0..words.buffer_len)
                    .map(|j| random_support::initial_device(b, j))
                    .collect();
                DeviceBuffer::from_host(&device, &values).unwrap()
            })
            .collect();
        let initial_pinned: Vec<DeviceBuffer<u32>> = (0..words.pinned)
            .map(|p| {
                let values: Vec<u32> = (0..words.pinned_len)
                    .map(|j| random_support::initial_pinned(p, j))
                    .collect();
                DeviceBuffer::from_host(&device, &values).unwrap()
            })
            .collect();
        let buffers = (0..words.buffers)
            .map(|_| DeviceBuffer::zeros(&device, words.buffer_len).unwrap())
            .collect();
        let pinned = (0..words.pinned)
            .map(|_| PinnedBuffer::zeros(&device, words.pinned_len).unwrap())
            .collect();
        let rig = Rig {
            reset: Reset::program(words.buffers, words.pinned),
            device,
            origin,
            kernel,
            initial,
            initial_pinned,
            _module: module,
        };
        (rig, Memory { buffers, pinned })
    }

    fn reset<'a>(&'a self, pipe: &'a RandomPipe<'a>) -> Reset<'a> {
        Reset {
            program: self.reset,
            pipe,
            initial: &self.initial,
            initial_pinned: &self.initial_pinned,
        }
    }
}

/// One program's per-run memory that its launches read: the predecessor lists; and its host
/// functions' log.
struct Run {
    offsets: DeviceBuffer<u32>,
    preds: DeviceBuffer<u32>,
    log: Arc<HostLog>,
}

/// One program's per-run memory that its launches write: slots and observations.
struct Outputs {
    slots: DeviceBuffer<u32>,
    obs: DeviceBuffer<u32>,
}

impl Run {
    fn new(rig: &Rig, model: &Model) -> (Run, Outputs) {
        let n = model.ancestors.len();
        let mut offsets = vec![0u32];
        let mut preds = Vec::new();
        for a in &model.ancestors {
            preds.extend_from_slice(a);
            offsets.push(preds.len() as u32);
        }
        preds.push(0); // never empty
        let run = Run {
            offsets: DeviceBuffer::from_host(&rig.device, &offsets).unwrap(),
            preds: DeviceBuffer::from_host(&rig.device, &preds).unwrap(),
            log: HostLog::new(n),
        };
        let outputs = Outputs {
            slots: DeviceBuffer::zeros(&rig.device, n.max(1)).unwrap(),
            obs: DeviceBuffer::zeros(&rig.device, n.max(1)).unwrap(),
        };
        (run, outputs)
    }

    fn pipe<'a>(
        &'a self,
        rig: &'a Rig,
        memory: &'a mut Memory,
        outputs: &'a mut Outputs,
        random: &'a RandomProgram,
        spin: u64,
    ) -> RandomPipe<'a> {
        let log = Arc::clone(&self.log);
        let memory =
            RandomMemory::new(&mut memory.buffers, &mut memory.pinned).with_host(move |op| {
                log.runs.fetch_add(1, Ordering::SeqCst);
                let now = log.clock.fetch_add(1, Ordering::SeqCst) + 1;
                log.stamps[op as usize].store(now, Ordering::SeqCst);
            });
        RandomPipe {
            random,
            memory,
            kernel: &rig.kernel,
            slots: &mut outputs.slots,
            offsets: &self.offsets,
            preds: &self.preds,
            obs: &mut outputs.obs,
            spin,
        }
    }

    /// What the last run of `pipe` left (call after synchronizing the origin).
    fn outcome(pipe: &RandomPipe<'_>, origin: &Stream, n: usize) -> Outcome {
        let mut words = Vec::new();
        for b in pipe.memory.buffers.iter() {
            words.extend(b.to_vec_on(origin).unwrap());
        }
        for p in pipe.memory.pinned.iter() {
            words.extend(p.to_vec().unwrap());
        }
        let mut slots = pipe.slots.to_vec_on(origin).unwrap();
        let mut obs = pipe.obs.to_vec_on(origin).unwrap();
        slots.truncate(n);
        obs.truncate(n);
        Outcome { words, slots, obs }
    }

    /// Checks the host functions of run `round` (from 1): each ran once, in an order the plan
    /// allows.
    fn check_hosts(&self, random: &RandomProgram, plan: &Plan, round: usize, what: &str) {
        let seed = random.seed;
        let hosts: Vec<usize> = ops(random)
            .iter()
            .enumerate()
            .filter(|(_, c)| matches!(c, Call::Host { .. }))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            self.log.runs.load(Ordering::SeqCst),
            hosts.len() * round,
            "seed {seed}, {what}: host functions run once per run"
        );
        let first_of_round = (hosts.len() * (round - 1)) as u64;
        let stamp = |op: usize| self.log.stamps[op].load(Ordering::SeqCst);
        for &a in &hosts {
            assert!(
                stamp(a) > first_of_round,
                "seed {seed}, {what}: host {a} did not run"
            );
            for &b in &hosts {
                if plan.happens_before(a, b) {
                    assert!(
                        stamp(a) < stamp(b),
                        "seed {seed}, {what}: host function {a} must run before {b}"
                    );
                }
            }
        }
    }
}

/// Up to 6 streams, 4 events and 64 statements of every kind, and up to 3 temporaries of 1 to
/// 32 elements (the buffers have 16) used in place of buffers.
/// `got` holds what the host simulation of `model` computes.
fn check_model(model: &Model, got: &Outcome, seed: u64, what: &str) {
    let diffs = model.differences(got);
    assert!(
        diffs.is_empty(),
        "seed {seed}, {what}: {} value(s) differ from the host simulation: {:?}",
        diffs.len(),
        &diffs[..diffs.len().min(8)]
    );
}

/// `got` holds what the eager run left, wherever no race decides.
fn like_eager(model: &Model, got: &Outcome, eager: &Outcome, seed: u64, what: &str) {
    assert_eq!(got.slots, eager.slots, "seed {seed}, {what}");
    for (w, clean) in model.clean_words.iter().enumerate() {
        if *clean {
            assert_eq!(
                got.words[w],
                eager.words[w],
                "seed {seed}, {what}: {}",
                model.word_name(w)
            );
        }
    }
}

fn options() -> RandomOptions {
    RandomOptions {
        streams: (1, 6),
        events: (0, 4),
        max_statements: 64,
        temps: (0, 3),
        ..RandomOptions::default()
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn random_programs_capture_exactly_their_plan_and_replay_like_eager_runs() {
    let _serial = common::serial();
    let options = options();
    let (rig, mut memory) = Rig::new(&options);
    let origin = &rig.origin;
    let mut eager = Eager::new(origin);
    eager.check(false); // random programs race; only values no race decides are compared
                        // Every capture maps its nodes twice: in creation order from one `cuGraphGetNodes` at
                        // the end (the default route) and by asking the driver after each operation; a capture
                        // whose two maps differ fails. So every program proves the cheap map exact.
    let mut capture = Capture::new(origin).check(false).cross_check_nodes(true);
    let started = Instant::now();
    let (mut programs, mut ops_total, mut edges, mut hosts) = (0, 0, 0, 0);
    let (mut compared, mut words, mut racy_programs) = (0, 0, 0);
    let (mut temps, mut temp_reads) = (0, 0);
    for seed in 0..2000u64 {
        let random = RandomProgram::with_options(seed, options.clone());
        let plan = random.plan().unwrap();
        let model = Model::new(&random, &plan);
        let n = plan.len();
        let (run, mut outputs) = Run::new(&rig, &model);
        let check = |got: &Outcome, what: &str| check_model(&model, got, seed, what);

        let eager_outcome = {
            let pipe = run.pipe(&rig, &mut memory, &mut outputs, &random, 5_000);
            eager.run(&rig.reset(&pipe)).unwrap();
            eager.run(&pipe).unwrap();
            origin.synchronize().unwrap();
            Run::outcome(&pipe, origin, n)
        };
        check(&eager_outcome, "eager run");
        run.check_hosts(&random, &plan, 1, "eager run");

        let pipe = run.pipe(&rig, &mut memory, &mut outputs, &random, 5_000);
        let graph = capture.capture(pipe).unwrap();
        let report = graph
            .verify()
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(report.operations, n, "seed {seed}");
        let exec = graph.instantiate().unwrap();
        for replay in 0..3 {
            // The graph holds the buffers until it is dropped: reset them in stream order.
            eager.run(&rig.reset(exec.pipeline())).unwrap();
            exec.launch(origin).unwrap();
            origin.synchronize().unwrap();
            let what = format!("replay {replay}");
            let replayed = Run::outcome(exec.pipeline(), origin, n);
            check(&replayed, &what);
            run.check_hosts(&random, &plan, replay + 2, &what);
            // The same as the eager run wherever no race decides.
            like_eager(&model, &replayed, &eager_outcome, seed, &what);
        }
        drop(exec);
        programs += 1;
        ops_total += n;
        edges += report.edges;
        hosts += ops(&random)
            .iter()
            .filter(|c| matches!(c, Call::Host { .. }))
            .count();
        compared += model.clean_words.iter().filter(|&&c| c).count();
        words += model.clean_words.len();
        racy_programs += usize::from(model.clean_words.iter().any(|&c| !c));
        temps += random.temps().len();
        temp_reads += ops(&random)
            .iter()
            .enumerate()
            .filter(|&(op, c)| {
                model.clean_obs[op]
                    && matches!(
                        c,
                        Call::Launch {
                            memory: testing::Memory::Temp(_),
                            mode: AccessMode::Read,
                            ..
                        }
                    )
            })
            .count();
    }
    let took = started.elapsed();
    println!(
        "{programs} random programs, {ops_total} operations ({hosts} host functions), {edges} edges: captured graphs equal their plans and replays equal eager runs; {compared} of {words} final words compared ({racy_programs} programs with racy words left out); {temps} temporaries, {temp_reads} reads of them compared ({took:.1?})"
    );
    assert!(
        temps > 2000 && temp_reads > 500,
        "{temps} temporaries, {temp_reads} reads"
    );
    assert!(
        took.as_secs() < 300,
        "the property test took {took:?}; keep it near a minute or two"
    );
}

/// The programs of the GPU suite that hold temporaries, captured and verified against their
/// plans (the temporaries' memory-allocation and memory-free nodes by address, every edge into
/// and out of them), each capture's node map cross-checked, without running them: it needs a
/// CUDA driver but runs no work, so the stand-in driver of `benches/stub-driver` runs it
/// without a GPU (see `.ci/stand-in-tests`).
#[test]
#[ignore = "needs a CUDA driver (a GPU, or the stand-in driver of benches/stub-driver)"]
fn random_programs_with_temporaries_capture_as_planned() {
    let _serial = common::serial();
    let mut capture = None;
    let (programs, temps) = each_temp_program(|rig, seed, plan, pipe| {
        let capture = capture.get_or_insert_with(|| {
            Capture::new(&rig.origin)
                .check(false)
                .cross_check_nodes(true)
        });
        let graph = capture
            .capture(pipe)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let report = graph
            .verify()
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(report.operations, plan.len(), "seed {seed}");
    });
    println!("{programs} programs with {temps} temporaries captured as planned");
    assert!(programs > 1000, "{programs}");
}

/// Runs `f` on every program of the first 2,000 seeds of the GPU suite that holds temporaries,
/// with its plan and its pipeline (no spinning); returns how many programs and temporaries.
fn each_temp_program(mut f: impl FnMut(&Rig, u64, &Plan, RandomPipe<'_>)) -> (usize, usize) {
    let options = options();
    let (rig, mut memory) = Rig::new(&options);
    let (mut programs, mut temps) = (0, 0);
    for seed in 0..2000u64 {
        let random = RandomProgram::with_options(seed, options.clone());
        if random.temps().is_empty() {
            continue;
        }
        let plan = random.plan().unwrap();
        let model = Model::new(&random, &plan);
        let (run, mut outputs) = Run::new(&rig, &model);
        f(
            &rig,
            seed,
            &plan,
            run.pipe(&rig, &mut memory, &mut outputs, &random, 0),
        );
        programs += 1;
        temps += random.temps().len();
    }
    (programs, temps)
}

/// The programs of the GPU suite that hold temporaries, captured through a `GraphSet`: their
/// temporaries placed in the set's memory at the plan's layout (no memory nodes; the
/// allocations and releases verified as operations without nodes, every edge around them
/// against the plan), each capture's node map cross-checked, the set's memory the layout's
/// block in 2 MiB steps. Runs no work: the stand-in driver runs it (`.ci/stand-in-tests`).
#[test]
#[ignore = "needs a CUDA driver (a GPU, or the stand-in driver of benches/stub-driver)"]
fn random_programs_with_temporaries_capture_into_graph_sets_as_planned() {
    let _serial = common::serial();
    let (programs, temps) = each_temp_program(|rig, seed, plan, pipe| {
        let capture = Capture::new(&rig.origin)
            .check(false)
            .cross_check_nodes(true);
        let mut set = GraphSet::with_capture(capture, 1);
        set.prepare(0u8, &pipe)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let report = set
            .verify(&0, &pipe)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(report.operations, plan.len(), "seed {seed}");
        assert_eq!(
            set.temp_memory(),
            plan.temp_layout(256).extent.next_multiple_of(2 << 20),
            "seed {seed}"
        );
    });
    println!("{programs} programs with {temps} temporaries captured into graph sets as planned");
    assert!(programs > 1000, "{programs}");
}

/// The programs of the GPU suite that hold temporaries (the first 600 seeds), each launched
/// through a `GraphSet` three times: the values equal the host simulation's and the eager
/// run's wherever no race decides, with the temporaries in the set's memory, sharing its
/// bytes where the plan's layout lets them.
#[test]
#[ignore = "needs a CUDA GPU"]
fn random_programs_with_temporaries_replay_through_graph_sets_values() {
    let _serial = common::serial();
    let options = options();
    let (rig, mut memory) = Rig::new(&options);
    let origin = &rig.origin;
    let mut eager = Eager::new(origin);
    eager.check(false);
    let (mut programs, mut temps, mut shared) = (0, 0, 0);
    for seed in 0..600u64 {
        let random = RandomProgram::with_options(seed, options.clone());
        if random.temps().is_empty() {
            continue;
        }
        let plan = random.plan().unwrap();
        let model = Model::new(&random, &plan);
        let n = plan.len();
        let (run, mut outputs) = Run::new(&rig, &model);
        let check = |got: &Outcome, what: &str| check_model(&model, got, seed, what);
        let eager_outcome = {
            let pipe = run.pipe(&rig, &mut memory, &mut outputs, &random, 5_000);
            eager.run(&rig.reset(&pipe)).unwrap();
            eager.run(&pipe).unwrap();
            origin.synchronize().unwrap();
            Run::outcome(&pipe, origin, n)
        };
        check(&eager_outcome, "eager run");
        let mut set = GraphSet::with_capture(Capture::new(origin).check(false), 1);
        let pipe = run.pipe(&rig, &mut memory, &mut outputs, &random, 5_000);
        for round in 0..3 {
            eager.run(&rig.reset(&pipe)).unwrap();
            set.launch(origin, 0u8, &pipe)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            origin.synchronize().unwrap();
            let what = format!("graph set launch {round}");
            let got = Run::outcome(&pipe, origin, n);
            check(&got, &what);
            run.check_hosts(&random, &plan, round + 2, &what);
            like_eager(&model, &got, &eager_outcome, seed, &what);
        }
        let stats = set.stats(&0).unwrap();
        assert_eq!((stats.captures, stats.launches), (1, 3), "seed {seed}");
        let layout = plan.temp_layout(256);
        let sum: usize = plan
            .temporaries()
            .iter()
            .map(|t| t.bytes.next_multiple_of(256))
            .sum();
        shared += usize::from(layout.extent < sum);
        programs += 1;
        temps += random.temps().len();
    }
    println!(
        "{programs} programs with {temps} temporaries launched through graph sets like eager runs ({shared} with temporaries sharing bytes)"
    );
    assert!(
        programs > 300 && shared > 30,
        "{programs} programs, {shared} sharing"
    );
}

/// The values catch what `verify` catches: a program run with one ordering call left out
/// (so that some launch no longer follows a launch its plan says it follows) computes other
/// slots than its plan predicts, in many such programs (whether it does depends on timing:
/// the launch that lost its ordering may still happen to start after the other ends).
#[test]
#[ignore = "needs a CUDA GPU"]
fn dropped_orderings_show_in_the_values() {
    let _serial = common::serial();
    // Without temporaries: a dropped ordering could move a use of one outside its live range.
    let options = RandomOptions {
        temps: (0, 0),
        ..options()
    };
    let (rig, mut memory) = Rig::new(&options);
    let mut eager = Eager::new(&rig.origin);
    eager.check(false);
    let (mut tried, mut caught) = (0, 0);
    for seed in 0..2000u64 {
        if tried == 100 {
            break;
        }
        let random = RandomProgram::with_options(seed, options.clone());
        let plan = random.plan().unwrap();
        let ancestors = launch_ancestors(&ops(&random), &plan);
        // The first wait or wait_stream whose removal loses a launch ancestor.
        let broken = random.calls.iter().enumerate().find_map(|(i, c)| {
            if !matches!(c, Call::Wait(_) | Call::WaitStream(_)) {
                return None;
            }
            let mut broken = random.clone();
            broken.calls.remove(i);
            let fewer = launch_ancestors(&ops(&broken), &broken.plan().unwrap());
            (fewer != ancestors).then_some(broken)
        });
        let Some(broken) = broken else { continue };
        tried += 1;
        // The kernel still reads the slots the intact plan names.
        let model = Model::new(&random, &plan);
        let (run, mut outputs) = Run::new(&rig, &model);
        // Long spins: a launch that lost an ordering starts well before the one it should follow
        // ends.
        let pipe = run.pipe(&rig, &mut memory, &mut outputs, &broken, 100_000);
        eager.run(&rig.reset(&pipe)).unwrap();
        eager.run(&pipe).unwrap();
        rig.origin.synchronize().unwrap();
        let got = Run::outcome(&pipe, &rig.origin, plan.len());
        if got.slots != model.expected.slots {
            caught += 1;
        }
    }
    println!("{caught} of {tried} programs with a dropped ordering computed other values");
    assert!(tried >= 50, "{tried}");
    assert!(caught * 4 > tried, "{caught} of {tried}");
}
