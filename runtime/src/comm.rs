//! [`Communicator`]: the group of ranks a collective statement runs across.

#[cfg(feature = "nccl")]
use std::sync::Arc;

#[cfg(feature = "nccl")]
use crate::device::Device;
#[cfg(feature = "nccl")]
use crate::error::{Error, Result};
#[cfg(feature = "nccl")]
use crate::ffi::nccl::{self, RawComm, UNIQUE_ID_BYTES};

/// A communicator: the ranks, one per GPU, that a collective statement (`all_reduce`,
/// `all_gather`, `reduce_scatter`, `broadcast` in `pipeline!`) runs across.
///
/// The ranks this process drives are its **local ranks**; the `k`-th participant of a
/// collective statement uses local rank `k`, so a statement lists exactly as many
/// participants as the communicator has local ranks (one process driving every GPU of a
/// machine lists every GPU's stream; one process per GPU lists one).
///
/// - [`Communicator::for_planning`] makes one for planning without a GPU or NCCL.
/// - With the `nccl` feature, `Communicator::init_all` makes one rank per device in this
///   process (`ncclCommInitAll`), and `Communicator::from_unique_id` one rank of a
///   communicator spread over processes (`ncclCommInitRank`), from a `UniqueId` that one
///   process creates and the launcher hands to every other (README "Collectives across GPUs").
///
/// A captured graph that replays collectives keeps its communicator alive.
///
/// ```
/// use streamgraph::{pipeline, Communicator, DeviceBuffer, Plan};
///
/// pipeline! {
///     /// Each GPU fills its part; then both hold the sum of the two.
///     pipeline Sum(g0: &mut DeviceBuffer<f32>, g1: &mut DeviceBuffer<f32>, comm: &Communicator) {
///         stream s0(device = 0);
///         stream s1(device = 1);
///         s0: fill g0 = 1.0f32;
///         s1: fill g1 = 2.0f32;
///         all_reduce(comm, sum) { s0: &mut g0, s1: &mut g1 };
///     }
/// }
///
/// // Planned without a GPU; on two GPUs, `Communicator::init_all(&[d0, d1])` and `Eager::run`.
/// let comm = Communicator::for_planning(2); // two local ranks: two participants
/// let (mut g0, mut g1) = (DeviceBuffer::for_planning(256)?, DeviceBuffer::for_planning(256)?);
/// let plan = Plan::build(&Sum::new(&mut g0, &mut g1, &comm))?;
/// assert_eq!(plan.len(), 4); // two fills, and the all-reduce's operation on each stream
/// plan.check_races()?;
/// # Ok::<(), streamgraph::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Communicator {
    local_ranks: usize,
    ranks: usize,
    #[cfg(feature = "nccl")]
    inner: Option<Arc<Ranks>>,
}

/// The NCCL ranks of a communicator, in local rank order, with their devices.
#[cfg(feature = "nccl")]
#[derive(Debug)]
pub(crate) struct Ranks {
    pub(crate) comms: Vec<RawComm>,
    pub(crate) devices: Vec<i32>,
    /// The global rank of local rank 0 (the others follow it).
    pub(crate) first_rank: usize,
    /// Held while a collective is issued on the ranks: NCCL wants the calls on one
    /// communicator serialised.
    pub(crate) lock: std::sync::Mutex<()>,
}

impl Communicator {
    /// A communicator for planning only ([`crate::Plan::build`]): `local_ranks` ranks, all in
    /// this process. Running a pipeline with it eagerly or in a capture fails with a typed
    /// error.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::Communicator;
    /// let comm = Communicator::for_planning(2); // for `Plan::build`: no GPU or NCCL needed
    /// assert_eq!((comm.local_ranks(), comm.ranks()), (2, 2));
    /// ```
    pub fn for_planning(local_ranks: usize) -> Communicator {
        Communicator {
            local_ranks,
            ranks: local_ranks,
            #[cfg(feature = "nccl")]
            inner: None,
        }
    }

    /// The number of ranks this process drives (the participants a statement lists).
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::Communicator;
    /// assert_eq!(Communicator::for_planning(4).local_ranks(), 4); // statements list 4 streams
    /// ```
    pub fn local_ranks(&self) -> usize {
        self.local_ranks
    }

    /// The number of ranks of the whole communicator, over every process.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::Communicator;
    /// assert_eq!(Communicator::for_planning(2).ranks(), 2); // all of them in this process
    /// ```
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// One rank per device of `devices` (distinct devices), all driven by this process:
    /// `ncclCommInitAll`. Local rank `k` is `devices[k]`.
    ///
    /// Fails with [`Error::NoNccl`] when NCCL cannot be loaded.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Communicator, Device};
    /// let devices = [Device::new(Some(0))?, Device::new(Some(1))?];
    /// let comm = Communicator::init_all(&devices)?; // one rank per GPU, all in this process
    /// assert_eq!((comm.local_ranks(), comm.ranks()), (2, 2));
    /// assert_eq!(comm.rank_of(1), Some(1)); // local rank 1 is `devices[1]`
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    #[cfg(feature = "nccl")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
    pub fn init_all(devices: &[Device]) -> Result<Communicator> {
        let ordinals: Vec<i32> = devices.iter().map(Device::ordinal).collect();
        if ordinals.is_empty() {
            return Err(Error::InvalidArgument(
                "a communicator needs at least one device".into(),
            ));
        }
        for (k, d) in ordinals.iter().enumerate() {
            if ordinals[..k].contains(d) {
                return Err(Error::InvalidArgument(format!(
                    "device {d} is given twice; `Communicator::init_all` makes one rank per distinct device"
                )));
            }
        }
        let comms = nccl::init_all(&ordinals)?;
        Ok(Communicator {
            local_ranks: comms.len(),
            ranks: comms.len(),
            inner: Some(Arc::new(Ranks {
                comms,
                devices: ordinals,
                first_rank: 0,
                lock: std::sync::Mutex::new(()),
            })),
        })
    }

    /// Rank `rank` of a communicator of `ranks` ranks over several processes (or machines),
    /// on `device`: `ncclCommInitRank`. Every rank calls it with the same `id`, made once by
    /// [`UniqueId::new`] and handed out by the launcher ([`UniqueId::to_bytes`]); the call
    /// returns when every rank has joined.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{Communicator, Device, UniqueId};
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     // Set by the launcher: the rank count, this rank, and rank 0's `UniqueId::to_hex`.
    ///     let ranks: usize = std::env::var("WORLD_SIZE")?.parse()?;
    ///     let rank: usize = std::env::var("RANK")?.parse()?;
    ///     let id = UniqueId::from_hex(&std::env::var("NCCL_UNIQUE_ID")?)?;
    ///     let comm = Communicator::from_unique_id(&id, rank, ranks, &Device::new(Some(0))?)?;
    ///     assert_eq!((comm.local_ranks(), comm.rank_of(0)), (1, Some(rank)));
    ///     Ok(())
    /// }
    /// ```
    #[cfg(feature = "nccl")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
    pub fn from_unique_id(
        id: &UniqueId,
        rank: usize,
        ranks: usize,
        device: &Device,
    ) -> Result<Communicator> {
        if rank >= ranks {
            return Err(Error::InvalidArgument(format!(
                "rank {rank} is out of range for a communicator of {ranks} rank(s)"
            )));
        }
        let too_many =
            |_| Error::InvalidArgument(format!("{ranks} ranks are more than NCCL takes"));
        let comm = nccl::init_rank(
            device.ctx(),
            &id.0,
            i32::try_from(rank).map_err(too_many)?,
            i32::try_from(ranks).map_err(too_many)?,
        )?;
        Ok(Communicator {
            local_ranks: 1,
            ranks,
            inner: Some(Arc::new(Ranks {
                comms: vec![comm],
                devices: vec![device.ordinal()],
                first_rank: rank,
                lock: std::sync::Mutex::new(()),
            })),
        })
    }

    /// The global rank of local rank `local`; `None` unless `local` is below
    /// [`Communicator::local_ranks`].
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::Communicator;
    /// let comm = Communicator::for_planning(2);
    /// assert_eq!((comm.rank_of(1), comm.rank_of(2)), (Some(1), None));
    /// ```
    pub fn rank_of(&self, local: usize) -> Option<usize> {
        if local >= self.local_ranks {
            return None;
        }
        #[cfg(feature = "nccl")]
        if let Some(inner) = &self.inner {
            return Some(inner.first_rank + local);
        }
        Some(local)
    }

    /// The NCCL ranks, `None` for a communicator made for planning.
    #[cfg(feature = "nccl")]
    pub(crate) fn nccl_ranks(&self) -> Option<&Arc<Ranks>> {
        self.inner.as_ref()
    }
}

/// The id a communicator over several processes is created from (`ncclUniqueId`, 128
/// bytes): one process makes it with [`UniqueId::new`], the launcher hands its bytes
/// ([`UniqueId::to_bytes`]) to every process (over a file, an environment variable in hex, a
/// socket, MPI, …), and each rebuilds it with [`UniqueId::from_bytes`] and calls
/// [`Communicator::from_unique_id`].
#[cfg(feature = "nccl")]
#[derive(Clone, PartialEq, Eq)]
pub struct UniqueId([u8; UNIQUE_ID_BYTES]);

#[cfg(feature = "nccl")]
impl UniqueId {
    /// A new id (`ncclGetUniqueId`; it also starts NCCL's bootstrap listener in this
    /// process, which every rank contacts). Fails with [`Error::NoNccl`] without NCCL.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::UniqueId;
    /// match UniqueId::new() {
    ///     Ok(id) => println!("NCCL_UNIQUE_ID={}", id.to_hex()), // for the launcher to hand out
    ///     Err(e) => println!("{e}"), // `Error::NoNccl` where NCCL cannot be loaded
    /// }
    /// ```
    pub fn new() -> Result<UniqueId> {
        nccl::unique_id().map(UniqueId)
    }

    /// The id's bytes, to hand to the other processes.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::UniqueId;
    /// let id = UniqueId::from_bytes(&[7; 128])?; // in a real program, from `UniqueId::new`
    /// assert_eq!(id.to_bytes(), [7; 128]); // 128 bytes to hand to the other processes
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn to_bytes(&self) -> [u8; UNIQUE_ID_BYTES] {
        self.0
    }

    /// The id from the bytes [`UniqueId::to_bytes`] gave; fails unless there are exactly 128.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::UniqueId;
    /// let id = UniqueId::from_bytes(&[7; 128])?; // as `UniqueId::to_bytes` gave them
    /// assert_eq!(id.to_bytes(), [7; 128]);
    /// assert!(UniqueId::from_bytes(&[7; 16]).is_err()); // not 128 bytes
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<UniqueId> {
        let bytes: [u8; UNIQUE_ID_BYTES] = bytes.try_into().map_err(|_| {
            Error::InvalidArgument(format!(
                "a unique id is {UNIQUE_ID_BYTES} bytes, not {}",
                bytes.len()
            ))
        })?;
        Ok(UniqueId(bytes))
    }

    /// The bytes as lowercase hex (256 characters), e.g. for an environment variable.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::UniqueId;
    /// let id = UniqueId::from_bytes(&[0xab; 128])?;
    /// assert_eq!(id.to_hex(), "ab".repeat(128)); // e.g. for an environment variable
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The id from [`UniqueId::to_hex`]'s text.
    ///
    /// # Examples
    ///
    /// ```
    /// use streamgraph::UniqueId;
    /// let id = UniqueId::from_bytes(&[0xab; 128])?;
    /// assert_eq!(UniqueId::from_hex(&id.to_hex())?, id);
    /// assert!(UniqueId::from_hex("abc").is_err()); // not 256 hex digits
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn from_hex(text: &str) -> Result<UniqueId> {
        let bad = || {
            Error::InvalidArgument(format!(
                "a unique id in hex is {} hex digits",
                2 * UNIQUE_ID_BYTES
            ))
        };
        if text.len() != 2 * UNIQUE_ID_BYTES || !text.is_ascii() {
            return Err(bad());
        }
        let bytes: Result<Vec<u8>> = (0..UNIQUE_ID_BYTES)
            .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad()))
            .collect();
        UniqueId::from_bytes(&bytes?)
    }
}

#[cfg(feature = "nccl")]
impl std::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UniqueId({}…)", &self.to_hex()[..16])
    }
}

#[cfg(all(test, feature = "nccl"))]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod tests {
    use super::*;

    #[test]
    fn unique_ids_round_trip_through_bytes_and_hex() {
        let mut bytes = [0u8; UNIQUE_ID_BYTES];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i * 7) as u8;
        }
        let id = UniqueId::from_bytes(&bytes).unwrap();
        assert_eq!(id.to_bytes(), bytes);
        assert_eq!(UniqueId::from_hex(&id.to_hex()).unwrap(), id);
        assert!(UniqueId::from_bytes(&bytes[..10]).is_err());
        assert!(UniqueId::from_hex("zz").is_err());
    }

    #[test]
    fn without_nccl_a_communicator_is_a_typed_error() {
        if nccl::present() {
            return; // a machine with NCCL: the GPU tests cover it
        }
        match UniqueId::new() {
            Err(Error::NoNccl { searched }) => assert!(searched.contains("nccl"), "{searched}"),
            other => panic!("expected NoNccl, got {other:?}"),
        }
    }
}
