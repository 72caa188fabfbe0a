//! An instantiated graph without a pipeline value: launch, update to a pipeline's values,
//! re-instantiate. [`GraphExec`](super::GraphExec) is one beside the pipeline it owns;
//! [`GraphSet`](super::GraphSet) holds one per key and borrows each launch's pipeline.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use super::arg_state::ArgState;
use super::args::Updater;
use super::capture::{Capture, CaptureSettings};
use super::{GraphCore, OpRef, VerifyReport};
use crate::device::Device;
use crate::error::{Error, Result, UpdateRejection};
use crate::ffi::graph_exec::OwnedExec;
use crate::ffi::KernelArg;
use crate::issue::Pipeline;
use crate::module::Kernel;
use crate::plan::Plan;
use crate::program::{Statement, StatementKind};
use crate::stream::Stream;

/// How many sets of memory an argument update keeps beside the captured graph's before it
/// captures anew instead (which lets go of what earlier arguments used).
const MAX_EXTRA_KEEPS: usize = 64;

/// Counts of what an executable graph did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct GraphStats {
    /// Launches (`cuGraphLaunch`).
    pub launches: u64,
    /// Updates applied in place (`cuGraphExecUpdate`), without re-instantiation.
    pub updates: u64,
    /// Re-instantiations after an update was refused.
    pub reinstantiations: u64,
    /// [`GraphExec::update_args`](super::GraphExec::update_args) calls that changed nodes in place (without a capture).
    pub args_updates: u64,
    /// Launch nodes given new parameters in place, by [`GraphExec::set_kernel_args`](super::GraphExec::set_kernel_args) and
    /// [`GraphExec::update_args`](super::GraphExec::update_args).
    pub nodes_set: u64,
    /// Operations an argument update left as they were without evaluating their statements,
    /// since none of the parameters those read changed ([`ParamKey`](crate::ParamKey)).
    pub args_skipped: u64,
}

/// An executable graph, the graphs it was made from, and what was done with it.
#[derive(Debug)]
pub(super) struct Executable {
    pub(super) exec: OwnedExec,
    /// What each launch node runs now (shape and argument values); made from the latest
    /// graph on first use, so that updates which never set arguments do not pay for it.
    args: RefCell<Option<ArgState>>,
    /// The graph the executable graph was instantiated from: its node handles address the
    /// executable graph's nodes.
    pub(super) base: GraphCore,
    /// The graph of the latest update: the source of current kernel parameters.
    latest: Option<GraphCore>,
    recapture: Option<Capture>,
    settings: CaptureSettings,
    pub(super) reinstantiate: bool,
    launches: Cell<u64>,
    updates: u64,
    reinstantiations: u64,
    args_updates: u64,
    nodes_set: Cell<u64>,
    args_skipped: u64,
}

impl Executable {
    /// Instantiates `core`'s graph.
    pub(super) fn instantiate(core: GraphCore, settings: CaptureSettings) -> Result<Executable> {
        let exec = core
            .raw
            .instantiate()
            .map_err(|e| Error::driver("cuGraphInstantiateWithFlags", e))?;
        Ok(Executable {
            exec,
            args: RefCell::new(None),
            base: core,
            latest: None,
            recapture: None,
            settings,
            reinstantiate: false,
            launches: Cell::new(0),
            updates: 0,
            reinstantiations: 0,
            args_updates: 0,
            nodes_set: Cell::new(0),
            args_skipped: 0,
        })
    }

    /// The graph the executable graph runs now: the latest update's, or the one it was
    /// instantiated from.
    #[inline]
    pub(super) fn current(&self) -> &GraphCore {
        self.latest.as_ref().unwrap_or(&self.base)
    }

    /// `cuGraphLaunch` on `stream`, which must be of the graph's device and not capturing.
    #[inline]
    pub(super) fn launch(&self, stream: &Stream) -> Result<()> {
        stream.refuse_capturing("GraphExec::launch")?;
        if stream.ctx().cu_ctx() != self.exec.ctx().cu_ctx() {
            return Err(Error::DeviceMismatch {
                what: "launching a graph on a stream of another device",
                left: Device::from_ctx(self.exec.ctx()).ordinal(),
                right: stream.device().ordinal(),
            });
        }
        self.exec.launch(stream.as_cudarc())?;
        self.launches.set(self.launches.get() + 1);
        Ok(())
    }

    /// `cuGraphUpload` on `stream`.
    pub(super) fn upload(&self, stream: &Stream) -> Result<()> {
        stream.refuse_capturing("GraphExec::upload")?;
        self.exec
            .upload(stream.as_cudarc())
            .map_err(|e| Error::driver("cuGraphUpload", e))
    }

    pub(super) fn stats(&self) -> GraphStats {
        GraphStats {
            launches: self.launches.get(),
            updates: self.updates,
            reinstantiations: self.reinstantiations,
            args_updates: self.args_updates,
            nodes_set: self.nodes_set.get(),
            args_skipped: self.args_skipped,
        }
    }

    /// See [`GraphExec::set_kernel_args`](super::GraphExec::set_kernel_args).
    #[inline]
    pub(super) fn set_kernel_args(
        &self,
        op: OpRef,
        kernel: &Kernel,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        let stmt = op.statement;
        if !matches!(stmt.kind, StatementKind::Launch { .. }) {
            return Err(not_a_launch(stmt));
        }
        let index = self.base.op_index(op)?;
        let Some(func) = kernel.loaded() else {
            return Err(Error::PlanningOnly { what: "kernel" });
        };
        let source = self.current();
        let mut state = self.args.borrow_mut();
        let state = ArgState::in_cell(&mut state, source, &self.base)?;
        // The node's parameters as captured (the latest update's, which may have changed the
        // configuration): no driver query on this path.
        let Some(slot) = state.slot(index) else {
            return Err(not_a_launch(stmt));
        };
        let Some(shape) = slot.shape else {
            return Err(not_a_launch(stmt));
        };
        if func.handle() != shape.func {
            return Err(other_kernel(stmt, kernel));
        }
        if args.len() != shape.arity() {
            return Err(other_arity(stmt, shape.arity(), args.len()));
        }
        for access in args.iter().filter_map(|a| a.access()) {
            if !source.covers(&access.range) {
                return Err(foreign_memory(stmt));
            }
        }
        let Some(node) = state.node(index) else {
            return Err(Error::InvalidArgument(format!(
                "launch `{}` at {} has no graph node",
                stmt.text, stmt.location
            )));
        };
        // The values the node runs are the caller's now, not the pipeline's.
        state.forget(index);
        self.exec
            .set_kernel_args(node, func, &shape.config, args)
            .map_err(|e| Error::driver("cuGraphExecKernelNodeSetParams", e))?;
        self.nodes_set.set(self.nodes_set.get() + 1);
        Ok(())
    }

    /// Captures `pipeline` anew with the first capture's settings.
    pub(super) fn recaptured<P: Pipeline>(&mut self, pipeline: &P) -> Result<GraphCore> {
        let capture = self.recapture.get_or_insert_with(|| {
            self.settings
                .capture(&self.base.origin, self.base.arena.clone())
        });
        GraphCore::capture(capture, pipeline)
    }

    /// Captures `pipeline` and applies the new graph (see
    /// [`GraphExec::update`](super::GraphExec::update)).
    pub(super) fn update_to<P: Pipeline>(&mut self, pipeline: &P) -> Result<()> {
        let core = self.recaptured(pipeline)?;
        self.apply(core, self.reinstantiate)
    }

    /// Brings the executable graph to `pipeline`'s values (see
    /// [`GraphExec::update_args`](super::GraphExec::update_args)).
    pub(super) fn apply_args<P: Pipeline>(&mut self, pipeline: &P) -> Result<()> {
        let (recapture, keep, set, skipped) = {
            let core = self.latest.as_ref().unwrap_or(&self.base);
            let state = ArgState::in_cell(self.args.get_mut(), core, &self.base)?;
            let changed = state.begin(pipeline);
            // No key changed, and the keys decide the whole walk: the nodes run these values.
            if let Some(skipped) = state.whole_unchanged(P::KEYED_WALK, changed) {
                self.args_skipped += skipped;
                return Ok(());
            }
            let mut updater = Updater::new(core, &self.exec, state, changed);
            match catch_unwind(AssertUnwindSafe(|| pipeline.issue(&mut updater))) {
                Ok(walked) => (
                    updater.needs_capture(walked),
                    updater.keep,
                    updater.set,
                    updater.skipped,
                ),
                Err(panic) => {
                    // Nodes set before the panic run the new arguments from the next launch
                    // on: their memory must stay allocated however the panic is handled.
                    let keep = updater.keep;
                    self.exec.hold_more(keep);
                    resume_unwind(panic)
                }
            }
        };
        // Hold what the new parameters touch before anything can launch them, even after an
        // error (a node may have been changed).
        let held = self.exec.hold_more(keep);
        self.nodes_set.set(self.nodes_set.get() + set);
        self.args_skipped += skipped;
        if recapture? || !held || self.exec.extra_keeps() > MAX_EXTRA_KEEPS {
            // Capture anew (which also lets go of what earlier argument updates held, once
            // the launches before it finish).
            return self.update_to(pipeline);
        }
        if set > 0 {
            self.args_updates += 1;
        }
        Ok(())
    }

    /// Applies a newly captured graph: in place, or by re-instantiation when allowed.
    pub(super) fn apply(&mut self, core: GraphCore, reinstantiate: bool) -> Result<()> {
        // A new capture's temporaries live at addresses of its own memory nodes, which the
        // executable graph's memory nodes cannot take: never applied in place. Temporaries
        // placed in a graph set's memory make no nodes.
        let info = if !core.has_memory_nodes() && !self.base.has_memory_nodes() {
            self.exec.update(&core.raw)?
        } else {
            crate::ffi::graph_exec::UpdateInfo {
                rejection: Some(UpdateRejection::MemoryNodes),
                error_node: None,
                error_from_node: None,
            }
        };
        match info.rejection {
            None => {
                *self.args.get_mut() = None;
                self.latest = Some(core);
                self.updates += 1;
                Ok(())
            }
            Some(reason) => {
                let statement = [info.error_node, info.error_from_node]
                    .into_iter()
                    .flatten()
                    .find_map(|n| core.statement_of(n).or_else(|| self.base.statement_of(n)));
                if !reinstantiate {
                    return Err(Error::UpdateRejected { reason, statement });
                }
                let exec = core
                    .raw
                    .instantiate()
                    .map_err(|e| Error::driver("cuGraphInstantiateWithFlags", e))?;
                // The previous executable graph waits for its launches as it drops.
                self.exec = exec;
                *self.args.get_mut() = None;
                self.latest = None;
                self.base = core;
                self.reinstantiations += 1;
                Ok(())
            }
        }
    }

    /// The graph it runs now against `pipeline`'s plan.
    pub(super) fn verify<P: Pipeline>(&self, pipeline: &P) -> Result<VerifyReport> {
        let plan = Plan::build(pipeline)?;
        self.current().verify_against(&plan)
    }
}

/// `stmt` is no launch, so it takes no kernel arguments.
#[cold]
fn not_a_launch(stmt: &Statement) -> Error {
    let why = match stmt.kind {
        StatementKind::Call { .. } => {
            "a `call`'s nodes are its op's (a library may pick other kernels for other \
             operands): change the op or its operands in the pipeline and `update_with`, which \
             captures it again"
        }
        _ => "only launches take kernel arguments",
    };
    Error::InvalidArgument(format!(
        "statement `{}` at {} is not a launch; {why}",
        stmt.text, stmt.location
    ))
}

/// The launch `stmt` runs another kernel than `kernel`.
#[cold]
fn other_kernel(stmt: &Statement, kernel: &Kernel) -> Error {
    Error::InvalidArgument(format!(
        "launch `{}` at {} runs another kernel than `{}` now; pass the kernel the node launches (an update may have changed it)",
        stmt.text,
        stmt.location,
        kernel.name()
    ))
}

/// The launch `stmt` takes `count` arguments, not `given`.
#[cold]
fn other_arity(stmt: &Statement, count: usize, given: usize) -> Error {
    Error::InvalidArgument(format!(
        "launch `{}` at {} was captured with {count} argument(s) but {given} were given; pass one argument per kernel parameter",
        stmt.text, stmt.location
    ))
}

/// A buffer argument of the launch `stmt` lies outside the pipeline's memory.
#[cold]
fn foreign_memory(stmt: &Statement) -> Error {
    Error::InvalidArgument(format!(
        "a buffer argument of launch `{}` at {} is memory the pipeline does not use; to point the launch at other buffers, `update` the graph with a pipeline that borrows them",
        stmt.text, stmt.location
    ))
}
