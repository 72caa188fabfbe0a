//! `call` statements in a capture: the op's work, issued on the capturing stream, adds nodes
//! to the graph; they are found as a collective participant's are (`ffi/collective.rs`), end
//! in one node (an empty join node where the op left several tips), and are booked as the
//! statement's one operation, whose operands and op the graph keeps. Nodes a graph of the
//! statement cannot hold are refused. Eagerly the op is issued as it is (`exec/record.rs`).

use super::book::Recording;
use crate::call::{BoundCall, CallStream};
use crate::error::{Error, Result};
use crate::exec::record::Issue;
use crate::ffi::collective::{added_kinds, capture_group, AddedKind};
use crate::program::Statement;
use crate::stream::Stream;

/// Captures `call` on `stream`, the capturing stream of `stmt`.
pub(super) fn capture_call(
    issue: &mut Issue<'_, Recording>,
    stmt: &'static Statement,
    stream: &Stream,
    call: &mut dyn BoundCall,
) -> Result<()> {
    let in_body = issue.rec.book.current_body().is_some();
    let what = format!("the op `{}`", call.name());
    let on = CallStream::new(stream, true);
    let mut added = capture_group(&[&**stream.as_cudarc()], &what, || call.issue(&on))?;
    let modules = on.into_modules();
    let Some(nodes) = added.pop() else {
        return Err(Error::Internal {
            invariant: "a capture of one stream's work reports that stream's nodes",
        });
    };
    let kinds = added_kinds(&nodes)?;
    let refused = |kind: AddedKind| {
        match kind {
        AddedKind::Plain => None,
        AddedKind::Memory => Some(
            "a memory allocation or free node (the op allocated during the capture); allocate what it needs when the op is made, e.g. a workspace it owns",
        ),
        AddedKind::Event => Some(
            "an event record or wait node; an op orders nothing but its own stream's work, the pipeline's `record`/`wait` statements order the rest",
        ),
        AddedKind::Host if in_body => Some(
            "a host function node, which CUDA does not allow in the body of a device `while`/`if`; issue the call before or after the block",
        ),
        AddedKind::Graph if in_body => Some(
            "a child graph node, which CUDA does not allow in the body of a device `while`/`if`; issue the call before or after the block",
        ),
        AddedKind::Other => Some("a node of a kind streamgraph does not capture for a `call`"),
        AddedKind::Host | AddedKind::Graph => None,
    }
    };
    if let Some(why) = kinds.iter().find_map(|&k| refused(k)) {
        return Err(Error::InvalidArgument(format!(
            "the op `{}` added {why}",
            call.name()
        )));
    }
    let owner = call.keep();
    let book = &mut issue.rec.book;
    for module in &modules {
        book.keep.hold_module(module);
    }
    book.note_call(stmt, call.accesses(), nodes, owner)
}
