//! The issue calls of a random program ([`Call`]) and the sides of its copies ([`Place`]).

use std::ops::Range;

use crate::program::{AccessMode, Statement};

/// One side of a copy: elements `start..end` of a device buffer, or a whole pinned buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Place {
    /// Whether `buffer` indexes the pinned buffers (always whole) rather than the device ones.
    pub pinned: bool,
    /// Index into [`RandomMemory::buffers`](super::RandomMemory::buffers) or [`RandomMemory::pinned`](super::RandomMemory::pinned).
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

/// One issue call of a [`RandomProgram`](super::RandomProgram), in issue order.
///
/// Every operation carries `value`, its index in issue order: its node number in the plan.
#[derive(Debug, Clone)]
pub enum Call {
    /// `launch kernels[kernel](buffers[buffer], value)` with the whole buffer read or written.
    Launch {
        /// The statement.
        statement: &'static Statement,
        /// Index into the kernels given to [`RandomProgram::replay`](super::RandomProgram::replay).
        kernel: usize,
        /// Index into [`RandomMemory::buffers`](super::RandomMemory::buffers).
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
        /// Index into [`RandomMemory::buffers`](super::RandomMemory::buffers).
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
    /// `host F`: runs [`RandomMemory::host`](super::RandomMemory::host) with `value`.
    Host {
        /// The statement.
        statement: &'static Statement,
        /// The host function's argument: this operation's index in issue order.
        value: u32,
    },
    /// `call op(&mut buffers[dst], &buffers[src])`: through
    /// [`RandomCallOp`](super::RandomCallOp) with `kernels[kernel]` in
    /// [`RandomProgram::replay`](super::RandomProgram::replay).
    Call {
        /// The statement.
        statement: &'static Statement,
        /// Index into the kernels given to [`RandomProgram::replay`](super::RandomProgram::replay).
        kernel: usize,
        /// The buffer written.
        dst: usize,
        /// The buffer read (another one).
        src: usize,
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
            | Call::Call { statement, .. }
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
            | Call::Call { value, .. }
            | Call::Block { value, .. } => Some(value),
            Call::Record(_) | Call::Wait(_) | Call::WaitStream(_) => None,
        }
    }
}
