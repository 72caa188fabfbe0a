//! Property test on the GPU: random programs (up to 6 streams, 64 statements: launches,
//! records, re-records, waits on recorded and never-recorded events, `wait_stream`s, loops)
//! are run eagerly and captured; every captured graph must equal the plan edge for edge
//! (`verify`), and eager runs and replays must compute the same values as a host simulation.
//!
//! Each operation `i` reads the outputs of its direct predecessors in the plan, spins, then
//! writes `slots[i] = hash(i, slots[p]...)`. A dropped dependency lets an operation read a
//! predecessor's slot before it was written (still 0): a wrong value, not only a failed
//! `verify`.
#![allow(clippy::unwrap_used)] // tests may unwrap

use std::time::Instant;

use streamgraph::__private::{arg_write, fill};
use streamgraph::testing::RandomProgram;
use streamgraph::testing::{Call, RandomOptions};
use streamgraph::{
    Capture, Device, DeviceBuffer, Eager, Error, Issuer, Kernel, KernelArg, Module, Pipeline,
    Program, Stream, StreamOptions,
};
use streamgraph::{Plan, ProgramBuilder};

const SOURCE: &str = r#"
__device__ unsigned mix(unsigned h, unsigned v) {
    h ^= v + 0x9e3779b9u + (h << 6) + (h >> 2);
    return h * 0x85ebca6bu;
}

extern "C" __global__ void node(unsigned* slots, const unsigned* offsets, const unsigned* preds,
                                unsigned op, unsigned long long ns) {
    unsigned h = mix(0x12345u, op);
    for (unsigned i = offsets[op]; i < offsets[op + 1]; ++i) h = mix(h, slots[preds[i]]);
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
    slots[op] = h | 1u;
}
"#;

fn mix(h: u32, v: u32) -> u32 {
    let h = h ^ v
        .wrapping_add(0x9e37_79b9)
        .wrapping_add(h << 6)
        .wrapping_add(h >> 2);
    h.wrapping_mul(0x85eb_ca6b)
}

/// What the slots hold after one correct run.
fn expected(plan: &Plan) -> Vec<u32> {
    let mut slots = vec![0u32; plan.len()];
    for op in 0..plan.len() {
        let mut h = mix(0x12345, op as u32);
        for p in plan.predecessors(op) {
            h = mix(h, slots[p]);
        }
        slots[op] = h | 1;
    }
    slots
}

/// A random program as a pipeline: launches of `node` with the plan's predecessor lists.
struct RandomPipe<'a> {
    random: &'a RandomProgram,
    kernel: &'a Kernel,
    slots: &'a DeviceBuffer<u32>,
    offsets: &'a DeviceBuffer<u32>,
    preds: &'a DeviceBuffer<u32>,
    spin: u64,
}

impl Pipeline for RandomPipe<'_> {
    fn program(&self) -> &'static Program {
        self.random.program
    }

    fn stream_options(&self) -> Vec<StreamOptions> {
        vec![StreamOptions::default(); self.random.program.streams.len()]
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        let config = RandomProgram::launch_config();
        for call in &self.random.calls {
            match *call {
                Call::Launch {
                    statement, value, ..
                } => issuer.launch(
                    statement,
                    self.kernel,
                    config,
                    &[
                        arg_write(self.slots),
                        KernelArg::read(self.offsets),
                        KernelArg::read(self.preds),
                        KernelArg::value(&value),
                        KernelArg::value(&self.spin),
                    ],
                )?,
                Call::Fill { statement, .. } => {
                    return Err(Error::InvalidArgument(format!(
                        "fills are not generated here: {}",
                        statement.text
                    )))
                }
                Call::Record(s) => issuer.record(s)?,
                Call::Wait(s) => issuer.wait(s)?,
                Call::WaitStream(s) => issuer.wait_stream(s)?,
            }
        }
        Ok(())
    }
}

/// `main: fill slots = 0`, written by hand: it zeroes the slots between replays, while the
/// executable graph (which writes them) holds them shared. It runs on the stream the graph is
/// launched on, so it is ordered between the replays.
struct ZeroSlots<'a> {
    slots: &'a DeviceBuffer<u32>,
}

impl Pipeline for ZeroSlots<'_> {
    fn program(&self) -> &'static Program {
        use std::sync::OnceLock;
        static PROGRAM: OnceLock<&'static Program> = OnceLock::new();
        PROGRAM.get_or_init(|| {
            let mut b = ProgramBuilder::new("ZeroSlots");
            let main = b.stream("main");
            b.fill(main, "slots");
            b.build()
        })
    }

    fn stream_options(&self) -> Vec<StreamOptions> {
        vec![StreamOptions::default()]
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> Result<(), Error> {
        fill(issuer, &self.program().statements[0], self.slots, 0u32)
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn random_programs_capture_exactly_their_plan_and_replay_like_eager_runs() {
    let device = Device::new(None).unwrap();
    let origin = Stream::new(&device, 0).unwrap();
    let module = Module::from_cuda_source(&device, "capture_random", SOURCE).unwrap();
    // SAFETY: every launch passes (unsigned*, const unsigned*, const unsigned*, unsigned,
    // unsigned long long), the kernel's C signature.
    let kernel = unsafe { module.kernel("node").unwrap() };
    let options = RandomOptions {
        streams: (1, 6),
        events: (0, 4),
        max_statements: 64,
        ..RandomOptions::default()
    };
    let mut eager = Eager::new(&origin);
    eager.check(false); // random programs may race on `slots`; no op reads a racy slot
    let mut capture = Capture::new(&origin).check(false);
    let started = Instant::now();
    let (mut programs, mut ops, mut edges) = (0, 0, 0);
    for seed in 0..500u64 {
        let random = RandomProgram::with_options(seed, options.clone());
        let plan = random.plan().unwrap();
        let want = expected(&plan);
        let n = plan.len();
        let mut offsets = vec![0u32];
        let mut preds = Vec::new();
        for op in 0..n {
            preds.extend(plan.predecessors(op).into_iter().map(|p| p as u32));
            offsets.push(preds.len() as u32);
        }
        preds.push(0); // never empty
        let mut slots = DeviceBuffer::<u32>::zeros(&device, n.max(1)).unwrap();
        let offsets = DeviceBuffer::from_host(&device, &offsets).unwrap();
        let preds = DeviceBuffer::from_host(&device, &preds).unwrap();
        origin.fill(&mut slots, 0u32).unwrap();
        let pipe = || RandomPipe {
            random: &random,
            kernel: &kernel,
            slots: &slots,
            offsets: &offsets,
            preds: &preds,
            spin: 5_000,
        };

        eager.run(&pipe()).unwrap();
        origin.synchronize().unwrap();
        let eager_slots = slots.to_vec_on(&origin).unwrap();
        assert_eq!(
            &eager_slots[..n],
            &want[..],
            "seed {seed}: eager run differs from the host simulation"
        );

        let graph = capture.capture(pipe()).unwrap();
        let report = graph
            .verify()
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(report.operations, n, "seed {seed}");
        let exec = graph.instantiate().unwrap();
        for replay in 0..3 {
            // The graph holds `slots` until it is dropped: zero them in stream order.
            eager.run(&ZeroSlots { slots: &slots }).unwrap();
            exec.launch(&origin).unwrap();
            origin.synchronize().unwrap();
            let replayed = slots.to_vec_on(&origin).unwrap();
            assert_eq!(
                replayed, eager_slots,
                "seed {seed}, replay {replay}: the captured graph computed other values than the eager run"
            );
        }
        programs += 1;
        ops += n;
        edges += report.edges;
    }
    let took = started.elapsed();
    println!(
        "{programs} random programs, {ops} operations, {edges} edges: captured graphs equal their plans and replays equal eager runs ({took:.1?})"
    );
    assert!(
        took.as_secs() < 120,
        "the property test took {took:?}; keep it near 60 s"
    );
}
