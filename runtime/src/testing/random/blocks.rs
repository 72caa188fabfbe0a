//! The control structure of a random program ([`Block`]) and the walks over it that
//! generation needs.

use std::ops::Range;

/// The control structure of a [`RandomProgram`](super::RandomProgram): its statements, in source order, grouped
/// into straight runs, `for` loops and `if`s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// Statements issued once each, in order (indices into [`Program::statements`](crate::program::Program::statements)).
    Run(Range<usize>),
    /// `for _ in 0..times { body }`.
    For {
        /// How often the body is issued (2 or 3).
        times: usize,
        /// The loop body.
        body: Vec<Block>,
    },
    /// `if condition { body }`, with the condition fixed for the program.
    If {
        /// Whether the body is issued.
        taken: bool,
        /// The body.
        body: Vec<Block>,
    },
    /// A device `while FLAG, limit = limit { body }` whose flag stays set: the body runs
    /// `limit` times. Statement `header` is the block itself.
    DeviceWhile {
        /// The block statement.
        header: usize,
        /// How often the body runs (0 to 3); unbounded for a signalled loop.
        limit: u32,
        /// Whether it is a signalled loop (`while FLAG, signalled`, no limit): see
        /// [`RandomOptions::signalled_loops`](super::RandomOptions::signalled_loops).
        signalled: bool,
        /// The body.
        body: Vec<Block>,
    },
    /// A device `if FLAG { then } else { otherwise }` with the flag fixed for the program.
    DeviceIf {
        /// The block statement.
        header: usize,
        /// Whether `then` runs (else `otherwise`).
        taken: bool,
        /// The `then` body.
        then: Vec<Block>,
        /// The `else` body (possibly empty).
        otherwise: Vec<Block>,
    },
    /// A device `switch INDEX { V0 => { … } … _ => { … } }` with the index fixed for the
    /// program: the arm of value `index` runs, else the `_` arm (`None`, last) if any, else
    /// none.
    DeviceSwitch {
        /// The block statement.
        header: usize,
        /// The index's value.
        index: u32,
        /// The arms in source order: value (`None` for `_`) and body (possibly empty).
        arms: Vec<(Option<u32>, Vec<Block>)>,
    },
}

impl Block {
    /// The statements of the block, in source order.
    pub fn statements(&self) -> Range<usize> {
        match self {
            Block::Run(r) => r.clone(),
            Block::For { body, .. } | Block::If { body, .. } => {
                let start = body.first().map_or(0, |b| b.statements().start);
                let end = body.last().map_or(start, |b| b.statements().end);
                start..end
            }
            Block::DeviceWhile { header, body, .. } => {
                *header..body.last().map_or(header + 1, |b| b.statements().end)
            }
            Block::DeviceIf {
                header,
                then,
                otherwise,
                ..
            } => {
                let end = otherwise
                    .last()
                    .or(then.last())
                    .map_or(header + 1, |b| b.statements().end);
                *header..end
            }
            Block::DeviceSwitch { header, arms, .. } => {
                let end = arms
                    .iter()
                    .rev()
                    .find_map(|(_, body)| body.last())
                    .map_or(header + 1, |b| b.statements().end);
                *header..end
            }
        }
    }

    /// For a device `switch`: the arm index value `index` picks, `None` for none.
    pub fn switch_arm(arms: &[(Option<u32>, Vec<Block>)], index: u32) -> Option<usize> {
        arms.iter()
            .position(|(v, _)| *v == Some(index))
            .or_else(|| arms.iter().position(|(v, _)| v.is_none()))
    }

    /// The same block over statements `by` further on.
    pub(super) fn shifted(&self, by: usize) -> Block {
        let all = |blocks: &[Block]| blocks.iter().map(|b| b.shifted(by)).collect();
        match self {
            Block::Run(r) => Block::Run(r.start + by..r.end + by),
            Block::For { times, body } => Block::For {
                times: *times,
                body: all(body),
            },
            Block::If { taken, body } => Block::If {
                taken: *taken,
                body: all(body),
            },
            Block::DeviceWhile {
                header,
                limit,
                signalled,
                body,
            } => Block::DeviceWhile {
                header: header + by,
                limit: *limit,
                signalled: *signalled,
                body: all(body),
            },
            Block::DeviceIf {
                header,
                taken,
                then,
                otherwise,
            } => Block::DeviceIf {
                header: header + by,
                taken: *taken,
                then: all(then),
                otherwise: all(otherwise),
            },
            Block::DeviceSwitch {
                header,
                index,
                arms,
            } => Block::DeviceSwitch {
                header: header + by,
                index: *index,
                arms: arms.iter().map(|(v, body)| (*v, all(body))).collect(),
            },
        }
    }

    /// Appends the statements this block issues, in issue order.
    pub(super) fn issue_order(&self, out: &mut Vec<usize>) {
        match self {
            Block::Run(r) => out.extend(r.clone()),
            Block::For { times, body } => {
                for _ in 0..*times {
                    body.iter().for_each(|b| b.issue_order(out));
                }
            }
            Block::If { taken, body } => {
                if *taken {
                    body.iter().for_each(|b| b.issue_order(out));
                }
            }
            // A block's bodies are issued once each (a capture and a plan issue them once,
            // whatever the device later decides).
            Block::DeviceWhile { header, body, .. } => {
                out.push(*header);
                body.iter().for_each(|b| b.issue_order(out));
            }
            Block::DeviceIf {
                header,
                then,
                otherwise,
                ..
            } => {
                out.push(*header);
                then.iter().for_each(|b| b.issue_order(out));
                otherwise.iter().for_each(|b| b.issue_order(out));
            }
            Block::DeviceSwitch { header, arms, .. } => {
                out.push(*header);
                arms.iter()
                    .flat_map(|(_, body)| body)
                    .for_each(|b| b.issue_order(out));
            }
        }
    }

    /// Sets `out[i]` to the innermost device body holding statement `i` (`(header, branch)`,
    /// branch 0 for a `while` body or `then`, 1 for `else`, `k` for arm `k` of a `switch`),
    /// `inside` for those of no block
    /// of its own.
    pub(super) fn innermost_bodies(
        &self,
        inside: Option<(usize, usize)>,
        out: &mut [Option<(usize, usize)>],
    ) {
        let mut mark = |i: usize| {
            if let Some(o) = out.get_mut(i) {
                *o = inside;
            }
        };
        match self {
            Block::Run(r) => r.clone().for_each(mark),
            Block::For { body, .. } | Block::If { body, .. } => {
                body.iter().for_each(|b| b.innermost_bodies(inside, out))
            }
            Block::DeviceWhile { header, body, .. } => {
                mark(*header);
                body.iter()
                    .for_each(|b| b.innermost_bodies(Some((*header, 0)), out));
            }
            Block::DeviceIf {
                header,
                then,
                otherwise,
                ..
            } => {
                mark(*header);
                then.iter()
                    .for_each(|b| b.innermost_bodies(Some((*header, 0)), out));
                otherwise
                    .iter()
                    .for_each(|b| b.innermost_bodies(Some((*header, 1)), out));
            }
            Block::DeviceSwitch { header, arms, .. } => {
                mark(*header);
                for (k, (_, body)) in arms.iter().enumerate() {
                    body.iter()
                        .for_each(|b| b.innermost_bodies(Some((*header, k)), out));
                }
            }
        }
    }

    /// Marks the statements inside device block bodies, and numbers the blocks' flags.
    pub(super) fn device_bodies(
        &self,
        inside: bool,
        in_body: &mut [bool],
        flags: &mut Vec<(usize, u32)>,
    ) {
        let mark = |r: Range<usize>, in_body: &mut [bool]| {
            for i in r {
                if let Some(b) = in_body.get_mut(i) {
                    *b = true;
                }
            }
        };
        match self {
            Block::Run(r) => {
                if inside {
                    mark(r.clone(), in_body);
                }
            }
            Block::For { body, .. } | Block::If { body, .. } => body
                .iter()
                .for_each(|b| b.device_bodies(inside, in_body, flags)),
            Block::DeviceWhile { header, body, .. } => {
                if inside {
                    mark(*header..header + 1, in_body);
                }
                flags.push((*header, 1));
                body.iter()
                    .for_each(|b| b.device_bodies(true, in_body, flags));
            }
            Block::DeviceIf {
                header,
                taken,
                then,
                otherwise,
            } => {
                if inside {
                    mark(*header..header + 1, in_body);
                }
                flags.push((*header, u32::from(*taken)));
                then.iter()
                    .chain(otherwise)
                    .for_each(|b| b.device_bodies(true, in_body, flags));
            }
            Block::DeviceSwitch {
                header,
                index,
                arms,
            } => {
                if inside {
                    mark(*header..header + 1, in_body);
                }
                flags.push((*header, *index));
                arms.iter()
                    .flat_map(|(_, body)| body)
                    .for_each(|b| b.device_bodies(true, in_body, flags));
            }
        }
    }
}

/// Where a device block's bodies lie (from [`block_extents`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Extent {
    /// A `while` ending before `end`; whether it is signalled.
    While(usize, bool),
    /// An `if` whose `else` starts at the first and which ends before the second.
    If(usize, usize),
    /// A `switch`: each arm's value and first statement, and the block's end.
    Switch(Vec<(Option<u32>, usize)>, usize),
}

/// For each device block header: where its bodies lie.
pub(super) fn block_extents(block: &Block, out: &mut [Option<Extent>]) {
    match block {
        Block::Run(_) => {}
        Block::For { body, .. } | Block::If { body, .. } => {
            body.iter().for_each(|b| block_extents(b, out))
        }
        Block::DeviceWhile {
            header,
            body,
            signalled,
            ..
        } => {
            out[*header] = Some(Extent::While(block.statements().end, *signalled));
            body.iter().for_each(|b| block_extents(b, out));
        }
        Block::DeviceIf {
            header,
            then,
            otherwise,
            ..
        } => {
            let end = block.statements().end;
            let mid = otherwise.first().map_or(end, |b| b.statements().start);
            out[*header] = Some(Extent::If(mid, end));
            then.iter()
                .chain(otherwise)
                .for_each(|b| block_extents(b, out));
        }
        Block::DeviceSwitch { header, arms, .. } => {
            let mut at = header + 1;
            let mut starts = Vec::with_capacity(arms.len());
            for (value, body) in arms {
                let start = body.first().map_or(at, |b| b.statements().start);
                at = body.last().map_or(start, |b| b.statements().end);
                starts.push((*value, start));
            }
            out[*header] = Some(Extent::Switch(starts, block.statements().end));
            arms.iter()
                .flat_map(|(_, body)| body)
                .for_each(|b| block_extents(b, out));
        }
    }
}
