//! Data races on the model: unordered conflicting accesses to the same bytes.
//!
//! Accesses are grouped by their exact range (device, address, length): one group per buffer
//! or view. Groups are swept in address order, so only overlapping ones are compared. Within
//! a group, each stream's accesses form a run in issue order, and the vector clocks say which
//! of a run an access is unordered with: of the earlier ones, those after the last it follows
//! (its clock's entry for the stream); of the later ones, those before the first that follows
//! it (clocks grow along a stream). Each is one contiguous stretch of the run, found with a
//! look at its end or a binary search. So an access costs a few steps per stream touching its
//! memory, plus one per race found, instead of a comparison with every access of the buffer.
//!
//! Many distinct ranges overlapping one another (say, every operation touching a different
//! prefix of one buffer) still make many pairs of groups to compare.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::error::{Race, RaceSide};
use crate::operand::{BufferAccess, DeviceRange};
use crate::program::AccessMode;

use super::{Plan, Reach};

struct Item {
    range: DeviceRange,
    mode: AccessMode,
    op: usize,
    stream: usize,
}

impl Item {
    fn writes(&self) -> bool {
        self.mode == AccessMode::Write
    }
}

/// The place of item `i` in address order: which of several conflicting access pairs of two
/// operations a race names (the first pair in this order, by its later item).
fn address_order(items: &[Item], i: usize) -> (i32, u64, usize, usize) {
    let item = &items[i];
    (item.range.device, item.range.ptr, item.op, i)
}

/// One access in a stream's run: the operation, its position on the stream, the item.
#[derive(Clone, Copy)]
struct Entry {
    op: usize,
    position: u32,
    item: usize,
}

/// The accesses of one stream to one group: all of them, and the writes alone.
struct Run {
    stream: usize,
    all: Range<usize>,
    writes: Range<usize>,
}

/// The accesses to one exact range.
struct Group {
    range: DeviceRange,
    /// Its runs, in `Index::runs`.
    runs: Range<usize>,
    /// Its items in issue order, in `Index::in_order`.
    items: Range<usize>,
}

/// Every group, with its runs and entries in flat arrays.
struct Index {
    groups: Vec<Group>,
    runs: Vec<Run>,
    all: Vec<Entry>,
    writes: Vec<Entry>,
    in_order: Vec<usize>,
}

/// Races found: per pair of operations, the pair of items to name, `(later, earlier)` in
/// address order, the first such pair kept.
type Found = BTreeMap<(usize, usize), (usize, usize)>;

/// Finds every race of `plan`, sorted by the operations' indices.
pub(super) fn find(plan: &Plan) -> Vec<Race> {
    let ops = plan.ops();
    let items: Vec<Item> = ops
        .iter()
        .enumerate()
        .flat_map(|(op, o)| {
            o.accesses.iter().map(move |a| Item {
                range: a.range,
                mode: a.mode,
                op,
                stream: o.stream,
            })
        })
        .filter(|i| i.range.bytes > 0)
        .collect();

    let index = Index::new(&items, plan.reach());
    let mut found = Found::new();
    let mut check = Check {
        items: &items,
        reach: plan.reach(),
        index: &index,
        found: &mut found,
        cursors: Vec::new(),
    };
    let mut active: Vec<usize> = Vec::new();
    for (g, group) in index.groups.iter().enumerate() {
        active.retain(|&h| {
            let other = &index.groups[h].range;
            other.device == group.range.device && end(other) > group.range.ptr
        });
        for &h in &active {
            check.between(h, g);
        }
        check.within(g);
        active.push(g);
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
        .map(|(a, b)| {
            let (first, second) = if items[a].op < items[b].op {
                (a, b)
            } else {
                (b, a)
            };
            Race {
                first: side(first),
                second: side(second),
            }
        })
        .collect()
}

/// The address after the last byte of `range`.
fn end(range: &DeviceRange) -> u64 {
    range.ptr.saturating_add(range.bytes as u64)
}

impl Index {
    fn new(items: &[Item], reach: &Reach) -> Index {
        let mut keys: Vec<(i32, u64, usize, usize, usize)> = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let r = &item.range;
                (r.device, r.ptr, r.bytes, item.stream, i)
            })
            .collect();
        keys.sort_unstable();
        let by_group: Vec<usize> = keys.into_iter().map(|k| k.4).collect();
        let entry = |i: usize| Entry {
            op: items[i].op,
            position: reach.position(items[i].op),
            item: i,
        };
        let mut index = Index {
            groups: Vec::new(),
            runs: Vec::new(),
            all: Vec::with_capacity(items.len()),
            writes: Vec::new(),
            in_order: Vec::with_capacity(items.len()),
        };
        let mut group_of = vec![0; items.len()];
        for (k, &i) in by_group.iter().enumerate() {
            let item = &items[i];
            let previous = k.checked_sub(1).map(|k| &items[by_group[k]]);
            if previous.is_none_or(|p| p.range != item.range) {
                let runs = index.runs.len();
                index.groups.push(Group {
                    range: item.range,
                    runs: runs..runs,
                    items: 0..0,
                });
            }
            if previous.is_none_or(|p| p.range != item.range || p.stream != item.stream) {
                let (all, writes) = (index.all.len(), index.writes.len());
                index.runs.push(Run {
                    stream: item.stream,
                    all: all..all,
                    writes: writes..writes,
                });
            }
            index.all.push(entry(i));
            if item.writes() {
                index.writes.push(entry(i));
            }
            let (groups, runs) = (index.groups.len(), index.runs.len());
            if let (Some(group), Some(run)) = (index.groups.last_mut(), index.runs.last_mut()) {
                group.runs.end = runs;
                run.all.end = index.all.len();
                run.writes.end = index.writes.len();
            }
            group_of[i] = groups - 1;
        }
        // Each group's items in issue order (item order is issue order): a counting sort.
        let mut starts = vec![0; index.groups.len() + 1];
        for &g in &group_of {
            starts[g + 1] += 1;
        }
        for g in 0..index.groups.len() {
            starts[g + 1] += starts[g];
            index.groups[g].items = starts[g]..starts[g + 1];
        }
        index.in_order = vec![0; items.len()];
        for (i, &g) in group_of.iter().enumerate() {
            index.in_order[starts[g]] = i;
            starts[g] += 1;
        }
        index
    }

    /// The entries of `run` that conflict with an access writing or not.
    fn conflicting(&self, run: &Run, writes: bool) -> &[Entry] {
        if writes {
            &self.all[run.all.clone()]
        } else {
            &self.writes[run.writes.clone()]
        }
    }
}

struct Check<'a> {
    items: &'a [Item],
    reach: &'a Reach,
    index: &'a Index,
    found: &'a mut Found,
    /// Per run of the group being checked: how many entries (all, writes) come before the
    /// access at hand in issue order.
    cursors: Vec<(usize, usize)>,
}

impl Check<'_> {
    /// Races between accesses of group `g` itself: each access, in issue order, against the
    /// earlier ones of other streams that it does not follow.
    fn within(&mut self, g: usize) {
        let index = self.index;
        let group = &index.groups[g];
        let runs = &index.runs[group.runs.clone()];
        let mut cursors = std::mem::take(&mut self.cursors);
        cursors.clear();
        cursors.resize(runs.len(), (0, 0));
        for &y in &index.in_order[group.items.clone()] {
            let item = &self.items[y];
            for (run, cursor) in runs.iter().zip(cursors.iter_mut()) {
                let (all, writes) = (
                    &index.all[run.all.clone()],
                    &index.writes[run.writes.clone()],
                );
                // Entries of the same operation share its stream, so `<` splits the run.
                while all.get(cursor.0).is_some_and(|e| e.op < item.op) {
                    cursor.0 += 1;
                }
                while writes.get(cursor.1).is_some_and(|e| e.op < item.op) {
                    cursor.1 += 1;
                }
                if run.stream == item.stream {
                    continue;
                }
                let earlier = if item.writes() {
                    &all[..cursor.0]
                } else {
                    &writes[..cursor.1]
                };
                self.earlier_unordered(earlier, run.stream, y);
            }
        }
        self.cursors = cursors;
    }

    /// Races between an access of group `g` and one of group `h` (distinct, overlapping):
    /// each access of the smaller group against the other's, earlier and later, by binary
    /// search in each of its runs.
    fn between(&mut self, h: usize, g: usize) {
        let index = self.index;
        let (small, large) = {
            let (a, b) = (&index.groups[h], &index.groups[g]);
            if a.items.len() <= b.items.len() {
                (a, b)
            } else {
                (b, a)
            }
        };
        for &y in &index.in_order[small.items.clone()] {
            let item = &self.items[y];
            for run in &index.runs[large.runs.clone()] {
                if run.stream == item.stream {
                    continue;
                }
                let entries = index.conflicting(run, item.writes());
                let split = entries.partition_point(|e| e.op < item.op);
                self.earlier_unordered(&entries[..split], run.stream, y);
                // Later accesses of the run that `y` does not reach: along the stream the
                // clocks grow, so those that `y` reaches come last.
                let later = &entries[split..];
                let position = self.reach.position(item.op);
                let unordered =
                    later.partition_point(|e| self.reach.clock(e.op, item.stream) < position);
                for e in &later[..unordered] {
                    self.race(e.item, y);
                }
            }
        }
    }

    /// Races between item `y` and `earlier`, accesses of `stream` issued before it: those
    /// after the last one that `y` follows.
    fn earlier_unordered(&mut self, earlier: &[Entry], stream: usize, y: usize) {
        let seen = self.reach.clock(self.items[y].op, stream);
        if earlier.last().is_none_or(|e| e.position <= seen) {
            return;
        }
        let from = earlier.partition_point(|e| e.position <= seen);
        for e in &earlier[from..] {
            self.race(e.item, y);
        }
    }

    /// Records that items `a` and `b` race, keeping per pair of operations the pair of
    /// items first in address order.
    fn race(&mut self, a: usize, b: usize) {
        let items = self.items;
        let (x, y) = (&items[a], &items[b]);
        let key = (x.op.min(y.op), x.op.max(y.op));
        let place = |(l, e): (usize, usize)| (address_order(items, l), address_order(items, e));
        let pair = if place((a, b)) > place((b, a)) {
            (a, b)
        } else {
            (b, a)
        };
        self.found
            .entry(key)
            .and_modify(|kept| {
                if place(pair) < place(*kept) {
                    *kept = pair;
                }
            })
            .or_insert(pair);
    }
}
