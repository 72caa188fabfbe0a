//! Device blocks in a capture: a `while`, `if` or `switch` becomes a conditional node on the block's
//! stream, after a built-in kernel that copies the flag into the node's handle, and each body
//! is captured into its body graph (`cuStreamBeginCaptureToGraph`) on spare streams, ending in
//! the built-in kernel that sets the handle for the next iteration (or an empty kernel where
//! a branch captured nothing). Eagerly, the same block reads its flag back and loops on the
//! host (`exec/record.rs`); both read the flag at the same points.

use std::panic::resume_unwind;
use std::sync::Arc;

use super::book::Recording;
use crate::error::{Error, Result};
use crate::exec::record::Issue;
use crate::ffi::conditional::{self as cond, CondFlag, CondKernels, CondKind};
use crate::issue::Body;
use crate::memory::{DeviceBuffer, DeviceFlag};
use crate::program::{Program, Statement, StatementKind};
use crate::stream::Stream;

/// Loads the built-in kernels of captured device blocks into `kernels` (once) when `program`
/// has blocks, before a capture begins: module loads are not for capturing threads.
///
/// Returns the iteration counters of this capture when `program` has `while` blocks (one
/// word per statement; the graph keeps them).
pub(super) fn prepare(
    kernels: &mut Option<Arc<CondKernels>>,
    origin: &Stream,
    program: &'static Program,
) -> Result<Option<DeviceBuffer<u32>>> {
    if !program.statements.iter().any(|s| s.kind.is_block()) {
        return Ok(None);
    }
    if kernels.is_none() {
        *kernels = Some(cond::kernels(origin.ctx())?);
    }
    if program
        .statements
        .iter()
        .any(|s| matches!(s.kind, StatementKind::While { .. }))
    {
        return Ok(Some(DeviceBuffer::zeros(
            &origin.device(),
            program.statements.len(),
        )?));
    }
    Ok(None)
}

/// A block captured: the built-in kernel and the conditional node on the block's stream,
/// then each body captured into its body graph on this depth's spare streams.
pub(super) fn capture_block(
    issue: &mut Issue<'_, Recording>,
    stmt: &'static Statement,
    flag: &DeviceFlag,
    kind: CondKind,
    limit: Option<u32>,
    bodies: &mut [&mut Body<'_>],
) -> Result<()> {
    if flag.is_planning() {
        return Err(Error::PlanningOnly {
            what: "device flag",
        });
    }
    let kernels = issue.rec.kernels.clone().ok_or(Error::Internal {
        invariant: "the built-in kernels of device blocks are loaded before a capture with blocks",
    })?;
    let counters = match (kind, &issue.rec.counters) {
        (CondKind::While, Some(c)) if stmt.id < c.len() => Some(c),
        (CondKind::While, _) => {
            return Err(Error::Internal {
                invariant: "the iteration counters of device loops are allocated before a capture \
                            with `while` blocks, one word per statement",
            })
        }
        _ => None,
    };
    let cflag = CondFlag {
        value: flag.device_ptr(),
        // Word `stmt.id` of the capture's counters (checked in bounds above); an `if`
        // never counts.
        counter: counters.map_or(0, |c| c.device_ptr() + 4 * stmt.id as u64),
        limit,
        signalled: matches!(
            stmt.kind,
            StatementKind::While {
                signalled: true,
                ..
            }
        ),
    };
    let stream = issue.frame.stream(stmt.stream)?.clone();
    let book = &mut issue.rec.book;
    let (parent, mode) = (book.current_body(), book.mode);
    let node = cond::add_conditional(stream.as_cudarc(), &kernels, kind, &cflag, parent)?;
    let block = book.note_block(stmt, &node, flag, counters, limit, kernels.module())?;
    let spares = issue.frame.body_streams()?;
    let body_stream = spares.get(stmt.stream).cloned().ok_or(Error::Internal {
        invariant: "every declared stream has a spare stream for body captures",
    })?;
    if matches!(kind, CondKind::Switch { .. }) && node.bodies.len() != bodies.len() {
        return Err(Error::Internal {
            invariant: "a captured `switch` has one body graph per arm",
        });
    }
    for (branch, body) in bodies.iter_mut().enumerate().take(node.bodies.len()) {
        let graph = node.bodies[branch];
        cond::begin_body_capture(body_stream.as_cudarc(), graph, mode)?;
        let index = issue.rec.book.enter_body(graph, block, branch);
        let issued = issue.run_body(stmt.stream, branch, Some(spares.clone()), &mut **body);
        let book = &mut issue.rec.book;
        let empty = book.is_empty(index);
        let next = match (&issued, kind) {
            // A signalled loop's kernels set its condition: no kernel reads the flag back.
            (Ok(Ok(())), CondKind::While) if cflag.signalled => {
                if empty {
                    cond::launch_nop(body_stream.as_cudarc(), &kernels).map(Some)
                } else {
                    Ok(None)
                }
            }
            (Ok(Ok(())), CondKind::While) => {
                // A `while` body of the `next` kernel alone faulted now and then on driver
                // 580 when several ran side by side; an empty kernel before it did not.
                let filler = if empty {
                    cond::launch_nop(body_stream.as_cudarc(), &kernels).map(Some)
                } else {
                    Ok(None)
                };
                match filler {
                    Ok(f) => {
                        if let Some(f) = f {
                            book.note_filler(f);
                        }
                        cond::launch_next(body_stream.as_cudarc(), &kernels, node.handle, &cflag)
                            .map(Some)
                    }
                    Err(e) => Err(e),
                }
            }
            (Ok(Ok(())), CondKind::If { .. } | CondKind::Switch { .. }) if empty => {
                cond::launch_nop(body_stream.as_cudarc(), &kernels).map(Some)
            }
            _ => Ok(None),
        };
        if let Ok(Some(n)) = &next {
            book.note_sink(*n);
        }
        book.leave_body();
        let ended = cond::end_body_capture(body_stream.as_cudarc());
        match issued {
            Err(panic) => resume_unwind(panic),
            Ok(r) => r?,
        }
        next?;
        ended.map_err(|e| Error::driver("cuStreamEndCapture", e))?;
    }
    if cflag.signalled {
        let clear = cond::clear_signal(stream.as_cudarc(), &cflag)?;
        issue.rec.book.note_block_tail(block, clear);
    }
    Ok(())
}
