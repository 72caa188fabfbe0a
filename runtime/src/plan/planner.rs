//! [`Planner`]: the issuer that builds the happens-before model and issues nothing.

use std::collections::{BTreeMap, BTreeSet};

use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::ffi::memory::{MemoryMut, MemoryRef};
use crate::ffi::KernelArg;
use crate::issue::{Body, CollectivePart, Issuer};
use crate::memory::{DeviceFlag, DeviceMemory};
use crate::module::Kernel;
use crate::operand::{BufferAccess, FillPattern, HostFn, LaunchConfig, ReduceOp};
use crate::program::{AccessMode, Collective, Program, Statement, StatementKind};
use crate::trace;

use super::{Logged, Plan, PlanBody, PlanOp, Via};

/// A frontier or a snapshot: operations, each with the way it arrived.
type Frontier = BTreeMap<usize, Via>;

/// An [`Issuer`] that records the pipeline's happens-before model instead of issuing work.
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
    /// The happens-before pairs collectives add that are no edge of a graph (see
    /// [`Plan::sync_edges`]).
    sync: BTreeSet<(usize, usize)>,
    /// The statements issued so far, with their operations ([`Plan`]'s `log`).
    log: Vec<Logged>,
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
            sync: BTreeSet::new(),
            log: Vec::new(),
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
        plan.synchronise(self.sync);
        plan
    }

    /// Plans one body of block `stmt` (branch 0: the `while` body or `then`; 1: `else`) as a
    /// nested pipeline on the block's stream: every stream starts from the fork at the body's
    /// start, events recorded outside are not visible, and the body issues only its own
    /// statements.
    fn plan_body(
        &mut self,
        stmt: &'static Statement,
        branch: usize,
        body: &mut Body<'_>,
    ) -> Result<Plan> {
        let Some(ranges) = stmt.kind.bodies(stmt.id) else {
            return Err(Error::InvalidArgument(format!(
                "a {:?} statement was issued as a device block",
                stmt.kind
            ))
            .in_statement(stmt));
        };
        let mut nested = Planner::new(self.program);
        nested.occurrences = std::mem::take(&mut self.occurrences);
        nested.scope = Some(ranges[branch].clone());
        let issued = body(&mut nested);
        self.occurrences = std::mem::take(&mut nested.occurrences);
        issued?;
        Ok(nested.finish())
    }

    /// The block itself: one operation on its stream that reads the flag and touches what
    /// every operation of its bodies touches.
    fn block(
        &mut self,
        stmt: &'static Statement,
        stream: usize,
        flag: &DeviceFlag,
        bodies: Vec<Plan>,
    ) {
        let mut accesses = vec![BufferAccess {
            range: flag.range(),
            mode: AccessMode::Read,
        }];
        for plan in &bodies {
            for op in plan.ops() {
                accesses.extend(op.accesses.iter().copied());
            }
        }
        let block = self.ops.len();
        self.operation(stmt, stream, accesses, None);
        for (branch, plan) in bodies.into_iter().enumerate() {
            self.bodies.push(PlanBody {
                block,
                branch,
                plan,
            });
        }
    }

    /// Checks that `stmt` belongs to the program, is issued as `expected` and names a
    /// declared stream; returns that stream.
    fn check(&self, stmt: &'static Statement, expected: &str, matches: bool) -> Result<usize> {
        let fail = |message: String| Err(Error::InvalidArgument(message).in_statement(stmt));
        if stmt.id >= self.program.statements.len() {
            return fail(format!(
                "statement id {} is out of range: pipeline `{}` has {} statement(s); issue only statements of the pipeline being planned",
                stmt.id,
                self.program.name,
                self.program.statements.len()
            ));
        }
        if !matches {
            return fail(format!(
                "the statement was issued as a `{expected}` but is a {:?}; issue each statement through the issuer method of its kind",
                stmt.kind
            ));
        }
        if let Some(scope) = &self.scope {
            if !scope.contains(&stmt.id) {
                return fail(format!(
                    "the statement was issued inside the body of a device block that does not hold it (the body holds statements {}..{}); issue a block's statements only in its body",
                    scope.start, scope.end
                ));
            }
        }
        self.stream_index(stmt, stmt.stream, "stream")
    }

    fn stream_index(&self, stmt: &'static Statement, index: usize, what: &str) -> Result<usize> {
        let count = self.program.streams.len();
        if index < count {
            Ok(index)
        } else {
            Err(Error::InvalidArgument(format!(
                "{what} index {index} is out of range: pipeline `{}` declares {count} stream(s)",
                self.program.name
            ))
            .in_statement(stmt))
        }
    }

    fn event_index(&self, stmt: &'static Statement, index: usize) -> Result<usize> {
        let count = self.program.events.len();
        if index < count {
            Ok(index)
        } else {
            Err(Error::InvalidArgument(format!(
                "event index {index} is out of range: pipeline `{}` declares {count} event(s)",
                self.program.name
            ))
            .in_statement(stmt))
        }
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
            StatementKind::While { .. } | StatementKind::If { .. } => {
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

impl Issuer for Planner {
    fn launch(
        &mut self,
        stmt: &'static Statement,
        _kernel: &Kernel,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        let _traced = trace::statement(Some(self.program), stmt);
        let stream = self.check(
            stmt,
            "launch",
            matches!(stmt.kind, StatementKind::Launch { .. }),
        )?;
        let first = self.ops.len();
        self.operation(
            stmt,
            stream,
            args.iter().filter_map(KernelArg::access).collect(),
            Some(config),
        );
        self.logged(stmt, first);
        Ok(())
    }

    fn copy(
        &mut self,
        stmt: &'static Statement,
        dst: MemoryMut<'_>,
        src: MemoryRef<'_>,
    ) -> Result<()> {
        let _traced = trace::statement(Some(self.program), stmt);
        let stream = self.check(stmt, "copy", stmt.kind == StatementKind::Copy)?;
        if dst.memory().bytes() != src.memory().bytes() {
            return Err(Error::InvalidArgument(format!(
                "copy between memories of different sizes: destination {} bytes, source {} bytes; copy equal-length ranges (slice the larger one)",
                dst.memory().bytes(),
                src.memory().bytes()
            ))
            .in_statement(stmt));
        }
        let accesses = vec![
            BufferAccess::of(&dst.memory(), AccessMode::Write),
            BufferAccess::of(&src.memory(), AccessMode::Read),
        ];
        let first = self.ops.len();
        self.operation(stmt, stream, accesses, None);
        self.logged(stmt, first);
        Ok(())
    }

    fn fill(
        &mut self,
        stmt: &'static Statement,
        dst: MemoryMut<'_>,
        _pattern: FillPattern,
    ) -> Result<()> {
        let _traced = trace::statement(Some(self.program), stmt);
        let stream = self.check(stmt, "fill", stmt.kind == StatementKind::Fill)?;
        let first = self.ops.len();
        self.operation(
            stmt,
            stream,
            vec![BufferAccess::of(&dst.memory(), AccessMode::Write)],
            None,
        );
        self.logged(stmt, first);
        Ok(())
    }

    fn host(&mut self, stmt: &'static Statement, _f: HostFn) -> Result<()> {
        let _traced = trace::statement(Some(self.program), stmt);
        let stream = self.check(stmt, "host", stmt.kind == StatementKind::Host)?;
        let first = self.ops.len();
        self.operation(stmt, stream, Vec::new(), None);
        self.logged(stmt, first);
        Ok(())
    }

    fn record(&mut self, stmt: &'static Statement) -> Result<()> {
        let _traced = trace::statement(Some(self.program), stmt);
        let StatementKind::Record { event } = stmt.kind else {
            return self.check(stmt, "record", false).map(drop);
        };
        let stream = self.check(stmt, "record", true)?;
        let event = self.event_index(stmt, event)?;
        self.snapshots[event] = self.frontiers[stream].clone();
        self.logged(stmt, self.ops.len());
        Ok(())
    }

    fn wait(&mut self, stmt: &'static Statement) -> Result<()> {
        let _traced = trace::statement(Some(self.program), stmt);
        let StatementKind::Wait { event } = stmt.kind else {
            return self.check(stmt, "wait", false).map(drop);
        };
        let stream = self.check(stmt, "wait", true)?;
        let event = self.event_index(stmt, event)?;
        merge(
            &mut self.frontiers[stream],
            &self.snapshots[event],
            Via::Event { event, wait: stmt },
        );
        self.logged(stmt, self.ops.len());
        Ok(())
    }

    fn while_loop(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        _limit: Option<u32>,
        body: &mut Body<'_>,
    ) -> Result<()> {
        let _traced = trace::statement(Some(self.program), stmt);
        let stream = self.check(
            stmt,
            "while",
            matches!(stmt.kind, StatementKind::While { .. }),
        )?;
        let plan = self.plan_body(stmt, 0, body)?;
        let first = self.ops.len();
        self.block(stmt, stream, flag, vec![plan]);
        self.logged(stmt, first);
        Ok(())
    }

    fn if_else(
        &mut self,
        stmt: &'static Statement,
        flag: &DeviceFlag,
        then: &mut Body<'_>,
        otherwise: &mut Body<'_>,
    ) -> Result<()> {
        let _traced = trace::statement(Some(self.program), stmt);
        let StatementKind::If {
            otherwise: start,
            end,
        } = stmt.kind
        else {
            return self.check(stmt, "if", false).map(drop);
        };
        let stream = self.check(stmt, "if", true)?;
        let mut plans = vec![self.plan_body(stmt, 0, then)?];
        if start < end {
            plans.push(self.plan_body(stmt, 1, otherwise)?);
        }
        let first = self.ops.len();
        self.block(stmt, stream, flag, plans);
        self.logged(stmt, first);
        Ok(())
    }

    /// One operation per participant, each after its own stream's frontier (the graph's
    /// edges), touching its own buffers (reading `send`, writing `recv`). Then each
    /// participant's stream frontier also holds, as [`Via::Collective`], the other
    /// participants' frontiers (for `broadcast`: the root's) from before the collective:
    /// what follows a participant follows them ([`Plan::sync_edges`]).
    fn collective(
        &mut self,
        stmt: &'static Statement,
        comm: &Communicator,
        _op: ReduceOp,
        parts: &[CollectivePart<'_>],
    ) -> Result<()> {
        let _traced = trace::statement(Some(self.program), stmt);
        let StatementKind::Collective { op, first, .. } = stmt.kind else {
            return self.check(stmt, "collective", false).map(drop);
        };
        self.check(stmt, "collective", stmt.id == first)?;
        let streams = crate::issue::check_collective(self.program, stmt, comm, parts)?;
        for part in parts {
            self.check(
                part.statement,
                "collective",
                part.statement.kind == stmt.kind,
            )?;
        }
        let before: Vec<Frontier> = streams.iter().map(|&s| self.frontiers[s].clone()).collect();
        let made = self.ops.len();
        for (k, part) in parts.iter().enumerate() {
            let accesses = vec![
                BufferAccess::of(&part.send.memory(), AccessMode::Read),
                BufferAccess::of(&part.recv.memory(), AccessMode::Write),
            ];
            self.operation(part.statement, streams[k], accesses, None);
            let sources: Vec<usize> = match op {
                Collective::Broadcast { root } => vec![root],
                _ => (0..parts.len()).collect(),
            };
            let via = Via::Collective {
                statement: part.statement,
            };
            for j in sources.into_iter().filter(|&j| j != k) {
                if let Some(from) = before.get(j) {
                    let from: Frontier = from.keys().map(|&p| (p, via)).collect();
                    merge(&mut self.frontiers[streams[k]], &from, via);
                }
            }
        }
        self.logged(stmt, made);
        Ok(())
    }

    fn wait_stream(&mut self, stmt: &'static Statement) -> Result<()> {
        let _traced = trace::statement(Some(self.program), stmt);
        let StatementKind::WaitStream { stream: other } = stmt.kind else {
            return self.check(stmt, "wait_stream", false).map(drop);
        };
        let stream = self.check(stmt, "wait_stream", true)?;
        let other = self.stream_index(stmt, other, "waited-for stream")?;
        if other != stream {
            let from = self.frontiers[other].clone();
            merge(
                &mut self.frontiers[stream],
                &from,
                Via::WaitStream {
                    stream: other,
                    wait: stmt,
                },
            );
        }
        self.logged(stmt, self.ops.len());
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod tests {
    use super::*;
    use crate::memory::CopySource;
    use crate::operand::{DeviceRange, Memory};
    use crate::plan::ProgramBuilder;

    fn device(ptr: u64, bytes: usize) -> MemoryRef<'static> {
        MemoryRef::promised_device(
            DeviceRange {
                device: 0,
                ptr,
                bytes,
            },
            4,
            crate::ffi::memory::Holder::FOREIGN,
        )
    }

    #[test]
    fn copies_write_the_destination_and_read_the_source() {
        let mut b = ProgramBuilder::new("Copies");
        let (s0, s1) = (b.stream("s0"), b.stream("s1"));
        b.copy(s0, "d", "h");
        b.copy(s1, "h", "d2");
        let program = b.build();
        let host = crate::memory::PinnedBuffer::<u32>::for_planning(24).unwrap();
        let base = host.copy_source().memory().bytes();
        assert_eq!(base, 96);
        let mut planner = Planner::new(program);
        planner
            .copy(
                &program.statements[0],
                MemoryMut::exclusive(device(0x1000, 64)),
                host.part(0, 16).unwrap(),
            )
            .unwrap();
        planner
            .copy(
                &program.statements[1],
                MemoryMut::exclusive(host.part(8, 16).unwrap()),
                device(0x2000, 64),
            )
            .unwrap();
        let plan = planner.finish();
        let op = &plan.ops()[0];
        assert_eq!(op.accesses[0].mode, AccessMode::Write);
        assert_eq!(
            op.accesses[0].range,
            DeviceRange {
                device: 0,
                ptr: 0x1000,
                bytes: 64
            }
        );
        assert_eq!(op.accesses[1].mode, AccessMode::Read);
        assert_eq!(op.accesses[1].range.device, DeviceRange::HOST);
        // The second copy writes host bytes the first reads, unordered: a race on host memory.
        let races = plan.races();
        assert_eq!(races.len(), 1);
        let Memory::PageableHost { ptr, .. } = host.part(8, 8).unwrap().memory() else {
            panic!("a plan-only pinned buffer is pageable memory")
        };
        assert_eq!(
            races[0].overlap(),
            DeviceRange {
                device: DeviceRange::HOST,
                ptr: ptr as u64,
                bytes: 32
            }
        );
        assert!(Error::Race(races.clone())
            .to_string()
            .contains("of host memory"));
    }

    #[test]
    fn copies_of_different_sizes_are_an_error() {
        let mut b = ProgramBuilder::new("Sizes");
        let s0 = b.stream("s0");
        b.copy(s0, "d", "s");
        let program = b.build();
        let mut planner = Planner::new(program);
        let err = planner
            .copy(
                &program.statements[0],
                MemoryMut::exclusive(device(0, 64)),
                device(0x100, 32),
            )
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("`copy d <- s`") && msg.contains("destination 64 bytes, source 32 bytes"),
            "{msg}"
        );
    }

    const ONE: LaunchConfig = LaunchConfig {
        grid: crate::operand::Dim3 { x: 1, y: 1, z: 1 },
        block: crate::operand::Dim3 { x: 1, y: 1, z: 1 },
        shared_mem_bytes: 0,
    };

    fn part(stmt: &'static Statement, ptr: u64) -> CollectivePart<'static> {
        CollectivePart {
            statement: stmt,
            send: device(ptr, 64),
            recv: MemoryMut::exclusive(device(ptr, 64)),
            elem: crate::operand::ElementType::F32,
        }
    }

    /// `s0: launch(x0); s1: launch(x1); all_reduce { s0: x0, s1: x1 }; s0: launch(x0);
    /// s1: launch(x1)`, planned with `op` as the collective.
    fn two_stream_collective(op: Collective) -> (Plan, &'static Program) {
        let mut b = ProgramBuilder::new("Collective");
        let (s0, s1) = (b.stream("s0"), b.stream("s1"));
        b.launch(s0, "k", &[("x0", AccessMode::Write)]);
        b.launch(s1, "k", &[("x1", AccessMode::Write)]);
        let first = b.collective(op, &[(s0, "x0"), (s1, "x1")]);
        b.launch(s0, "k", &[("x0", AccessMode::Write)]);
        b.launch(s1, "k", &[("x1", AccessMode::Write)]);
        let program = b.build();
        let st = &program.statements;
        let k = Kernel::for_planning("k");
        let arg = |ptr| {
            [KernelArg::buffer(
                BufferAccess {
                    range: DeviceRange {
                        device: 0,
                        ptr,
                        bytes: 64,
                    },
                    mode: AccessMode::Write,
                },
                crate::ffi::memory::Holder::FOREIGN,
            )]
        };
        let mut planner = Planner::new(program);
        let config = ONE;
        planner.launch(&st[0], &k, config, &arg(0x1000)).unwrap();
        planner.launch(&st[1], &k, config, &arg(0x2000)).unwrap();
        planner
            .collective(
                &st[first],
                &Communicator::for_planning(2),
                ReduceOp::Sum,
                &[part(&st[first], 0x1000), part(&st[first + 1], 0x2000)],
            )
            .unwrap();
        planner.launch(&st[4], &k, config, &arg(0x1000)).unwrap();
        planner.launch(&st[5], &k, config, &arg(0x2000)).unwrap();
        (planner.finish(), program)
    }

    #[test]
    fn a_collective_is_one_operation_per_stream_joined_like_a_barrier() {
        let (plan, _) = two_stream_collective(Collective::AllReduce);
        // ops: 0 = k on s0, 1 = k on s1, 2 = all_reduce on s0, 3 = all_reduce on s1,
        // 4 = k on s0, 5 = k on s1.
        assert_eq!(plan.len(), 6);
        assert_eq!(plan.stream_of(2), Some(0));
        assert_eq!(plan.stream_of(3), Some(1));
        // The graph's edges are stream order only: NCCL synchronises inside its kernels.
        let edges: Vec<_> = plan.edges().into_iter().collect();
        assert_eq!(edges, [(0, 2), (1, 3), (2, 4), (3, 5)]);
        // Every participant's earlier work happens before each participant completes.
        let sync: Vec<_> = plan.sync_edges().iter().copied().collect();
        assert_eq!(sync, [(0, 5), (1, 4)]);
        assert!(plan.happens_before(1, 4));
        assert!(plan.happens_before(0, 5));
        // A participant starts without waiting for the other streams' work …
        assert!(!plan.happens_before(1, 2));
        assert!(!plan.happens_before(0, 3));
        // … and does not wait for another participant to finish.
        assert!(!plan.happens_before(3, 4));
        assert!(!plan.happens_before(2, 5));
        // Verification of a capture compares the edges' relation only.
        assert!(!plan.graph_reach().reaches(1, 4));
        assert!(plan.same_happens_before(&plan.edges(), 6));
        assert_eq!(plan.final_frontier(), [4, 5]);
        // Each participant touches its own buffer: no race.
        assert!(plan.races().is_empty(), "{:?}", plan.races());
        assert!(plan.to_dot().contains("collective"));
    }

    #[test]
    fn a_broadcast_orders_only_after_the_root() {
        let (plan, _) = two_stream_collective(Collective::Broadcast { root: 0 });
        let sync: Vec<_> = plan.sync_edges().iter().copied().collect();
        assert_eq!(sync, [(0, 5)]);
        assert!(plan.happens_before(0, 5));
        assert!(!plan.happens_before(1, 4));
    }

    #[test]
    fn collectives_check_their_participants() {
        let mut b = ProgramBuilder::new("Parts");
        let (s0, s1) = (b.stream("s0"), b.stream("s1"));
        let first = b.collective(Collective::AllReduce, &[(s0, "x0"), (s1, "x1")]);
        let twice = b.collective(Collective::AllReduce, &[(s0, "x0"), (s0, "x1")]);
        let program = b.build();
        let st = &program.statements;
        let two = Communicator::for_planning(2);
        let mut planner = Planner::new(program);
        let wrong_comm = planner
            .collective(
                &st[first],
                &Communicator::for_planning(3),
                ReduceOp::Sum,
                &[part(&st[first], 0x1000), part(&st[first + 1], 0x2000)],
            )
            .unwrap_err()
            .to_string();
        assert!(wrong_comm.contains("3 local rank(s)"), "{wrong_comm}");
        let missing = planner
            .collective(&st[first], &two, ReduceOp::Sum, &[part(&st[first], 0x1000)])
            .unwrap_err()
            .to_string();
        assert!(missing.contains("1 participant(s)"), "{missing}");
        let swapped = planner
            .collective(
                &st[first],
                &two,
                ReduceOp::Sum,
                &[part(&st[first + 1], 0x1000), part(&st[first], 0x2000)],
            )
            .unwrap_err()
            .to_string();
        assert!(swapped.contains("participant 0"), "{swapped}");
        let not_first = planner
            .collective(
                &st[first + 1],
                &two,
                ReduceOp::Sum,
                &[part(&st[first], 0x1000), part(&st[first + 1], 0x2000)],
            )
            .unwrap_err()
            .to_string();
        assert!(not_first.contains("collective"), "{not_first}");
        let same_stream = planner
            .collective(
                &st[twice],
                &two,
                ReduceOp::Sum,
                &[part(&st[twice], 0x1000), part(&st[twice + 1], 0x2000)],
            )
            .unwrap_err()
            .to_string();
        assert!(same_stream.contains("takes part twice"), "{same_stream}");
        assert!(planner.ops().is_empty());
        let launch = planner
            .launch(&st[first], &Kernel::for_planning("k"), ONE, &[])
            .unwrap_err()
            .to_string();
        assert!(launch.contains("issued as a `launch`"), "{launch}");
    }
}
