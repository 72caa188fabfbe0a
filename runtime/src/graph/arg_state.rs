//! What an executable graph's nodes run, as argument updates know it ([`ArgState`]): each
//! operation's node, launch shape and argument values, the marks of the operations a walk may
//! skip and the parameter keys of the values the nodes run.

use std::collections::HashMap;

use foldhash::fast::FixedState;

use super::recorded::{encode_launch_over, CapturedOp, LaunchShape, Rewritten};
use crate::error::Error;
use crate::ffi::graph::NodeHandle;
use crate::ffi::KernelArg;
use crate::issue::{ParamKeys, Pipeline};
use crate::operand::LaunchConfig;
use crate::program::{Statement, StatementKind};

use super::GraphCore;

/// What an executable graph's launch nodes run now: their nodes, shapes and argument values,
/// one slot per operation (what `set_kernel_args` reads for a node lies together).
#[derive(Debug)]
pub(super) struct ArgState {
    pub(super) slots: Vec<Slot>,
    /// Per operation, its node in the graph the executable graph was instantiated from.
    nodes: Vec<Option<NodeHandle>>,
    bytes: Vec<u8>,
    /// Per operation, its statement's address with bit 0 set when a walk saw its values and
    /// they touch no host memory, so that a walk whose statement's parameters did not change
    /// may leave its node as it is ([`Issuer::unchanged`]); 0 otherwise. Apart from the
    /// slots, so that a walk that skips reads one word an operation.
    pub(super) marks: Vec<usize>,
    /// The parameter keys of the pipeline value whose arguments the nodes run, when `keyed`:
    /// after a walk that saw every statement (not before one, nor after one that failed).
    keys: ParamKeys,
    keyed: bool,
    /// The keys of the pipeline being walked.
    next: ParamKeys,
    /// How many marks are set (operations a walk may skip), and how many operations are
    /// launches, copies, fills and `call`s (the only ones marked) when no operation is of a
    /// kind a walk compares otherwise (a device block, a collective); [`NOT_WHOLE`] when one
    /// is. When all are marked and `keyed`, a pipeline whose walk its keys decide
    /// ([`Pipeline::KEYED_WALK`]) is not walked at all when no key changed.
    marked: usize,
    whole: usize,
    /// Host loops a walk saw run whole, every operation in them one a walk may skip:
    /// `(loop number, operations issued before it, ordering statements issued before it)` →
    /// where the loop ends ([`LoopSpan`]).
    loops: HashMap<(u32, u32, u32), LoopSpan, FixedState>,
    /// Counts the walks begun ([`ArgState::begin`]).
    walks: u32,
    /// Counts the marks cleared outside a walk ([`ArgState::forget`]): a loop noted in an
    /// earlier epoch may hold an operation that is not to be skipped now.
    epoch: u32,
}

/// Where a host loop that began at an operation ends, as a walk saw it run.
#[derive(Debug, Clone, Copy)]
struct LoopSpan {
    /// The operations and ordering statements issued when it was done.
    op_end: u32,
    orderings_end: u32,
    epoch: u32,
    /// The walk that noted it.
    walk: u32,
    /// The loop ran twice from one place in one walk (a run that issued nothing, then
    /// another): which run a later walk is at cannot be told, so it is always walked.
    ambiguous: bool,
}

/// One operation of an executable graph, as [`ArgState`] knows it: what an argument update
/// reads of an unchanged launch, in one cache line (its node is apart, in
/// [`ArgState::nodes`], read only to set it).
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
pub(super) struct Slot {
    /// The statement the operation was issued for.
    pub(super) statement: &'static Statement,
    /// The launch's shape as its node runs it now (`None` for other operations).
    pub(super) shape: Option<LaunchShape>,
    /// Where its values lie in [`ArgState::bytes`]: start and length, the length with
    /// [`UNKNOWN`] set when they are unknown ([`OPAQUE`](super::recorded::OPAQUE) when none were ever known). Values
    /// once known keep their bytes while unknown, so that new ones of the same length are
    /// written over them.
    pub(super) span: (u32, u32),
}

// A slot is one cache line: an unchanged launch's comparison reads no other line of the state
// but its values' bytes and its mark.
const _: () = assert!(std::mem::size_of::<Slot>() == 64);

/// The bit of [`Slot::span`]'s length that says its values are unknown; the bits under it
/// are the length of the bytes the slot still owns.
const UNKNOWN: u32 = 1 << 31;

impl ArgState {
    /// The state of a freshly captured graph `core`, whose operations are those of `base`, the
    /// graph the executable graph was instantiated from (the nodes are `base`'s).
    pub(super) fn of(core: &GraphCore, base: &GraphCore) -> Result<ArgState, Error> {
        let nodes = base.node_map()?;
        let ops = &core.recorded.ops;
        Ok(ArgState {
            slots: ops
                .iter()
                .enumerate()
                .map(|(i, op)| Slot {
                    statement: op.statement,
                    shape: core.launch_shape(i),
                    span: op.values,
                })
                .collect(),
            nodes: (0..ops.len())
                .map(|i| nodes.get(i).copied().flatten())
                .collect(),
            bytes: core.recorded.values.clone(),
            marks: vec![0; core.recorded.ops.len()],
            keys: ParamKeys::default(),
            keyed: false,
            next: ParamKeys::default(),
            marked: 0,
            whole: whole_walk(&core.recorded.ops).unwrap_or(NOT_WHOLE),
            loops: HashMap::default(),
            walks: 0,
            epoch: 0,
        })
    }

    /// Takes `pipeline`'s parameter keys for a walk; returns the parameters that changed
    /// since the last walk that saw every statement (all of them when there was none). Until
    /// [`ArgState::commit`], the nodes' keys are unknown.
    pub(super) fn begin<P: Pipeline + ?Sized>(&mut self, pipeline: &P) -> u64 {
        self.walks = self.walks.wrapping_add(1);
        self.next.clear();
        pipeline.param_keys(&mut self.next);
        let changed = if self.keyed {
            self.keys.changed(&self.next)
        } else {
            !0
        };
        self.keyed = false;
        changed
    }

    /// The walk [`ArgState::begin`] began saw every statement: the nodes run the values of
    /// the pipeline it took the keys of.
    pub(super) fn commit(&mut self) {
        std::mem::swap(&mut self.keys, &mut self.next);
        self.keyed = true;
    }

    /// After [`ArgState::begin`] found no key `changed`, for a pipeline whose keys decide its
    /// walk when `keyed_walk` ([`Pipeline::KEYED_WALK`]): how many operations the nodes run
    /// as they are when the walk is left out — the last walk saw every statement, every
    /// launch, copy, fill and `call` is one a walk may skip, and no operation is compared
    /// otherwise.
    /// The nodes' keys are known again.
    #[inline]
    pub(super) fn whole_unchanged(&mut self, keyed_walk: bool, changed: u64) -> Option<u64> {
        if !keyed_walk || changed != 0 || self.whole != self.marked {
            return None;
        }
        self.commit();
        Some(self.marked as u64)
    }

    /// The state in `cell`, made from `core` and `base` (see [`ArgState::of`]) if it has none.
    #[inline]
    pub(super) fn in_cell<'c>(
        cell: &'c mut Option<ArgState>,
        core: &GraphCore,
        base: &GraphCore,
    ) -> Result<&'c mut ArgState, Error> {
        match cell {
            Some(state) => Ok(state),
            None => ArgState::first(cell, core, base),
        }
    }

    /// [`ArgState::in_cell`] when `cell` is empty.
    #[cold]
    fn first<'c>(
        cell: &'c mut Option<ArgState>,
        core: &GraphCore,
        base: &GraphCore,
    ) -> Result<&'c mut ArgState, Error> {
        Ok(cell.insert(ArgState::of(core, base)?))
    }

    /// Operation `i`.
    #[inline]
    pub(super) fn slot(&mut self, i: usize) -> Option<&mut Slot> {
        self.slots.get_mut(i)
    }

    /// Operation `i`'s node, if it has one.
    #[inline]
    pub(super) fn node(&self, i: usize) -> Option<NodeHandle> {
        self.nodes.get(i).copied().flatten()
    }

    /// Operation `i` got values from elsewhere (`set_kernel_args`): they are unknown now.
    #[inline]
    pub(super) fn forget(&mut self, i: usize) {
        self.unknown(i);
        if let Some(m) = self.marks.get_mut(i).filter(|m| **m != 0) {
            *m = 0;
            self.marked -= 1;
            self.epoch = self.epoch.wrapping_add(1);
        }
    }

    /// Operation `i`'s values are unknown until [`ArgState::set`] gives new ones; its mark
    /// stays.
    #[inline]
    pub(super) fn unknown(&mut self, i: usize) {
        if let Some(slot) = self.slots.get_mut(i) {
            slot.span.1 |= UNKNOWN;
        }
    }

    /// Host loop `number`, which began with `op` operations and `orderings` ordering
    /// statements issued and ended with `end` of each, ran in a walk: noted when every
    /// operation in it may be skipped (all of them are launches, copies or fills, which
    /// `pipeline!` numbers such a loop for), forgotten otherwise.
    pub(super) fn note_loop(
        &mut self,
        number: u32,
        (op, orderings): (usize, usize),
        end: (usize, usize),
    ) {
        let key = (number, op as u32, orderings as u32);
        if let Some(span) = self.loops.get_mut(&key).filter(|s| s.walk == self.walks) {
            span.ambiguous = true;
            return;
        }
        let marked = self
            .marks
            .get(op..end.0)
            .is_some_and(|marks| marks.iter().all(|&m| m != 0));
        if marked {
            let span = LoopSpan {
                op_end: end.0 as u32,
                orderings_end: end.1 as u32,
                epoch: self.epoch,
                walk: self.walks,
                ambiguous: false,
            };
            self.loops.insert(key, span);
        } else {
            self.loops.remove(&key);
        }
    }

    /// Where host loop `number` ends when it begins with `op` operations and `orderings`
    /// ordering statements issued and a walk may skip it whole: `(operations, ordering
    /// statements)` issued after it.
    pub(super) fn loop_end(
        &mut self,
        number: u32,
        op: usize,
        orderings: usize,
    ) -> Option<(usize, usize)> {
        let span = self.loops.get_mut(&(number, op as u32, orderings as u32))?;
        if span.walk == self.walks {
            // Noted by this walk: a run that began here already, and this is another.
            span.ambiguous = true;
            return None;
        }
        (!span.ambiguous && span.epoch == self.epoch && span.op_end as usize <= self.marks.len())
            .then_some((span.op_end as usize, span.orderings_end as usize))
    }

    /// Operation `i`, of `stmt`, may be skipped by a walk when `stmt` is given.
    #[inline]
    pub(super) fn mark(&mut self, i: usize, stmt: Option<&'static Statement>) {
        if let Some(m) = self.marks.get_mut(i) {
            let new = stmt.map_or(0, skip_mark);
            if *m == new {
                return;
            }
            // Only launches, copies, fills and `call`s are marked.
            self.marked = self.marked + usize::from(new != 0) - usize::from(*m != 0);
            *m = new;
        }
    }

    pub(super) fn values(&self, i: usize) -> Option<&[u8]> {
        self.span_values(self.slots.get(i)?.span)
    }

    /// The values at `span` of [`ArgState::bytes`]; `None` for unknown ones.
    #[inline]
    pub(super) fn span_values(&self, (start, len): (u32, u32)) -> Option<&[u8]> {
        if len & UNKNOWN != 0 {
            return None;
        }
        self.bytes
            .get(start as usize..start as usize + len as usize)
    }

    /// Writes launch `i`'s new values `args` over the ones its node runs, and makes them
    /// unknown until [`ArgState::launch_set`] (its node is not set yet). On the way `moved`
    /// sees each buffer argument whose address is not the one its node runs (the memory at
    /// that address is the executable graph's already); `false` from it stops the write.
    /// Values that do not fit there (never known, or that cannot be compared) are left to
    /// [`ArgState::set`], and some buffer arguments may not have been shown to `moved`.
    #[inline]
    pub(super) fn rewrite_launch(
        &mut self,
        i: usize,
        args: &[KernelArg<'_>],
        moved: impl FnMut(&KernelArg<'_>) -> bool,
    ) -> Rewritten {
        let Some(slot) = self.slots.get_mut(i) else {
            return Rewritten::DoesNotFit;
        };
        let (start, len) = (slot.span.0 as usize, slot.span.1 & !UNKNOWN);
        slot.span.1 = len | UNKNOWN;
        match self.bytes.get_mut(start..start + len as usize) {
            Some(own) => encode_launch_over(args, own, moved),
            None => Rewritten::DoesNotFit,
        }
    }

    /// Launch `i`'s node runs `config` and the values [`ArgState::rewrite_launch`] wrote now,
    /// known when `known` (they fit).
    #[inline]
    pub(super) fn launch_set(&mut self, i: usize, config: LaunchConfig, known: bool) {
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        if let Some(shape) = &mut slot.shape {
            shape.config = config;
        }
        if known {
            slot.span.1 &= !UNKNOWN;
        }
    }

    /// Operation `i` runs `config` with `values` now (`None`: values that cannot be compared).
    pub(super) fn set(&mut self, i: usize, config: LaunchConfig, values: Option<&[u8]>) {
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        if let Some(shape) = &mut slot.shape {
            shape.config = config;
        }
        let span = &mut slot.span;
        match values {
            None => span.1 |= UNKNOWN,
            // Over its own bytes when they have the length (known or not): a statement's
            // comparable values always have the same length, so updates do not grow `bytes`.
            Some(v) if (span.1 & !UNKNOWN) as usize == v.len() => {
                let start = span.0 as usize;
                self.bytes[start..start + v.len()].copy_from_slice(v);
                span.1 = v.len() as u32;
            }
            Some(v) => {
                *span = (self.bytes.len() as u32, v.len() as u32);
                self.bytes.extend_from_slice(v);
            }
        }
    }
}

/// [`ArgState`]'s `whole` of a graph with an operation a walk compares otherwise: more than
/// it can mark.
const NOT_WHOLE: usize = usize::MAX;

/// How many of `ops` are launches, copies, fills and `call`s, when every other one is a host
/// function or a temporary's allocation or release (what [`ArgState::whole_unchanged`] may
/// leave unwalked); `None` when one is a device block, a `call` or a collective.
fn whole_walk(ops: &[CapturedOp]) -> Option<usize> {
    ops.iter().try_fold(0, |n, op| match op.statement.kind {
        StatementKind::Launch { .. }
        | StatementKind::Copy
        | StatementKind::Fill
        | StatementKind::Call { .. } => Some(n + 1),
        StatementKind::Host | StatementKind::Alloc { .. } | StatementKind::Free { .. } => Some(n),
        _ => None,
    })
}

/// [`ArgState::marks`]' word of an operation of `stmt` that a walk may skip (statements are
/// aligned to more than 1 byte, so bit 0 of their address is free).
#[inline]
pub(super) fn skip_mark(stmt: &'static Statement) -> usize {
    std::ptr::from_ref(stmt) as usize | 1
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::graph::recorded::OPAQUE;

    #[test]
    fn values_are_replaced_in_place_or_appended_and_forgotten() {
        let config = LaunchConfig {
            grid: 1u32.into(),
            block: 1u32.into(),
            shared_mem_bytes: 0,
        };
        let program = {
            let mut b = crate::plan::ProgramBuilder::new("Values");
            let s = b.stream("s");
            b.fill(s, "x");
            b.build()
        };
        let statement = &program.statements[0];
        let slot = |span| Slot {
            statement,
            shape: None,
            span,
        };
        let mut state = ArgState {
            slots: vec![slot((0, 2)), slot((2, 0))],
            nodes: vec![None; 2],
            bytes: vec![1, 2],
            marks: vec![0; 2],
            keys: ParamKeys::default(),
            keyed: false,
            next: ParamKeys::default(),
            marked: 0,
            whole: NOT_WHOLE,
            loops: HashMap::default(),
            walks: 0,
            epoch: 0,
        };
        assert_eq!(state.values(0), Some(&[1u8, 2][..]));
        assert_eq!(state.values(1), Some(&[][..]));
        state.set(0, config, Some(&[3, 4]));
        assert_eq!(state.values(0), Some(&[3u8, 4][..]));
        assert_eq!(state.bytes.len(), 2, "same length: in place");
        state.set(0, config, Some(&[5, 6, 7]));
        assert_eq!(state.values(0), Some(&[5u8, 6, 7][..]));
        state.forget(0);
        assert_eq!(state.values(0), None);
        state.set(1, config, None);
        assert_eq!(state.values(1), None);
        state.set(1, config, Some(&[9]));
        assert_eq!(state.values(1), Some(&[9u8][..]));
        assert_eq!(state.values(2), None);
        // Values forgotten, or unknown while a node is set, keep their bytes: new ones of the
        // same length go over them, however many updates come.
        let len = state.bytes.len();
        for round in 0..100u8 {
            state.unknown(0);
            assert_eq!(state.values(0), None);
            state.set(0, config, Some(&[round, 1, 2]));
            state.forget(1);
            state.set(1, config, Some(&[round]));
        }
        assert_eq!(state.values(0), Some(&[99u8, 1, 2][..]));
        assert_eq!(state.values(1), Some(&[99u8][..]));
        assert_eq!(state.bytes.len(), len, "updates write in place");

        // A launch's values encoded straight into its bytes: known only when they fit
        // exactly, and once its node is set.
        let v = 0x0102_0304u32;
        let args = [KernelArg::by_ref(
            &v,
            None,
            crate::ffi::memory::Holder::FOREIGN,
        )];
        state.slots.push(slot((state.bytes.len() as u32, 5)));
        state.bytes.extend_from_slice(&[0; 5]);
        let never = |_: &KernelArg<'_>| -> bool { unreachable!("a value is no buffer") };
        assert_eq!(state.rewrite_launch(2, &args, never), Rewritten::Fits);
        assert_eq!(state.values(2), None, "unknown until its node is set");
        state.launch_set(2, config, true);
        assert_eq!(
            state.values(2),
            Some(&[&[4u8][..], &v.to_ne_bytes()].concat()[..])
        );
        state.slots.push(slot((state.bytes.len() as u32, OPAQUE)));
        assert_eq!(
            state.rewrite_launch(3, &args, never),
            Rewritten::DoesNotFit,
            "never known: no bytes of its own"
        );
        assert_eq!(state.values(3), None);
        assert_eq!(
            state.rewrite_launch(0, &args, never),
            Rewritten::DoesNotFit,
            "three bytes: the values do not fit"
        );
        assert_eq!(state.values(0), None);
    }
}
