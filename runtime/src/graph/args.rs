//! Argument updates in place ([`GraphExec::update_args`](super::GraphExec::update_args)): the
//! pipeline is walked again, each operation's values are compared with what the executable
//! graph's node holds, and only the launches whose values changed get new parameters.
//!
//! One walk ([`Updater`]), which issues no work: each launch whose values differ from its
//! node's gets new parameters at once, and what its new buffer arguments touch is collected
//! to be kept alive. A device block is compared by its flag and limit and walked into, each
//! body once, as the capture issued it (its bodies' launches are set like the others). When the
//! walk finds a change that parameters cannot express (other statements, another kernel, a
//! changed copy or fill, a changed launch taking pinned memory, a block's flag or limit) it
//! stops, and the pipeline is captured anew and applied as `update` does — which also
//! overwrites whatever the walk had set before it stopped.

use super::arg_state::{skip_mark, ArgState};
use super::recorded::{
    encode, encode_block, encode_launch, same_launch_values, CapturedOp, Rewritten,
};
use crate::error::Error;
use crate::exec::record::Issued;
use crate::ffi::graph_exec::OwnedExec;
use crate::ffi::keep::Keep;
use crate::ffi::memory::{HolderKind, MemoryMut, MemoryRef};
use crate::ffi::KernelArg;
use crate::issue::{Body, Issuer};
use crate::memory::DeviceFlag;
use crate::module::Kernel;
use crate::operand::{FillPattern, HostFn, LaunchConfig};
use crate::program::{AccessMode, Statement, StatementKind};

use super::GraphCore;

/// Walks a pipeline against an executable graph: compares each operation's values with what
/// its node runs and gives the changed launches new parameters on the way.
pub(super) struct Updater<'s> {
    /// The captured graph's operations and ordering statements (`(position, id)`), which
    /// together are its statement sequence: the walk must issue the same.
    ops: &'s [CapturedOp],
    orderings: &'s [(u32, u32)],
    exec: &'s OwnedExec,
    state: &'s mut ArgState,
    /// The next ordering statement and operation the walk must issue.
    ordering: usize,
    op: usize,
    scratch: Vec<u8>,
    /// The parameters whose keys changed ([`ArgState::begin`]).
    changed: u64,
    /// Launches given new parameters.
    pub(super) set: u64,
    /// Operations left as they were, their statements' parameters unchanged.
    pub(super) skipped: u64,
    /// What the new parameters touch.
    pub(super) keep: Keep,
    recapture: bool,
}

impl<'s> Updater<'s> {
    /// A walk against `core`'s operations run by `exec` as `state` says, in which the
    /// parameters of `changed` changed ([`ArgState::begin`]).
    pub(super) fn new(
        core: &'s GraphCore,
        exec: &'s OwnedExec,
        state: &'s mut ArgState,
        changed: u64,
    ) -> Updater<'s> {
        Updater {
            changed,
            ops: &core.recorded.ops,
            orderings: &core.recorded.orderings,
            exec,
            state,
            ordering: 0,
            op: 0,
            scratch: Vec::new(),
            set: 0,
            skipped: 0,
            keep: Keep::default(),
            recapture: false,
        }
    }

    /// Whether the pipeline must be captured anew after the walk that returned `walked` (it
    /// issued other statements, a launch runs another kernel, a copy or fill changed, or a
    /// changed launch takes pinned memory); `Err` for an error of the walk itself. When
    /// neither, the nodes run the walked pipeline's values: its parameter keys are theirs.
    pub(super) fn needs_capture(&mut self, walked: Result<(), Error>) -> Result<bool, Error> {
        if self.recapture {
            return Ok(true);
        }
        walked?;
        let partial = self.ordering != self.orderings.len() || self.op != self.ops.len();
        if !partial {
            self.state.commit();
        }
        Ok(partial)
    }

    /// Stops the walk: the pipeline must be captured anew.
    fn stop(&mut self, why: &'static str) -> Error {
        self.recapture = true;
        Error::InvalidArgument(why.into())
    }

    /// The next ordering statement of the captured sequence must be `stmt`, issued after as
    /// many operations as it was.
    fn step(&mut self, stmt: &'static Statement) -> Result<(), Error> {
        match self.orderings.get(self.ordering) {
            Some(&(at, id)) if at as usize == self.op && id as usize == stmt.id => {
                self.ordering += 1;
                Ok(())
            }
            _ => Err(self.stop("the pipeline issued other statements")),
        }
    }

    /// The next operation, which must be `stmt`'s, with no ordering statement of the captured
    /// sequence left before it.
    #[inline]
    fn next_op(&mut self, stmt: &'static Statement) -> Result<usize, Error> {
        let i = self.op;
        let due = self
            .orderings
            .get(self.ordering)
            .is_some_and(|&(at, _)| at as usize <= i);
        match self.ops.get(i) {
            Some(op) if std::ptr::eq(op.statement, stmt) && !due => {
                self.op += 1;
                Ok(i)
            }
            _ => Err(self.stop("the pipeline issued other operations")),
        }
    }

    /// Operation `i`'s values were compared, and touch no host memory when `device_only`.
    #[inline]
    fn seen(&mut self, i: usize, device_only: bool) {
        let stmt = self.ops.get(i).map(|op| op.statement);
        self.state.mark(i, stmt.filter(|_| device_only));
    }

    /// Encodes `issued` into the scratch buffer; `false` when it cannot be compared.
    fn encode(&mut self, issued: &Issued<'_>) -> bool {
        self.scratch.clear();
        encode(issued, &mut self.scratch)
    }

    /// Stops the walk at a changed launch whose node it cannot give new parameters.
    #[cold]
    #[inline(never)]
    fn cannot_set(&mut self) -> Error {
        self.stop("a changed launch takes pinned memory or a cudarc slice")
    }

    /// Launch `i`, whose values or configuration changed: new parameters for its node.
    #[inline(never)]
    fn changed_launch(
        &mut self,
        i: usize,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: &LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<(), Error> {
        // New parameters for the node: what its pointers address must be kept alive by the
        // executable graph, which holds device memory but not pinned memory this way (nor
        // cudarc slices, which no graph may use: the capture refuses them with its error). A
        // launch in a device block's body is set the same way: its node is in the body graph,
        // which the executable graph instantiated with it.
        let Some(node) = self.state.node(i) else {
            return Err(Error::InvalidArgument(format!(
                "launch `{}` at {} has no graph node",
                stmt.text, stmt.location
            )));
        };
        let Some(func) = kernel.loaded() else {
            return Err(Error::PlanningOnly { what: "kernel" });
        };
        // Keep first: a failed call may still have changed the node. (What a walk stopped
        // here holds is only kept alive longer.) The new values go over the old ones, and a
        // buffer at another address than the one the node ran is checked and held on the way:
        // the memory at an address the node ran is the executable graph's already (every
        // address in the state was captured or set by a walk, which held it), and so is the
        // kernel's module (the kernel is the one captured: `launch` checked its handle).
        let keep = &mut self.keep;
        let fits = match self.state.rewrite_launch(i, args, |a| hold_new(keep, a)) {
            Rewritten::Fits => true,
            Rewritten::Refused => return Err(self.cannot_set()),
            Rewritten::DoesNotFit => {
                if !args.iter().all(|a| hold_new(&mut self.keep, a)) {
                    return Err(self.cannot_set());
                }
                false
            }
        };
        if let Err(e) = self.exec.set_kernel_args(node, func, config, args) {
            return Err(self.not_set(i, e));
        }
        if fits {
            self.state.launch_set(i, *config, true);
        } else {
            // Values never known before: encoded apart.
            self.scratch.clear();
            let comparable = encode_launch(args, &mut self.scratch);
            self.state
                .set(i, *config, comparable.then_some(&self.scratch[..]));
        }
        // Its buffers are device memory (pinned memory and cudarc slices stopped the walk).
        // (`launch` found operation `i` to be `stmt`'s.)
        self.state.mark(i, Some(stmt));
        self.set += 1;
        Ok(())
    }

    /// The error of a launch `i` whose node the driver would not set (`e`). A node in a
    /// block's body: captured anew, which sets every node (its slot is forgotten, what it may
    /// run now is kept).
    #[cold]
    #[inline(never)]
    fn not_set(&mut self, i: usize, e: cudarc::driver::DriverError) -> Error {
        let in_body = self.ops.get(i).is_some_and(|op| op.part() > 0);
        if in_body {
            self.stop("a launch in a device block's body could not be set in place")
        } else {
            Error::driver("cuGraphExecKernelNodeSetParams", e)
        }
    }
}

impl Issuer for Updater<'_> {
    fn launch(
        &mut self,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<(), Error> {
        // The next operation must be `stmt`'s, with no ordering statement due before it
        // (`next_op`, from the slot: an unchanged launch reads its slot's line alone).
        let i = self.op;
        let due = self
            .orderings
            .get(self.ordering)
            .is_some_and(|&(at, _)| at as usize <= i);
        let slot = match self.state.slots.get(i) {
            Some(slot) if std::ptr::eq(slot.statement, stmt) && !due => slot,
            _ => return Err(self.stop("the pipeline issued other operations")),
        };
        let Some(shape) = &slot.shape else {
            return Err(self.stop("a launch was captured as another operation"));
        };
        self.op += 1;
        if kernel.handle() != shape.func || args.len() != shape.arity() {
            return Err(self.stop("a launch runs another kernel"));
        }
        // Unchanged (what most launches of an update are): compared in place, in one pass
        // that also finds whether its buffers are device memory. (`next_op` found the
        // operation to be `stmt`'s.)
        if shape.config == config {
            let same = self
                .state
                .span_values(slot.span)
                .and_then(|r| same_launch_values(args, r, device_held));
            if let Some(device_only) = same {
                self.state.mark(i, device_only.then_some(stmt));
                return Ok(());
            }
        }
        self.changed_launch(i, stmt, kernel, &config, args)
    }

    fn unchanged(&mut self, stmt: &'static Statement, reads: u64) -> bool {
        if reads & self.changed != 0 {
            return false;
        }
        // The next operation must be the statement's, with its values known and in device
        // memory; else the statement is walked, which finds out what differs.
        let i = self.op;
        let due = self
            .orderings
            .get(self.ordering)
            .is_some_and(|&(at, _)| at as usize <= i);
        if due || self.state.marks.get(i) != Some(&skip_mark(stmt)) {
            return false;
        }
        self.op += 1;
        self.skipped += 1;
        true
    }

    fn unchanged_loop(&mut self, number: u32, reads: u64) -> bool {
        if reads & self.changed != 0 {
            return false;
        }
        // A walk saw the loop run here, each of its operations one it may skip.
        let Some((op_end, orderings_end)) = self.state.loop_end(number, self.op, self.ordering)
        else {
            return false;
        };
        self.skipped += (op_end - self.op) as u64;
        self.op = op_end;
        self.ordering = orderings_end;
        true
    }

    fn loop_begin(&mut self) -> u64 {
        ((self.op as u64) << 32) | self.ordering as u64
    }

    fn loop_end(&mut self, number: u32, begun: u64) {
        let begun = ((begun >> 32) as usize, begun as u32 as usize);
        self.state
            .note_loop(number, begun, (self.op, self.ordering));
    }

    fn copy(
        &mut self,
        stmt: &'static Statement,
        dst: MemoryMut<'_>,
        src: MemoryRef<'_>,
    ) -> Result<(), Error> {
        let dst = dst.memory_ref();
        let i = self.next_op(stmt)?;
        if self.encode(&Issued::Copy(dst, src)) && self.state.values(i) == Some(&self.scratch[..]) {
            self.seen(i, device_memory(&dst) && device_memory(&src));
            Ok(())
        } else {
            Err(self.stop("a copy changed"))
        }
    }

    fn fill(
        &mut self,
        stmt: &'static Statement,
        dst: MemoryMut<'_>,
        pattern: FillPattern,
    ) -> Result<(), Error> {
        let dst = dst.memory_ref();
        let i = self.next_op(stmt)?;
        if self.encode(&Issued::Fill(dst, pattern))
            && self.state.values(i) == Some(&self.scratch[..])
        {
            self.seen(i, device_memory(&dst));
            Ok(())
        } else {
            Err(self.stop("a fill changed"))
        }
    }

    fn collective(
        &mut self,
        _stmt: &'static Statement,
        _comm: &crate::comm::Communicator,
        _op: crate::operand::ReduceOp,
        _parts: &[crate::issue::CollectivePart<'_>],
    ) -> Result<(), Error> {
        // NCCL's nodes are NCCL's: a change reaches them only through a new capture.
        Err(self.stop("the pipeline has a collective"))
    }

    fn call(
        &mut self,
        stmt: &'static Statement,
        call: &mut dyn crate::call::BoundCall,
    ) -> Result<(), Error> {
        let call: &dyn crate::call::BoundCall = call;
        // A library call's nodes are the library's (it may pick other kernels for other
        // operands): kept only when the op and its operands are the captured ones.
        let i = self.next_op(stmt)?;
        self.scratch.clear();
        if super::recorded::encode_call(call, call.keep().as_ref(), &mut self.scratch)
            && self.state.values(i) == Some(&self.scratch[..])
        {
            // Its nodes stay; a later walk may skip it when its operands are device memory.
            let device_only = call.accesses().iter().all(|a| device_memory(&a.memory));
            self.seen(i, device_only);
            Ok(())
        } else {
            Err(self.stop("a `call` changed (another op, other operands, or an op whose work `update_args` cannot compare): captured again"))
        }
    }

    /// A temporary keeps the memory the graph's allocation node was captured with: the
    /// statement gets that memory back, and must ask for as many bytes.
    fn alloc<'s>(
        &mut self,
        stmt: &'static Statement,
        scope: crate::memory::Scope<'s>,
        bytes: usize,
    ) -> Result<crate::memory::TempMemory<'s>, Error> {
        let i = self.next_op(stmt)?;
        let (Some(temp), Some(range)) = (
            stmt.kind.temp(),
            self.state.values(i).and_then(super::recorded::decode_range),
        ) else {
            return Err(self.stop("a temporary's allocation was captured as another operation"));
        };
        if range.bytes != bytes {
            return Err(self.stop(
                "a temporary changed size: a graph's temporaries keep the size they were \
                 captured with (its memory nodes cannot be updated); capture the pipeline again",
            ));
        }
        Ok(crate::memory::TempMemory::new(scope, temp, range))
    }

    fn free(
        &mut self,
        stmt: &'static Statement,
        memory: crate::memory::TempMemory<'_>,
    ) -> Result<(), Error> {
        let i = self.next_op(stmt)?;
        if self.encode(&Issued::Free(memory.range(), false))
            && self.state.values(i) == Some(&self.scratch[..])
        {
            Ok(())
        } else {
            Err(self.stop("a temporary's release changed"))
        }
    }

    fn host(&mut self, stmt: &'static Statement, _f: HostFn) -> Result<(), Error> {
        // Host functions are not compared: the graph keeps those it captured.
        self.next_op(stmt).map(drop)
    }

    fn record(&mut self, stmt: &'static Statement) -> Result<(), Error> {
        self.step(stmt)
    }

    fn wait(&mut self, stmt: &'static Statement) -> Result<(), Error> {
        self.step(stmt)
    }

    fn wait_stream(&mut self, stmt: &'static Statement) -> Result<(), Error> {
        self.step(stmt)
    }

    fn while_loop(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        limit: Option<u32>,
        body: &mut Body<'_>,
    ) -> Result<(), Error> {
        self.block(stmt, flag, limit, &mut [body])
    }

    fn if_else(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        then: &mut Body<'_>,
        otherwise: &mut Body<'_>,
    ) -> Result<(), Error> {
        // The capture captured the `else` body only where the statement has one.
        match stmt.kind {
            StatementKind::If {
                otherwise: start,
                end,
            } if start < end => self.block(stmt, flag, None, &mut [then, otherwise]),
            _ => self.block(stmt, flag, None, &mut [then]),
        }
    }

    fn switch(
        &mut self,
        stmt: &'static Statement,
        index: &DeviceFlag,
        arms: &mut [&mut Body<'_>],
    ) -> Result<(), Error> {
        self.block(stmt, index, None, arms)
    }
}

impl Updater<'_> {
    /// A device block, walked as the capture issued it: its flag and limit (what its built-in
    /// kernels read) must be the captured ones, then each body once, in order; a changed launch
    /// in a body gets new parameters in place like any other.
    fn block(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        limit: Option<u32>,
        bodies: &mut [&mut Body<'_>],
    ) -> Result<(), Error> {
        let i = self.next_op(stmt)?;
        self.scratch.clear();
        encode_block(flag, limit, &mut self.scratch);
        if flag.is_planning() || self.state.values(i) != Some(&self.scratch[..]) {
            return Err(self.stop("a device block's flag or limit changed"));
        }
        bodies.iter_mut().try_for_each(|body| body(&mut *self))
    }
}

/// Holds the memory of `arg`, a launch argument a walk gives a node, in `keep`; `false` when
/// a node cannot be given it by a walk (pinned memory or a cudarc slice).
#[inline(always)]
fn hold_new(keep: &mut Keep, arg: &KernelArg<'_>) -> bool {
    let holder = arg.holder();
    if matches!(holder, HolderKind::Pinned(_) | HolderKind::Cudarc(_)) {
        return false;
    }
    if let Some(access) = arg.access() {
        keep.hold(holder, access.mode == AccessMode::Write);
    }
    true
}

/// Whether memory of `holder` is device memory, which a node may keep addressing while its
/// statement's parameters are unchanged (the graph keeps it allocated, and Rust code reads it
/// only through stream-ordered copies); not host memory, which Rust code may read directly.
fn device_held(holder: HolderKind<'_>) -> bool {
    matches!(
        holder,
        HolderKind::Device(_) | HolderKind::Temporary | HolderKind::Foreign
    )
}

/// Whether `m` is device memory of a holder [`device_held`] accepts.
fn device_memory(m: &MemoryRef<'_>) -> bool {
    matches!(m.memory(), crate::operand::Memory::Device(_)) && device_held(m.holder())
}
