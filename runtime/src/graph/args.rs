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

use super::recorded::{
    encode, encode_block, encode_launch, same_launch_values, CapturedOp, LaunchShape, OPAQUE,
};
use crate::error::Error;
use crate::exec::record::Issued;
use crate::ffi::graph::NodeHandle;
use crate::ffi::graph_exec::OwnedExec;
use crate::ffi::keep::Keep;
use crate::ffi::memory::{HolderKind, MemoryMut, MemoryRef};
use crate::ffi::KernelArg;
use crate::issue::{Body, Issuer, ParamKeys, Pipeline};
use crate::memory::DeviceFlag;
use crate::module::Kernel;
use crate::operand::{FillPattern, HostFn, LaunchConfig};
use crate::program::{AccessMode, Statement, StatementKind};

use super::GraphCore;

/// What an executable graph's launch nodes run now: their nodes, shapes and argument values,
/// one slot per operation (what `set_kernel_args` reads for a node lies together).
#[derive(Debug)]
pub(super) struct ArgState {
    slots: Vec<Slot>,
    bytes: Vec<u8>,
    /// Per operation, its statement's address with bit 0 set when a walk saw its values and
    /// they touch no host memory, so that a walk whose statement's parameters did not change
    /// may leave its node as it is ([`Issuer::unchanged`]); 0 otherwise. Apart from the
    /// slots, so that a walk that skips reads one word an operation.
    marks: Vec<usize>,
    /// The parameter keys of the pipeline value whose arguments the nodes run, when `keyed`:
    /// after a walk that saw every statement (not before one, nor after one that failed).
    keys: ParamKeys,
    keyed: bool,
    /// The keys of the pipeline being walked.
    next: ParamKeys,
    /// How many marks are set (operations a walk may skip), and how many operations are
    /// launches, copies and fills (the only ones marked) when no operation is of a kind a walk
    /// compares otherwise (a device block, a `call`, a collective); [`NOT_WHOLE`] when one
    /// is. When all are marked and `keyed`, a pipeline whose walk its keys decide
    /// ([`Pipeline::KEYED_WALK`]) is not walked at all when no key changed.
    marked: usize,
    whole: usize,
}

/// One operation of an executable graph, as [`ArgState`] knows it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    /// Its node in the graph the executable graph was instantiated from.
    pub(super) node: Option<NodeHandle>,
    /// The launch's shape as its node runs it now (`None` for other operations).
    pub(super) shape: Option<LaunchShape>,
    /// Where its values lie in [`ArgState::bytes`]; [`OPAQUE`] as length when unknown.
    span: (u32, u32),
}

impl ArgState {
    /// The state of a freshly captured graph `core`, whose operations are those of `base`, the
    /// graph the executable graph was instantiated from (the nodes are `base`'s).
    pub(super) fn of(core: &GraphCore, base: &GraphCore) -> Result<ArgState, Error> {
        let nodes = base.node_map()?;
        Ok(ArgState {
            slots: core
                .recorded
                .ops
                .iter()
                .enumerate()
                .map(|(i, op)| Slot {
                    node: nodes.get(i).copied().flatten(),
                    shape: core.launch_shape(i),
                    span: op.values,
                })
                .collect(),
            bytes: core.recorded.values.clone(),
            marks: vec![0; core.recorded.ops.len()],
            keys: ParamKeys::default(),
            keyed: false,
            next: ParamKeys::default(),
            marked: 0,
            whole: whole_walk(&core.recorded.ops).unwrap_or(NOT_WHOLE),
        })
    }

    /// Takes `pipeline`'s parameter keys for a walk; returns the parameters that changed
    /// since the last walk that saw every statement (all of them when there was none). Until
    /// [`ArgState::commit`], the nodes' keys are unknown.
    pub(super) fn begin<P: Pipeline + ?Sized>(&mut self, pipeline: &P) -> u64 {
        self.next.clear();
        pipeline.param_keys(&mut self.next);
        let changed = if self.keyed {
            self.keys.changed(&self.next)
        } else {
            !0
        };
        self.keyed = false;
        changed
    }

    /// The walk [`ArgState::begin`] began saw every statement: the nodes run the values of
    /// the pipeline it took the keys of.
    pub(super) fn commit(&mut self) {
        std::mem::swap(&mut self.keys, &mut self.next);
        self.keyed = true;
    }

    /// After [`ArgState::begin`] found no key `changed`, for a pipeline whose keys decide its
    /// walk when `keyed_walk` ([`Pipeline::KEYED_WALK`]): how many operations the nodes run
    /// as they are when the walk is left out — the last walk saw every statement, every
    /// launch, copy and fill is one a walk may skip, and no operation is compared otherwise.
    /// The nodes' keys are known again.
    #[inline]
    pub(super) fn whole_unchanged(&mut self, keyed_walk: bool, changed: u64) -> Option<u64> {
        if !keyed_walk || changed != 0 || self.whole != self.marked {
            return None;
        }
        self.commit();
        Some(self.marked as u64)
    }

    /// The state in `cell`, made from `core` and `base` (see [`ArgState::of`]) if it has none.
    #[inline]
    pub(super) fn in_cell<'c>(
        cell: &'c mut Option<ArgState>,
        core: &GraphCore,
        base: &GraphCore,
    ) -> Result<&'c mut ArgState, Error> {
        match cell {
            Some(state) => Ok(state),
            None => ArgState::first(cell, core, base),
        }
    }

    /// [`ArgState::in_cell`] when `cell` is empty.
    #[cold]
    fn first<'c>(
        cell: &'c mut Option<ArgState>,
        core: &GraphCore,
        base: &GraphCore,
    ) -> Result<&'c mut ArgState, Error> {
        Ok(cell.insert(ArgState::of(core, base)?))
    }

    /// Operation `i`.
    #[inline]
    pub(super) fn slot(&mut self, i: usize) -> Option<&mut Slot> {
        self.slots.get_mut(i)
    }

    /// Operation `i` got values from elsewhere (`set_kernel_args`): they are unknown now.
    #[inline]
    pub(super) fn forget(&mut self, i: usize) {
        if let Some(slot) = self.slots.get_mut(i) {
            slot.span.1 = OPAQUE;
        }
        if let Some(m) = self.marks.get_mut(i).filter(|m| **m != 0) {
            *m = 0;
            self.marked -= 1;
        }
    }

    /// Operation `i`, of `stmt`, may be skipped by a walk when `stmt` is given.
    #[inline]
    fn mark(&mut self, i: usize, stmt: Option<&'static Statement>) {
        if let Some(m) = self.marks.get_mut(i) {
            let new = stmt.map_or(0, skip_mark);
            // Only launches, copies and fills are marked.
            self.marked = self.marked + usize::from(new != 0) - usize::from(*m != 0);
            *m = new;
        }
    }

    fn values(&self, i: usize) -> Option<&[u8]> {
        self.span_values(self.slots.get(i)?.span)
    }

    /// The values at `span` of [`ArgState::bytes`]; `None` for [`OPAQUE`] ones.
    #[inline]
    fn span_values(&self, (start, len): (u32, u32)) -> Option<&[u8]> {
        if len == OPAQUE {
            return None;
        }
        self.bytes
            .get(start as usize..start as usize + len as usize)
    }

    /// Operation `i` runs `config` with `values` now (`None`: values that cannot be compared).
    fn set(&mut self, i: usize, config: LaunchConfig, values: Option<&[u8]>) {
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        if let Some(shape) = &mut slot.shape {
            shape.config = config;
        }
        let span = &mut slot.span;
        match values {
            None => span.1 = OPAQUE,
            Some(v) if span.1 != OPAQUE && span.1 as usize == v.len() => {
                let start = span.0 as usize;
                self.bytes[start..start + v.len()].copy_from_slice(v);
            }
            Some(v) => {
                *span = (self.bytes.len() as u32, v.len() as u32);
                self.bytes.extend_from_slice(v);
            }
        }
    }
}

/// Walks a pipeline against an executable graph: compares each operation's values with what
/// its node runs and gives the changed launches new parameters on the way.
pub(super) struct Updater<'s> {
    /// The graph whose statement sequence and operations the walk must match.
    core: &'s GraphCore,
    /// Its operations and ordering statements (`(position, id)`), which together are its
    /// statement sequence: the walk must issue the same.
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
            core,
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

    /// Gives launch `i` new parameters.
    fn set_launch(
        &mut self,
        i: usize,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
        comparable: bool,
    ) -> Result<(), Error> {
        let Some(node) = self.state.slot(i).and_then(|s| s.node) else {
            return Err(Error::InvalidArgument(format!(
                "launch `{}` at {} has no graph node",
                stmt.text, stmt.location
            )));
        };
        let Some(func) = kernel.loaded() else {
            return Err(Error::PlanningOnly { what: "kernel" });
        };
        // Keep first: a failed call may still have changed the node.
        if let Some(module) = kernel.cuda_module() {
            self.keep.hold_module(module);
        }
        for a in args {
            if let Some(access) = a.access() {
                self.keep.hold(a.holder(), access.mode == AccessMode::Write);
            }
        }
        // Its values are unknown until the call succeeds. (Its mark may stay: a walk that
        // fails leaves the keys unknown, and the next walk sees every statement.)
        if let Some(slot) = self.state.slots.get_mut(i) {
            slot.span.1 = OPAQUE;
        }
        if let Err(e) = self.exec.set_kernel_args(node, func, &config, args) {
            // A node in a block's body the driver would not set (its slot is forgotten, what
            // it may run now is kept): captured anew, which sets every node.
            let in_body = self
                .core
                .recorded
                .ops
                .get(i)
                .is_some_and(|op| op.part() > 0);
            return Err(if in_body {
                self.stop("a launch in a device block's body could not be set in place")
            } else {
                Error::driver("cuGraphExecKernelNodeSetParams", e)
            });
        }
        self.state
            .set(i, config, comparable.then_some(&self.scratch[..]));
        // Its buffers are device memory (`changed_launch` sends the others to a capture).
        self.seen(i, true);
        self.set += 1;
        Ok(())
    }

    /// Launch `i`, whose values or configuration changed: new parameters for its node.
    #[inline(never)]
    fn changed_launch(
        &mut self,
        i: usize,
        stmt: &'static Statement,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<(), Error> {
        self.scratch.clear();
        let comparable = encode_launch(args, &mut self.scratch);
        // New parameters for the node: what its pointers address must be kept alive by the
        // executable graph, which holds device memory but not pinned memory this way (nor
        // cudarc slices, which no graph may use: the capture refuses them with its error). A
        // launch in a device block's body is set the same way: its node is in the body graph,
        // which the executable graph instantiated with it.
        if args
            .iter()
            .any(|a| matches!(a.holder(), HolderKind::Pinned(_) | HolderKind::Cudarc(_)))
        {
            return Err(self.cannot_set());
        }
        self.set_launch(i, stmt, kernel, config, args, comparable)
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
        let i = self.next_op(stmt)?;
        let Some(slot) = self.state.slots.get(i) else {
            return Err(self.stop("a launch was captured as another operation"));
        };
        let Some(shape) = &slot.shape else {
            return Err(self.stop("a launch was captured as another operation"));
        };
        if kernel.handle() != shape.func || args.len() != shape.arity() {
            return Err(self.stop("a launch runs another kernel"));
        }
        // Unchanged (what most launches of an update are): compared in place.
        if shape.config == config
            && self
                .state
                .span_values(slot.span)
                .is_some_and(|r| same_launch_values(args, r))
        {
            let device_only = args
                .iter()
                .all(|a| a.access().is_none() || device_held(a.holder()));
            self.seen(i, device_only);
            return Ok(());
        }
        self.changed_launch(i, stmt, kernel, config, args)
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

/// [`ArgState`]'s `whole` of a graph with an operation a walk compares otherwise: more than
/// it can mark.
const NOT_WHOLE: usize = usize::MAX;

/// How many of `ops` are launches, copies and fills, when every other one is a host
/// function or a temporary's allocation or release (what [`ArgState::whole_unchanged`] may
/// leave unwalked); `None` when one is a device block, a `call` or a collective.
fn whole_walk(ops: &[CapturedOp]) -> Option<usize> {
    ops.iter().try_fold(0, |n, op| match op.statement.kind {
        StatementKind::Launch { .. } | StatementKind::Copy | StatementKind::Fill => Some(n + 1),
        StatementKind::Host | StatementKind::Alloc { .. } | StatementKind::Free { .. } => Some(n),
        _ => None,
    })
}

/// [`ArgState::marks`]' word of an operation of `stmt` that a walk may skip (statements are
/// aligned to more than 1 byte, so bit 0 of their address is free).
#[inline]
fn skip_mark(stmt: &'static Statement) -> usize {
    std::ptr::from_ref(stmt) as usize | 1
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn values_are_replaced_in_place_or_appended_and_forgotten() {
        let config = LaunchConfig {
            grid: 1u32.into(),
            block: 1u32.into(),
            shared_mem_bytes: 0,
        };
        let slot = |span| Slot {
            node: None,
            shape: None,
            span,
        };
        let mut state = ArgState {
            slots: vec![slot((0, 2)), slot((2, 0))],
            bytes: vec![1, 2],
            marks: vec![0; 2],
            keys: ParamKeys::default(),
            keyed: false,
            next: ParamKeys::default(),
            marked: 0,
            whole: NOT_WHOLE,
        };
        assert_eq!(state.values(0), Some(&[1u8, 2][..]));
        assert_eq!(state.values(1), Some(&[][..]));
        state.set(0, config, Some(&[3, 4]));
        assert_eq!(state.values(0), Some(&[3u8, 4][..]));
        assert_eq!(state.bytes.len(), 2, "same length: in place");
        state.set(0, config, Some(&[5, 6, 7]));
        assert_eq!(state.values(0), Some(&[5u8, 6, 7][..]));
        state.forget(0);
        assert_eq!(state.values(0), None);
        state.set(1, config, None);
        assert_eq!(state.values(1), None);
        state.set(1, config, Some(&[9]));
        assert_eq!(state.values(1), Some(&[9u8][..]));
        assert_eq!(state.values(2), None);
    }
}
