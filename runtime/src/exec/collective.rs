//! Collectives in a run: the NCCL group of a collective statement, prepared on the frame's
//! streams (each participant ordered after the fork) and issued while its communicator's lock
//! is held. A capture issues the same group on its capturing streams (`graph/collective.rs`).

#[cfg(feature = "nccl")]
use crate::comm::Communicator;
use crate::error::Error;
#[cfg(feature = "nccl")]
use crate::error::Result;
#[cfg(feature = "nccl")]
use crate::exec::frame::Frame;
#[cfg(feature = "nccl")]
use crate::issue::CollectivePart;
#[cfg(feature = "nccl")]
use crate::operand::ReduceOp;
#[cfg(feature = "nccl")]
use crate::program::{Collective, Statement, StatementKind};

/// The refusal of a collective in a build without NCCL.
#[cfg(not(feature = "nccl"))]
pub(crate) fn without_nccl() -> Error {
    Error::InvalidArgument(
        "collectives run through NCCL: turn on streamgraph's `nccl` feature".into(),
    )
}

/// A collective's NCCL group, ready to issue: every participant's call on its stream.
#[cfg(feature = "nccl")]
pub(crate) struct NcclGroup<'g> {
    pub(crate) call: crate::ffi::nccl::Call,
    /// The communicator's ranks, whose lock is held while the group is issued.
    pub(crate) ranks: &'g std::sync::Arc<crate::comm::Ranks>,
    /// Per participant: its rank, stream, send and receive memory, element type.
    pub(crate) entries: Vec<crate::ffi::nccl::GroupRank<'g, 'g>>,
}

/// Prepares the NCCL group of a collective whose participants `parts` are on the declared
/// streams `streams` (each ordered after the frame's fork) and hands it to `issue` while
/// the communicator's lock is held.
#[cfg(feature = "nccl")]
pub(crate) fn nccl_group<T>(
    frame: &mut Frame,
    stmt: &'static Statement,
    comm: &Communicator,
    op: ReduceOp,
    parts: &[CollectivePart<'_>],
    streams: &[usize],
    issue: impl FnOnce(&NcclGroup<'_>) -> Result<T>,
) -> Result<T> {
    use crate::ffi::nccl::Call;
    let Some(ranks) = comm.nccl_ranks() else {
        return Err(Error::InvalidArgument(
            "this communicator was made with `Communicator::for_planning` and cannot run collectives; make one with `Communicator::init_all` or `Communicator::from_unique_id`".into(),
        ));
    };
    let StatementKind::Collective { op: kind, .. } = stmt.kind else {
        return Err(Error::InvalidArgument("not a collective".into()));
    };
    let call = match kind {
        Collective::AllReduce => Call::AllReduce(op),
        Collective::AllGather => Call::AllGather,
        Collective::ReduceScatter => Call::ReduceScatter(op),
        Collective::Broadcast { root } => {
            if comm.local_ranks() != comm.ranks() {
                return Err(Error::InvalidArgument(
                    "`broadcast` names its root by participant, which needs every rank in this process; over several processes, use `all_reduce` or `all_gather`".into(),
                ));
            }
            let root = comm.rank_of(root).and_then(|r| i32::try_from(r).ok());
            Call::Broadcast {
                root: root.ok_or_else(|| {
                    Error::InvalidArgument("the root is not a participant".into())
                })?,
            }
        }
    };
    for (k, &s) in streams.iter().enumerate() {
        frame.enter(s)?;
        let device = frame.stream(s)?.device().ordinal();
        let expected = ranks.devices.get(k).copied();
        if expected != Some(device) {
            return Err(Error::InvalidArgument(format!(
                "participant {k}'s stream is on device {device}, but the communicator's local rank {k} is on device {}; list the streams in the order of the communicator's devices",
                expected.map_or_else(|| "?".to_owned(), |d| d.to_string())
            )));
        }
    }
    let mut entries = Vec::with_capacity(parts.len());
    for (k, part) in parts.iter().enumerate() {
        let stream = frame.stream(streams[k])?;
        entries.push((
            &ranks.comms[k],
            &**stream.as_cudarc(),
            part.send,
            part.recv.memory_ref(),
            part.elem,
        ));
    }
    let _serialised = ranks
        .lock
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    issue(&NcclGroup {
        call,
        ranks,
        entries,
    })
}
