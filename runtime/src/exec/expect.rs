//! What a checked run must issue: the statements its plan saw, in the same order, on the same
//! memory.
//!
//! [`crate::Eager::check`] and [`crate::Capture::check`] judge a pipeline by its plan, which
//! issues the pipeline once into a [`crate::Planner`]; the run then issues it again. A pipeline
//! whose parameters have interior mutability (a `&Cell<usize>` feeding a slice range, say) can
//! issue something else the second time, so the run compares every statement with the plan's
//! log before it reaches a stream, and stops at the first that differs
//! ([`Error::IssueChanged`]). What was issued before it is a prefix of the checked program,
//! which is as free of races as the whole.

use std::fmt::Write as _;

use crate::error::{Error, Result};
use crate::operand::{BufferAccess, DeviceRange};
use crate::plan::Plan;
use crate::program::Statement;

/// A checked plan and where the run stands in it.
#[derive(Debug)]
pub(crate) struct Expected {
    plan: Box<Plan>,
    /// The plan (root, or a body) each level of the run is in, innermost last.
    frames: Vec<Cursor>,
    /// The temporaries allocated so far and not freed: the run's memory and the plan's. The
    /// plan names a temporary by an address of its own, so the run's accesses to it are
    /// compared at the plan's address.
    temps: Vec<(DeviceRange, DeviceRange)>,
}

/// A position in one plan's log.
#[derive(Debug)]
struct Cursor {
    /// Indices into [`Plan::bodies`] from the root to this plan; `None` for a body the plan
    /// has none of (an `if` without `else`), which must issue nothing.
    path: Option<Vec<usize>>,
    /// The next entry of the log.
    pos: usize,
    /// The operation of the device block matched last on this level, whose bodies come next.
    block: Option<usize>,
}

impl Expected {
    /// Expects the run to issue what `plan` was built from.
    pub(crate) fn new(plan: Box<Plan>) -> Expected {
        Expected {
            plan,
            frames: vec![Cursor {
                path: Some(Vec::new()),
                pos: 0,
                block: None,
            }],
            temps: Vec::new(),
        }
    }

    /// The checked plan, for a capture to verify its graph against.
    pub(crate) fn into_plan(self) -> Box<Plan> {
        self.plan
    }

    /// The run issues `stmt`, whose operations are issued by `parts` (one statement each,
    /// touching those accesses): it must be the plan's next statement, on the same memory.
    pub(crate) fn statement(
        &mut self,
        stmt: &'static Statement,
        parts: &[(&'static Statement, Vec<BufferAccess>)],
    ) -> Result<()> {
        if !self.temps.is_empty() {
            let parts: Vec<_> = parts
                .iter()
                .map(|(part, accesses)| (*part, self.in_plan_terms(accesses)))
                .collect();
            return self.compare(stmt, &parts);
        }
        self.compare(stmt, parts)
    }

    /// The run allocates `range` for the temporary of `stmt`, an `Alloc` statement: it must be
    /// the plan's next statement, of the same size; later accesses to `range` are compared at
    /// the plan's address for it.
    pub(crate) fn alloc(&mut self, stmt: &'static Statement, range: DeviceRange) -> Result<()> {
        let mut planned = None;
        self.next(stmt, |plan, mut ops| {
            let access = ops.next().and_then(|op| plan.ops()[op].accesses.first());
            planned = access.map(|a| a.range);
            planned.is_some_and(|p| p.bytes == range.bytes)
        })?;
        if let Some(planned) = planned {
            self.temps.push((range, planned));
        }
        Ok(())
    }

    /// The run frees the temporary at `range` with `stmt`, a `Free` statement: it must be the
    /// plan's next statement, on the same temporary.
    pub(crate) fn free(&mut self, stmt: &'static Statement, range: DeviceRange) -> Result<()> {
        let access = BufferAccess {
            range,
            mode: crate::program::AccessMode::Write,
        };
        self.statement(stmt, &[(stmt, vec![access])])?;
        self.temps.retain(|(run, _)| *run != range);
        Ok(())
    }

    /// `accesses` with every range inside a temporary moved to the plan's address for it.
    fn in_plan_terms(&self, accesses: &[BufferAccess]) -> Vec<BufferAccess> {
        accesses
            .iter()
            .map(|a| {
                let r = a.range;
                let found = self.temps.iter().find(|(run, _)| {
                    run.device == r.device
                        && r.ptr >= run.ptr
                        && r.ptr - run.ptr + r.bytes as u64 <= run.bytes as u64
                });
                match found {
                    Some((run, planned)) => BufferAccess {
                        range: DeviceRange {
                            device: planned.device,
                            ptr: planned.ptr + (r.ptr - run.ptr),
                            bytes: r.bytes,
                        },
                        mode: a.mode,
                    },
                    None => *a,
                }
            })
            .collect()
    }

    fn compare(
        &mut self,
        stmt: &'static Statement,
        parts: &[(&'static Statement, Vec<BufferAccess>)],
    ) -> Result<()> {
        self.next(stmt, |plan, ops| {
            ops.len() == parts.len()
                && ops.zip(parts).all(|(op, (part, accesses))| {
                    let op = &plan.ops()[op];
                    std::ptr::eq(op.statement, *part) && op.accesses == *accesses
                })
        })
        .map(drop)
    }

    /// The run issues the device block `stmt` reading `flag`; its bodies are checked as they
    /// are issued ([`Expected::enter_body`]).
    pub(crate) fn block(&mut self, stmt: &'static Statement, flag: BufferAccess) -> Result<()> {
        let block = self.next(stmt, |plan, mut ops| {
            ops.next()
                .is_some_and(|op| plan.ops()[op].accesses.first() == Some(&flag))
        })?;
        if let Some(top) = self.frames.last_mut() {
            top.block = block;
        }
        Ok(())
    }

    /// The run issues `branch` of the block matched last: its statements follow that body's
    /// plan (anew for each iteration of a `while`).
    pub(crate) fn enter_body(&mut self, branch: usize) -> Result<()> {
        let Some(top) = self.frames.last() else {
            return Ok(());
        };
        let path = match (&top.path, top.block) {
            (Some(path), Some(block)) => self
                .plan_at(path)
                .bodies()
                .iter()
                .position(|b| b.block == block && b.branch == branch)
                .map(|i| {
                    let mut deeper = path.clone();
                    deeper.push(i);
                    deeper
                }),
            _ => None,
        };
        self.frames.push(Cursor {
            path,
            pos: 0,
            block: None,
        });
        Ok(())
    }

    /// The body entered last ends: it must have issued its whole plan.
    pub(crate) fn leave_body(&mut self) -> Result<()> {
        let done = self.at_end("the end of a device block's body");
        if self.frames.len() > 1 {
            self.frames.pop();
        }
        done
    }

    /// The pipeline's issue ends: it must have issued the whole plan.
    pub(crate) fn finish(&self) -> Result<()> {
        self.at_end("the end of the pipeline")
    }

    fn plan_at(&self, path: &[usize]) -> &Plan {
        path.iter()
            .fold(&*self.plan, |plan, &i| &plan.bodies()[i].plan)
    }

    /// Matches the next log entry of the innermost level with `stmt` and `same`; returns the
    /// entry's first operation.
    fn next(
        &mut self,
        stmt: &'static Statement,
        same: impl FnOnce(&Plan, std::ops::Range<usize>) -> bool,
    ) -> Result<Option<usize>> {
        let Some(top) = self.frames.last() else {
            return Ok(None);
        };
        let pos = top.pos;
        let plan = top.path.as_deref().map(|path| self.plan_at(path));
        let entry = plan.and_then(|p| p.log.get(pos).map(|e| (p, e)));
        let matched = match entry {
            Some((plan, e)) if std::ptr::eq(e.statement, stmt) => {
                if same(plan, e.ops.clone()) {
                    Ok(e.ops.start)
                } else {
                    Err(self.changed(
                        describe(Some(plan), e.statement, e.ops.clone()),
                        format!("{} on other memory", describe(None, stmt, 0..0)),
                    ))
                }
            }
            Some((plan, e)) => Err(self.changed(
                describe(Some(plan), e.statement, e.ops.clone()),
                describe(None, stmt, 0..0),
            )),
            None => Err(self.changed(
                "no further statement here".to_owned(),
                describe(None, stmt, 0..0),
            )),
        }?;
        if let Some(top) = self.frames.last_mut() {
            top.pos += 1;
        }
        Ok(Some(matched))
    }

    fn at_end(&self, what: &str) -> Result<()> {
        let Some(top) = self.frames.last() else {
            return Ok(());
        };
        let Some(plan) = top.path.as_deref().map(|path| self.plan_at(path)) else {
            return Ok(());
        };
        match plan.log.get(top.pos) {
            None => Ok(()),
            Some(e) => Err(self.changed(
                describe(Some(plan), e.statement, e.ops.clone()),
                what.to_owned(),
            )),
        }
    }

    fn changed(&self, expected: String, found: String) -> Error {
        Error::IssueChanged {
            pipeline: self.plan.program().name,
            expected,
            found,
        }
    }
}

/// A statement for the message: its text and place, and with `plan` the memory it touched.
fn describe(plan: Option<&Plan>, stmt: &'static Statement, ops: std::ops::Range<usize>) -> String {
    let mut out = format!("`{}` (at {})", stmt.text, stmt.location);
    if let Some(plan) = plan {
        let accesses: Vec<&BufferAccess> =
            ops.flat_map(|op| plan.ops()[op].accesses.iter()).collect();
        if !accesses.is_empty() {
            out.push_str(" touching");
            for a in accesses {
                let _ = write!(
                    out,
                    " [{:#x}, +{} bytes) ({:?})",
                    a.range.ptr, a.range.bytes, a.mode
                );
            }
        }
    }
    out
}
