//! Issuing a [`RandomProgram`]'s calls into an issuer, on the memory it is given
//! ([`RandomMemory`]), and its plan.

use std::cell::RefCell;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::call::In;
use crate::error::{Error, Result};
use crate::ffi::memory::{MemoryMut, MemoryRef};
use crate::ffi::KernelArg;
use crate::issue::{__private as issue, Body, Issuer};
use crate::memory::{
    __private as lowered, temporaries, CopySource, DeviceBuffer, DeviceFlag, FillValue,
    PinnedBuffer, Scope, Temp,
};
use crate::module::Kernel;
use crate::operand::{FillPattern, HostFn, LaunchConfig};
use crate::plan::{Plan, Planner};
use crate::program::{AccessMode, Statement, StatementKind};

use super::call_op::RandomCallOp;
use super::calls::{Call, Memory, Place};
use super::program::{RandomProgram, Shape};

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

/// The memory the calls of a replay name: the [`RandomMemory`] and the temporaries allocated
/// so far. What [`RandomProgram::replay_with`] hands its closure for each launch and `call`.
pub struct Operands<'a, 's> {
    memory: &'a RandomMemory<'a>,
    /// The live temporaries, by index: each borrowed exclusively, as a `&mut` parameter of a
    /// pipeline is (written through a shared reference to the borrow, read through it too).
    temps: Vec<Option<&'a mut Temp<'s, u32>>>,
}

impl fmt::Debug for Operands<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Operands")
            .field("memory", &self.memory)
            .field("temps", &self.temps)
            .finish()
    }
}

impl<'a, 's> Operands<'a, 's> {
    fn new(memory: &'a RandomMemory<'a>, temps: &'a mut [Option<Temp<'s, u32>>]) -> Self {
        Operands {
            memory,
            temps: temps.iter_mut().map(Option::as_mut).collect(),
        }
    }

    /// The buffers, pinned buffers, host functions and flags of the replay.
    pub fn memory(&self) -> &RandomMemory<'a> {
        self.memory
    }

    /// Temporary `t`, borrowed exclusively; an error when it is not allocated now.
    fn temp(&self, t: usize) -> Result<&&'a mut Temp<'s, u32>> {
        self.temps
            .get(t)
            .and_then(Option::as_ref)
            .ok_or_else(|| Error::InvalidArgument(format!("temporary t{t} is not allocated here")))
    }

    fn buffer(&self, b: usize) -> Result<&DeviceBuffer<u32>> {
        self.memory.buffers.get(b).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "the call names buffer {b} of {}",
                self.memory.buffers.len()
            ))
        })
    }

    fn not_device(memory: Memory, what: &str) -> Error {
        Error::InvalidArgument(format!("{} is no {what}", memory.name()))
    }

    /// The number of elements of `memory` (a temporary only while allocated).
    pub fn len(&self, memory: Memory) -> Result<usize> {
        Ok(match memory {
            Memory::Buffer(b) => self.buffer(b)?.len(),
            Memory::Pinned(p) => self
                .memory
                .pinned
                .get(p)
                .ok_or_else(|| Error::InvalidArgument(format!("no pinned buffer {p}")))?
                .len(),
            Memory::Temp(t) => self.temp(t)?.len(),
        })
    }

    /// The kernel argument that passes all of `memory` (a device buffer or a temporary) to be
    /// read or written.
    pub fn arg(&self, memory: Memory, mode: AccessMode) -> Result<KernelArg<'_>> {
        match (memory, mode) {
            (Memory::Buffer(b), AccessMode::Read) => Ok(lowered::arg_read(self.buffer(b)?)),
            (Memory::Buffer(b), AccessMode::Write) => {
                self.buffer(b)?;
                lowered::arg_place(lowered::place(&self.memory.buffers).index(b))
            }
            (Memory::Temp(t), AccessMode::Read) => Ok(lowered::arg_read(&**self.temp(t)?)),
            (Memory::Temp(t), AccessMode::Write) => {
                lowered::arg_place(lowered::place(self.temp(t)?))
            }
            (Memory::Pinned(_), _) => Err(Self::not_device(memory, "kernel argument")),
        }
    }

    /// Issues `call` (a [`Call::Call`]) through `issuer`, as a [`RandomCallOp`] launching
    /// `kernel` with `config`; any other call is left alone.
    pub fn issue_call<I: Issuer + ?Sized>(
        &self,
        issuer: &mut I,
        call: &Call,
        kernel: &Kernel,
        config: LaunchConfig,
    ) -> Result<()> {
        let Call::Call {
            statement,
            dst,
            src,
            value,
            ..
        } = *call
        else {
            return Ok(());
        };
        let op = RandomCallOp::new(kernel, config, value);
        let dst = match dst {
            Memory::Buffer(b) => self
                .buffer(b)
                .and_then(|_| issue::call_out(lowered::place(&self.memory.buffers).index(b))),
            Memory::Temp(t) => self
                .temp(t)
                .and_then(|temp| issue::call_out(lowered::place(temp))),
            Memory::Pinned(_) => Err(Self::not_device(dst, "operand of a call")),
        }
        .map_err(|e| e.in_statement(statement))?;
        let src: In<'_, u32> = match src {
            Memory::Buffer(b) => self.buffer(b).map(issue::call_in),
            Memory::Temp(t) => self.temp(t).map(|temp| issue::call_in(&**temp)),
            Memory::Pinned(_) => Err(Self::not_device(src, "operand of a call")),
        }
        .map_err(|e| e.in_statement(statement))?;
        issue::call(issuer, statement, &op, (dst, src))
    }

    /// `fill memory[start..end] = value`.
    fn fill(
        &self,
        issuer: &mut dyn Issuer,
        statement: &'static Statement,
        memory: Memory,
        (start, end): (usize, usize),
        value: u32,
    ) -> Result<()> {
        match memory {
            Memory::Buffer(b) => {
                self.buffer(b)?;
                let place = lowered::place(&self.memory.buffers)
                    .index(b)
                    .slice(start..end);
                issue::fill_with(issuer, statement, place, value, FillValue::pattern)
            }
            Memory::Temp(t) => {
                let place = lowered::place(self.temp(t)?).slice(start..end);
                issue::fill_with(issuer, statement, place, value, FillValue::pattern)
            }
            Memory::Pinned(_) => Err(Self::not_device(memory, "fill's destination")),
        }
    }

    /// The destination of a copy, written through the replay's exclusive borrows.
    fn target(&self, place: Place) -> Result<MemoryMut<'_>> {
        match place.memory {
            Memory::Pinned(p) => {
                if p >= self.memory.pinned.len() {
                    return Err(Error::InvalidArgument(format!(
                        "the copy names pinned buffer {p} of {}",
                        self.memory.pinned.len()
                    )));
                }
                lowered::place(&self.memory.pinned)
                    .index(p)
                    .copy_target::<u32>()
            }
            Memory::Buffer(b) => {
                self.buffer(b)?;
                lowered::place(&self.memory.buffers)
                    .index(b)
                    .slice(place.range())
                    .copy_target::<u32>()
            }
            Memory::Temp(t) => lowered::place(self.temp(t)?)
                .slice(place.range())
                .copy_target::<u32>(),
        }
    }

    /// The source of a copy.
    fn source(&self, place: Place) -> Result<MemoryRef<'_>> {
        let whole = match place.memory {
            Memory::Buffer(b) => CopySource::<u32>::copy_source(self.buffer(b)?),
            Memory::Pinned(p) => {
                let pinned = self.memory.pinned.get(p).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "the copy names pinned buffer {p} of {}",
                        self.memory.pinned.len()
                    ))
                })?;
                CopySource::<u32>::copy_source(pinned)
            }
            Memory::Temp(t) => CopySource::<u32>::copy_source(&**self.temp(t)?),
        };
        whole.elements(place.start, place.end).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "elements {}..{} of a copy source of {} do not lie in its memory",
                place.start,
                place.end,
                place.memory.name()
            ))
        })
    }
}

/// What issues each launch and `call` of a replay.
type Launch<'l> = dyn FnMut(&mut dyn Issuer, &Call, &Operands<'_, '_>) -> Result<()> + 'l;

/// One replay in progress: the program, its memory, the temporaries allocated so far.
struct Replay<'r, 's> {
    program: &'r RandomProgram,
    memory: &'r RandomMemory<'r>,
    scope: Scope<'s>,
    temps: Vec<Option<Temp<'s, u32>>>,
    launch: &'r mut Launch<'r>,
}

impl RandomProgram {
    /// Issues every call into `issuer`, with `kernels[k]` for kernel `k` (at least
    /// [`kernels`](Self::kernels) of them) launched with `config` and the arguments
    /// `(buffer, value)`, and `memory` for buffers and host functions; fills write 4-byte
    /// patterns; temporaries are allocated and released through `issuer`.
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
        self.replay_with(issuer, memory, |issuer, call, operands| match *call {
            Call::Call { kernel, .. } => {
                operands.issue_call(issuer, call, &kernels[kernel], config)
            }
            Call::Launch {
                statement,
                kernel,
                memory,
                mode,
                value,
            } => {
                let arg = operands
                    .arg(memory, mode)
                    .map_err(|e| e.in_statement(statement))?;
                issuer.launch(
                    statement,
                    &kernels[kernel],
                    config,
                    &[arg, lowered::arg_value(&value)],
                )
            }
            _ => Ok(()),
        })
    }

    /// Issues every call into `issuer` as [`replay`](Self::replay) does, except launches and
    /// `call`s: `launch(issuer, call, operands)` issues each [`Call::Launch`] and
    /// [`Call::Call`] as the test likes, its memory (a device buffer or a temporary) at hand
    /// in `operands` ([`Operands::arg`], [`Operands::issue_call`]); its accesses should be the
    /// call's memory and mode, for the plan to match. Inside device blocks' bodies the issuer
    /// is the one the block hands its body, hence `&mut dyn Issuer`.
    pub fn replay_with<I, L>(
        &self,
        issuer: &mut I,
        memory: &RandomMemory<'_>,
        mut launch: L,
    ) -> Result<()>
    where
        I: Issuer + ?Sized,
        L: FnMut(&mut dyn Issuer, &Call, &Operands<'_, '_>) -> Result<()>,
    {
        self.check_memory(memory)?;
        let mut forward = Forward(issuer);
        temporaries(&mut forward, |issuer, scope| {
            let mut replay = Replay {
                program: self,
                memory,
                scope,
                temps: (0..self.temp_lens.len()).map(|_| None).collect(),
                launch: &mut launch,
            };
            replay.calls(issuer, 0..self.calls.len())
        })
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

impl<'r> Replay<'r, '_> {
    /// Device flag `flag`, which block `statement` reads.
    fn flag(&self, statement: &'static Statement, flag: usize) -> Result<&'r DeviceFlag> {
        let flags = self.memory.flags;
        flags.get(flag).ok_or_else(|| {
            self.program
                .missing("device flag", flags.len(), flag + 1)
                .in_statement(statement)
        })
    }

    /// Issues the calls in `range` into `issuer`.
    fn calls(&mut self, issuer: &mut dyn Issuer, range: Range<usize>) -> Result<()> {
        let program = self.program;
        let mut i = range.start;
        while i < range.end {
            let call = &program.calls[i];
            i += 1;
            match *call {
                Call::Launch { .. } | Call::Call { .. } => {
                    let operands = Operands::new(self.memory, &mut self.temps);
                    (self.launch)(issuer, call, &operands)?
                }
                Call::Fill {
                    statement,
                    memory,
                    start,
                    end,
                    value,
                } => Operands::new(self.memory, &mut self.temps)
                    .fill(issuer, statement, memory, (start, end), value)
                    .map_err(|e| e.in_statement(statement))?,
                Call::Copy {
                    statement,
                    dst,
                    src,
                    ..
                } => {
                    let operands = Operands::new(self.memory, &mut self.temps);
                    let src = operands
                        .source(src)
                        .map_err(|e| e.in_statement(statement))?;
                    let dst = operands
                        .target(dst)
                        .map_err(|e| e.in_statement(statement))?;
                    issuer.copy(statement, dst, src)?;
                }
                Call::Host { statement, value } => {
                    let host = Arc::clone(&self.memory.host);
                    issue::host(issuer, statement, move || host(value))?;
                }
                Call::Alloc {
                    statement, temp, ..
                } => {
                    let len = program.temp_lens.get(temp).copied().unwrap_or(0);
                    let memory = issue::temp_alloc::<_, u32>(issuer, self.scope, statement, len)?;
                    if let Some(slot) = self.temps.get_mut(temp) {
                        *slot = Some(memory);
                    }
                }
                Call::Free {
                    statement, temp, ..
                } => {
                    let memory = self.temps.get_mut(temp).and_then(Option::take);
                    let memory = memory.ok_or_else(|| {
                        Error::InvalidArgument(format!("temporary t{temp} is not allocated here"))
                            .in_statement(statement)
                    })?;
                    issue::temp_free(issuer, statement, memory)?;
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
                    let f = self.flag(statement, flag)?;
                    let (then, otherwise) = (then.clone(), otherwise.clone());
                    i = i.max(then.end).max(otherwise.end);
                    // Both bodies issue through this replay; run them through one cell.
                    let this = RefCell::new(&mut *self);
                    let mut a =
                        |inner: &mut dyn Issuer| this.borrow_mut().calls(inner, then.clone());
                    let mut b =
                        |inner: &mut dyn Issuer| this.borrow_mut().calls(inner, otherwise.clone());
                    let (a, b): (&mut Body<'_>, &mut Body<'_>) = (&mut a, &mut b);
                    match statement.kind {
                        StatementKind::While { .. } => issuer.while_loop(statement, f, limit, a)?,
                        _ => issuer.if_else(statement, f, a, b)?,
                    }
                }
                Call::Switch {
                    statement,
                    flag,
                    ref arms,
                    ..
                } => {
                    let f = self.flag(statement, flag)?;
                    i = arms.iter().fold(i, |e, r| e.max(r.end));
                    // Every arm issues through this replay; run them through one cell.
                    let this = RefCell::new(&mut *self);
                    let mut bodies: Vec<_> = arms
                        .iter()
                        .map(|r| {
                            let this = &this;
                            move |inner: &mut dyn Issuer| this.borrow_mut().calls(inner, r.clone())
                        })
                        .collect();
                    let mut arms: Vec<&mut Body<'_>> =
                        bodies.iter_mut().map(|b| b as &mut Body<'_>).collect();
                    issuer.switch(statement, f, &mut arms)?;
                }
            }
        }
        Ok(())
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
    fn alloc<'s>(
        &mut self,
        stmt: &'static Statement,
        scope: crate::memory::Scope<'s>,
        bytes: usize,
    ) -> Result<crate::memory::TempMemory<'s>> {
        self.0.alloc(stmt, scope, bytes)
    }
    fn free(
        &mut self,
        stmt: &'static Statement,
        memory: crate::memory::TempMemory<'_>,
    ) -> Result<()> {
        self.0.free(stmt, memory)
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
    fn switch(
        &mut self,
        stmt: &'static Statement,
        index: &DeviceFlag,
        arms: &mut [&mut Body<'_>],
    ) -> Result<()> {
        self.0.switch(stmt, index, arms)
    }
    fn call(
        &mut self,
        stmt: &'static Statement,
        call: &mut dyn crate::call::BoundCall,
    ) -> Result<()> {
        self.0.call(stmt, call)
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
