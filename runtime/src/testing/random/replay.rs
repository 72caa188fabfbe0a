//! Issuing a [`RandomProgram`]'s calls into an issuer, on the memory it is given
//! ([`RandomMemory`]), and its plan.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ffi::memory::{MemoryMut, MemoryRef};
use crate::ffi::KernelArg;
use crate::issue::{__private as issue, Body, Issuer};
use crate::memory::{
    __private as lowered, CopySource, DeviceBuffer, DeviceFlag, DeviceView, FillValue, PinnedBuffer,
};
use crate::module::Kernel;
use crate::operand::{FillPattern, HostFn, LaunchConfig};
use crate::plan::{Plan, Planner};
use crate::program::{AccessMode, Statement};

use super::call_op::RandomCallOp;
use super::calls::{Call, Place};
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

impl RandomMemory<'_> {
    /// Issues `call` (a [`Call::Call`]) on this memory through `issuer`, as a
    /// [`RandomCallOp`] launching `kernel` with `config`; any other call is left alone.
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
        let dst = issue::call_out(lowered::place(&self.buffers).index(dst))
            .map_err(|e| e.in_statement(statement))?;
        let src = issue::call_in(&self.buffers[src]);
        issue::call(issuer, statement, &op, (dst, src))
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

impl RandomProgram {
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
            if let Call::Call { kernel, .. } = *call {
                return memory.issue_call(issuer, call, &kernels[kernel], config);
            }
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
                AccessMode::Read => lowered::arg_read(&memory.buffers[buffer]),
                AccessMode::Write => {
                    lowered::arg_place(lowered::place(&memory.buffers).index(buffer))
                        .map_err(|e| e.in_statement(statement))?
                }
            };
            issuer.launch(
                statement,
                &kernels[kernel],
                config,
                &[arg, lowered::arg_value(&value)],
            )
        })
    }

    /// Issues every call into `issuer` as [`replay`](Self::replay) does, except launches and
    /// `call`s: `launch(issuer, call)` issues each [`Call::Launch`] and [`Call::Call`] (for
    /// which [`RandomMemory::issue_call`] is at hand), as the test likes (its accesses
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
                Call::Launch { .. } | Call::Call { .. } => launch(issuer, call)?,
                Call::Fill {
                    statement,
                    buffer,
                    start,
                    end,
                    value,
                } => {
                    let place = lowered::place(&memory.buffers).index(buffer);
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
        return lowered::place(&memory.pinned)
            .index(place.buffer)
            .copy_target::<u32>();
    }
    if place.buffer >= memory.buffers.len() {
        return Err(missing("buffer", memory.buffers.len()));
    }
    lowered::place(&memory.buffers)
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
