//! Temporaries placed by the capture instead of memory nodes: in a graph set's memory or a
//! graph's own ([`TempArena`]), at the offsets of the plan's layout
//! ([`Plan::temp_layout`]).

use std::sync::Arc;

use crate::error::Result;
use crate::ffi::arena::{TempArena, TempLease};
use crate::plan::Plan;
use crate::stream::Stream;

/// The alignment of a placed temporary: that of `cuMemAlloc`.
const TEMP_ALIGN: usize = 256;

/// Where the temporaries of `plan` go in a capture on `origin`: in `arena` when there is one;
/// else, with `own`, in a new arena of the graph's own (left in `arena`); `None` (memory
/// nodes) without temporaries, without either, or on a device that cannot map memory so.
/// Maps what the layout needs first: call before the capture begins.
pub(crate) fn place_temps(
    plan: &Plan,
    arena: &mut Option<Arc<TempArena>>,
    own: bool,
    origin: &Stream,
) -> Result<Option<(Box<TempPlacement>, TempLease)>> {
    if plan.temporaries().is_empty() {
        return Ok(None);
    }
    if arena.is_none() && own {
        *arena = Some(TempArena::new(origin.as_cudarc().context()));
    }
    let Some(arena) = arena else {
        return Ok(None);
    };
    let layout = plan.temp_layout(TEMP_ALIGN);
    Ok(arena.lease(layout.extent)?.map(|lease| {
        let at = TempPlacement::new(arena.ordinal(), lease.base(), plan.temporaries(), &layout);
        (Box::new(at), lease)
    }))
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
