//! The recorder hook: one issuing path for runs and captures.
//!
//! [`Issue`] is the [`Issuer`] that [`crate::Eager`] hands a pipeline: it checks each statement
//! against the plan (in a checked run), issues it on the [`Frame`]'s streams, and then tells its
//! [`Recorder`] what it issued. An eager run's recorder is [`Plain`], whose hooks do nothing (they
//! inline away: the run pays for no capture); a capture's recorder lives on the graph floor (the
//! node book, device-block bodies, collective attribution), so that this floor knows nothing of
//! books, conditional nodes or graphs. The recorder is a type parameter, never a trait object: each
//! issuer is compiled for its recorder, and the checks and hooks of each statement are inlined into
//! the pipeline's generated `issue` around one out-of-line call per statement.

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use crate::call::{check_devices, BoundCall, CallAccess, CallStream};
use crate::comm::Communicator;
use crate::error::{CaptureFault, Error, Result};
use crate::exec::expect::Expected;
use crate::exec::frame::{stream_of, Frame};
use crate::ffi::conditional::CondKind;
use crate::ffi::memory::{MemoryMut, MemoryRef};
use crate::ffi::KernelArg;
use crate::issue::{check_switch_arms, Body, CollectivePart, Issuer};
use crate::memory::{DeviceFlag, DeviceMemory, Scope, TempMemory};
use crate::module::Kernel;
use crate::operand::{
    BufferAccess, DeviceRange, FillPattern, HostFn, LaunchConfig, Memory, ReduceOp,
};
use crate::program::{AccessMode, Statement, StatementKind};
use crate::stream::Stream;
use crate::trace;

/// The payload of a panic raised while a pipeline was issued.
pub(crate) type Panic = Box<dyn Any + Send + 'static>;

/// What a copy, a fill or a host function issued, for the recorder (launches are told by
/// [`Recorder::launched`]).
pub(crate) enum Issued<'a> {
    /// A copy: destination (written) and source (read).
    Copy(MemoryRef<'a>, MemoryRef<'a>),
    /// A fill of this memory with this pattern.
    Fill(MemoryRef<'a>, FillPattern),
    /// A host function.
    Host,
    /// The allocation of a temporary: its memory, and whether the recorder placed it
    /// ([`Recorder::place_temp`]; then no driver call allocated it).
    Alloc(DeviceRange, bool),
    /// The release of a temporary: its memory, and whether the recorder had placed it (then
    /// no driver call released it).
    Free(DeviceRange, bool),
}

/// What an issuer does besides issuing: told of every statement after [`Issue`] issued it,
/// and in charge of the statements whose issue differs between a run and a capture (device
/// blocks, collectives, host functions).
pub(crate) trait Recorder: Sized {
    /// What the pipeline-level trace scope calls the issue.
    const MODE: trace::Mode;
    /// Whether the streams are capturing: copies then refuse pageable host memory (a graph
    /// cannot stage it) and are issued as graph nodes, and launches are compiled as a
    /// capture's (see [`Issuer::launch`] of [`Issue`]).
    const CAPTURING: bool;

    /// `stmt` launched `kernel` with `config` and `args` on `stream`.
    fn launched(
        &mut self,
        stmt: &'static Statement,
        stream: &Stream,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<()>;

    /// `stmt` issued a copy, a fill or a host function on `stream`.
    fn issued(&mut self, stmt: &'static Statement, stream: &Stream, what: Issued<'_>)
        -> Result<()>;

    /// Issues host function `f` on `stream`.
    fn host(&mut self, stream: &Stream, f: HostFn) -> Result<()>;

    /// Where the temporary that `stmt` allocates (`bytes` bytes on device `device`) lives
    /// when the recorder places it itself (a graph set's capture, in the set's memory); `None`
    /// to allocate it in stream order (eagerly from the device's pool; captured, a memory
    /// node).
    #[inline(always)]
    fn place_temp(
        &mut self,
        _stmt: &'static Statement,
        _device: i32,
        _bytes: usize,
    ) -> Option<u64> {
        None
    }

    /// `stmt`, a `record`, `wait` or `wait_stream`, was issued.
    fn ordering(&mut self, stmt: &'static Statement);

    /// Issues a device block on `stmt.stream` (already ordered after the frame's fork):
    /// `bodies[0]` while (`while`) or if (`if`) `flag` is non-zero, `bodies[1]` (the `else`)
    /// otherwise; for a `switch`, the body of the arm the flag's value picks. Each through
    /// [`Issue::run_body`].
    fn block(
        issue: &mut Issue<'_, Self>,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        kind: CondKind,
        limit: Option<u32>,
        bodies: &mut [&mut Body<'_>],
    ) -> Result<()>;

    /// Issues `call` on `stream` (declared stream `stmt.stream`, ordered after the frame's
    /// fork).
    fn call(
        &mut self,
        stmt: &'static Statement,
        stream: &Stream,
        call: &mut dyn BoundCall,
    ) -> Result<()>;

    /// Issues a collective whose participants `parts` (checked against their statements)
    /// are on the declared streams `streams`.
    fn collective(
        issue: &mut Issue<'_, Self>,
        stmt: &'static Statement,
        comm: &Communicator,
        op: ReduceOp,
        parts: &[CollectivePart<'_>],
        streams: &[usize],
    ) -> Result<()>;
}

/// The issuer a pipeline is issued through: the frame's streams, the plan's expectations in
/// a checked issue, and the recorder told of each statement.
pub(crate) struct Issue<'a, R> {
    pub(crate) frame: &'a mut Frame,
    pub(crate) expect: Option<&'a mut Expected>,
    pub(crate) rec: &'a mut R,
}

/// The recorder of an eager run: records nothing; a device block reads its flag back and
/// loops on the host, a collective is one NCCL group.
pub(crate) struct Plain;

impl Recorder for Plain {
    const MODE: trace::Mode = trace::Mode::Run;
    const CAPTURING: bool = false;

    #[inline(always)]
    fn launched(
        &mut self,
        _: &'static Statement,
        _: &Stream,
        _: &Kernel,
        _: LaunchConfig,
        _: &[KernelArg<'_>],
    ) -> Result<()> {
        Ok(())
    }

    #[inline(always)]
    fn issued(&mut self, _: &'static Statement, _: &Stream, _: Issued<'_>) -> Result<()> {
        Ok(())
    }

    #[inline]
    fn host(&mut self, stream: &Stream, f: HostFn) -> Result<()> {
        stream.launch_host_fn(f)
    }

    #[inline(always)]
    fn ordering(&mut self, _: &'static Statement) {}

    fn block(
        issue: &mut Issue<'_, Self>,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        kind: CondKind,
        limit: Option<u32>,
        bodies: &mut [&mut Body<'_>],
    ) -> Result<()> {
        issue.eager_block(stmt, flag, kind, limit, bodies)
    }

    #[inline]
    fn call(
        &mut self,
        _: &'static Statement,
        stream: &Stream,
        call: &mut dyn BoundCall,
    ) -> Result<()> {
        call.issue(&CallStream::new(stream, false))
    }

    fn collective(
        issue: &mut Issue<'_, Self>,
        stmt: &'static Statement,
        comm: &Communicator,
        op: ReduceOp,
        parts: &[CollectivePart<'_>],
        streams: &[usize],
    ) -> Result<()> {
        #[cfg(not(feature = "nccl"))]
        {
            let _ = (issue, stmt, comm, op, parts, streams);
            Err(super::collective::without_nccl())
        }
        #[cfg(feature = "nccl")]
        super::collective::nccl_group(issue.frame, stmt, comm, op, parts, streams, |group| {
            crate::ffi::nccl::group(&group.call, &group.entries)
        })
    }
}

impl<R: Recorder> Issue<'_, R> {
    /// The observability hook of one statement (nothing without the `tracing` and `nvtx`
    /// features): a span and a range that end when the returned scope is dropped.
    #[inline(always)]
    pub(super) fn traced(&self, stmt: &'static Statement) -> trace::Scope {
        trace::statement(|| self.frame.program(), stmt)
    }

    /// In a checked issue: `stmt`, which makes no operation of its own memory, must be the
    /// plan's next statement ([`Expected::statement`]).
    #[inline(always)]
    fn expected(&mut self, stmt: &'static Statement) -> Result<()> {
        match self.expect.as_deref_mut() {
            None => Ok(()),
            Some(expect) => {
                let parts: &[(&'static Statement, Vec<BufferAccess>)] = match stmt.kind {
                    StatementKind::Host => &[(stmt, Vec::new())],
                    _ => &[],
                };
                expect.statement(stmt, parts)
            }
        }
    }

    /// Issues body `branch` of a block on stream `root` in a frame of its own, joined at its
    /// end; with `streams` (a capture) the declared streams are mapped to those.
    ///
    /// A panic in the body is caught, the body's streams are joined all the same, and the
    /// panic comes back as `Err` for the caller to end what it must before resuming it.
    pub(crate) fn run_body(
        &mut self,
        root: usize,
        branch: usize,
        streams: Option<Vec<Stream>>,
        body: &mut Body<'_>,
    ) -> std::result::Result<Result<()>, Panic> {
        if let Some(expect) = self.expect.as_deref_mut()
            && let Err(e) = expect.enter_body(branch)
        {
            return Ok(Err(e));
        }
        let outer = match self.frame.begin_body(root, streams) {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        let issued = catch_unwind(AssertUnwindSafe(|| body(&mut *self)));
        let joined = self.frame.join();
        self.frame.end_body(outer);
        let expected = match self.expect.as_deref_mut() {
            Some(expect) => expect.leave_body(),
            None => Ok(()),
        };
        match issued {
            Ok(issued) => Ok(issued.and(joined).and(expected)),
            Err(panic) => Err(panic),
        }
    }

    /// A device block on `stmt.stream`, run or captured by the recorder.
    fn block(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        kind: CondKind,
        limit: Option<u32>,
        bodies: &mut [&mut Body<'_>],
    ) -> Result<()> {
        if let Some(expect) = self.expect.as_deref_mut() {
            let flag = BufferAccess {
                range: flag.range(),
                mode: AccessMode::Read,
            };
            expect.block(stmt, flag)?;
        }
        self.frame
            .enter(stmt.stream)
            .and_then(|()| self.frame.follow_last_block(stmt.stream))
            .map_err(|e| e.in_statement(stmt))?;
        let done = R::block(self, stmt, flag, kind, limit, bodies);
        // Errors of the body's statements name them already.
        done.map_err(|e| match e {
            e @ (Error::Statement { .. }
            | Error::Capture {
                statement: Some(_), ..
            }) => e,
            e => e.in_statement(stmt),
        })
    }

    /// A collective: checked against its statements, then issued by the recorder.
    fn do_collective(
        &mut self,
        stmt: &'static Statement,
        comm: &Communicator,
        op: ReduceOp,
        parts: &[CollectivePart<'_>],
    ) -> Result<()> {
        let Some(program) = self.frame.program() else {
            return Err(Error::Internal {
                invariant: "a collective is issued only once its pipeline's streams are prepared",
            });
        };
        let streams = crate::issue::check_collective(program, stmt, comm, parts)?;
        R::collective(self, stmt, comm, op, parts, &streams)
    }
}

impl Issue<'_, Plain> {
    /// A block run eagerly: the flag is read back (after the work queued on the block's
    /// stream) before each iteration; `bodies[0]` runs while (`while`) or if (`if`) it is
    /// non-zero, `bodies[1]` (the `else`) otherwise; a `switch` runs the body of the arm its
    /// value picks, or none.
    fn eager_block(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        kind: CondKind,
        limit: Option<u32>,
        bodies: &mut [&mut Body<'_>],
    ) -> Result<()> {
        let mut count: u32 = 0;
        loop {
            if kind == CondKind::While && limit.is_some_and(|l| count >= l) {
                return Ok(());
            }
            let stream = self.frame.stream(stmt.stream)?.clone();
            let value = flag.get_on(&stream)?;
            let branch = match (kind, value != 0) {
                (CondKind::Switch { .. }, _) => match stmt.kind.switch_arm(value) {
                    Some(k) => k,
                    None => return Ok(()),
                },
                (_, true) => 0,
                (CondKind::While, false) => return Ok(()),
                (CondKind::If { .. }, false) => 1,
            };
            let Some(body) = bodies.get_mut(branch) else {
                return Err(Error::Internal {
                    invariant: "a device block is issued with one body per branch",
                });
            };
            match self.run_body(stmt.stream, branch, None, &mut **body) {
                Ok(r) => r?,
                Err(panic) => resume_unwind(panic),
            }
            if kind != CondKind::While {
                return Ok(());
            }
            count = count.saturating_add(1);
        }
    }
}

/// A copy's checks (equal element sizes; in a capture, no pageable memory) and its issue on
/// declared stream `index`; returns the stream.
#[inline]
fn issue_copy<'f>(
    capturing: bool,
    origin: &'f Stream,
    sides: &'f [Stream],
    stmt: &'static Statement,
    dst: &MemoryRef<'_>,
    src: &MemoryRef<'_>,
) -> Result<&'f Stream> {
    if dst.elem_size() != src.elem_size() {
        return Err(Error::InvalidArgument(format!(
            "copy between elements of {} and {} bytes",
            dst.elem_size(),
            src.elem_size()
        )));
    }
    if capturing
        && [dst.memory(), src.memory()]
            .iter()
            .any(|m| matches!(m, Memory::PageableHost { .. }))
    {
        return Err(Error::Capture {
            fault: CaptureFault::PageableMemory,
            statement: Some(stmt),
            after: None,
            pipeline: None,
        });
    }
    let stream = stream_of(origin, sides, stmt.stream)?;
    crate::ffi::copy::copy(stream.as_cudarc(), dst, src, !capturing)?;
    Ok(stream)
}

impl<R: Recorder> Issue<'_, R> {
    /// A capture's launch: one function per crate that captures, with the kernel's launch
    /// path ([`Frame::launch_inline`]) and the booking inlined into it.
    #[inline(never)]
    fn launch_captured(
        &mut self,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        self.launch_and_tell(stmt, kernel, config, args)
    }

    /// Launches `stmt`, then tells the recorder (see [`Issuer::launch`] for where each
    /// recorder's launch is compiled).
    #[inline(always)]
    fn launch_and_tell(
        &mut self,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        let _traced = self.traced(stmt);
        if let Some(expect) = self.expect.as_deref_mut() {
            expect_launch(expect, stmt, args)?;
        }
        let stream = if R::CAPTURING {
            self.frame.launch_inline(stmt, kernel, config, args)
        } else {
            self.frame.launch(stmt, kernel, config, args)
        }
        .map_err(|e| e.in_statement(stmt))?;
        self.rec
            .launched(stmt, stream, kernel, config, args)
            .map_err(|e| e.in_statement(stmt))
    }
}

/// In a checked issue: the launch `stmt` with `args` must be the plan's next statement.
fn expect_launch(
    expect: &mut Expected,
    stmt: &'static Statement,
    args: &[KernelArg<'_>],
) -> Result<()> {
    let accesses = args.iter().filter_map(KernelArg::access).collect();
    expect.statement(stmt, &[(stmt, accesses)])
}

impl<R: Recorder> Issuer for Issue<'_, R> {
    #[inline(always)]
    fn launch(
        &mut self,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<(), Error> {
        // The hot path of runs and captures alike. The kernel's launch path is inlined only
        // where it has a single caller, so each recorder's launch has it once: an eager run's
        // (inlined into the pipeline's `issue`) calls `Frame::launch`, out of line in this
        // crate; a capture's is one function per crate that captures, into which the launch
        // path and the booking are inlined. `R::CAPTURING` is a constant: no branch is left.
        if R::CAPTURING {
            self.launch_captured(stmt, kernel, config, args)
        } else {
            self.launch_and_tell(stmt, kernel, config, args)
        }
    }

    #[inline]
    fn copy(
        &mut self,
        stmt: &'static Statement,
        dst: MemoryMut<'_>,
        src: MemoryRef<'_>,
    ) -> Result<(), Error> {
        let dst = dst.memory_ref();
        let _traced = self.traced(stmt);
        if let Some(expect) = self.expect.as_deref_mut() {
            let accesses = BufferAccess::of_copy(&dst.memory(), &src.memory());
            expect.statement(stmt, &[(stmt, accesses)])?;
        }
        let frame = &mut *self.frame;
        frame.enter(stmt.stream).map_err(|e| e.in_statement(stmt))?;
        let stream = issue_copy(
            R::CAPTURING,
            &frame.origin_lane,
            &frame.res.sides,
            stmt,
            &dst,
            &src,
        )
        .map_err(|e| e.in_statement(stmt))?;
        frame.stats.copies += 1;
        self.rec
            .issued(stmt, stream, Issued::Copy(dst, src))
            .map_err(|e| e.in_statement(stmt))
    }

    #[inline]
    fn fill(
        &mut self,
        stmt: &'static Statement,
        dst: MemoryMut<'_>,
        pattern: FillPattern,
    ) -> Result<(), Error> {
        let dst = dst.memory_ref();
        let _traced = self.traced(stmt);
        if let Some(expect) = self.expect.as_deref_mut() {
            let accesses = BufferAccess::of_fill(&dst.memory());
            expect.statement(stmt, &[(stmt, accesses)])?;
        }
        let frame = &mut *self.frame;
        frame.enter(stmt.stream).map_err(|e| e.in_statement(stmt))?;
        let stream = stream_of(&frame.origin_lane, &frame.res.sides, stmt.stream)
            .map_err(|e| e.in_statement(stmt))?;
        crate::ffi::copy::fill(stream.as_cudarc(), &dst, pattern)
            .map_err(|e| e.in_statement(stmt))?;
        frame.stats.fills += 1;
        self.rec
            .issued(stmt, stream, Issued::Fill(dst, pattern))
            .map_err(|e| e.in_statement(stmt))
    }

    #[inline]
    fn host(&mut self, stmt: &'static Statement, f: HostFn) -> Result<(), Error> {
        let _traced = self.traced(stmt);
        self.expected(stmt)?;
        let frame = &mut *self.frame;
        frame.enter(stmt.stream).map_err(|e| e.in_statement(stmt))?;
        let stream = stream_of(&frame.origin_lane, &frame.res.sides, stmt.stream)
            .map_err(|e| e.in_statement(stmt))?;
        self.rec.host(stream, f).map_err(|e| e.in_statement(stmt))?;
        frame.stats.host_fns += 1;
        self.rec
            .issued(stmt, stream, Issued::Host)
            .map_err(|e| e.in_statement(stmt))
    }

    #[inline(always)]
    fn record(&mut self, stmt: &'static Statement) -> Result<(), Error> {
        let _traced = self.traced(stmt);
        self.expected(stmt)?;
        self.frame.record(stmt).map_err(|e| e.in_statement(stmt))?;
        self.rec.ordering(stmt);
        Ok(())
    }

    #[inline(always)]
    fn wait(&mut self, stmt: &'static Statement) -> Result<(), Error> {
        let _traced = self.traced(stmt);
        self.expected(stmt)?;
        self.frame.wait(stmt).map_err(|e| e.in_statement(stmt))?;
        self.rec.ordering(stmt);
        Ok(())
    }

    #[inline]
    fn collective(
        &mut self,
        stmt: &'static Statement,
        comm: &Communicator,
        op: ReduceOp,
        parts: &[CollectivePart<'_>],
    ) -> Result<(), Error> {
        let _traced = self.traced(stmt);
        if let Some(expect) = self.expect.as_deref_mut() {
            let parts: Vec<_> = parts
                .iter()
                .map(|p| {
                    let accesses = BufferAccess::of_participant(&p.send.memory(), &p.recv.memory());
                    (p.statement, accesses)
                })
                .collect();
            expect.statement(stmt, &parts)?;
        }
        self.do_collective(stmt, comm, op, parts)
            .map_err(|e| e.in_statement(stmt))
    }

    #[inline]
    fn call(&mut self, stmt: &'static Statement, call: &mut dyn BoundCall) -> Result<(), Error> {
        let _traced = self.traced(stmt);
        if let Some(expect) = self.expect.as_deref_mut() {
            let accesses = call
                .accesses()
                .iter()
                .filter_map(CallAccess::buffer_access)
                .collect();
            expect.statement(stmt, &[(stmt, accesses)])?;
        }
        self.frame
            .enter(stmt.stream)
            .map_err(|e| e.in_statement(stmt))?;
        let stream = self
            .frame
            .stream(stmt.stream)
            .map_err(|e| e.in_statement(stmt))?;
        check_devices(call.accesses(), stream.device().ordinal())
            .map_err(|e| e.in_statement(stmt))?;
        self.rec
            .call(stmt, stream, call)
            .map_err(|e| e.in_statement(stmt))?;
        self.frame.stats.calls += 1;
        Ok(())
    }

    fn alloc<'s>(
        &mut self,
        stmt: &'static Statement,
        scope: Scope<'s>,
        bytes: usize,
    ) -> Result<TempMemory<'s>, Error> {
        self.alloc_temp(stmt, scope, bytes)
    }

    fn free(&mut self, stmt: &'static Statement, memory: TempMemory<'_>) -> Result<(), Error> {
        self.free_temp(stmt, memory)
    }

    #[inline(always)]
    fn wait_stream(&mut self, stmt: &'static Statement) -> Result<(), Error> {
        let _traced = self.traced(stmt);
        self.expected(stmt)?;
        self.frame
            .wait_stream(stmt)
            .map_err(|e| e.in_statement(stmt))?;
        self.rec.ordering(stmt);
        Ok(())
    }

    #[inline]
    fn while_loop(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        limit: Option<u32>,
        body: &mut Body<'_>,
    ) -> Result<(), Error> {
        let _traced = self.traced(stmt);
        let StatementKind::While { signalled, .. } = stmt.kind else {
            return Err(block_kind_error(stmt, "while"));
        };
        if signalled && limit.is_some() {
            let why = "a signalled loop takes no limit: its kernels end it; drop one of them";
            return Err(Error::InvalidArgument(format!("`{}`: {why}", stmt.text)));
        }
        self.block(stmt, flag, CondKind::While, limit, &mut [body])
    }

    #[inline]
    fn if_else(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        then: &mut Body<'_>,
        otherwise: &mut Body<'_>,
    ) -> Result<(), Error> {
        let _traced = self.traced(stmt);
        let StatementKind::If {
            otherwise: start,
            end,
        } = stmt.kind
        else {
            return Err(block_kind_error(stmt, "if"));
        };
        let kind = CondKind::If {
            otherwise: start < end,
        };
        self.block(stmt, flag, kind, None, &mut [then, otherwise])
    }

    #[inline]
    fn switch(
        &mut self,
        stmt: &'static Statement,
        index: &DeviceFlag,
        arms: &mut [&mut Body<'_>],
    ) -> Result<(), Error> {
        let _traced = self.traced(stmt);
        let StatementKind::Switch { arms: declared, .. } = stmt.kind else {
            return Err(block_kind_error(stmt, "switch"));
        };
        check_switch_arms(stmt, declared.len(), arms.len())?;
        let kind = CondKind::Switch { arms: declared };
        self.block(stmt, index, kind, None, arms)
    }
}

fn block_kind_error(stmt: &'static Statement, expected: &str) -> Error {
    Error::InvalidArgument(format!(
        "the statement was issued as a `{expected}` block but is a {:?}",
        stmt.kind
    ))
    .in_statement(stmt)
}
