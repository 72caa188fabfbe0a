//! What a graph's temporaries take: the bytes its memory-allocation nodes allocate, and the
//! device's graph memory.

use super::exec::GraphExec;
use super::{recorded, GraphCore};
use crate::error::Result;

impl GraphCore {
    /// The bytes of the temporaries the graph allocates per launch (its memory-allocation
    /// nodes, or places in a graph set's memory), summed.
    pub(crate) fn temp_bytes(&self) -> usize {
        self.recorded
            .ops
            .iter()
            .filter(|op| {
                matches!(
                    op.statement.kind,
                    crate::program::StatementKind::Alloc { .. }
                )
            })
            .filter_map(|op| {
                let (start, len) = op.values;
                self.recorded
                    .values
                    .get(start as usize..(start as usize).saturating_add(len as usize))
                    .and_then(recorded::decode_range)
            })
            .map(|r| r.bytes)
            .sum()
    }
}

impl GraphCore {
    /// Whether the graph holds memory nodes: temporaries not placed in memory of its own or
    /// its graph set's.
    pub(crate) fn has_memory_nodes(&self) -> bool {
        self.recorded.memory_nodes
    }
}

impl<P> GraphExec<P> {
    /// The bytes of the pipeline's temporaries this graph allocates in each launch, as
    /// captured (its memory-allocation nodes, or places in its own memory), summed; what the
    /// graph holds at once is [`Plan::temp_peak_bytes`](crate::Plan::temp_peak_bytes) of its
    /// pipeline.
    pub fn temp_bytes(&self) -> usize {
        self.run.current().temp_bytes()
    }

    /// The bytes of device memory of its own the graph keeps its temporaries in
    /// ([`Capture::own_temp_memory`](crate::Capture::own_temp_memory)), in the driver's
    /// allocation granularity; 0 for a graph whose temporaries are memory nodes (their
    /// memory is in [`GraphExec::graph_memory`]).
    pub fn temp_memory(&self) -> usize {
        self.run.current().arena.as_ref().map_or(0, |a| a.mapped())
    }

    /// The graph memory of the device this graph runs on ([`Device::graph_memory`](crate::Device::graph_memory)): what all
    /// graphs with temporaries use and reserve there, now and at most. Graphs share that
    /// memory when they do not run at once, so it is a device's count, not this graph's.
    pub fn graph_memory(&self) -> Result<crate::device::GraphMemory> {
        self.run.base.origin.device().graph_memory()
    }
}
