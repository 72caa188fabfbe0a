//! The capture's recorder hooks: what a capture does after each statement that the issuing
//! path of [`crate::Eager`] issued on the capturing streams (`exec/record.rs`). Operations
//! are booked in the node book; host functions are kept by the graph; device blocks and
//! collectives and `call` statements are captured by `blocks.rs`, `collective.rs` and
//! `call.rs`.

use super::blocks::capture_block;
use super::book::Recording;
use super::call::capture_call;
use super::collective::capture_collective;
use crate::call::BoundCall;
use crate::comm::Communicator;
use crate::error::Result;
use crate::exec::record::{Issue, Issued, Recorder};
use crate::ffi::conditional::CondKind;
use crate::ffi::KernelArg;
use crate::issue::{Body, CollectivePart};
use crate::memory::DeviceFlag;
use crate::module::Kernel;
use crate::operand::{HostFn, LaunchConfig, ReduceOp};
use crate::program::Statement;
use crate::stream::Stream;
use crate::trace;

impl Recorder for Recording {
    const MODE: trace::Mode = trace::Mode::Capture;
    const CAPTURING: bool = true;

    #[inline]
    fn launched(
        &mut self,
        stmt: &'static Statement,
        stream: &Stream,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        self.book.note_launch(stmt, stream, kernel, config, args)
    }

    #[inline]
    fn issued(
        &mut self,
        stmt: &'static Statement,
        stream: &Stream,
        what: Issued<'_>,
    ) -> Result<()> {
        self.book.note(stmt, stream, what)
    }

    /// A graph runs its host functions on every replay: the graph keeps them.
    #[inline]
    fn host(&mut self, stream: &Stream, f: HostFn) -> Result<()> {
        self.book.launch_host_fn(stream, f)
    }

    /// In a capture into a graph set's memory, where the plan's layout puts the temporary.
    #[inline]
    fn place_temp(&mut self, stmt: &'static Statement, device: i32, bytes: usize) -> Option<u64> {
        self.placement.as_mut()?.place(stmt, device, bytes)
    }

    /// A fault after an ordering statement names it.
    #[inline]
    fn ordering(&mut self, stmt: &'static Statement) {
        self.book.note_ordering(stmt);
    }

    fn block(
        issue: &mut Issue<'_, Self>,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        kind: CondKind,
        limit: Option<u32>,
        bodies: &mut [&mut Body<'_>],
    ) -> Result<()> {
        capture_block(issue, stmt, flag, kind, limit, bodies)
    }

    fn call(
        &mut self,
        stmt: &'static Statement,
        stream: &Stream,
        call: &mut dyn BoundCall,
    ) -> Result<()> {
        capture_call(self, stmt, stream, call)
    }

    fn collective(
        issue: &mut Issue<'_, Self>,
        stmt: &'static Statement,
        comm: &Communicator,
        op: ReduceOp,
        parts: &[CollectivePart<'_>],
        streams: &[usize],
    ) -> Result<()> {
        capture_collective(issue, stmt, comm, op, parts, streams)
    }
}
