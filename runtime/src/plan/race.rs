//! Data races on the model: unordered conflicting accesses to the same bytes.

use std::collections::BTreeMap;

use crate::error::{Race, RaceSide};
use crate::operand::{BufferAccess, DeviceRange};
use crate::program::AccessMode;

use super::Plan;

struct Item {
    range: DeviceRange,
    mode: AccessMode,
    op: usize,
}

impl Item {
    fn end(&self) -> u64 {
        self.range.ptr.saturating_add(self.range.bytes as u64)
    }
}

/// Sweeps the accesses in address order, so only accesses that overlap are compared.
pub(super) fn find(plan: &Plan) -> Vec<Race> {
    let ops = plan.ops();
    let mut items: Vec<Item> = ops
        .iter()
        .enumerate()
        .flat_map(|(op, o)| {
            o.accesses.iter().map(move |a| Item {
                range: a.range,
                mode: a.mode,
                op,
            })
        })
        .filter(|i| i.range.bytes > 0)
        .collect();
    items.sort_by_key(|i| (i.range.device, i.range.ptr, i.op));

    let mut found: BTreeMap<(usize, usize), (usize, usize)> = BTreeMap::new();
    let mut active: Vec<usize> = Vec::new();
    for (k, item) in items.iter().enumerate() {
        active.retain(|&j| {
            items[j].range.device == item.range.device && items[j].end() > item.range.ptr
        });
        for &j in &active {
            let other = &items[j];
            if other.op == item.op
                || (other.mode == AccessMode::Read && item.mode == AccessMode::Read)
                || ops[other.op].stream == ops[item.op].stream
                || plan.ordered(other.op, item.op)
            {
                continue;
            }
            let key = (other.op.min(item.op), other.op.max(item.op));
            let sides = if other.op < item.op { (j, k) } else { (k, j) };
            found.entry(key).or_insert(sides);
        }
        active.push(k);
    }

    let side = |i: usize| {
        let item = &items[i];
        let op = &ops[item.op];
        RaceSide {
            op: item.op,
            statement: op.statement,
            occurrence: op.occurrence,
            stream: op.stream,
            stream_name: plan
                .program()
                .streams
                .get(op.stream)
                .map_or("?", |s| s.name),
            access: BufferAccess {
                range: item.range,
                mode: item.mode,
            },
        }
    };
    found
        .into_values()
        .map(|(a, b)| Race {
            first: side(a),
            second: side(b),
        })
        .collect()
}
