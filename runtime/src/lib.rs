//! streamgraph's runtime: streams, events and kernels on the CUDA driver; the happens-before
//! plan of a pipeline; eager and capture executors; CUDA graphs and their replay.
//!
//! Most users depend on the facade crate `streamgraph`, which re-exports this crate and the
//! `pipeline!` macro.
#![warn(missing_docs)]

// Private modules, one floor each (README "Layout"; tests/floors.rs checks them); every public item has one path: the root.
mod comm;
mod device;
mod error;
mod event;
mod exec;
mod ffi;
mod graph;
mod issue;
mod memory;
mod module;
mod operand;
mod plan;
mod program;
mod stream;
mod trace;

pub use comm::Communicator;
#[cfg(feature = "nccl")]
pub use comm::UniqueId;
/// The cudarc version streamgraph is built on, for interop with its types.
pub use cudarc;
pub use device::Device;
pub use error::{CaptureFault, Error, Mismatch, OpEdge, OpInfo, Result, UpdateRejection};
pub use event::Event;
pub use exec::eager::Eager;
pub use exec::frame::EagerStats;
pub use ffi::memory::{MemoryMut, MemoryRef};
pub use ffi::KernelArg;
pub use graph::{
    capture, Capture, CaptureMode, CaptureOutcome, Graph, GraphExec, GraphExecHandle, GraphHandle,
    GraphStats, VerifyReport,
};
pub use issue::{
    Body, CollectivePart, Issuer, LaunchKernel, Pipeline, StreamOptions, ValueParameter,
};
pub use memory::{
    CopySource, CopyTarget, DeviceBuffer, DeviceFlag, DeviceMemory, DeviceMemoryMut, DeviceRepr,
    DeviceView, DeviceViewMut, FillValue, KernelValue, PinnedBuffer, PinnedMut, PinnedRef,
    PinnedView, PinnedViewMut, Pod, Zeroable,
};
pub use module::{Kernel, Module};
pub use operand::{
    BufferAccess, CollectiveElem, DeviceRange, Dim3, ElementType, FillPattern, HostFn,
    LaunchConfig, Memory, ReduceOp,
};
pub use plan::{Plan, PlanBody, PlanOp, Planner, ProgramBuilder, Race, RaceSide, Reach, Via};
pub use program::{
    AccessMode, Collective, EventDecl, Location, OpRef, Program, Statement, StatementKind,
    StaticAccess, StreamDecl,
};
pub use stream::{clamp_priority, current_stream, Stream, StreamGuard};

// Support for tests of programs that use streamgraph (documented in the module).
#[cfg(feature = "testing")]
pub mod testing;

/// Items used by code that `pipeline!` generates. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::issue::__private::*;
    pub use crate::issue::*;
    pub use crate::memory::__private::*;
    pub use crate::operand::*;
    pub use crate::program::*;
    pub use crate::DeviceFlag;
    pub use crate::Error;
}
