//! The node book of a capture: which graph node each operation made, and what the graph must
//! keep for its replays. [`crate::Eager`] fills it while a capture issues through it.

use crate::error::{CaptureFault, Error, Result};
use crate::ffi::conditional::{BodyGraph, Conditional};
use crate::ffi::graph::{self as gffi, CaptureModeRaw, CaptureStatus, Keep, NodeHandle};
use crate::ffi::memory::MemoryRef;
use crate::ffi::KernelArg;
use crate::memory::DeviceFlag;
use crate::module::Kernel;
use crate::operand::{DeviceRange, HostFn, LaunchConfig, Memory};
use crate::program::{AccessMode, Program, Statement};
use crate::stream::Stream;

/// What an operation issued, for the capture's book.
pub(crate) enum Issued<'x, 'a> {
    /// A launch of `kernel` with `config` and these arguments.
    Launch(&'x Kernel, LaunchConfig, &'x [KernelArg<'a>]),
    /// A copy: destination (written) and source (read).
    Copy(MemoryRef<'a>, MemoryRef<'a>),
    /// A fill of this memory.
    Fill(MemoryRef<'a>),
    /// A host function.
    Host,
}

/// One captured operation: the statement issue it came from and its graph node.
#[derive(Debug, Clone)]
pub(crate) struct CapturedOp {
    /// The statement.
    pub(crate) statement: &'static Statement,
    /// Which issue of the statement, from 1.
    pub(crate) occurrence: u32,
    /// The stream index it was issued on.
    pub(crate) stream: usize,
    /// Its node; `None` for an empty copy or fill, which issues nothing.
    pub(crate) node: Option<NodeHandle>,
    /// For launches: the kernel, its configuration and number of arguments, from which
    /// `GraphExec::set_kernel_args` rebuilds the node's parameters without asking the driver.
    pub(crate) launch: Option<LaunchShape>,
    /// The graph it is a node of: 0 for the captured graph, `k + 1` for
    /// [`NodeBook::bodies`]`[k]`.
    pub(crate) part: usize,
}

/// A body graph of a captured device block.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CapturedBody {
    /// The body graph.
    pub(crate) graph: BodyGraph,
    /// The block's index in [`NodeBook::ops`].
    pub(crate) block: usize,
    /// 0 for a `while` body or `then`, 1 for `else`.
    pub(crate) branch: usize,
    /// The built-in kernel at the end of a `while` body, which follows all of the body's
    /// work, or the empty built-in kernel of a body that captured nothing.
    pub(crate) sink: Option<NodeHandle>,
}

/// A node the runtime added that is no statement's and is part of a block's operation: the
/// built-in kernel before its conditional node, or the second `IF` node of an `if`/`else`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InternalNode {
    pub(crate) part: usize,
    pub(crate) node: NodeHandle,
    /// The operation (a block) it belongs to.
    pub(crate) op: usize,
}

/// The captured shape of a launch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchShape {
    pub(crate) func: crate::ffi::FunctionHandle,
    pub(crate) config: crate::operand::LaunchConfig,
    pub(crate) args: usize,
}

/// What a capture learns while the pipeline is issued: the node of every operation, and
/// what the graph must keep (memory, modules, host functions) for its replays.
#[derive(Debug)]
pub(crate) struct NodeBook {
    pub(crate) ops: Vec<CapturedOp>,
    occurrences: Vec<u32>,
    pub(crate) keep: Keep,
    pub(crate) memory: std::collections::BTreeSet<DeviceRange>,
    pub(crate) last: Option<&'static Statement>,
    /// The body graphs of device blocks, in the order captured.
    pub(crate) bodies: Vec<CapturedBody>,
    /// The built-in kernels before conditional nodes.
    pub(crate) internal: Vec<InternalNode>,
    /// The graph being captured into now (see [`CapturedOp::part`]), and the enclosing ones.
    parts: Vec<usize>,
    /// The capture's mode, which body captures use too.
    pub(crate) mode: CaptureModeRaw,
}

impl NodeBook {
    pub(crate) fn new(program: &'static Program, mode: CaptureModeRaw) -> NodeBook {
        NodeBook {
            ops: Vec::new(),
            occurrences: vec![0; program.statements.len()],
            keep: Keep::default(),
            memory: std::collections::BTreeSet::new(),
            last: None,
            bodies: Vec::new(),
            internal: Vec::new(),
            parts: vec![0],
            mode,
        }
    }

    /// How many nodes the operations (and the built-in kernels) made in the captured graph
    /// itself (bodies not counted).
    pub(crate) fn nodes(&self) -> usize {
        self.ops
            .iter()
            .filter(|op| op.node.is_some() && op.part == 0)
            .count()
            + self.internal.iter().filter(|n| n.part == 0).count()
    }

    /// The graph being captured into now.
    fn part(&self) -> usize {
        self.parts.last().copied().unwrap_or(0)
    }

    /// The body graph being captured into now, if any.
    pub(crate) fn current_body(&self) -> Option<BodyGraph> {
        self.part()
            .checked_sub(1)
            .and_then(|k| self.bodies.get(k))
            .map(|b| b.graph)
    }

    fn occurrence(&mut self, stmt: &'static Statement) -> Result<u32> {
        match self.occurrences.get_mut(stmt.id) {
            Some(count) => {
                *count += 1;
                Ok(*count)
            }
            None => Err(Error::InvalidArgument(format!(
                "statement id {} is not part of the pipeline being captured",
                stmt.id
            ))),
        }
    }

    /// Books a device block just added on its stream: its conditional node (the operation)
    /// and the built-in kernel before it; the graph keeps the flag and the kernels' module.
    /// Returns the block's operation index.
    pub(crate) fn note_block(
        &mut self,
        stmt: &'static Statement,
        added: &Conditional,
        flag: &DeviceFlag,
        module: &crate::ffi::CodeOwner,
    ) -> Result<usize> {
        self.last = Some(stmt);
        let occurrence = self.occurrence(stmt)?;
        let whole = flag.whole();
        if let Memory::Device(r) = whole.memory() {
            self.remember(r);
        }
        // The built-in kernels write the flag's counter word.
        self.keep.hold(whole.holder(), true);
        self.keep.hold_module(module);
        let part = self.part();
        let index = self.ops.len();
        self.ops.push(CapturedOp {
            statement: stmt,
            occurrence,
            stream: stmt.stream,
            node: Some(added.node),
            launch: None,
            part,
        });
        self.internal.push(InternalNode {
            part,
            node: added.begin,
            op: index,
        });
        if let Some(second) = added.second {
            self.internal.push(InternalNode {
                part,
                node: second,
                op: index,
            });
        }
        Ok(index)
    }

    /// Body `branch` of block `block` is captured into `graph` from now on; returns the
    /// body's index in [`NodeBook::bodies`].
    pub(crate) fn enter_body(&mut self, graph: BodyGraph, block: usize, branch: usize) -> usize {
        self.bodies.push(CapturedBody {
            graph,
            block,
            branch,
            sink: None,
        });
        self.parts.push(self.bodies.len());
        self.bodies.len() - 1
    }

    /// Whether body `index` captured no node so far.
    pub(crate) fn is_empty(&self, index: usize) -> bool {
        let part = index + 1;
        !self
            .ops
            .iter()
            .any(|op| op.part == part && op.node.is_some())
            && !self.internal.iter().any(|n| n.part == part)
    }

    /// The built-in kernel at the end of the body being captured.
    pub(crate) fn note_sink(&mut self, node: NodeHandle) {
        if let Some(body) = self
            .part()
            .checked_sub(1)
            .and_then(|k| self.bodies.get_mut(k))
        {
            body.sink = Some(node);
        }
    }

    /// The body being captured is complete.
    pub(crate) fn leave_body(&mut self) {
        if self.parts.len() > 1 {
            self.parts.pop();
        }
    }

    /// Books the operation `stmt` just issued on `stream`.
    pub(crate) fn note(
        &mut self,
        stmt: &'static Statement,
        stream: &Stream,
        issued: Issued<'_, '_>,
    ) -> Result<()> {
        self.last = Some(stmt);
        let occurrence = self.occurrence(stmt)?;
        let mut launch = None;
        let mut empty = false;
        match issued {
            Issued::Launch(kernel, config, a) => {
                launch = Some(LaunchShape {
                    func: kernel.handle(),
                    config,
                    args: a.len(),
                });
                if let Some(module) = kernel.cuda_module() {
                    self.keep.hold_module(module);
                }
                for arg in a {
                    if let Some(access) = arg.access() {
                        self.remember(access.range);
                        self.keep
                            .hold(arg.holder(), access.mode == AccessMode::Write);
                    }
                }
            }
            Issued::Copy(dst, src) => {
                empty = dst.memory().bytes() == 0;
                for (side, write) in [(dst, true), (src, false)] {
                    if let Memory::Device(r) = side.memory() {
                        self.remember(r);
                    }
                    self.keep.hold(side.holder(), write);
                }
            }
            Issued::Fill(dst) => {
                empty = dst.memory().bytes() == 0;
                if let Memory::Device(r) = dst.memory() {
                    self.remember(r);
                }
                self.keep.hold(dst.holder(), true);
            }
            Issued::Host => {}
        }
        let node = if empty {
            None
        } else {
            let tip = gffi::capture_tip(stream.as_cudarc())
                .map_err(|e| Error::driver("cuStreamGetCaptureInfo", e))?;
            match tip.status {
                CaptureStatus::Active => {}
                CaptureStatus::Invalidated => {
                    return Err(Error::capture(CaptureFault::Invalidated))
                }
                CaptureStatus::None => return Err(Error::capture(CaptureFault::Unjoined)),
            }
            match tip.single {
                Some(node) => Some(node),
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "after the operation the capturing stream depends on {} nodes instead of the one it created; the stream was used by other code during the capture",
                        tip.count
                    )))
                }
            }
        };
        self.ops.push(CapturedOp {
            statement: stmt,
            occurrence,
            stream: stmt.stream,
            node,
            launch,
            part: self.part(),
        });
        Ok(())
    }

    /// Launches a host function the graph keeps alive.
    pub(crate) fn launch_host_fn(&mut self, stream: &Stream, f: HostFn) -> Result<()> {
        gffi::launch_kept_host_fn(stream.as_cudarc(), f, &mut self.keep)
    }

    fn remember(&mut self, range: DeviceRange) {
        if range.bytes > 0 {
            self.memory.insert(range);
        }
    }
}
