//! [`Planner`]: the issuer that builds the happens-before model and issues nothing.
//!
//! This file holds the planner's state and the model's rules (an operation follows its
//! stream's frontier, waits merge frontiers); `issuer` applies them to each statement the
//! pipeline issues, once it is checked against the program, and `blocks` plans device blocks'
//! bodies as nested plans.

use std::collections::{BTreeMap, BTreeSet};

use crate::operand::{BufferAccess, LaunchConfig};
use crate::program::{Program, Statement, StatementKind};

use super::{Logged, Plan, PlanBody, PlanOp, PlanTemp, Via};

/// Where a plan's temporaries get their addresses: plan-only ranges far above real
/// allocations and apart from `DeviceBuffer::for_planning`'s, one per allocation (a plan never
/// reuses one).
const TEMP_BASE: u64 = 1 << 56;

mod blocks;
mod issuer;
#[cfg(test)]
mod tests;

/// A frontier or a snapshot: operations, each with the way it arrived.
type Frontier = BTreeMap<usize, Via>;

/// An [`Issuer`](crate::issue::Issuer) that records the pipeline's happens-before model
/// instead of issuing work.
///
/// It applies the rules of [`Plan`] statement by statement:
/// every operation gets an edge from every operation in its stream's frontier (no
/// reduction, as the CUDA driver does during capture), `record` snapshots a frontier,
/// `wait` and `wait_stream` merge one into another. [`finish`](Self::finish) joins every
/// stream into the origin and returns the [`Plan`].
#[derive(Debug)]
pub struct Planner {
    program: &'static Program,
    ops: Vec<PlanOp>,
    edges: BTreeMap<(usize, usize), Via>,
    frontiers: Vec<Frontier>,
    snapshots: Vec<Frontier>,
    occurrences: Vec<u32>,
    /// The nested plans of the device blocks planned so far.
    bodies: Vec<PlanBody>,
    /// Inside a block's body: the statement ids the body may issue.
    scope: Option<std::ops::Range<usize>>,
    /// Inside a block's body: the stream of the body's latest device block.
    last_block: Option<usize>,
    /// The happens-before pairs collectives add that are no edge of a graph (see
    /// [`Plan::sync_edges`]).
    sync: BTreeSet<(usize, usize)>,
    /// The statements issued so far, with their operations ([`Plan`]'s `log`).
    log: Vec<Logged>,
    /// The temporaries allocated so far, in allocation order.
    temps: Vec<PlanTemp>,
    /// Where the next temporary's plan-only address range starts.
    next_temp: u64,
}

impl Planner {
    /// A planner for `program`: every stream starts with the origin's empty frontier (fork).
    pub fn new(program: &'static Program) -> Planner {
        Planner {
            program,
            ops: Vec::new(),
            edges: BTreeMap::new(),
            frontiers: vec![Frontier::new(); program.streams.len()],
            snapshots: vec![Frontier::new(); program.events.len()],
            occurrences: vec![0; program.statements.len()],
            bodies: Vec::new(),
            scope: None,
            last_block: None,
            sync: BTreeSet::new(),
            log: Vec::new(),
            temps: Vec::new(),
            next_temp: TEMP_BASE,
        }
    }

    /// The program being planned.
    pub fn program(&self) -> &'static Program {
        self.program
    }

    /// The operations issued so far.
    pub fn ops(&self) -> &[PlanOp] {
        &self.ops
    }

    /// The frontier of `stream` now: the operations its next operation will follow, in
    /// increasing order (empty for an unknown stream).
    pub fn frontier(&self, stream: usize) -> Vec<usize> {
        self.frontiers
            .get(stream)
            .map(|f| f.keys().copied().collect())
            .unwrap_or_default()
    }

    /// The snapshot of `event` now (empty when never recorded or unknown).
    pub fn snapshot(&self, event: usize) -> Vec<usize> {
        self.snapshots
            .get(event)
            .map(|f| f.keys().copied().collect())
            .unwrap_or_default()
    }

    /// Joins every stream into the origin and returns the model.
    pub fn finish(self) -> Plan {
        let mut joined: Vec<usize> = self
            .frontiers
            .iter()
            .flat_map(|f| f.iter())
            .filter(|(_, via)| !matches!(via, Via::Collective { .. }))
            .map(|(&op, _)| op)
            .collect();
        joined.sort_unstable();
        joined.dedup();
        let mut plan = Plan::new(self.program, self.ops, self.edges, joined);
        plan.bodies = self.bodies;
        plan.log = self.log;
        plan.temps = self.temps;
        plan.synchronise(self.sync);
        plan
    }

    /// [`Planner::finish`], refused when the pipeline left a temporary allocated.
    pub(crate) fn finish_checked(self) -> crate::error::Result<Plan> {
        let unfreed = self.temps.iter().find(|t| t.free.is_none());
        if let Some(t) = unfreed {
            return Err(crate::error::Error::InvalidArgument(
                "the pipeline allocated a temporary here and never freed it; each `Alloc` \
                 statement needs its `Free` statement after the temporary's last use"
                    .into(),
            )
            .in_statement(self.ops[t.alloc].statement));
        }
        Ok(self.finish())
    }

    /// Logs `stmt` as issued, with the operations made since `first`.
    fn logged(&mut self, stmt: &'static Statement, first: usize) {
        self.log.push(Logged {
            statement: stmt,
            ops: first..self.ops.len(),
        });
    }

    /// `op(s)`: a new node after every node of `F(s)`, which becomes `{n}`.
    fn operation(
        &mut self,
        stmt: &'static Statement,
        stream: usize,
        accesses: Vec<BufferAccess>,
        config: Option<LaunchConfig>,
    ) {
        let n = self.ops.len();
        let occurrence = {
            let count = &mut self.occurrences[stmt.id];
            *count += 1;
            *count
        };
        let name = match stmt.kind {
            StatementKind::Launch { kernel } => format!("launch {kernel}"),
            StatementKind::While { .. }
            | StatementKind::If { .. }
            | StatementKind::Switch { .. } => {
                shorten(stmt.text.split('{').next().unwrap_or(stmt.text).trim(), 40)
            }
            _ => shorten(stmt.text, 40),
        };
        self.ops.push(PlanOp {
            statement: stmt,
            occurrence,
            stream,
            accesses,
            config,
            label: format!("{name} #{occurrence}"),
        });
        let frontier = std::mem::take(&mut self.frontiers[stream]);
        for (p, via) in frontier {
            if let Via::Collective { .. } = via {
                self.sync.insert((p, n));
            } else {
                self.edges.insert((p, n), via);
            }
        }
        self.frontiers[stream].insert(n, Via::Stream);
    }
}

impl Planner {
    /// Stream `stream` waits for everything issued on `other` so far (`wait_stream`, or a
    /// block after its body's previous block): `F(stream) := F(stream) ∪ F(other)`, new
    /// arrivals marked `via`.
    fn stream_waits(&mut self, stream: usize, other: usize, via: Via) {
        if other != stream {
            let from = self.frontiers[other].clone();
            merge(&mut self.frontiers[stream], &from, via);
        }
    }
}

/// Merges `from` into `into`, marking new arrivals with `via`; an operation already present
/// keeps the way it arrived first.
///
/// An operation that arrived through a collective's completion (no graph edge) keeps that
/// way only while nothing else brings it: a member that arrives as a real edge replaces it.
fn merge(into: &mut Frontier, from: &Frontier, via: Via) {
    for (&op, &how) in from {
        let via = match how {
            Via::Collective { .. } => how,
            _ => via,
        };
        match into.get(&op) {
            None => {
                into.insert(op, via);
            }
            Some(Via::Collective { .. }) if !matches!(via, Via::Collective { .. }) => {
                into.insert(op, via);
            }
            Some(_) => {}
        }
    }
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut s: String = text.chars().take(max - 1).collect();
        s.push('…');
        s
    }
}
