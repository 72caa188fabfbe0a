//! Device blocks in the plan: each body a nested plan, the block one operation on its stream.

use crate::error::{Error, Result};
use crate::issue::Body;
use crate::memory::{DeviceFlag, DeviceMemory};
use crate::operand::BufferAccess;
use crate::plan::{Plan, PlanBody, Via};
use crate::program::{AccessMode, Statement};

use super::Planner;

impl Planner {
    /// Plans one body of block `stmt` (branch 0: the `while` body or `then`; 1: `else`; `k`:
    /// arm `k` of a `switch`) as a
    /// nested pipeline on the block's stream: every stream starts from the fork at the body's
    /// start, events recorded outside are not visible, and the body issues only its own
    /// statements.
    pub(super) fn plan_body(
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
        let Some(range) = ranges.get(branch) else {
            return Err(Error::InvalidArgument(format!(
                "body {branch} of a device block with {} bodies was issued",
                ranges.len()
            ))
            .in_statement(stmt));
        };
        nested.scope = Some(range.clone());
        let issued = body(&mut nested);
        self.occurrences = std::mem::take(&mut nested.occurrences);
        issued?;
        Ok(nested.finish())
    }

    /// The block itself: one operation on its stream that reads the flag and touches what
    /// every operation of its bodies touches. Inside a body, the block's stream first waits
    /// for the stream of the body's previous block, as `wait_stream` does: the blocks of one
    /// body run one after another ([`Via::Block`]).
    pub(super) fn block(
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
        if self.scope.is_some()
            && let Some(previous) = self.last_block.replace(stream)
        {
            let via = Via::Block {
                stream: previous,
                block: stmt,
            };
            self.stream_waits(stream, previous, via);
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
}
