//! NCCL, through cudarc's `nccl` module, loaded at run time: communicators and the
//! collectives of `pipeline!` (README "Collectives across GPUs").
//!
//! Every NCCL call goes through here. NCCL is loaded on first use; [`present`] asks first,
//! since cudarc panics when the library is missing, so that no NCCL is an error, not a panic.
//! The environment (`NCCL_NVLS_ENABLE`, `NCCL_DEBUG`, …) is NCCL's own: nothing here sets or
//! overrides it.

use std::ffi::c_void;
use std::sync::OnceLock;

use cudarc::driver::CudaContext;
use cudarc::nccl::sys;

use crate::error::Error;
use crate::ffi::memory::MemoryRef;
use crate::operand::{ElementType, Memory, ReduceOp};

/// The bytes of an `ncclUniqueId`.
pub(crate) const UNIQUE_ID_BYTES: usize = 128;

/// Whether the NCCL library can be loaded; asked once.
pub(crate) fn present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: `is_culib_present` only tries to `dlopen` the candidate library names and drops
    // what it opened; it calls no NCCL function.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// Fails with [`Error::NoNccl`] unless NCCL can be loaded.
pub(crate) fn require() -> Result<(), Error> {
    if present() {
        Ok(())
    } else {
        Err(Error::NoNccl {
            searched: crate::ffi::searched_names("nccl"),
        })
    }
}

fn check(call: &'static str, result: sys::ncclResult_t) -> Result<(), Error> {
    match result {
        sys::ncclResult_t::ncclSuccess => Ok(()),
        other => Err(Error::Nccl {
            call,
            code: format!("{other:?}"),
        }),
    }
}

/// A communicator handle of one rank; destroyed on drop.
#[derive(Debug)]
pub(crate) struct RawComm(sys::ncclComm_t);

// SAFETY: an NCCL communicator is not tied to the thread that made it. Calls on it are
// serialised by its owner: `Communicator` issues on its ranks only while holding its lock
// (`Ranks::lock`), and destroys them once, on drop.
unsafe impl Send for RawComm {}
// SAFETY: shared references only reach NCCL through `group`, which the owner calls under
// its lock (see above).
unsafe impl Sync for RawComm {}

impl Drop for RawComm {
    fn drop(&mut self) {
        if present() {
            // SAFETY: the handle came from a successful init and is destroyed once, here;
            // graphs that replay collectives on it keep its owner alive (see `Communicator`).
            let _ = unsafe { sys::ncclCommDestroy(self.0) };
        }
    }
}

/// `ncclGetUniqueId`: the id every rank of a new communicator is created from.
pub(crate) fn unique_id() -> Result<[u8; UNIQUE_ID_BYTES], Error> {
    require()?;
    let mut id = sys::ncclUniqueId {
        internal: [0; UNIQUE_ID_BYTES],
    };
    // SAFETY: `id` is a valid, writable `ncclUniqueId`.
    check("ncclGetUniqueId", unsafe { sys::ncclGetUniqueId(&mut id) })?;
    Ok(id.internal.map(|c| c as u8))
}

/// `ncclCommInitAll`: one communicator rank per device of `devices`, in this process.
pub(crate) fn init_all(devices: &[i32]) -> Result<Vec<RawComm>, Error> {
    require()?;
    let n = i32::try_from(devices.len())
        .map_err(|_| Error::InvalidArgument("too many devices for one communicator".into()))?;
    let mut comms: Vec<sys::ncclComm_t> = vec![std::ptr::null_mut(); devices.len()];
    // SAFETY: `comms` has room for `n` handles and `devices` holds `n` ordinals.
    check("ncclCommInitAll", unsafe {
        sys::ncclCommInitAll(comms.as_mut_ptr(), n, devices.as_ptr())
    })?;
    Ok(comms.into_iter().map(RawComm).collect())
}

/// `ncclCommInitRank` on the device of `ctx` (made current first, as NCCL asks).
pub(crate) fn init_rank(
    ctx: &CudaContext,
    id: &[u8; UNIQUE_ID_BYTES],
    rank: i32,
    ranks: i32,
) -> Result<RawComm, Error> {
    require()?;
    crate::ffi::ensure_current(ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    let id = sys::ncclUniqueId {
        internal: id.map(|b| b as _),
    };
    let mut comm: sys::ncclComm_t = std::ptr::null_mut();
    // SAFETY: `comm` is a writable handle; `id` is passed by value.
    check("ncclCommInitRank", unsafe {
        sys::ncclCommInitRank(&mut comm, ranks, id, rank)
    })?;
    Ok(RawComm(comm))
}

/// The NCCL data type of `elem`.
fn data_type(elem: ElementType) -> sys::ncclDataType_t {
    use sys::ncclDataType_t as T;
    match elem {
        ElementType::I8 => T::ncclInt8,
        ElementType::U8 => T::ncclUint8,
        ElementType::I32 => T::ncclInt32,
        ElementType::U32 => T::ncclUint32,
        ElementType::I64 => T::ncclInt64,
        ElementType::U64 => T::ncclUint64,
        ElementType::F32 => T::ncclFloat32,
        ElementType::F64 => T::ncclFloat64,
    }
}

fn red_op(op: ReduceOp) -> sys::ncclRedOp_t {
    use sys::ncclRedOp_t as R;
    match op {
        ReduceOp::Sum => R::ncclSum,
        ReduceOp::Prod => R::ncclProd,
        ReduceOp::Min => R::ncclMin,
        ReduceOp::Max => R::ncclMax,
        ReduceOp::Avg => R::ncclAvg,
    }
}

/// One rank of a group: its communicator rank, stream, send and receive memory, elements.
pub(crate) type GroupRank<'x, 'a> = (
    &'x RawComm,
    &'x cudarc::driver::CudaStream,
    MemoryRef<'a>,
    MemoryRef<'a>,
    ElementType,
);

/// One rank's call of a collective.
pub(crate) enum Call {
    AllReduce(ReduceOp),
    AllGather,
    ReduceScatter(ReduceOp),
    Broadcast { root: i32 },
}

/// Issues `calls` as one NCCL group (`ncclGroupStart`, one call per rank, `ncclGroupEnd`):
/// `(comm, stream, send, recv, elem)` per rank. Counts are the send length for `AllGather`,
/// the receive length for `ReduceScatter`, else the (equal) length.
///
/// Each `send`/`recv` names live device memory (the [`MemoryRef`] invariant; the runtime's
/// device memory waits for queued work before it is freed); memory held by cudarc's own
/// types is refused, since its event tracking cannot follow a group over several streams.
pub(crate) fn group(call: &Call, ranks: &[GroupRank<'_, '_>]) -> Result<(), Error> {
    require()?;
    // SAFETY: opens a group on this thread; closed below on every path.
    check("ncclGroupStart", unsafe { sys::ncclGroupStart() })?;
    let mut first_error = Ok(());
    for (comm, stream, send, recv, elem) in ranks {
        let cudarc_held = [send.holder(), recv.holder()]
            .iter()
            .any(|h| matches!(h, crate::ffi::memory::HolderKind::Cudarc(_)));
        if cudarc_held {
            first_error = Err(Error::InvalidArgument(
                "a collective's buffers are cudarc `CudaSlice`s: collectives take streamgraph's `DeviceBuffer`s (cudarc's per-buffer event tracking cannot follow one group over several streams)".into(),
            ));
            break;
        }
        let (Memory::Device(s), Memory::Device(r)) = (send.memory(), recv.memory()) else {
            first_error = Err(Error::InvalidArgument(
                "a collective's buffers must be device memory".into(),
            ));
            break;
        };
        let size = elem.size();
        let (sp, rp) = (s.ptr as *const c_void, r.ptr as *mut c_void);
        let dt = data_type(*elem);
        let st = stream.cu_stream() as sys::cudaStream_t;
        // SAFETY: `send` and `recv` name live device memory (the `MemoryRef` invariant), the
        // stream is a live cudarc stream; `comm` is a live communicator rank; counts are the buffers' lengths
        // in elements of `dt` (checked against the collective by the caller).
        let result = unsafe {
            match *call {
                Call::AllReduce(op) => (
                    "ncclAllReduce",
                    sys::ncclAllReduce(sp, rp, s.bytes / size, dt, red_op(op), comm.0, st),
                ),
                Call::AllGather => (
                    "ncclAllGather",
                    sys::ncclAllGather(sp, rp, s.bytes / size, dt, comm.0, st),
                ),
                Call::ReduceScatter(op) => (
                    "ncclReduceScatter",
                    sys::ncclReduceScatter(sp, rp, r.bytes / size, dt, red_op(op), comm.0, st),
                ),
                Call::Broadcast { root } => (
                    "ncclBroadcast",
                    sys::ncclBroadcast(sp, rp, s.bytes / size, dt, root, comm.0, st),
                ),
            }
        };
        if let Err(e) = check(result.0, result.1) {
            first_error = Err(e);
            break;
        }
    }
    // The group is always closed, also after an error inside it.
    // SAFETY: closes the group opened above.
    let ended = check("ncclGroupEnd", unsafe { sys::ncclGroupEnd() });
    first_error.and(ended)
}
