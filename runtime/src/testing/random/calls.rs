//! The issue calls of a random program ([`Call`]), the memory they name ([`Memory`]) and the
//! sides of its copies ([`Place`]).

use std::ops::Range;

use crate::program::{AccessMode, Statement};

/// Memory a call names, by index: a device buffer or a pinned buffer of the
/// [`RandomMemory`](super::RandomMemory), or one of the program's temporaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Memory {
    /// [`RandomMemory::buffers`](super::RandomMemory::buffers)`[i]`, of
    /// [`RandomProgram::buffer_len`](super::RandomProgram::buffer_len) elements.
    Buffer(usize),
    /// [`RandomMemory::pinned`](super::RandomMemory::pinned)`[i]`, of
    /// [`RandomProgram::pinned_len`](super::RandomProgram::pinned_len) elements (a copy's side
    /// only).
    Pinned(usize),
    /// Temporary `i` of the program, of [`RandomProgram::temps`](super::RandomProgram::temps)`[i]`
    /// elements: allocated by its [`Call::Alloc`], released by its [`Call::Free`].
    Temp(usize),
}

impl Memory {
    /// Its name in the program's statements: `b0`, `h0`, `t0`.
    pub fn name(self) -> String {
        match self {
            Memory::Buffer(i) => format!("b{i}"),
            Memory::Pinned(i) => format!("h{i}"),
            Memory::Temp(i) => format!("t{i}"),
        }
    }

    /// The temporary it is, if one.
    pub fn temp(self) -> Option<usize> {
        match self {
            Memory::Temp(t) => Some(t),
            _ => None,
        }
    }
}

/// One side of a copy: elements `start..end` of a device buffer or a temporary, or a whole
/// pinned buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Place {
    /// The memory.
    pub memory: Memory,
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

    /// Whether it is a pinned buffer.
    pub fn is_pinned(&self) -> bool {
        matches!(self.memory, Memory::Pinned(_))
    }
}

/// One issue call of a [`RandomProgram`](super::RandomProgram), in issue order.
///
/// Every operation carries `value`, its index in issue order: its node number in the plan.
#[derive(Debug, Clone)]
pub enum Call {
    /// `launch kernels[kernel](memory, value)` with the whole of `memory` (a device buffer or a
    /// temporary) read or written.
    Launch {
        /// The statement.
        statement: &'static Statement,
        /// Index into the kernels given to [`RandomProgram::replay`](super::RandomProgram::replay).
        kernel: usize,
        /// What the kernel reads or writes: a device buffer or a temporary.
        memory: Memory,
        /// Whether the kernel reads or writes it.
        mode: AccessMode,
        /// The second kernel argument: this operation's index in issue order.
        value: u32,
    },
    /// `fill memory[start..end] = value` (4-byte elements) of a device buffer or a temporary.
    Fill {
        /// The statement.
        statement: &'static Statement,
        /// A device buffer or a temporary.
        memory: Memory,
        /// The first element filled.
        start: usize,
        /// One past the last element filled.
        end: usize,
        /// The 32-bit pattern written: this operation's index in issue order.
        value: u32,
    },
    /// `copy dst <- src`: device to device (different memory, or disjoint ranges of one),
    /// pinned to device or device to pinned (device: a buffer or a temporary); both sides have
    /// the same length.
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
    /// `host F`: runs [`RandomMemory::host`](super::RandomMemory::host) with `value`.
    Host {
        /// The statement.
        statement: &'static Statement,
        /// The host function's argument: this operation's index in issue order.
        value: u32,
    },
    /// `call op(&mut dst, &src)`: through [`RandomCallOp`](super::RandomCallOp) with
    /// `kernels[kernel]` in [`RandomProgram::replay`](super::RandomProgram::replay).
    Call {
        /// The statement.
        statement: &'static Statement,
        /// Index into the kernels given to [`RandomProgram::replay`](super::RandomProgram::replay).
        kernel: usize,
        /// What is written: a device buffer or a temporary.
        dst: Memory,
        /// What is declared read: another device buffer or temporary.
        src: Memory,
        /// This operation's index in issue order.
        value: u32,
    },
    /// `alloc TEMP`: temporary `temp` is allocated (its contents undefined).
    Alloc {
        /// The statement.
        statement: &'static Statement,
        /// Which temporary.
        temp: usize,
        /// This operation's index in issue order.
        value: u32,
    },
    /// `free TEMP`: temporary `temp` is released; no later call names it.
    Free {
        /// The statement.
        statement: &'static Statement,
        /// Which temporary.
        temp: usize,
        /// This operation's index in issue order.
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
    /// ranges of [`RandomProgram::calls`](super::RandomProgram::calls) that issue its bodies, right after this call; their
    /// operations are numbered from 0 in each body (each body has a plan of its own).
    Block {
        /// The statement.
        statement: &'static Statement,
        /// Index into [`RandomMemory::flags`](super::RandomMemory::flags) (and [`RandomProgram::flags`](super::RandomProgram::flags)).
        flag: usize,
        /// The iteration limit of a `while`; `None` for an `if` and a signalled `while`.
        limit: Option<u32>,
        /// The `while` body or `then`.
        then: Range<usize>,
        /// The `else` body (empty for a `while`).
        otherwise: Range<usize>,
        /// This operation's index in issue order in its (possibly nested) plan.
        value: u32,
    },
    /// A device `switch` block: `arms` are the ranges of
    /// [`RandomProgram::calls`](super::RandomProgram::calls) that issue its arms' bodies, in
    /// arm order, right after this call; their operations are numbered from 0 in each body.
    Switch {
        /// The statement.
        statement: &'static Statement,
        /// Index into [`RandomMemory::flags`](super::RandomMemory::flags): the index.
        flag: usize,
        /// The arms' calls.
        arms: Vec<std::ops::Range<usize>>,
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
            | Call::Call { statement, .. }
            | Call::Alloc { statement, .. }
            | Call::Free { statement, .. }
            | Call::Block { statement, .. }
            | Call::Switch { statement, .. } => statement,
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
            | Call::Call { value, .. }
            | Call::Alloc { value, .. }
            | Call::Free { value, .. }
            | Call::Block { value, .. }
            | Call::Switch { value, .. } => Some(value),
            Call::Record(_) | Call::Wait(_) | Call::WaitStream(_) => None,
        }
    }

    /// The memory the call touches, each with whether it is written (a copy's destination
    /// first); an allocation and a release write their temporary; a device block's bodies
    /// are calls of their own.
    pub fn touches(&self) -> Vec<(Memory, AccessMode)> {
        match *self {
            Call::Launch { memory, mode, .. } => vec![(memory, mode)],
            Call::Fill { memory, .. } => vec![(memory, AccessMode::Write)],
            Call::Copy { dst, src, .. } => {
                vec![
                    (dst.memory, AccessMode::Write),
                    (src.memory, AccessMode::Read),
                ]
            }
            Call::Call { dst, src, .. } => {
                vec![(dst, AccessMode::Write), (src, AccessMode::Read)]
            }
            Call::Alloc { temp, .. } | Call::Free { temp, .. } => {
                vec![(Memory::Temp(temp), AccessMode::Write)]
            }
            _ => Vec::new(),
        }
    }
}
