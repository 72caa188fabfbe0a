//! streamgraph's runtime: streams, events and kernels on the CUDA driver; the happens-before
//! plan of a pipeline; eager and capture executors; CUDA graphs and their replay.
//!
//! Most users depend on the facade crate `streamgraph`, which re-exports this crate and the
//! `pipeline!` macro.
#![warn(missing_docs)]
// docs.rs marks feature-gated items with the feature they need.
#![cfg_attr(docsrs, feature(doc_cfg))]

// Private modules, one floor each (README "Layout"; tests/floors.rs checks them); every public item has one path: the root.
mod access;
mod call;
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
pub mod ops;
mod plan;
mod program;
mod stream;
mod trace;

pub use call::{
    BodyOp, BoundCall, CallAccess, CallOperand, CallOperands, CallStream, In, Out, StreamOp,
};
pub use comm::Communicator;
#[cfg(feature = "nccl")]
#[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
pub use comm::UniqueId;
/// The cudarc version streamgraph is built on, for interop with its types.
pub use cudarc;
pub use device::{Device, GraphMemory};
pub use error::{CaptureFault, Error, Mismatch, OpEdge, OpInfo, Result, UpdateRejection};
pub use event::Event;
pub use exec::eager::Eager;
pub use exec::frame::EagerStats;
pub use ffi::memory::{MemoryMut, MemoryRef};
pub use ffi::{KernelArg, SIGNAL_HEADER};
pub use graph::{
    capture, Bucket, Buckets, Capture, CaptureMode, CaptureOutcome, Graph, GraphExec,
    GraphExecHandle, GraphHandle, GraphSet, GraphStats, KeyStats, Prepare, Prepared, VerifyReport,
};
/// The `half` version of the `f16`/`bf16` elements of [`ops`].
#[cfg(feature = "cublas")]
#[cfg_attr(docsrs, doc(cfg(feature = "cublas")))]
pub use half;
pub use issue::{
    param_bit, Body, CollectivePart, Issuer, KeyWriter, LaunchDims, LaunchKernel, ParamKey,
    ParamKeys, Pipeline, StreamOptions, ValueParameter, MAX_KEYED_ELEMENTS,
};
pub use memory::{
    CopySource, CopyTarget, CudarcView, CudarcViewMut, DeviceBuffer, DeviceFlag, DeviceMemory,
    DeviceMemoryMut, DeviceRepr, DeviceView, DeviceViewMut, FillValue, KernelValue, PinnedBuffer,
    PinnedMut, PinnedRef, PinnedView, PinnedViewMut, Pod, Scope, Temp, TempMemory, TempView,
    Zeroable,
};
pub use module::{Kernel, Module};
pub use operand::{
    BufferAccess, CollectiveElem, DeviceRange, Dim3, ElementType, FillPattern, HostFn,
    LaunchConfig, Memory, ReduceOp,
};
pub use plan::{
    Plan, PlanBody, PlanOp, PlanTemp, Planner, ProgramBuilder, Race, RaceSide, Reach, TempLayout,
    Via,
};
pub use program::{
    AccessMode, Collective, EventDecl, Location, OpRef, Program, Statement, StatementKind,
    StaticAccess, StreamDecl, SwitchArm, TempDecl,
};
pub use stream::{clamp_priority, current_stream, Stream, StreamGuard};

// Support for tests of programs that use streamgraph (documented in the module).
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

/// Items used by code that `pipeline!` generates (and by hand-written issuers in tests). Not
/// part of the public API. Listed one by one: generated code names every runtime item it uses
/// through this module, as `::streamgraph::__private::NAME`.
#[doc(hidden)]
pub mod __private {
    pub use crate::error::Error;
    pub use crate::issue::__private::{
        call, call_in, call_in_body, call_out, collective, collective_part,
        collective_part_in_place, copy, copy_with, event_element, fill, fill_value_of, fill_with,
        host, if_else, kernel_with, limit, switch, temp_alloc, temp_free, temporaries, while_loop,
    };
    pub use crate::issue::{
        Body, Issuer, KeyedParam, LaunchDims, LaunchKernel, ParamKeys, ParamProbe, Pipeline,
        StreamOptions, UnkeyedParam, ValueParameter,
    };
    // `GraphCopySource`, `NotPageable` and `PageableHost` are named by no generated code, but by
    // the compiler's message on pageable host memory, which this path keeps short.
    pub use crate::memory::__private::{
        arg_place, arg_read, arg_value, arg_write, device_memory, graph_copy_source,
        graph_copyable, place, value_with, GraphCopySource, NotPageable, OtherProbe, PageableHost,
        PageableProbe, Place, SourceProbe,
    };
    pub use crate::memory::{
        CopySource, DeviceFlag, DeviceMemory, FillValue, KernelValue, Scope, Temp,
    };
    pub use crate::operand::{Dim3, LaunchConfig, ReduceOp};
    pub use crate::program::{
        AccessMode, Collective, EventDecl, Location, Program, Statement, StatementKind,
        StaticAccess, StreamDecl, SwitchArm, TempDecl,
    };
}
