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

/// Where a capture into a graph set's memory puts the pipeline's temporaries: the arena's
/// base plus the offsets of the plan's layout ([`crate::Plan::temp_layout`]), the run's k-th
/// allocation at the plan's k-th temporary's offset.
#[derive(Debug)]
pub(crate) struct TempPlacement {
    device: i32,
    base: u64,
    /// Per temporary of the plan, in allocation order: which one, its bytes, its offset.
    slots: Vec<(usize, usize, usize)>,
    next: usize,
}

impl TempPlacement {
    pub(crate) fn new(
        device: i32,
        base: u64,
        temps: &[crate::plan::PlanTemp],
        layout: &crate::plan::TempLayout,
    ) -> TempPlacement {
        TempPlacement {
            device,
            base,
            slots: temps
                .iter()
                .zip(&layout.offsets)
                .map(|(t, &offset)| (t.temp, t.bytes, offset))
                .collect(),
            next: 0,
        }
    }

    /// The address of the temporary `stmt` allocates (`bytes` on device `device`); `None`
    /// for one on another device than the arena's, and from the first allocation that is not
    /// the plan's next on (the capture's check against the plan refuses that run anyway).
    pub(crate) fn place(
        &mut self,
        stmt: &'static crate::program::Statement,
        device: i32,
        bytes: usize,
    ) -> Option<u64> {
        let &(temp, planned, offset) = self.slots.get(self.next)?;
        if stmt.kind.temp() != Some(temp) || planned != bytes {
            self.next = usize::MAX;
            return None;
        }
        self.next += 1;
        (device == self.device).then(|| self.base + offset as u64)
    }
}
