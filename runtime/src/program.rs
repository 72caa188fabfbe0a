//! The static description of a pipeline, as the `pipeline!` macro generates it.
//!
//! A [`Program`] lists a pipeline's streams, events and statements in source order. It is
//! `'static` data: every issuer (eager, capture, plan) refers to statements by `&'static
//! Statement`, so errors and pictures can always name the statement and where it was written.

use std::fmt;

/// A place in the user's source code: `file:line:column` (line and column start at 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// The source file, as `file!()` gives it.
    pub file: &'static str,
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1.
    pub column: u32,
}

impl Location {
    /// A location for programs written by hand (tests, tools) rather than by the macro.
    pub const UNKNOWN: Location = Location {
        file: "<unknown>",
        line: 0,
        column: 0,
    };
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// A whole pipeline: its streams (the first is the origin), events and statements.
#[derive(Debug)]
pub struct Program {
    /// The pipeline's type name.
    pub name: &'static str,
    /// Declared streams, in declaration order; index 0 is the origin stream.
    pub streams: &'static [StreamDecl],
    /// Declared events, in declaration order.
    pub events: &'static [EventDecl],
    /// Every statement, in source order; `statements[i].id == i`.
    pub statements: &'static [Statement],
    /// Declared temporaries (`temp h: f32[n];`), in declaration order; the statements
    /// [`StatementKind::Alloc`] and [`StatementKind::Free`] name them by index.
    pub temps: &'static [TempDecl],
    /// Where the pipeline was declared.
    pub location: Location,
}

impl Program {
    /// The origin stream's index (always 0): the stream the pipeline runs "on" as a unit.
    pub const ORIGIN: usize = 0;

    /// Whether `self` and `other` are the same program: the same object. Generated programs
    /// are statics (one address each) and built programs are leaked once, so two different
    /// programs — even of one name, declared at one place — are never the same.
    pub fn same(&self, other: &Program) -> bool {
        std::ptr::eq(self, other)
    }
}

/// A `stream NAME(...)` declaration. Its priority and device are run-time values: see
/// [`crate::StreamOptions`] and [`crate::Pipeline::stream_options`].
#[derive(Debug)]
pub struct StreamDecl {
    /// The stream's name in the pipeline.
    pub name: &'static str,
    /// Where it was declared.
    pub location: Location,
}

/// An `event NAME` declaration.
#[derive(Debug)]
pub struct EventDecl {
    /// The event's name in the pipeline.
    pub name: &'static str,
    /// Where it was declared.
    pub location: Location,
}

/// A `temp NAME: TYPE[LEN];` declaration: device memory that lives from its
/// [`StatementKind::Alloc`] to its [`StatementKind::Free`] statement, which the macro places
/// around its uses. Its length is a run-time value (an expression over the parameters).
#[derive(Debug)]
pub struct TempDecl {
    /// The temporary's name in the pipeline.
    pub name: &'static str,
    /// Its element type, as written (`f32`).
    pub elem: &'static str,
    /// Where it was declared.
    pub location: Location,
}

/// One statement of a pipeline, as written once in the source. A statement inside a `for`
/// loop is issued once per iteration; each issue is a separate operation at run time.
#[derive(Debug)]
pub struct Statement {
    /// Index of this statement in [`Program::statements`].
    pub id: usize,
    /// Index of the stream it is issued on, in [`Program::streams`].
    pub stream: usize,
    /// What the statement does.
    pub kind: StatementKind,
    /// The statement's source text, normalised (for messages and pictures).
    pub text: &'static str,
    /// The buffers it touches, by parameter name, as the macro saw them.
    pub accesses: &'static [StaticAccess],
    /// Where it was written.
    pub location: Location,
}

impl Statement {
    /// Whether `self` and `other` are the same statement of a pipeline: the same object (see
    /// [`Program::same`]).
    pub fn same(&self, other: &Statement) -> bool {
        std::ptr::eq(self, other)
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` at {}", self.text, self.location)
    }
}

/// The kind of a [`Statement`], with the indices it refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatementKind {
    /// `launch KERNEL<<<GRID, BLOCK[, SHARED]>>>(ARGS)`; `kernel` is the kernel expression's text.
    Launch {
        /// The kernel expression as written, e.g. `k.scale`.
        kernel: &'static str,
    },
    /// `copy DST <- SRC`.
    Copy,
    /// `fill BUF = VALUE`.
    Fill,
    /// `host F`: a host function run in stream order.
    Host,
    /// `record EVENT`.
    Record {
        /// Index into [`Program::events`].
        event: usize,
    },
    /// `wait EVENT`.
    Wait {
        /// Index into [`Program::events`].
        event: usize,
    },
    /// `wait_stream STREAM`.
    WaitStream {
        /// Index into [`Program::streams`] of the stream waited for.
        stream: usize,
    },
    /// `while FLAG[, limit = N] { BODY }` or `while FLAG, signalled { BODY }`: a loop on the
    /// device (a CUDA conditional WHILE node when captured). Its body is statements
    /// `id + 1 .. end`.
    While {
        /// One past the body's last statement id.
        end: usize,
        /// Whether the body's kernels set the loop's condition themselves when they write the
        /// flag (`streamgraph_signal`, [`crate::SIGNAL_HEADER`]): the captured body then ends
        /// without the built-in kernel that reads the flag back.
        signalled: bool,
    },
    /// `if FLAG { THEN } else { OTHERWISE }`: a branch on the device (a CUDA conditional IF
    /// node when captured). `THEN` is statements `id + 1 .. otherwise`, `OTHERWISE` is
    /// `otherwise .. end` (empty without `else`).
    If {
        /// The first statement id of the `else` body (`== end` without `else`).
        otherwise: usize,
        /// One past the last statement id of the block.
        end: usize,
    },
    /// `switch INDEX { V0 => { … } V1 => { … } _ => { … } }`: a multi-way branch on the
    /// device (one CUDA conditional SWITCH node when captured). Arm `k`'s body is statements
    /// `arms[k].start .. arms[k + 1].start` (the last arm's `.. end`); the arm whose value
    /// equals the index runs, else the `_` arm (the last, `value: None`) if there is one, else
    /// nothing.
    Switch {
        /// The arms, in source order.
        arms: &'static [SwitchArm],
        /// One past the last statement id of the block.
        end: usize,
    },
    /// `call OP(OPERANDS)`: the work of a [`crate::StreamOp`] on the statement's stream.
    Call {
        /// The op expression as written, e.g. `gemm`.
        op: &'static str,
    },
    /// The allocation of temporary `temp` ([`Program::temps`]) on the statement's stream,
    /// before its first use: stream-ordered allocation when run, a graph memory-allocation
    /// node when captured. Its access is a write of the whole temporary.
    Alloc {
        /// Index into [`Program::temps`].
        temp: usize,
    },
    /// The release of temporary `temp` on the statement's stream, after every use of it:
    /// stream-ordered free when run, a graph memory-free node when captured. Its access is a
    /// write of the whole temporary.
    Free {
        /// Index into [`Program::temps`].
        temp: usize,
    },
    /// One participant of a collective `all_reduce(COMM, OP) { S0: BUF0, S1: BUF1, … };`:
    /// the statement of participant `id - first`, issued on its own stream. A collective of
    /// `count` participants is `count` consecutive statements `first .. first + count`, one
    /// per participating stream, issued together through [`crate::Issuer::collective`]. The
    /// `k`-th participant uses the communicator's `k`-th local rank.
    Collective {
        /// Which collective.
        op: Collective,
        /// The statement id of the first participant.
        first: usize,
        /// The number of participants.
        count: usize,
    },
}

/// One arm of a [`StatementKind::Switch`]: `VALUE => { … }` or `_ => { … }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SwitchArm {
    /// The index value that picks this arm; `None` for `_`, which takes every value no other
    /// arm does.
    pub value: Option<u32>,
    /// The first statement id of the arm's body.
    pub start: usize,
}

/// The collective of a [`StatementKind::Collective`] statement (NCCL's operations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Collective {
    /// `all_reduce`: every participant ends with the reduction of every participant's input.
    AllReduce,
    /// `all_gather`: every participant ends with every participant's input, in rank order.
    AllGather,
    /// `reduce_scatter`: participant `k` ends with part `k` of the reduction of the inputs.
    ReduceScatter,
    /// `broadcast`: every participant ends with the input of participant `root`.
    Broadcast {
        /// The root's participant index (its position in the statement's list).
        root: usize,
    },
}

impl Collective {
    /// The statement's keyword, as written in `pipeline!`.
    pub fn keyword(&self) -> &'static str {
        match self {
            Self::AllReduce => "all_reduce",
            Self::AllGather => "all_gather",
            Self::ReduceScatter => "reduce_scatter",
            Self::Broadcast { .. } => "broadcast",
        }
    }

    /// Whether the collective reduces (takes a reduction operator).
    pub fn reduces(&self) -> bool {
        matches!(self, Self::AllReduce | Self::ReduceScatter)
    }
}

impl StatementKind {
    /// Whether the statement creates work (a node of the graph) rather than only ordering.
    pub fn is_operation(&self) -> bool {
        matches!(
            self,
            Self::Launch { .. }
                | Self::Copy
                | Self::Fill
                | Self::Host
                | Self::Call { .. }
                | Self::While { .. }
                | Self::If { .. }
                | Self::Switch { .. }
                | Self::Collective { .. }
                | Self::Alloc { .. }
                | Self::Free { .. }
        )
    }

    /// For an allocation or release of a temporary: the temporary's index.
    pub fn temp(&self) -> Option<usize> {
        match *self {
            Self::Alloc { temp } | Self::Free { temp } => Some(temp),
            _ => None,
        }
    }

    /// For a participant of a collective: the statement ids of all its participants.
    pub fn participants(&self) -> Option<std::ops::Range<usize>> {
        match *self {
            Self::Collective { first, count, .. } => Some(first..first + count),
            _ => None,
        }
    }

    /// Whether the statement is a device `while`, `if` or `switch` block (a conditional node).
    pub fn is_block(&self) -> bool {
        matches!(
            self,
            Self::While { .. } | Self::If { .. } | Self::Switch { .. }
        )
    }

    /// For a block statement `id`: the statement ids of its bodies (`while`: one body; `if`:
    /// the `then` and the `else` body, the second possibly empty; `switch`: one per arm, in
    /// source order). Consecutive, from `id + 1` to the block's end.
    pub fn bodies(&self, id: usize) -> Option<Vec<std::ops::Range<usize>>> {
        match *self {
            Self::While { end, .. } => Some(std::iter::once(id + 1..end.max(id + 1)).collect()),
            Self::If { otherwise, end } => {
                let otherwise = otherwise.clamp(id + 1, end.max(id + 1));
                Some(vec![id + 1..otherwise, otherwise..end.max(otherwise)])
            }
            Self::Switch { arms, end } => {
                let mut at = id + 1;
                let mut ranges = Vec::with_capacity(arms.len());
                for (k, arm) in arms.iter().enumerate() {
                    let start = arm.start.clamp(at, end.max(at));
                    let next = arms.get(k + 1).map_or(end, |a| a.start);
                    let stop = next.clamp(start, end.max(start));
                    ranges.push(start..stop);
                    at = stop;
                }
                Some(ranges)
            }
            _ => None,
        }
    }

    /// What body `branch` of a block statement is called in pictures and messages: `body`
    /// (`while`), `then` or `else` (`if`), `case 3` or `default` (`switch`).
    pub fn branch_name(&self, branch: usize) -> String {
        match (self, branch) {
            (Self::While { .. }, _) => "body".into(),
            (Self::Switch { arms, .. }, k) => match arms.get(k).map(|a| a.value) {
                Some(Some(v)) => format!("case {v}"),
                Some(None) => "default".into(),
                None => format!("arm {k}"),
            },
            (_, 0) => "then".into(),
            _ => "else".into(),
        }
    }

    /// For a `switch` statement: the body that index value `value` runs (its arm's position
    /// in `arms`), `None` when no arm takes it.
    pub fn switch_arm(&self, value: u32) -> Option<usize> {
        let Self::Switch { arms, .. } = self else {
            return None;
        };
        arms.iter()
            .position(|a| a.value == Some(value))
            .or_else(|| arms.iter().position(|a| a.value.is_none()))
    }
}

/// How a statement touches a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccessMode {
    /// `&x` in launch arguments, a `copy` source.
    Read,
    /// `&mut x` in launch arguments, a `copy` destination, a `fill` target.
    Write,
}

/// A buffer access as the macro saw it: by name, with whether the whole buffer is meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StaticAccess {
    /// The root name of the buffer expression (`x` for `&mut x` and for `&x.slice(0..n)`).
    pub buffer: &'static str,
    /// Read or write.
    pub mode: AccessMode,
    /// `true` when the expression is the plain name (the whole buffer); `false` for a
    /// sub-range, whose overlap only the run-time plan can decide.
    pub whole: bool,
}

/// One operation of a pipeline: an issue of a statement (statements in loops are issued
/// several times). Statements compare by identity.
#[derive(Debug, Clone, Copy)]
pub struct OpRef {
    /// The statement.
    pub statement: &'static Statement,
    /// Which issue of it, from 1.
    pub occurrence: u32,
}

impl OpRef {
    /// The first (often only) issue of `statement`.
    pub fn new(statement: &'static Statement) -> OpRef {
        OpRef {
            statement,
            occurrence: 1,
        }
    }

    /// The `occurrence`-th issue of the same statement (from 1).
    pub fn occurrence(self, occurrence: u32) -> OpRef {
        OpRef { occurrence, ..self }
    }
}

impl PartialEq for OpRef {
    fn eq(&self, other: &Self) -> bool {
        self.statement.same(other.statement) && self.occurrence == other.occurrence
    }
}

impl Eq for OpRef {}
