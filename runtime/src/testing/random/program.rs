//! [`RandomProgram`]: a generated program, its calls, and the sizes of the memory it needs.

use crate::error::{Error, Result};
use crate::memory::DeviceFlag;
use crate::operand::{Dim3, LaunchConfig};
use crate::program::{Program, Statement};

use super::blocks::Block;
use super::calls::{Call, Memory};
use super::options::RandomOptions;

/// A seeded random program and the calls that issue it (a testing utility).
///
/// Every launch passes two arguments, `(buffer, value)`: a pointer to one whole device buffer
/// or temporary (read or written) and a `u32`, the operation's index in issue order, so a GPU test's kernel
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
    pub(super) flag_values: Vec<u32>,
    /// Each temporary's length (elements), by temporary index.
    pub(super) temp_lens: Vec<usize>,
}

/// The sizes a program was generated for, after clamping.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub(super) buffers: usize,
    pub(super) buffer_len: usize,
    pub(super) pinned: usize,
    pub(super) pinned_len: usize,
    pub(super) kernels: usize,
}

impl Shape {
    pub(super) fn of(options: &RandomOptions) -> Shape {
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
    /// The most temporaries a random program declares.
    pub const MAX_TEMPS: usize = 64;

    /// The values of the device blocks' flags, by flag index: what
    /// [`RandomMemory::flags`](super::RandomMemory::flags) must hold before each run.
    pub fn flags(&self) -> &[u32] {
        &self.flag_values
    }

    /// The length (elements) of each of the program's temporaries, by index
    /// ([`Memory::Temp`](super::Memory::Temp)); empty without
    /// [`RandomOptions::temps`](super::RandomOptions::temps).
    pub fn temps(&self) -> &[usize] {
        &self.temp_lens
    }

    /// How many elements `memory` holds.
    pub fn len_of(&self, memory: Memory) -> usize {
        match memory {
            Memory::Buffer(_) => self.buffer_len(),
            Memory::Pinned(_) => self.pinned_len(),
            Memory::Temp(t) => self.temp_lens.get(t).copied().unwrap_or(0),
        }
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

    /// The number of operations (launches, fills, copies, host functions, `call`s, device
    /// blocks, and temporaries' allocations and releases)
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
                Call::Switch { arms, .. } => arms.iter().fold(i + 1, |e, r| e.max(r.end)),
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

    pub(super) fn missing(&self, what: &str, have: usize, need: usize) -> Error {
        Error::InvalidArgument(format!(
            "random program {:#x} needs {need} {what}(s) but {have} were given",
            self.seed
        ))
    }
}
