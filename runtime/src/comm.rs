//! [`Communicator`]: the group of ranks a collective statement runs across.

/// A communicator: the ranks, one per GPU, that a collective statement (`all_reduce`,
/// `all_gather`, `reduce_scatter`, `broadcast` in `pipeline!`) runs across.
///
/// The ranks this process drives are its **local ranks**; the `k`-th participant of a
/// collective statement uses local rank `k`, so a statement lists exactly as many
/// participants as the communicator has local ranks (one process driving every GPU of a
/// machine lists every GPU's stream; one process per GPU lists one).
///
/// [`Communicator::for_planning`] makes one for planning without a GPU.
#[derive(Debug)]
pub struct Communicator {
    local_ranks: usize,
    ranks: usize,
}

impl Communicator {
    /// A communicator for planning only ([`crate::Plan::build`]): `local_ranks` ranks, all in
    /// this process. Running a pipeline with it eagerly or in a capture fails with a typed
    /// error.
    pub fn for_planning(local_ranks: usize) -> Communicator {
        Communicator {
            local_ranks,
            ranks: local_ranks,
        }
    }

    /// The number of ranks this process drives (the participants a statement lists).
    pub fn local_ranks(&self) -> usize {
        self.local_ranks
    }

    /// The number of ranks of the whole communicator, over every process.
    pub fn ranks(&self) -> usize {
        self.ranks
    }
}
