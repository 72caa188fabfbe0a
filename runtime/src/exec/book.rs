//! The node book of a capture: which graph node each operation made, and what the graph must
//! keep for its replays. [`crate::Eager`] fills it while a capture issues through it.
//!
//! Nodes are mapped to operations once, when the capture has ended: the driver adds a
//! captured operation's node to the graph as the operation is issued, and `cuGraphGetNodes`
//! lists a graph's nodes in the order they were added, so the `i`-th node listed is the node
//! of the `i`-th operation that made one ([`NodeBook::map_nodes`]). That costs one driver call
//! per capture instead of one per operation. The exact route — asking the driver after each
//! operation which node it created (`cuStreamGetCaptureInfo_v3`: right after an operation the
//! stream's dependency set is exactly its node) — stays as a cross-check
//! ([`crate::Capture::cross_check_nodes`]): both maps are made and must be equal; the
//! random-program GPU suite captures every program that way.

use crate::error::{CaptureFault, Error, Result};
use crate::ffi::graph::{self as gffi, CaptureStatus, Keep, NodeHandle};
use crate::ffi::memory::MemoryRef;
use crate::ffi::KernelArg;
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
    /// Its node; `None` for an empty copy or fill, which issues nothing (and, until the
    /// capture has ended and [`NodeBook::map_nodes`] ran, for every operation).
    pub(crate) node: Option<NodeHandle>,
    /// Whether the operation made a graph node (not an empty copy or fill).
    pub(crate) makes_node: bool,
    /// For launches: the kernel, its configuration and number of arguments, from which
    /// `GraphExec::set_kernel_args` rebuilds the node's parameters without asking the driver.
    pub(crate) launch: Option<LaunchShape>,
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
    /// The device memory the operations touch, unsorted, each range once in a row (sorted and
    /// merged when the graph is made).
    pub(crate) memory: Vec<DeviceRange>,
    pub(crate) last: Option<&'static Statement>,
    /// How many operations made a graph node.
    nodes: usize,
    /// Cross-check mode: the node the driver reported after each operation that made one.
    exact: Option<Vec<NodeHandle>>,
}

impl NodeBook {
    /// An empty book for a capture of `program`; `ops` is a capacity hint (the operation
    /// count of the previous capture), `exact` asks for the per-operation cross-check.
    pub(crate) fn new(program: &'static Program, ops: usize, exact: bool) -> NodeBook {
        NodeBook {
            ops: Vec::with_capacity(ops),
            occurrences: vec![0; program.statements.len()],
            keep: Keep::default(),
            memory: Vec::new(),
            last: None,
            nodes: 0,
            exact: exact.then(|| Vec::with_capacity(ops)),
        }
    }

    /// Gives every operation that made a node its node: `listed` are the graph's nodes in the
    /// order `cuGraphGetNodes` lists them, which is the order they were created in. Refuses a
    /// graph whose node count is not the number of booked nodes (work issued into the capture
    /// by code outside the statements), and, in cross-check mode, a map that differs from the
    /// one the driver reported operation by operation.
    pub(crate) fn map_nodes(&mut self, listed: &[NodeHandle]) -> std::result::Result<(), String> {
        if listed.len() != self.nodes {
            return Err(format!(
                "holds {} graph node(s) but its statements issued {}: work was issued into the capture by code outside the pipeline's statements (e.g. a launch or a graph launch on the capturing stream inside `issue`); issue all work through the issuer",
                listed.len(),
                self.nodes
            ));
        }
        let mut next = listed.iter();
        for op in self.ops.iter_mut().filter(|op| op.makes_node) {
            op.node = next.next().copied();
        }
        if let Some(exact) = &self.exact {
            let cheap = self.ops.iter().filter_map(|op| op.node);
            if let Some((i, _)) = cheap
                .zip(exact)
                .enumerate()
                .find(|(_, (a, b))| a.key() != b.key())
            {
                return Err(format!(
                    "maps its nodes in creation order differently from the driver's report after each operation (first at node {i}); the creation-order map is wrong on this driver"
                ));
            }
        }
        Ok(())
    }

    /// Books the operation `stmt` just issued on `stream`.
    pub(crate) fn note(
        &mut self,
        stmt: &'static Statement,
        stream: &Stream,
        issued: Issued<'_, '_>,
    ) -> Result<()> {
        self.last = Some(stmt);
        let occurrence = match self.occurrences.get_mut(stmt.id) {
            Some(count) => {
                *count += 1;
                *count
            }
            None => {
                return Err(Error::InvalidArgument(format!(
                    "statement id {} is not part of the pipeline being captured",
                    stmt.id
                )))
            }
        };
        let mut launch = None;
        let mut empty = false;
        let memory = &mut self.memory;
        let mut remember = |range: DeviceRange| {
            if range.bytes > 0 && memory.last() != Some(&range) {
                memory.push(range);
            }
        };
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
                        remember(access.range);
                        self.keep
                            .hold(arg.holder(), access.mode == AccessMode::Write);
                    }
                }
            }
            Issued::Copy(dst, src) => {
                empty = dst.memory().bytes() == 0;
                for (side, write) in [(dst, true), (src, false)] {
                    if let Memory::Device(r) = side.memory() {
                        remember(r);
                    }
                    self.keep.hold(side.holder(), write);
                }
            }
            Issued::Fill(dst) => {
                empty = dst.memory().bytes() == 0;
                if let Memory::Device(r) = dst.memory() {
                    remember(r);
                }
                self.keep.hold(dst.holder(), true);
            }
            Issued::Host => {}
        }
        if !empty {
            self.nodes += 1;
            if let Some(exact) = self.exact.as_mut() {
                exact.push(tip_node(stream)?);
            }
        }
        self.ops.push(CapturedOp {
            statement: stmt,
            occurrence,
            stream: stmt.stream,
            node: None,
            makes_node: !empty,
            launch,
        });
        Ok(())
    }

    /// Launches a host function the graph keeps alive.
    pub(crate) fn launch_host_fn(&mut self, stream: &Stream, f: HostFn) -> Result<()> {
        gffi::launch_kept_host_fn(stream.as_cudarc(), f, &mut self.keep)
    }
}

/// The node the operation just issued on `stream` created, as the driver reports it: the
/// stream's dependency set right after the operation.
fn tip_node(stream: &Stream) -> Result<NodeHandle> {
    let tip = gffi::capture_tip(stream.as_cudarc())
        .map_err(|e| Error::driver("cuStreamGetCaptureInfo", e))?;
    match tip.status {
        CaptureStatus::Active => {}
        CaptureStatus::Invalidated => return Err(Error::capture(CaptureFault::Invalidated)),
        CaptureStatus::None => return Err(Error::capture(CaptureFault::Unjoined)),
    }
    tip.single.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "after the operation the capturing stream depends on {} nodes instead of the one it created; the stream was used by other code during the capture",
            tip.count
        ))
    })
}
