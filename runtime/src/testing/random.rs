//! Random pipelines for testing executors against the plan.
//!
//! A [`RandomProgram`] is a seeded, reproducible program over several streams that uses
//! everything a pipeline can: launches reading or writing a buffer, fills and device-to-device
//! copies of whole buffers and of sub-ranges, copies between pinned host buffers and device
//! memory, host functions, records, re-records, waits (on recorded and never-recorded events)
//! and `wait_stream`s; its statements are grouped into `for` loops (their bodies issued two or
//! three times, each issue a new occurrence of the same statement) and `if`s (whose condition
//! is fixed per program, so the statements of an `if` not taken are never issued), nested up to
//! two deep. With [`RandomOptions::device_blocks`] its statements may also form device `while`
//! loops (their flag always set, bounded by a random `limit` of 0–3) and device `if`/`else`s
//! (their flag fixed per program), whose bodies hold no host functions and no host copies;
//! [`RandomOptions::body_orderings`] makes those bodies order their streams densely (the
//! block's stream waiting for events recorded in the body, streams that only wait) and nests
//! blocks one level deeper. It can be replayed into any [`Issuer`]: the model tests replay it
//! into a [`Planner`] with plan-only kernels and memory ([`RandomProgram::plan`]), a GPU test replays
//! the same calls into eager and capturing issuers with real ones and compares the captured
//! graph's edges with [`Plan::edges`] and the memory an eager run and the graph's replays
//! leave.
//!
//! Random programs are not race-free: two operations on different streams may touch the same
//! memory unordered. A test that compares memory must compare only what no race decides (see
//! `tests/capture_random.rs`).
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

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ffi::memory::{MemoryMut, MemoryRef};
use crate::ffi::KernelArg;
use crate::issue::{__private as issue, Body, Issuer};
use crate::memory::{
    __private as gen, CopySource, DeviceBuffer, DeviceFlag, DeviceView, FillValue, PinnedBuffer,
};
use crate::module::Kernel;
use crate::operand::{Dim3, FillPattern, HostFn, LaunchConfig};
use crate::program::{AccessMode, Program, Statement, StatementKind};

use crate::plan::{Plan, Planner, ProgramBuilder};

/// What [`RandomProgram::with_options`] may generate.
///
/// The defaults generate every kind of statement and control structure; each `bool` turns one
/// feature off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RandomOptions {
    /// Fewest and most streams (both inclusive, at least 1).
    pub streams: (usize, usize),
    /// Fewest and most events (both inclusive).
    pub events: (usize, usize),
    /// Most statements (at least 1 is generated).
    pub max_statements: usize,
    /// How many device buffers the program touches (at least 1).
    pub buffers: usize,
    /// Elements (`u32`) in each device buffer (at least 1).
    pub buffer_len: usize,
    /// How many pinned host buffers host copies use (none: no host copies).
    pub pinned: usize,
    /// Elements (`u32`) in each pinned buffer (at least 1, at most `buffer_len`).
    pub pinned_len: usize,
    /// How many kernels launches choose from (at least 1).
    pub kernels: usize,
    /// Whether to generate `fill` statements.
    pub fills: bool,
    /// Whether to generate device-to-device `copy` statements.
    pub copies: bool,
    /// Whether to generate copies from pinned buffers to device memory and back.
    pub host_copies: bool,
    /// Whether to generate `host` statements (host functions).
    pub host_fns: bool,
    /// Whether fills and device-to-device copies may touch sub-ranges of buffers, and host
    /// copies any range of a device buffer (otherwise fills and device copies touch whole
    /// buffers and host copies the first `pinned_len` elements).
    pub sub_ranges: bool,
    /// Whether blocks of statements may form `for` loops, issued two or three times.
    pub loops: bool,
    /// Whether blocks of statements may sit in `if`s, issued or never issued.
    pub conditionals: bool,
    /// Whether a `wait` may name an event not recorded earlier (a no-op by the rules).
    pub waits_on_unrecorded: bool,
    /// Whether blocks of statements may form device `while` loops and device `if`/`else`s
    /// (conditional nodes when captured). Off by default.
    pub device_blocks: bool,
    /// With `device_blocks`: whether the bodies of device blocks are made to exercise their
    /// fork and join: a statement inside a body is on the block's stream half the time; a
    /// `wait` inside a body names an event recorded earlier in the same body three times in
    /// four when there is one (a wait on one recorded outside orders nothing there), and is
    /// then the block's stream's half the time; statements group into blocks of up to 24
    /// statements instead of 12; and device blocks nest one level deeper. So bodies hold
    /// streams that only wait, events recorded on one stream and waited for by the block's
    /// stream before it issues more, and blocks inside blocks inside blocks. Off by default (a
    /// seed's program stays what it was).
    pub body_orderings: bool,
}

impl Default for RandomOptions {
    /// 2–6 streams, 1–4 events, up to 64 statements over 4 device buffers of 16 elements,
    /// 2 pinned buffers of 4 elements and 1 kernel; every statement kind, sub-ranges, loops,
    /// conditionals and waits on never-recorded events.
    fn default() -> Self {
        RandomOptions {
            streams: (2, 6),
            events: (1, 4),
            max_statements: 64,
            buffers: 4,
            buffer_len: 16,
            pinned: 2,
            pinned_len: 4,
            kernels: 1,
            fills: true,
            copies: true,
            host_copies: true,
            host_fns: true,
            sub_ranges: true,
            loops: true,
            conditionals: true,
            waits_on_unrecorded: true,
            device_blocks: false,
            body_orderings: false,
        }
    }
}

/// One side of a copy: elements `start..end` of a device buffer, or a whole pinned buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Place {
    /// Whether `buffer` indexes the pinned buffers (always whole) rather than the device ones.
    pub pinned: bool,
    /// Index into [`RandomMemory::buffers`] or [`RandomMemory::pinned`].
    pub buffer: usize,
    /// The first element.
    pub start: usize,
    /// One past the last element.
    pub end: usize,
}

impl Place {
    /// The elements, `start..end`.
    pub fn range(&self) -> Range<usize> {
        self.start..self.end
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether it names no element (never, in a generated program).
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

/// One issue call of a [`RandomProgram`], in issue order.
///
/// Every operation carries `value`, its index in issue order: its node number in the plan.
#[derive(Debug, Clone)]
pub enum Call {
    /// `launch kernels[kernel](buffers[buffer], value)` with the whole buffer read or written.
    Launch {
        /// The statement.
        statement: &'static Statement,
        /// Index into the kernels given to [`RandomProgram::replay`].
        kernel: usize,
        /// Index into [`RandomMemory::buffers`].
        buffer: usize,
        /// Whether the kernel reads or writes the buffer.
        mode: AccessMode,
        /// The second kernel argument: this operation's index in issue order.
        value: u32,
    },
    /// `fill buffers[buffer][start..end] = value` (4-byte elements).
    Fill {
        /// The statement.
        statement: &'static Statement,
        /// Index into [`RandomMemory::buffers`].
        buffer: usize,
        /// The first element filled.
        start: usize,
        /// One past the last element filled.
        end: usize,
        /// The 32-bit pattern written: this operation's index in issue order.
        value: u32,
    },
    /// `copy dst <- src`: device to device (different buffers, or disjoint ranges of one),
    /// pinned to device or device to pinned; both sides have the same length.
    Copy {
        /// The statement.
        statement: &'static Statement,
        /// What is written.
        dst: Place,
        /// What is read.
        src: Place,
        /// This operation's index in issue order.
        value: u32,
    },
    /// `host F`: runs [`RandomMemory::host`] with `value`.
    Host {
        /// The statement.
        statement: &'static Statement,
        /// The host function's argument: this operation's index in issue order.
        value: u32,
    },
    /// `record EVENT`.
    Record(&'static Statement),
    /// `wait EVENT`.
    Wait(&'static Statement),
    /// `wait_stream OTHER`.
    WaitStream(&'static Statement),
    /// A device block: `while flags[flag], limit = limit { then }` (with `limit`) or
    /// `if flags[flag] { then } else { otherwise }` (without). `then` and `otherwise` are the
    /// ranges of [`RandomProgram::calls`] that issue its bodies, right after this call; their
    /// operations are numbered from 0 in each body (each body has a plan of its own).
    Block {
        /// The statement.
        statement: &'static Statement,
        /// Index into [`RandomMemory::flags`] (and [`RandomProgram::flags`]).
        flag: usize,
        /// The iteration limit of a `while`; `None` for an `if`.
        limit: Option<u32>,
        /// The `while` body or `then`.
        then: Range<usize>,
        /// The `else` body (empty for a `while`).
        otherwise: Range<usize>,
        /// This operation's index in issue order in its (possibly nested) plan.
        value: u32,
    },
}

impl Call {
    /// The statement this call issues.
    pub fn statement(&self) -> &'static Statement {
        match *self {
            Call::Launch { statement, .. }
            | Call::Fill { statement, .. }
            | Call::Copy { statement, .. }
            | Call::Host { statement, .. }
            | Call::Block { statement, .. } => statement,
            Call::Record(s) | Call::Wait(s) | Call::WaitStream(s) => s,
        }
    }

    /// The operation's index in issue order (its plan node), or `None` for ordering calls.
    pub fn value(&self) -> Option<u32> {
        match *self {
            Call::Launch { value, .. }
            | Call::Fill { value, .. }
            | Call::Copy { value, .. }
            | Call::Host { value, .. }
            | Call::Block { value, .. } => Some(value),
            Call::Record(_) | Call::Wait(_) | Call::WaitStream(_) => None,
        }
    }
}

/// The control structure of a [`RandomProgram`]: its statements, in source order, grouped
/// into straight runs, `for` loops and `if`s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// Statements issued once each, in order (indices into [`Program::statements`]).
    Run(Range<usize>),
    /// `for _ in 0..times { body }`.
    For {
        /// How often the body is issued (2 or 3).
        times: usize,
        /// The loop body.
        body: Vec<Block>,
    },
    /// `if condition { body }`, with the condition fixed for the program.
    If {
        /// Whether the body is issued.
        taken: bool,
        /// The body.
        body: Vec<Block>,
    },
    /// A device `while FLAG, limit = limit { body }` whose flag stays set: the body runs
    /// `limit` times. Statement `header` is the block itself.
    DeviceWhile {
        /// The block statement.
        header: usize,
        /// How often the body runs (0 to 3).
        limit: u32,
        /// The body.
        body: Vec<Block>,
    },
    /// A device `if FLAG { then } else { otherwise }` with the flag fixed for the program.
    DeviceIf {
        /// The block statement.
        header: usize,
        /// Whether `then` runs (else `otherwise`).
        taken: bool,
        /// The `then` body.
        then: Vec<Block>,
        /// The `else` body (possibly empty).
        otherwise: Vec<Block>,
    },
}

impl Block {
    /// The statements of the block, in source order.
    pub fn statements(&self) -> Range<usize> {
        match self {
            Block::Run(r) => r.clone(),
            Block::For { body, .. } | Block::If { body, .. } => {
                let start = body.first().map_or(0, |b| b.statements().start);
                let end = body.last().map_or(start, |b| b.statements().end);
                start..end
            }
            Block::DeviceWhile { header, body, .. } => {
                *header..body.last().map_or(header + 1, |b| b.statements().end)
            }
            Block::DeviceIf {
                header,
                then,
                otherwise,
                ..
            } => {
                let end = otherwise
                    .last()
                    .or(then.last())
                    .map_or(header + 1, |b| b.statements().end);
                *header..end
            }
        }
    }

    /// Appends the statements this block issues, in issue order.
    fn issue_order(&self, out: &mut Vec<usize>) {
        match self {
            Block::Run(r) => out.extend(r.clone()),
            Block::For { times, body } => {
                for _ in 0..*times {
                    body.iter().for_each(|b| b.issue_order(out));
                }
            }
            Block::If { taken, body } => {
                if *taken {
                    body.iter().for_each(|b| b.issue_order(out));
                }
            }
            // A block's bodies are issued once each (a capture and a plan issue them once,
            // whatever the device later decides).
            Block::DeviceWhile { header, body, .. } => {
                out.push(*header);
                body.iter().for_each(|b| b.issue_order(out));
            }
            Block::DeviceIf {
                header,
                then,
                otherwise,
                ..
            } => {
                out.push(*header);
                then.iter().for_each(|b| b.issue_order(out));
                otherwise.iter().for_each(|b| b.issue_order(out));
            }
        }
    }

    /// Sets `out[i]` to the innermost device body holding statement `i` (`(header, branch)`,
    /// branch 0 for a `while` body or `then`, 1 for `else`), `inside` for those of no block
    /// of its own.
    fn innermost_bodies(&self, inside: Option<(usize, usize)>, out: &mut [Option<(usize, usize)>]) {
        let mut mark = |i: usize| {
            if let Some(o) = out.get_mut(i) {
                *o = inside;
            }
        };
        match self {
            Block::Run(r) => r.clone().for_each(mark),
            Block::For { body, .. } | Block::If { body, .. } => {
                body.iter().for_each(|b| b.innermost_bodies(inside, out))
            }
            Block::DeviceWhile { header, body, .. } => {
                mark(*header);
                body.iter()
                    .for_each(|b| b.innermost_bodies(Some((*header, 0)), out));
            }
            Block::DeviceIf {
                header,
                then,
                otherwise,
                ..
            } => {
                mark(*header);
                then.iter()
                    .for_each(|b| b.innermost_bodies(Some((*header, 0)), out));
                otherwise
                    .iter()
                    .for_each(|b| b.innermost_bodies(Some((*header, 1)), out));
            }
        }
    }

    /// Marks the statements inside device block bodies, and numbers the blocks' flags.
    fn device_bodies(&self, inside: bool, in_body: &mut [bool], flags: &mut Vec<(usize, u32)>) {
        let mark = |r: Range<usize>, in_body: &mut [bool]| {
            for i in r {
                if let Some(b) = in_body.get_mut(i) {
                    *b = true;
                }
            }
        };
        match self {
            Block::Run(r) => {
                if inside {
                    mark(r.clone(), in_body);
                }
            }
            Block::For { body, .. } | Block::If { body, .. } => body
                .iter()
                .for_each(|b| b.device_bodies(inside, in_body, flags)),
            Block::DeviceWhile { header, body, .. } => {
                if inside {
                    mark(*header..header + 1, in_body);
                }
                flags.push((*header, 1));
                body.iter()
                    .for_each(|b| b.device_bodies(true, in_body, flags));
            }
            Block::DeviceIf {
                header,
                taken,
                then,
                otherwise,
            } => {
                if inside {
                    mark(*header..header + 1, in_body);
                }
                flags.push((*header, u32::from(*taken)));
                then.iter()
                    .chain(otherwise)
                    .for_each(|b| b.device_bodies(true, in_body, flags));
            }
        }
    }
}

/// What a host function of a random program runs: called with the operation's index.
pub type RandomHostFn = Arc<dyn Fn(u32) + Send + Sync + 'static>;

/// The memory a [`RandomProgram`] is replayed on, and what its host functions do.
///
/// The buffers are borrowed `&mut`: the program's launches, copies and fills write them.
pub struct RandomMemory<'a> {
    /// The device buffers: at least [`RandomProgram::buffers`], each of
    /// [`RandomProgram::buffer_len`] elements.
    pub buffers: &'a mut [DeviceBuffer<u32>],
    /// The pinned buffers: at least [`RandomProgram::pinned`], each of
    /// [`RandomProgram::pinned_len`] elements.
    pub pinned: &'a mut [PinnedBuffer<u32>],
    /// What every host function runs, given its operation's index (nothing by default).
    pub host: RandomHostFn,
    /// The flags of device blocks: at least [`RandomProgram::flags`]`.len()`, set to those
    /// values before a run (see [`RandomProgram::set_flags`]).
    pub flags: &'a [DeviceFlag],
}

impl<'a> RandomMemory<'a> {
    /// Device and pinned buffers, with host functions that do nothing.
    pub fn new(buffers: &'a mut [DeviceBuffer<u32>], pinned: &'a mut [PinnedBuffer<u32>]) -> Self {
        RandomMemory {
            buffers,
            pinned,
            host: Arc::new(|_| {}),
            flags: &[],
        }
    }

    /// The same memory, with `flags` for the device blocks.
    pub fn with_flags(self, flags: &'a [DeviceFlag]) -> Self {
        RandomMemory { flags, ..self }
    }

    /// The same memory, with host functions that run `f(operation index)`.
    pub fn with_host(self, f: impl Fn(u32) + Send + Sync + 'static) -> Self {
        RandomMemory {
            host: Arc::new(f),
            ..self
        }
    }
}

impl fmt::Debug for RandomMemory<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RandomMemory")
            .field("buffers", &self.buffers)
            .field("pinned", &self.pinned)
            .finish_non_exhaustive()
    }
}

/// A seeded random program and the calls that issue it (a testing utility).
///
/// Every launch passes two arguments, `(buffer, value)`: a pointer to one whole device buffer
/// (read or written) and a `u32`, the operation's index in issue order, so a GPU test's kernel
/// is `extern "C" __global__ void k(unsigned int* buf, unsigned int value)` (or any element
/// type of the same size); [`RandomProgram::replay_with`] lets a test issue launches its own
/// way. The same seed and options always give the same program.
#[derive(Debug, Clone)]
pub struct RandomProgram {
    /// The seed it was generated from.
    pub seed: u64,
    /// The options it was generated with.
    pub options: RandomOptions,
    /// The program (leaked, as every program is `'static`).
    pub program: &'static Program,
    /// The program's control structure: every statement belongs to exactly one
    /// [`Block::Run`], in source order, except device blocks' own statements (their
    /// `header`s).
    pub blocks: Vec<Block>,
    /// The issue calls, in order: statements inside loops appear once per iteration,
    /// statements inside `if`s not taken never; a device block's call is followed by the calls
    /// of its bodies (once each).
    pub calls: Vec<Call>,
    /// The value each device block's flag holds (by flag index): 1 for a `while` (its limit
    /// ends it), whether it is taken for an `if`.
    flag_values: Vec<u32>,
}

/// What one statement does, as generated.
#[derive(Debug, Clone, Copy)]
enum Work {
    Launch {
        kernel: usize,
        buffer: usize,
        mode: AccessMode,
    },
    Fill {
        buffer: usize,
        start: usize,
        end: usize,
    },
    Copy {
        dst: Place,
        src: Place,
    },
    Host,
    Order,
    /// A device block.
    Block,
}

/// The sizes a program was generated for, after clamping.
#[derive(Debug, Clone, Copy)]
struct Shape {
    buffers: usize,
    buffer_len: usize,
    pinned: usize,
    pinned_len: usize,
    kernels: usize,
}

impl Shape {
    fn of(options: &RandomOptions) -> Shape {
        let buffer_len = options.buffer_len.clamp(1, RandomProgram::MAX_BUFFER_LEN);
        Shape {
            buffers: options.buffers.clamp(1, RandomProgram::MAX_EVENTS),
            buffer_len,
            pinned: if options.host_copies {
                options.pinned.min(RandomProgram::MAX_EVENTS)
            } else {
                0
            },
            pinned_len: options.pinned_len.clamp(1, buffer_len),
            kernels: options.kernels.clamp(1, RandomProgram::MAX_EVENTS),
        }
    }
}

impl RandomProgram {
    /// The most streams a random program declares.
    pub const MAX_STREAMS: usize = 256;
    /// The most events (and buffers, and kernels) a random program uses.
    pub const MAX_EVENTS: usize = 4096;
    /// The most statements a random program has.
    pub const MAX_STATEMENTS: usize = 1 << 20;
    /// The most elements in one of a random program's buffers.
    pub const MAX_BUFFER_LEN: usize = 1 << 16;
    /// How deep `for`s and `if`s nest.
    pub const MAX_NESTING: usize = 2;

    /// The program of `seed` with the [default options](RandomOptions::default).
    pub fn new(seed: u64) -> RandomProgram {
        RandomProgram::with_options(seed, RandomOptions::default())
    }

    /// The program of `seed` under `options`. Counts beyond what a program can hold are
    /// clamped: at most [`RandomProgram::MAX_STREAMS`] streams, [`RandomProgram::MAX_EVENTS`]
    /// events, buffers and kernels, [`RandomProgram::MAX_STATEMENTS`] statements and
    /// [`RandomProgram::MAX_BUFFER_LEN`] elements per buffer.
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
        let shape = Shape::of(&options);

        // The control structure first: which statements are issued, how often, in what order.
        let blocks = structure(&mut rng, &options, 0..statement_count, 0);
        let mut order = Vec::new();
        blocks.iter().for_each(|b| b.issue_order(&mut order));
        let mut issued = vec![false; statement_count];
        for &id in &order {
            issued[id] = true;
        }
        let mut in_body = vec![false; statement_count];
        let mut headers: Vec<(usize, u32)> = Vec::new();
        blocks
            .iter()
            .for_each(|b| b.device_bodies(false, &mut in_body, &mut headers));
        let mut header_of = vec![None; statement_count];
        for (flag, &(h, _)) in headers.iter().enumerate() {
            header_of[h] = Some(flag);
        }
        let mut extents = vec![None; statement_count];
        blocks.iter().for_each(|b| block_extents(b, &mut extents));
        // Inside device bodies: no host functions, no host copies.
        let body_options = RandomOptions {
            host_fns: false,
            host_copies: false,
            ..options.clone()
        };
        let body_shape = Shape { pinned: 0, ..shape };

        let mut b = ProgramBuilder::new(&format!("Random{seed:#x}"));
        b.file(&format!("<random program {seed:#x}>"));
        for s in 0..stream_count {
            b.stream(&format!("s{s}"));
        }
        for e in 0..event_count {
            b.event(&format!("e{e}"));
        }
        // The first issues of statements come in source order (a loop's first iteration
        // issues its body in order), so "recorded before" is tracked in source order over the
        // statements that are issued.
        let mut work: Vec<Work> = Vec::with_capacity(statement_count);
        let mut recorded = vec![false; event_count];
        // The innermost device body of each statement, each statement's stream, and the events
        // recorded in each body so far (in source order).
        let mut bodies = vec![None; statement_count];
        blocks
            .iter()
            .for_each(|b| b.innermost_bodies(None, &mut bodies));
        let mut streams = Vec::with_capacity(statement_count);
        let mut recorded_in: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
        for (id, &issued) in issued.iter().enumerate() {
            let mut stream = rng.below(stream_count);
            let body = bodies[id];
            if let (true, Some((header, _))) = (options.body_orderings, body) {
                if rng.below(2) == 0 {
                    stream = streams[header];
                }
            }
            streams.push(stream);
            if let (Some(flag), Some((otherwise, end))) = (header_of[id], extents[id]) {
                match otherwise {
                    None => b.while_block(stream, &format!("f{flag}"), end),
                    Some(o) => b.if_block(stream, &format!("f{flag}"), o, end),
                };
                work.push(Work::Block);
                continue;
            }
            let roll = rng.below(100);
            let mut event = (event_count > 0).then(|| rng.below(event_count));
            let other = (stream + 1 + rng.below(stream_count.max(2) - 1)) % stream_count;
            if options.body_orderings && (65..=84).contains(&roll) {
                let here = body.and_then(|k| recorded_in.get(&k));
                if let (Some(here), Some((header, _))) = (here.filter(|h| !h.is_empty()), body) {
                    if rng.below(4) != 0 {
                        event = Some(here[rng.below(here.len())]);
                        if rng.below(2) == 0 {
                            stream = streams[header];
                            streams[id] = stream;
                        }
                    }
                }
            }
            match (roll, event) {
                (45..=64, Some(e)) => {
                    b.record(stream, e);
                    recorded[e] |= issued;
                    if let Some(k) = body {
                        recorded_in.entry(k).or_default().push(e);
                    }
                    work.push(Work::Order);
                    continue;
                }
                (65..=84, Some(e)) if options.waits_on_unrecorded || recorded[e] => {
                    b.wait(stream, e);
                    work.push(Work::Order);
                    continue;
                }
                (85.., _) if other != stream => {
                    b.wait_stream(stream, other);
                    work.push(Work::Order);
                    continue;
                }
                _ => {}
            }
            let w = if in_body[id] {
                operation(&mut rng, &body_options, body_shape)
            } else {
                operation(&mut rng, &options, shape)
            };
            let name = |p: Place| {
                if p.pinned {
                    format!("h{}", p.buffer)
                } else {
                    format!("b{}", p.buffer)
                }
            };
            match w {
                Work::Launch {
                    kernel,
                    buffer,
                    mode,
                } => b.launch(
                    stream,
                    &format!("k{kernel}"),
                    &[(&format!("b{buffer}"), mode)],
                ),
                Work::Fill { buffer, .. } => b.fill(stream, &format!("b{buffer}")),
                Work::Copy { dst, src } => b.copy(stream, &name(dst), &name(src)),
                // `operation` makes no `Order` nor `Block`.
                Work::Host | Work::Order | Work::Block => b.host(stream),
            };
            work.push(w);
        }
        let program = b.build();

        let mut calls = Vec::with_capacity(order.len());
        let mut ops = 0u32;
        emit(&blocks, program, &work, &headers, &mut calls, &mut ops);
        RandomProgram {
            seed,
            options,
            program,
            blocks,
            calls,
            flag_values: headers.iter().map(|&(_, v)| v).collect(),
        }
    }

    /// The values of the device blocks' flags, by flag index: what
    /// [`RandomMemory::flags`] must hold before each run.
    pub fn flags(&self) -> &[u32] {
        &self.flag_values
    }

    /// Sets `flags` (at least [`flags`](Self::flags)`.len()` of them) to their values.
    pub fn set_flags(&self, flags: &mut [DeviceFlag]) -> Result<()> {
        if flags.len() < self.flag_values.len() {
            return Err(self.missing("device flag", flags.len(), self.flag_values.len()));
        }
        for (flag, &v) in flags.iter_mut().zip(&self.flag_values) {
            flag.set(v)?;
        }
        Ok(())
    }

    /// The number of operations (launches, fills, copies, host functions and device blocks)
    /// the calls issue, not counting those inside device blocks' bodies: the plan's length.
    pub fn operation_count(&self) -> usize {
        let mut count = 0;
        let mut i = 0;
        while let Some(call) = self.calls.get(i) {
            count += usize::from(call.value().is_some());
            i = match call {
                Call::Block {
                    then, otherwise, ..
                } => then.end.max(otherwise.end).max(i + 1),
                _ => i + 1,
            };
        }
        count
    }

    /// The statements never issued (those inside `if`s not taken), in source order.
    pub fn unissued(&self) -> Vec<&'static Statement> {
        let mut issued = vec![false; self.program.statements.len()];
        for c in &self.calls {
            issued[c.statement().id] = true;
        }
        self.program
            .statements
            .iter()
            .filter(|s| !issued[s.id])
            .collect()
    }

    /// How many device buffers [`replay`](Self::replay) needs.
    pub fn buffers(&self) -> usize {
        Shape::of(&self.options).buffers
    }

    /// How many elements each device buffer must hold.
    pub fn buffer_len(&self) -> usize {
        Shape::of(&self.options).buffer_len
    }

    /// How many pinned buffers [`replay`](Self::replay) needs (0 without host copies).
    pub fn pinned(&self) -> usize {
        Shape::of(&self.options).pinned
    }

    /// How many elements each pinned buffer must hold.
    pub fn pinned_len(&self) -> usize {
        Shape::of(&self.options).pinned_len
    }

    /// How many kernels [`replay`](Self::replay) needs.
    pub fn kernels(&self) -> usize {
        Shape::of(&self.options).kernels
    }

    /// The launch configuration [`plan`](Self::plan) uses: one block of one thread.
    pub fn launch_config() -> LaunchConfig {
        LaunchConfig {
            grid: Dim3::from(1),
            block: Dim3::from(1),
            shared_mem_bytes: 0,
        }
    }

    /// Issues every call into `issuer`, with `kernels[k]` for kernel `k` (at least
    /// [`kernels`](Self::kernels) of them) launched with `config` and the arguments
    /// `(buffer, value)`, and `memory` for buffers and host functions; fills write 4-byte
    /// patterns.
    pub fn replay<I>(
        &self,
        issuer: &mut I,
        kernels: &[Kernel],
        memory: &RandomMemory<'_>,
        config: LaunchConfig,
    ) -> Result<()>
    where
        I: Issuer + ?Sized,
    {
        let need = self.kernels();
        if kernels.len() < need {
            return Err(self.missing("kernel", kernels.len(), need));
        }
        self.replay_with(issuer, memory, |issuer, call| {
            let Call::Launch {
                statement,
                kernel,
                buffer,
                mode,
                value,
            } = *call
            else {
                return Ok(());
            };
            let arg = match mode {
                AccessMode::Read => gen::arg_read(&memory.buffers[buffer]),
                AccessMode::Write => gen::arg_place(gen::place(&memory.buffers).index(buffer))
                    .map_err(|e| e.in_statement(statement))?,
            };
            issuer.launch(
                statement,
                &kernels[kernel],
                config,
                &[arg, gen::arg_value(&value)],
            )
        })
    }

    /// Issues every call into `issuer` as [`replay`](Self::replay) does, except launches:
    /// `launch(issuer, call)` issues each [`Call::Launch`], as the test likes (its accesses
    /// should be the call's buffer and mode, for the plan to match). Inside device blocks'
    /// bodies the issuer is the one the block hands its body, hence `&mut dyn Issuer`.
    pub fn replay_with<I, L>(
        &self,
        issuer: &mut I,
        memory: &RandomMemory<'_>,
        mut launch: L,
    ) -> Result<()>
    where
        I: Issuer + ?Sized,
        L: FnMut(&mut dyn Issuer, &Call) -> Result<()>,
    {
        self.check_memory(memory)?;
        let mut forward = Forward(issuer);
        self.replay_calls(&mut forward, 0..self.calls.len(), memory, &mut launch)
    }

    fn replay_calls(
        &self,
        issuer: &mut dyn Issuer,
        range: Range<usize>,
        memory: &RandomMemory<'_>,
        launch: &mut dyn FnMut(&mut dyn Issuer, &Call) -> Result<()>,
    ) -> Result<()> {
        let mut i = range.start;
        while i < range.end {
            let call = &self.calls[i];
            i += 1;
            match *call {
                Call::Launch { .. } => launch(issuer, call)?,
                Call::Fill {
                    statement,
                    buffer,
                    start,
                    end,
                    value,
                } => {
                    let place = gen::place(&memory.buffers).index(buffer);
                    issue::fill_with(
                        issuer,
                        statement,
                        place.slice(start..end),
                        value,
                        FillValue::pattern,
                    )
                    .map_err(|e| e.in_statement(statement))?;
                }
                Call::Copy {
                    statement,
                    dst,
                    src,
                    ..
                } => {
                    let src = Side::new(memory, src).map_err(|e| e.in_statement(statement))?;
                    let dst = target(memory, dst).map_err(|e| e.in_statement(statement))?;
                    issuer.copy(statement, dst, src.source())?;
                }
                Call::Host { statement, value } => {
                    let host = Arc::clone(&memory.host);
                    issue::host(issuer, statement, move || host(value))?;
                }
                Call::Record(s) => issuer.record(s)?,
                Call::Wait(s) => issuer.wait(s)?,
                Call::WaitStream(s) => issuer.wait_stream(s)?,
                Call::Block {
                    statement,
                    flag,
                    limit,
                    ref then,
                    ref otherwise,
                    ..
                } => {
                    let f = memory.flags.get(flag).ok_or_else(|| {
                        self.missing("device flag", memory.flags.len(), flag + 1)
                            .in_statement(statement)
                    })?;
                    let (then, otherwise) = (then.clone(), otherwise.clone());
                    i = i.max(then.end).max(otherwise.end);
                    let mut first = |inner: &mut dyn Issuer| {
                        self.replay_calls(inner, then.clone(), memory, &mut *launch)
                    };
                    match limit {
                        Some(_) => issuer.while_loop(statement, f, limit, &mut first)?,
                        None => {
                            // Both closures borrow `launch`; run them through one cell.
                            let launch = std::cell::RefCell::new(&mut *launch);
                            let mut a = |inner: &mut dyn Issuer| {
                                let mut l = launch.borrow_mut();
                                self.replay_calls(inner, then.clone(), memory, &mut **l)
                            };
                            let mut b = |inner: &mut dyn Issuer| {
                                let mut l = launch.borrow_mut();
                                self.replay_calls(inner, otherwise.clone(), memory, &mut **l)
                            };
                            let (a, b): (&mut Body<'_>, &mut Body<'_>) = (&mut a, &mut b);
                            issuer.if_else(statement, f, a, b)?
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The program's plan, replayed with plan-only kernels and memory.
    pub fn plan(&self) -> Result<Plan> {
        let kernels: Vec<Kernel> = (0..self.kernels())
            .map(|k| Kernel::for_planning(&format!("k{k}")))
            .collect();
        let mut buffers: Vec<DeviceBuffer<u32>> = (0..self.buffers())
            .map(|_| DeviceBuffer::for_planning(self.buffer_len()))
            .collect::<Result<_>>()?;
        let mut pinned: Vec<PinnedBuffer<u32>> = (0..self.pinned())
            .map(|_| PinnedBuffer::for_planning(self.pinned_len()))
            .collect::<Result<_>>()?;
        let flags: Vec<DeviceFlag> = (0..self.flag_values.len())
            .map(|_| DeviceFlag::for_planning())
            .collect::<Result<_>>()?;
        let mut planner = Planner::new(self.program);
        self.replay(
            &mut planner,
            &kernels,
            &RandomMemory::new(&mut buffers, &mut pinned).with_flags(&flags),
            Self::launch_config(),
        )?;
        Ok(planner.finish())
    }

    fn missing(&self, what: &str, have: usize, need: usize) -> Error {
        Error::InvalidArgument(format!(
            "random program {:#x} needs {need} {what}(s) but {have} were given",
            self.seed
        ))
    }

    fn check_memory(&self, memory: &RandomMemory<'_>) -> Result<()> {
        let shape = Shape::of(&self.options);
        if memory.buffers.len() < shape.buffers {
            return Err(self.missing("buffer", memory.buffers.len(), shape.buffers));
        }
        if memory.pinned.len() < shape.pinned {
            return Err(self.missing("pinned buffer", memory.pinned.len(), shape.pinned));
        }
        let wrong = |what: &str, i: usize, have: usize, need: usize| {
            Error::InvalidArgument(format!(
                "random program {:#x} needs {what}s of {need} elements but {what} {i} has {have}",
                self.seed
            ))
        };
        for (i, b) in memory.buffers[..shape.buffers].iter().enumerate() {
            if b.len() != shape.buffer_len {
                return Err(wrong("buffer", i, b.len(), shape.buffer_len));
            }
        }
        for (i, p) in memory.pinned[..shape.pinned].iter().enumerate() {
            if p.len() != shape.pinned_len {
                return Err(wrong("pinned buffer", i, p.len(), shape.pinned_len));
            }
        }
        Ok(())
    }
}

/// The destination of a copy, written through the replay's exclusive borrow of its memory.
fn target<'m>(memory: &'m RandomMemory<'_>, place: Place) -> Result<MemoryMut<'m>> {
    let missing = |what: &str, len: usize| {
        Error::InvalidArgument(format!("the copy names {what} {} of {len}", place.buffer))
    };
    if place.pinned {
        if place.buffer >= memory.pinned.len() {
            return Err(missing("pinned buffer", memory.pinned.len()));
        }
        return gen::place(&memory.pinned)
            .index(place.buffer)
            .copy_target::<u32>();
    }
    if place.buffer >= memory.buffers.len() {
        return Err(missing("buffer", memory.buffers.len()));
    }
    gen::place(&memory.buffers)
        .index(place.buffer)
        .slice(place.range())
        .copy_target::<u32>()
}

/// One side of a copy, borrowed from the replay's memory.
enum Side<'m> {
    Whole(&'m DeviceBuffer<u32>),
    Part(DeviceView<'m, u32>),
    Pinned(&'m PinnedBuffer<u32>),
}

impl<'m> Side<'m> {
    fn new(memory: &'m RandomMemory<'_>, place: Place) -> Result<Side<'m>> {
        let memory_for = |what: &str, len: usize| {
            Error::InvalidArgument(format!("the copy names {what} {} of {len}", place.buffer))
        };
        if place.pinned {
            let pinned = memory
                .pinned
                .get(place.buffer)
                .ok_or_else(|| memory_for("pinned buffer", memory.pinned.len()))?;
            return Ok(Side::Pinned(pinned));
        }
        let buf = memory
            .buffers
            .get(place.buffer)
            .ok_or_else(|| memory_for("buffer", memory.buffers.len()))?;
        if place.start == 0 && place.end == buf.len() {
            Ok(Side::Whole(buf))
        } else {
            Ok(Side::Part(buf.try_slice(place.range())?))
        }
    }

    fn source(&self) -> MemoryRef<'_> {
        match self {
            Side::Whole(b) => CopySource::<u32>::copy_source(*b),
            Side::Part(v) => v.copy_source(),
            Side::Pinned(p) => CopySource::<u32>::copy_source(*p),
        }
    }
}

/// Groups `range` into runs, `for`s and `if`s, nested at most [`RandomProgram::MAX_NESTING`]
/// deep.
fn structure(
    rng: &mut XorShift,
    options: &RandomOptions,
    range: Range<usize>,
    depth: usize,
) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut at = range.start;
    while at < range.end {
        // Bodies made to exercise their orderings are longer.
        let most = if options.body_orderings { 24 } else { 12 };
        let len = rng.between(1, (range.end - at).min(most));
        let part = at..at + len;
        let nest = depth < RandomProgram::MAX_NESTING;
        // Bodies made to exercise their orderings nest one device block deeper.
        let device_depth = RandomProgram::MAX_NESTING + usize::from(options.body_orderings);
        let device = depth < device_depth && options.device_blocks && len >= 2;
        let block = match rng.below(5) {
            0 if nest && options.loops => Block::For {
                times: rng.between(2, 3),
                body: structure(rng, options, part, depth + 1),
            },
            1 if nest && options.conditionals => Block::If {
                taken: rng.below(2) == 0,
                body: structure(rng, options, part, depth + 1),
            },
            2 if device => Block::DeviceWhile {
                header: part.start,
                limit: rng.below(4) as u32,
                body: structure(rng, options, part.start + 1..part.end, depth + 1),
            },
            3 if device => {
                let mid = rng.between(part.start + 1, part.end);
                Block::DeviceIf {
                    header: part.start,
                    taken: rng.below(2) == 0,
                    then: structure(rng, options, part.start + 1..mid, depth + 1),
                    otherwise: structure(rng, options, mid..part.end, depth + 1),
                }
            }
            _ => Block::Run(part),
        };
        // Consecutive runs are one run.
        match (blocks.last_mut(), block) {
            (Some(Block::Run(last)), Block::Run(next)) => last.end = next.end,
            (_, block) => blocks.push(block),
        }
        at += len;
    }
    blocks
}

/// For each device block header: `(None, end)` for a `while`, `(Some(otherwise), end)` for an
/// `if`.
fn block_extents(block: &Block, out: &mut [Option<(Option<usize>, usize)>]) {
    match block {
        Block::Run(_) => {}
        Block::For { body, .. } | Block::If { body, .. } => {
            body.iter().for_each(|b| block_extents(b, out))
        }
        Block::DeviceWhile { header, body, .. } => {
            out[*header] = Some((None, block.statements().end));
            body.iter().for_each(|b| block_extents(b, out));
        }
        Block::DeviceIf {
            header,
            then,
            otherwise,
            ..
        } => {
            let end = block.statements().end;
            let mid = otherwise.first().map_or(end, |b| b.statements().start);
            out[*header] = Some((Some(mid), end));
            then.iter()
                .chain(otherwise)
                .for_each(|b| block_extents(b, out));
        }
    }
}

/// The calls of `blocks` in issue order, operations numbered from `*ops` (each device body
/// numbers its own from 0).
fn emit(
    blocks: &[Block],
    program: &'static Program,
    work: &[Work],
    headers: &[(usize, u32)],
    calls: &mut Vec<Call>,
    ops: &mut u32,
) {
    for block in blocks {
        match block {
            Block::Run(r) => {
                for id in r.clone() {
                    let call = call_of(program, id, work[id], *ops);
                    if call.value().is_some() {
                        *ops += 1;
                    }
                    calls.push(call);
                }
            }
            Block::For { times, body } => {
                for _ in 0..*times {
                    emit(body, program, work, headers, calls, ops);
                }
            }
            Block::If { taken, body } => {
                if *taken {
                    emit(body, program, work, headers, calls, ops);
                }
            }
            Block::DeviceWhile {
                header,
                limit,
                body,
            } => emit_block(
                *header,
                Some(*limit),
                [body, &[]],
                program,
                work,
                headers,
                calls,
                ops,
            ),
            Block::DeviceIf {
                header,
                then,
                otherwise,
                ..
            } => emit_block(
                *header,
                None,
                [then, otherwise],
                program,
                work,
                headers,
                calls,
                ops,
            ),
        }
    }
}

/// A device block's call, then its bodies' calls (`then`, then `otherwise`), each body's
/// operations numbered from 0; the block itself is operation `*ops`.
#[allow(clippy::too_many_arguments)]
fn emit_block(
    header: usize,
    limit: Option<u32>,
    [then, otherwise]: [&[Block]; 2],
    program: &'static Program,
    work: &[Work],
    headers: &[(usize, u32)],
    calls: &mut Vec<Call>,
    ops: &mut u32,
) {
    let at = calls.len();
    let statement = &program.statements[header];
    let flag = headers.iter().position(|&(h, _)| h == header).unwrap_or(0);
    // A placeholder until the bodies' extents are known.
    calls.push(Call::Record(statement));
    emit(then, program, work, headers, calls, &mut 0);
    let mid = calls.len();
    emit(otherwise, program, work, headers, calls, &mut 0);
    let end = calls.len();
    calls[at] = Call::Block {
        statement,
        flag,
        limit,
        then: at + 1..mid,
        otherwise: mid..end,
        value: *ops,
    };
    *ops += 1;
}

/// The call of statement `id`, which generated as `work`, numbered `value` if an operation.
fn call_of(program: &'static Program, id: usize, work: Work, value: u32) -> Call {
    let statement = &program.statements[id];
    match (statement.kind, work) {
        (
            StatementKind::Launch { .. },
            Work::Launch {
                kernel,
                buffer,
                mode,
            },
        ) => Call::Launch {
            statement,
            kernel,
            buffer,
            mode,
            value,
        },
        (StatementKind::Fill, Work::Fill { buffer, start, end }) => Call::Fill {
            statement,
            buffer,
            start,
            end,
            value,
        },
        (StatementKind::Copy, Work::Copy { dst, src }) => Call::Copy {
            statement,
            dst,
            src,
            value,
        },
        (StatementKind::Host, _) => Call::Host { statement, value },
        (StatementKind::Record { .. }, _) => Call::Record(statement),
        (StatementKind::Wait { .. }, _) => Call::Wait(statement),
        _ => Call::WaitStream(statement),
    }
}

/// Forwards every issuer call to a possibly unsized issuer, so that it can be handed on as
/// `&mut dyn Issuer`.
struct Forward<'a, I: Issuer + ?Sized>(&'a mut I);

impl<I: Issuer + ?Sized> Issuer for Forward<'_, I> {
    fn launch(
        &mut self,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        self.0.launch(stmt, kernel, config, args)
    }
    fn copy(
        &mut self,
        stmt: &'static Statement,
        dst: MemoryMut<'_>,
        src: MemoryRef<'_>,
    ) -> Result<()> {
        self.0.copy(stmt, dst, src)
    }
    fn fill(
        &mut self,
        stmt: &'static Statement,
        dst: MemoryMut<'_>,
        pattern: FillPattern,
    ) -> Result<()> {
        self.0.fill(stmt, dst, pattern)
    }
    fn host(&mut self, stmt: &'static Statement, f: HostFn) -> Result<()> {
        self.0.host(stmt, f)
    }
    fn record(&mut self, stmt: &'static Statement) -> Result<()> {
        self.0.record(stmt)
    }
    fn wait(&mut self, stmt: &'static Statement) -> Result<()> {
        self.0.wait(stmt)
    }
    fn wait_stream(&mut self, stmt: &'static Statement) -> Result<()> {
        self.0.wait_stream(stmt)
    }
    fn while_loop(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        limit: Option<u32>,
        body: &mut Body<'_>,
    ) -> Result<()> {
        self.0.while_loop(stmt, flag, limit, body)
    }
    fn if_else(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        then: &mut Body<'_>,
        otherwise: &mut Body<'_>,
    ) -> Result<()> {
        self.0.if_else(stmt, flag, then, otherwise)
    }
    fn collective(
        &mut self,
        stmt: &'static Statement,
        comm: &crate::comm::Communicator,
        op: crate::operand::ReduceOp,
        parts: &[crate::issue::CollectivePart<'_>],
    ) -> Result<()> {
        self.0.collective(stmt, comm, op, parts)
    }
}

/// A random element range of `len` elements: the whole of it, or (when `sub`) half the time
/// a random non-empty part.
fn range_in(rng: &mut XorShift, len: usize, sub: bool) -> (usize, usize) {
    if !sub || rng.below(2) == 0 {
        (0, len)
    } else {
        let n = rng.between(1, len);
        let start = rng.below(len - n + 1);
        (start, start + n)
    }
}

/// A random operation among those `options` allow.
fn operation(rng: &mut XorShift, options: &RandomOptions, shape: Shape) -> Work {
    let (len, sub) = (shape.buffer_len, options.sub_ranges);
    let weights = [
        (8, true),
        (3, options.fills),
        (4, options.copies),
        (2, shape.pinned > 0),
        (2, shape.pinned > 0),
        (2, options.host_fns),
    ];
    let total: usize = weights.iter().filter(|w| w.1).map(|w| w.0).sum();
    let mut roll = rng.below(total);
    let mut kind = 0;
    for (i, &(weight, on)) in weights.iter().enumerate() {
        if !on {
            continue;
        }
        if roll < weight {
            kind = i;
            break;
        }
        roll -= weight;
    }
    let device = |buffer: usize, (start, end): (usize, usize)| Place {
        pinned: false,
        buffer,
        start,
        end,
    };
    let work = match kind {
        1 => {
            let buffer = rng.below(shape.buffers);
            let (start, end) = range_in(rng, len, sub);
            Some(Work::Fill { buffer, start, end })
        }
        2 => {
            let src = rng.below(shape.buffers);
            let same = sub && len >= 2 && (shape.buffers == 1 || rng.below(4) == 0);
            if same {
                // Two disjoint ranges of one buffer.
                let n = rng.between(1, len / 2);
                let first = rng.below(len - 2 * n + 1);
                let second = first + n + rng.below(len - 2 * n - first + 1);
                let (a, b) = ((first, first + n), (second, second + n));
                let (d, s) = if rng.below(2) == 0 { (a, b) } else { (b, a) };
                Some(Work::Copy {
                    dst: device(src, d),
                    src: device(src, s),
                })
            } else if shape.buffers >= 2 {
                let dst = (src + 1 + rng.below(shape.buffers - 1)) % shape.buffers;
                let (d, s) = if !sub || rng.below(2) == 0 {
                    ((0, len), (0, len))
                } else {
                    let n = rng.between(1, len);
                    let (a, b) = (rng.below(len - n + 1), rng.below(len - n + 1));
                    ((a, a + n), (b, b + n))
                };
                Some(Work::Copy {
                    dst: device(dst, d),
                    src: device(src, s),
                })
            } else {
                None
            }
        }
        3 | 4 => {
            let pinned = Place {
                pinned: true,
                buffer: rng.below(shape.pinned),
                start: 0,
                end: shape.pinned_len,
            };
            let start = if sub {
                rng.below(len - shape.pinned_len + 1)
            } else {
                0
            };
            let dev = device(rng.below(shape.buffers), (start, start + shape.pinned_len));
            Some(if kind == 3 {
                Work::Copy {
                    dst: dev,
                    src: pinned,
                }
            } else {
                Work::Copy {
                    dst: pinned,
                    src: dev,
                }
            })
        }
        5 => Some(Work::Host),
        _ => None,
    };
    work.unwrap_or_else(|| Work::Launch {
        buffer: rng.below(shape.buffers),
        kernel: rng.below(shape.kernels),
        mode: if rng.below(2) == 0 {
            AccessMode::Read
        } else {
            AccessMode::Write
        },
    })
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
