//! streamgraph's runtime: streams, events and kernels on the CUDA driver; the happens-before
//! plan of a pipeline; eager and capture executors; CUDA graphs and their replay.
//!
//! Most users depend on the facade crate `streamgraph`, which re-exports this crate and the
//! `pipeline!` macro.
#![warn(missing_docs)]

pub mod device;
pub mod error;
pub mod event;
pub mod exec;
mod ffi;
pub mod graph;
pub mod issue;
pub mod memory;
pub mod module;
mod operand;
pub mod plan;
pub mod program;
pub mod stream;

/// The cudarc version streamgraph is built on, for interop with its types.
pub use cudarc;
pub use device::Device;
pub use error::{CaptureFault, Error, OpEdge, OpInfo, Result, UpdateRejection};
pub use event::Event;
pub use exec::capture::{Capture, CaptureMode};
pub use exec::eager::{Eager, EagerStats};
pub use ffi::memory::MemoryRef;
pub use ffi::KernelArg;
pub use graph::{capture, CaptureOutcome, Graph, GraphExec, GraphStats, OpRef, VerifyReport};
pub use issue::{Issuer, Pipeline, StreamOptions};
pub use memory::{
    CopySource, CopyTarget, DeviceBuffer, DeviceMemory, DeviceMemoryMut, DeviceRepr, DeviceView,
    DeviceViewMut, FillValue, PinnedBuffer, PinnedMut, PinnedRef, Pod, Zeroable,
};
pub use module::{Kernel, Module};
pub use operand::{BufferAccess, DeviceRange, Dim3, FillPattern, HostFn, LaunchConfig, Memory};
pub use plan::Plan;
pub use program::{
    AccessMode, EventDecl, Location, Program, Statement, StatementKind, StaticAccess, StreamDecl,
};
pub use stream::{clamp_priority, current_stream, Stream, StreamGuard};

/// Items used by code that `pipeline!` generates. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::issue::__private::*;
    pub use crate::issue::*;
    pub use crate::memory::__private::*;
    pub use crate::operand::*;
    pub use crate::program::*;
    pub use crate::Error;
}
