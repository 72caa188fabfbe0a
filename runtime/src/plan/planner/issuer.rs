//! The [`Planner`] as an [`Issuer`]: each statement checked against the program, then applied
//! to the model.

use crate::call::BoundCall;
use crate::comm::Communicator;
use crate::error::{Error, Result};
use crate::ffi::memory::{MemoryMut, MemoryRef};
use crate::ffi::KernelArg;
use crate::issue::{check_switch_arms, Body, CollectivePart, Issuer};
use crate::memory::{DeviceFlag, Scope, TempMemory};
use crate::module::Kernel;
use crate::operand::{BufferAccess, DeviceRange, FillPattern, HostFn, LaunchConfig, ReduceOp};
use crate::plan::{PlanTemp, Via};
use crate::program::{AccessMode, Collective, Statement, StatementKind};
use crate::trace;

use super::{merge, Frontier, Planner};

impl Planner {
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
        if let Some(scope) = &self.scope
            && !scope.contains(&stmt.id)
        {
            return fail(format!(
                    "the statement was issued inside the body of a device block that does not hold it (the body holds statements {}..{}); issue a block's statements only in its body",
                    scope.start, scope.end
                ));
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
}

impl Planner {
    /// The temporary an `Alloc` or `Free` statement names; refused inside a device block's
    /// body, where CUDA allows no memory node.
    fn temp_statement(&self, stmt: &'static Statement, expected: &str) -> Result<usize> {
        let Some(temp) = stmt.kind.temp() else {
            return self.check(stmt, expected, false).map(drop).map(|()| 0);
        };
        if self.scope.is_some() {
            return Err(Error::InvalidArgument(
                "a temporary is allocated or freed inside a device block's body; CUDA allows \
                 no memory node in a conditional body: allocate it before the block and free \
                 it after"
                    .into(),
            )
            .in_statement(stmt));
        }
        if temp >= self.program.temps.len() {
            return Err(Error::InvalidArgument(format!(
                "temporary index {temp} is out of range: pipeline `{}` declares {} \
                 temporar(ies)",
                self.program.name,
                self.program.temps.len()
            ))
            .in_statement(stmt));
        }
        Ok(temp)
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
        let _traced = trace::statement(|| Some(self.program), stmt);
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

    fn call(&mut self, stmt: &'static Statement, call: &mut dyn BoundCall) -> Result<()> {
        let _traced = trace::statement(|| Some(self.program), stmt);
        let stream = self.check(
            stmt,
            "call",
            matches!(stmt.kind, StatementKind::Call { .. }),
        )?;
        let mut accesses = Vec::with_capacity(call.accesses().len());
        for access in call.accesses() {
            match access.buffer_access() {
                Some(a) => accesses.push(a),
                None => {
                    return Err(Error::InvalidArgument(
                        "a `call` operand is not device memory; an op reads and writes device memory only".into(),
                    )
                    .in_statement(stmt))
                }
            }
        }
        let first = self.ops.len();
        self.operation(stmt, stream, accesses, None);
        self.logged(stmt, first);
        Ok(())
    }

    fn copy(
        &mut self,
        stmt: &'static Statement,
        dst: MemoryMut<'_>,
        src: MemoryRef<'_>,
    ) -> Result<()> {
        let _traced = trace::statement(|| Some(self.program), stmt);
        let stream = self.check(stmt, "copy", stmt.kind == StatementKind::Copy)?;
        if dst.memory().bytes() != src.memory().bytes() {
            return Err(Error::InvalidArgument(format!(
                "copy between memories of different sizes: destination {} bytes, source {} bytes; copy equal-length ranges (slice the larger one)",
                dst.memory().bytes(),
                src.memory().bytes()
            ))
            .in_statement(stmt));
        }
        let accesses = BufferAccess::of_copy(&dst.memory(), &src.memory());
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
        let _traced = trace::statement(|| Some(self.program), stmt);
        let stream = self.check(stmt, "fill", stmt.kind == StatementKind::Fill)?;
        let first = self.ops.len();
        self.operation(stmt, stream, BufferAccess::of_fill(&dst.memory()), None);
        self.logged(stmt, first);
        Ok(())
    }

    fn host(&mut self, stmt: &'static Statement, _f: HostFn) -> Result<()> {
        let _traced = trace::statement(|| Some(self.program), stmt);
        let stream = self.check(stmt, "host", stmt.kind == StatementKind::Host)?;
        let first = self.ops.len();
        self.operation(stmt, stream, Vec::new(), None);
        self.logged(stmt, first);
        Ok(())
    }

    fn record(&mut self, stmt: &'static Statement) -> Result<()> {
        let _traced = trace::statement(|| Some(self.program), stmt);
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
        let _traced = trace::statement(|| Some(self.program), stmt);
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
        let _traced = trace::statement(|| Some(self.program), stmt);
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
        let _traced = trace::statement(|| Some(self.program), stmt);
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

    fn switch(
        &mut self,
        stmt: &'static Statement,
        index: &DeviceFlag,
        arms: &mut [&mut Body<'_>],
    ) -> Result<()> {
        let _traced = trace::statement(|| Some(self.program), stmt);
        let StatementKind::Switch { arms: declared, .. } = stmt.kind else {
            return self.check(stmt, "switch", false).map(drop);
        };
        let stream = self.check(stmt, "switch", true)?;
        check_switch_arms(stmt, declared.len(), arms.len())?;
        let mut plans = Vec::with_capacity(arms.len());
        for (branch, arm) in arms.iter_mut().enumerate() {
            plans.push(self.plan_body(stmt, branch, &mut **arm)?);
        }
        let first = self.ops.len();
        self.block(stmt, stream, index, plans);
        self.logged(stmt, first);
        Ok(())
    }

    /// One operation per participant, each after its own stream's frontier (the graph's
    /// edges), touching its own buffers (reading `send`, writing `recv`). Then each
    /// participant's stream frontier also holds, as [`Via::Collective`], the other
    /// participants' frontiers (for `broadcast`: the root's) from before the collective:
    /// what follows a participant follows them
    /// ([`Plan::sync_edges`](crate::plan::Plan::sync_edges)).
    fn collective(
        &mut self,
        stmt: &'static Statement,
        comm: &Communicator,
        _op: ReduceOp,
        parts: &[CollectivePart<'_>],
    ) -> Result<()> {
        let _traced = trace::statement(|| Some(self.program), stmt);
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
            let accesses = BufferAccess::of_participant(&part.send.memory(), &part.recv.memory());
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

    /// An operation writing the temporary's whole memory (a plan-only address range of its
    /// own): what follows the allocation on other streams must be ordered after it.
    fn alloc<'s>(
        &mut self,
        stmt: &'static Statement,
        scope: Scope<'s>,
        bytes: usize,
    ) -> Result<TempMemory<'s>> {
        let _traced = trace::statement(|| Some(self.program), stmt);
        let temp = self.temp_statement(stmt, "alloc")?;
        let stream = self.check(stmt, "alloc", true)?;
        let span = u64::try_from(bytes)
            .ok()
            .and_then(|b| b.max(1).checked_next_multiple_of(256));
        let (Some(ptr), Some(next)) = (
            Some(self.next_temp),
            span.and_then(|s| self.next_temp.checked_add(s)),
        ) else {
            return Err(Error::InvalidArgument(format!(
                "a temporary of {bytes} bytes does not fit the plan's address space"
            ))
            .in_statement(stmt));
        };
        self.next_temp = next;
        let range = DeviceRange {
            device: DeviceRange::PLANNING,
            ptr,
            bytes,
        };
        let first = self.ops.len();
        self.operation(
            stmt,
            stream,
            vec![BufferAccess {
                range,
                mode: AccessMode::Write,
            }],
            None,
        );
        self.temps.push(PlanTemp {
            temp,
            bytes,
            alloc: first,
            free: None,
        });
        self.logged(stmt, first);
        Ok(TempMemory::new(scope, temp, range))
    }

    /// An operation writing the temporary's whole memory: every use on every stream must be
    /// ordered before it.
    fn free(&mut self, stmt: &'static Statement, memory: TempMemory<'_>) -> Result<()> {
        let _traced = trace::statement(|| Some(self.program), stmt);
        let temp = self.temp_statement(stmt, "free")?;
        let stream = self.check(stmt, "free", true)?;
        let range = memory.range();
        let first = self.ops.len();
        let Some(live) = self.temps.iter_mut().rev().find(|t| {
            t.temp == temp && t.free.is_none() && self.ops[t.alloc].accesses[0].range == range
        }) else {
            return Err(Error::InvalidArgument(format!(
                "the memory freed is not temporary {temp} as the plan allocated it; free a \
                 temporary with the memory its own allocation returned"
            ))
            .in_statement(stmt));
        };
        live.free = Some(first);
        self.operation(
            stmt,
            stream,
            vec![BufferAccess {
                range,
                mode: AccessMode::Write,
            }],
            None,
        );
        self.logged(stmt, first);
        Ok(())
    }

    fn wait_stream(&mut self, stmt: &'static Statement) -> Result<()> {
        let _traced = trace::statement(|| Some(self.program), stmt);
        let StatementKind::WaitStream { stream: other } = stmt.kind else {
            return self.check(stmt, "wait_stream", false).map(drop);
        };
        let stream = self.check(stmt, "wait_stream", true)?;
        let other = self.stream_index(stmt, other, "waited-for stream")?;
        self.stream_waits(
            stream,
            other,
            Via::WaitStream {
                stream: other,
                wait: stmt,
            },
        );
        self.logged(stmt, self.ops.len());
        Ok(())
    }
}
