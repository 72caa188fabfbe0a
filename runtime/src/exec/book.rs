//! The node book of a capture: which graph node each operation made, and what the graph must
//! keep for its replays. [`crate::Eager`] fills it while a capture issues through it.

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
    /// Its node; `None` for an empty copy or fill, which issues nothing.
    pub(crate) node: Option<NodeHandle>,
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
    pub(crate) memory: std::collections::BTreeSet<DeviceRange>,
    pub(crate) last: Option<&'static Statement>,
}

impl NodeBook {
    pub(crate) fn new(program: &'static Program) -> NodeBook {
        NodeBook {
            ops: Vec::new(),
            occurrences: vec![0; program.statements.len()],
            keep: Keep::default(),
            memory: std::collections::BTreeSet::new(),
            last: None,
        }
    }

    /// How many operations made a graph node.
    pub(crate) fn nodes(&self) -> usize {
        self.ops.iter().filter(|op| op.node.is_some()).count()
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
