//! Data races on the model: unordered conflicting accesses to the same bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::operand::{BufferAccess, DeviceRange};
use crate::program::{AccessMode, Statement};

use super::Plan;

/// Two operations on different streams touching overlapping memory, at least one writing,
/// with no happens-before path between them: their effects depend on timing.
#[derive(Debug, Clone)]
pub struct Race {
    /// The operation issued first.
    pub first: RaceSide,
    /// The operation issued second.
    pub second: RaceSide,
}

/// One operation of a [`Race`] and the access that conflicts.
#[derive(Debug, Clone)]
pub struct RaceSide {
    /// The operation's index in [`Plan::ops`].
    pub op: usize,
    /// Its statement.
    pub statement: &'static Statement,
    /// Which issue of the statement, from 1.
    pub occurrence: u32,
    /// Its stream (index into [`crate::Program::streams`]).
    pub stream: usize,
    /// The stream's name.
    pub stream_name: &'static str,
    /// The conflicting access.
    pub access: BufferAccess,
}

impl Race {
    /// The bytes both sides touch.
    pub fn overlap(&self) -> DeviceRange {
        let (a, b) = (self.first.access.range, self.second.access.range);
        let start = a.ptr.max(b.ptr);
        let end = (a.ptr.saturating_add(a.bytes as u64)).min(b.ptr.saturating_add(b.bytes as u64));
        DeviceRange {
            device: a.device,
            ptr: start,
            bytes: end.saturating_sub(start) as usize,
        }
    }
}

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

/// Formats races for [`crate::Error::Race`]: for each, both statements and where they are,
/// their streams, the bytes they share, and how to order them.
pub fn format_races(races: &[Race]) -> String {
    let mut out = match races.len() {
        0 => return "no data race".to_owned(),
        1 => "found 1 data race".to_owned(),
        n => format!("found {n} data races"),
    };
    out.push_str(": operations on different streams touch the same memory, at least one writing, and nothing orders them");
    for (i, race) in races.iter().enumerate() {
        let (a, b) = (&race.first, &race.second);
        let overlap = race.overlap();
        let _ = write!(
            out,
            "\n  {}. {} and {} the {} byte(s) at {:#x}..{:#x} of {}",
            i + 1,
            describe(a),
            describe(b),
            overlap.bytes,
            overlap.ptr,
            overlap.ptr.saturating_add(overlap.bytes as u64),
            memory_name(overlap.device),
        );
        let event = format!("{}_done", a.stream_name);
        let _ = write!(
            out,
            "\n     fix: record an event on `{sa}` after the first and `wait` for it on `{sb}` before the second \
             (e.g. declare `event {event};`, add `{sa}: record {event};` after line {la} and `{sb}: wait {event};` before line {lb})",
            sa = a.stream_name,
            sb = b.stream_name,
            la = a.statement.location.line,
            lb = b.statement.location.line,
        );
    }
    out
}

fn describe(side: &RaceSide) -> String {
    let verb = match side.access.mode {
        AccessMode::Read => "reads",
        AccessMode::Write => "writes",
    };
    let issue = if side.occurrence > 1 {
        format!(" (issue #{})", side.occurrence)
    } else {
        String::new()
    };
    format!(
        "`{}` at {}{issue} on stream `{}` {verb}",
        side.statement.text, side.statement.location, side.stream_name
    )
}

fn memory_name(device: i32) -> String {
    match device {
        DeviceRange::HOST => "host memory".to_owned(),
        DeviceRange::PLANNING => "planning memory".to_owned(),
        d => format!("device {d}"),
    }
}
