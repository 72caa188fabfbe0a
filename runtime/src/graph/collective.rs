//! Collectives in a capture: NCCL's group issued on the capturing streams adds NCCL's nodes to
//! the graph, and each participant's are found and booked as its operation (attributed to
//! the participant whose stream comes to depend on them; the graph keeps the communicator
//! alive). Eagerly, the same group is issued as it is (`exec/record.rs`).

use super::book::Recording;
use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::exec::record::Issue;
use crate::issue::CollectivePart;
use crate::operand::ReduceOp;
use crate::program::Statement;

/// Captures a collective whose participants `parts` are on the declared streams `streams`.
pub(super) fn capture_collective(
    issue: &mut Issue<'_, Recording>,
    stmt: &'static Statement,
    comm: &Communicator,
    op: ReduceOp,
    parts: &[CollectivePart<'_>],
    streams: &[usize],
) -> Result<()> {
    if issue.rec.book.current_body().is_some() {
        return Err(Error::InvalidArgument(
            "a collective inside a device block's body cannot be captured (CUDA does not allow NCCL's nodes in conditional bodies); issue it before or after the block".into(),
        ));
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (stmt, comm, op, parts, streams);
        Err(crate::exec::collective::without_nccl())
    }
    #[cfg(feature = "nccl")]
    {
        let book = &mut issue.rec.book;
        crate::exec::collective::nccl_group(issue.frame, stmt, comm, op, parts, streams, |group| {
            let capturing: Vec<&cudarc::driver::CudaStream> =
                group.entries.iter().map(|e| e.1).collect();
            let added = crate::ffi::collective::capture_group(&capturing, "NCCL", || {
                crate::ffi::nccl::group(&group.call, &group.entries)
            })?;
            let owner: std::sync::Arc<dyn std::any::Any + Send + Sync> = group.ranks.clone();
            book.note_collective(parts, added, owner)
        })
    }
}
