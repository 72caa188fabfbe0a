//! Random pipelines for testing executors against the plan.
//!
//! A [`RandomProgram`] is a seeded, reproducible program of launches (optionally fills),
//! records, re-records, waits (on recorded and never-recorded events) and `wait_stream`s over
//! several streams, with an optional loop that issues a block of statements several times.
//! It can be replayed into any [`Issuer`]: the model tests replay it into a [`Planner`] with
//! plan-only kernels and buffers ([`RandomProgram::plan`]), a GPU test replays the same calls
//! into a capturing issuer with real ones and compares the captured graph's edges with
//! [`Plan::edges`].
//!
//! ```
//! use streamgraph_runtime::testing::RandomProgram;
//!
//! # fn main() -> Result<(), streamgraph_runtime::Error> {
//! for seed in 0..20 {
//!     let random = RandomProgram::new(seed);
//!     let plan = random.plan()?;
//!     assert_eq!(plan.len(), random.operation_count());
//!     // Everything issued is joined into the origin at the end.
//!     for op in 0..plan.len() {
//!         assert!(plan.final_frontier().iter().any(|&f| f == op || plan.happens_before(op, f)));
//!     }
//! }
//! # Ok(())
//! # }
//! ```

use crate::error::{Error, Result};
use crate::issue::Issuer;
use crate::memory::{__private as gen, DeviceBuffer, DeviceMemory};
use crate::module::Kernel;
use crate::operand::{Dim3, LaunchConfig};
use crate::program::{AccessMode, Program, Statement, StatementKind};

use super::{Plan, Planner, ProgramBuilder};

/// What [`RandomProgram::with_options`] may generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RandomOptions {
    /// Fewest and most streams (both inclusive, at least 1).
    pub streams: (usize, usize),
    /// Fewest and most events (both inclusive).
    pub events: (usize, usize),
    /// Most statements (at least 1 is generated).
    pub max_statements: usize,
    /// How many buffers launches and fills touch (at least 1).
    pub buffers: usize,
    /// How many kernels launches choose from (at least 1).
    pub kernels: usize,
    /// Whether to generate `fill` statements as well as launches.
    pub fills: bool,
    /// Whether a block of statements may be issued two or three times, as a `for` loop does.
    pub loops: bool,
    /// Whether a `wait` may name an event not recorded earlier (a no-op by the rules).
    pub waits_on_unrecorded: bool,
}

impl Default for RandomOptions {
    /// 2–6 streams, 1–4 events, up to 64 statements over 4 buffers and 1 kernel, loops and
    /// waits on never-recorded events allowed, no fills.
    fn default() -> Self {
        RandomOptions {
            streams: (2, 6),
            events: (1, 4),
            max_statements: 64,
            buffers: 4,
            kernels: 1,
            fills: false,
            loops: true,
            waits_on_unrecorded: true,
        }
    }
}

/// One issue call of a [`RandomProgram`], in issue order.
#[derive(Debug, Clone, Copy)]
pub enum Call {
    /// `launch kernels[kernel](buffers[buffer], value)` with the buffer read or written.
    Launch {
        /// The statement.
        statement: &'static Statement,
        /// Index into the kernels given to [`RandomProgram::replay`].
        kernel: usize,
        /// Index into the buffers given to [`RandomProgram::replay`].
        buffer: usize,
        /// Whether the kernel reads or writes the buffer.
        mode: AccessMode,
        /// The second kernel argument: this operation's index in issue order.
        value: u32,
    },
    /// `fill buffers[buffer] = value` (4-byte elements).
    Fill {
        /// The statement.
        statement: &'static Statement,
        /// Index into the buffers given to [`RandomProgram::replay`].
        buffer: usize,
        /// The 32-bit pattern written: this operation's index in issue order.
        value: u32,
    },
    /// `record EVENT`.
    Record(&'static Statement),
    /// `wait EVENT`.
    Wait(&'static Statement),
    /// `wait_stream OTHER`.
    WaitStream(&'static Statement),
}

impl Call {
    /// The statement this call issues.
    pub fn statement(&self) -> &'static Statement {
        match *self {
            Call::Launch { statement, .. } | Call::Fill { statement, .. } => statement,
            Call::Record(s) | Call::Wait(s) | Call::WaitStream(s) => s,
        }
    }
}

/// A seeded random program and the calls that issue it (a testing utility).
///
/// Every launch passes two arguments, `(buffer, value)`: a pointer to one buffer (read or
/// written) and a `u32`, the operation's index in issue order, so a GPU test's kernel is
/// `extern "C" __global__ void k(unsigned int* buf, unsigned int value)` (or any element
/// type of the same size). The same seed and options always give the same program.
#[derive(Debug, Clone)]
pub struct RandomProgram {
    /// The seed it was generated from.
    pub seed: u64,
    /// The options it was generated with.
    pub options: RandomOptions,
    /// The program (leaked, as every program is `'static`).
    pub program: &'static Program,
    /// The issue calls, in order; statements inside the loop appear once per iteration.
    pub calls: Vec<Call>,
}

impl RandomProgram {
    /// The most streams a random program declares.
    pub const MAX_STREAMS: usize = 256;
    /// The most events (and buffers, and kernels) a random program uses.
    pub const MAX_EVENTS: usize = 4096;
    /// The most statements a random program has.
    pub const MAX_STATEMENTS: usize = 1 << 20;

    /// The program of `seed` with the [default options](RandomOptions::default).
    pub fn new(seed: u64) -> RandomProgram {
        RandomProgram::with_options(seed, RandomOptions::default())
    }

    /// The program of `seed` under `options`. Counts beyond what a program can hold are
    /// clamped: at most [`RandomProgram::MAX_STREAMS`] streams, [`RandomProgram::MAX_EVENTS`]
    /// events, buffers and kernels, and [`RandomProgram::MAX_STATEMENTS`] statements.
    pub fn with_options(seed: u64, options: RandomOptions) -> RandomProgram {
        let mut rng = XorShift::new(seed);
        let clamp = |n: usize, max: usize| n.min(max);
        let stream_count = rng.between(
            clamp(options.streams.0, Self::MAX_STREAMS).max(1),
            clamp(options.streams.1, Self::MAX_STREAMS).max(1),
        );
        let event_count = rng.between(
            clamp(options.events.0, Self::MAX_EVENTS),
            clamp(options.events.1, Self::MAX_EVENTS),
        );
        let statement_count = rng.between(
            1,
            clamp(options.max_statements, Self::MAX_STATEMENTS).max(1),
        );
        let buffers = clamp(options.buffers, Self::MAX_EVENTS).max(1);
        let kernels = clamp(options.kernels, Self::MAX_EVENTS).max(1);

        let mut b = ProgramBuilder::new(&format!("Random{seed:#x}"));
        b.file(&format!("<random program {seed:#x}>"));
        for s in 0..stream_count {
            b.stream(&format!("s{s}"));
        }
        for e in 0..event_count {
            b.event(&format!("e{e}"));
        }
        // Per statement: the kernel, buffer and mode of a launch or fill.
        let mut work: Vec<Option<(usize, usize, AccessMode)>> = Vec::new();
        let mut recorded = vec![false; event_count];
        for _ in 0..statement_count {
            let stream = rng.below(stream_count);
            let roll = rng.below(100);
            let event = (event_count > 0).then(|| rng.below(event_count));
            let other = (stream + 1 + rng.below(stream_count.max(2) - 1)) % stream_count;
            match (roll, event) {
                (45..=64, Some(e)) => {
                    b.record(stream, e);
                    recorded[e] = true;
                    work.push(None);
                    continue;
                }
                (65..=84, Some(e)) if options.waits_on_unrecorded || recorded[e] => {
                    b.wait(stream, e);
                    work.push(None);
                    continue;
                }
                (85.., _) if other != stream => {
                    b.wait_stream(stream, other);
                    work.push(None);
                    continue;
                }
                _ => {}
            }
            let buffer = rng.below(buffers);
            let kernel = rng.below(kernels);
            let buf = format!("b{buffer}");
            if options.fills && rng.below(5) == 0 {
                b.fill(stream, &buf);
                work.push(Some((kernel, buffer, AccessMode::Write)));
            } else {
                let mode = if rng.below(2) == 0 {
                    AccessMode::Read
                } else {
                    AccessMode::Write
                };
                b.launch(stream, &format!("k{kernel}"), &[(&buf, mode)]);
                work.push(Some((kernel, buffer, mode)));
            }
        }
        let program = b.build();

        let (start, end, repeats) = if options.loops && statement_count >= 2 && rng.below(2) == 0 {
            let start = rng.below(statement_count - 1);
            let end = rng.between(start + 1, statement_count);
            (start, end, rng.between(2, 3))
        } else {
            (0, 0, 1)
        };
        let order = (0..start)
            .chain((0..repeats).flat_map(|_| start..end))
            .chain(end.max(start)..statement_count);
        let mut calls = Vec::new();
        let mut ops = 0u32;
        for id in order {
            let statement = &program.statements[id];
            let call = match (statement.kind, work[id]) {
                (StatementKind::Launch { .. }, Some((kernel, buffer, mode))) => Call::Launch {
                    statement,
                    kernel,
                    buffer,
                    mode,
                    value: ops,
                },
                (StatementKind::Fill, Some((_, buffer, _))) => Call::Fill {
                    statement,
                    buffer,
                    value: ops,
                },
                (StatementKind::Record { .. }, _) => Call::Record(statement),
                (StatementKind::Wait { .. }, _) => Call::Wait(statement),
                _ => Call::WaitStream(statement),
            };
            if matches!(call, Call::Launch { .. } | Call::Fill { .. }) {
                ops += 1;
            }
            calls.push(call);
        }
        RandomProgram {
            seed,
            options,
            program,
            calls,
        }
    }

    /// The number of operations (launches and fills) the calls issue.
    pub fn operation_count(&self) -> usize {
        self.calls
            .iter()
            .filter(|c| matches!(c, Call::Launch { .. } | Call::Fill { .. }))
            .count()
    }

    /// The launch configuration [`plan`](Self::plan) uses: one block of one thread.
    pub fn launch_config() -> LaunchConfig {
        LaunchConfig {
            grid: Dim3::from(1),
            block: Dim3::from(1),
            shared_mem_bytes: 0,
        }
    }

    /// Issues every call into `issuer`, with `kernels[k]` for kernel `k` and `buffers[b]` for
    /// buffer `b` (at least [`RandomOptions::kernels`] and [`RandomOptions::buffers`] of
    /// them); fills write 4-byte patterns.
    pub fn replay<I, B>(
        &self,
        issuer: &mut I,
        kernels: &[Kernel],
        buffers: &[B],
        config: LaunchConfig,
    ) -> Result<()>
    where
        I: Issuer + ?Sized,
        B: DeviceMemory<Elem = u32>,
    {
        let missing = |what: &str, have: usize, need: usize| {
            Error::InvalidArgument(format!(
                "random program {:#x} needs {need} {what}(s) but {have} were given",
                self.seed
            ))
        };
        let need_kernels = self.options.kernels.max(1);
        let need_buffers = self.options.buffers.max(1);
        if kernels.len() < need_kernels {
            return Err(missing("kernel", kernels.len(), need_kernels));
        }
        if buffers.len() < need_buffers {
            return Err(missing("buffer", buffers.len(), need_buffers));
        }
        for call in &self.calls {
            match *call {
                Call::Launch {
                    statement,
                    kernel,
                    buffer,
                    mode,
                    value,
                } => {
                    let buf = &buffers[buffer];
                    let arg = match mode {
                        AccessMode::Read => gen::arg_read(buf),
                        AccessMode::Write => gen::arg_write(buf),
                    };
                    issuer.launch(
                        statement,
                        &kernels[kernel],
                        config,
                        &[arg, gen::arg_value(&value)],
                    )?;
                }
                Call::Fill {
                    statement,
                    buffer,
                    value,
                } => {
                    crate::issue::__private::fill(issuer, statement, &buffers[buffer], value)?;
                }
                Call::Record(s) => issuer.record(s)?,
                Call::Wait(s) => issuer.wait(s)?,
                Call::WaitStream(s) => issuer.wait_stream(s)?,
            }
        }
        Ok(())
    }

    /// The program's plan, replayed with plan-only kernels and buffers.
    pub fn plan(&self) -> Result<Plan> {
        let kernels: Vec<Kernel> = (0..self.options.kernels.max(1))
            .map(|k| Kernel::for_planning(&format!("k{k}")))
            .collect();
        let buffers: Vec<DeviceBuffer<u32>> = (0..self.options.buffers.max(1))
            .map(|_| DeviceBuffer::for_planning(64))
            .collect::<Result<_>>()?;
        let mut planner = Planner::new(self.program);
        self.replay(&mut planner, &kernels, &buffers, Self::launch_config())?;
        Ok(planner.finish())
    }
}

/// xorshift64* seeded through splitmix64: small, fast, and the same on every platform.
#[derive(Debug, Clone)]
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        XorShift((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (0 when `n == 0`).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    /// Uniform in `lo..=hi` (`lo` when `hi < lo`).
    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo).saturating_add(1))
    }
}
