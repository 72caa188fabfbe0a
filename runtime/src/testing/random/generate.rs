//! How a seed becomes a [`RandomProgram`]: its control structure, then each statement's
//! stream and work, then the calls in issue order.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::plan::ProgramBuilder;
use crate::program::{AccessMode, Program, StatementKind};

use super::blocks::{block_extents, Block};
use super::calls::{Call, Place};
use super::options::RandomOptions;
use super::program::{RandomProgram, Shape};
use super::rng::XorShift;

/// What one statement does, as generated.
#[derive(Debug, Clone, Copy)]
enum Work {
    Launch {
        kernel: usize,
        buffer: usize,
        mode: AccessMode,
    },
    Fill {
        buffer: usize,
        start: usize,
        end: usize,
    },
    Copy {
        dst: Place,
        src: Place,
    },
    Host,
    /// A `call` writing buffer `dst` and reading buffer `src` (another one).
    Call {
        kernel: usize,
        dst: usize,
        src: usize,
    },
    Order,
    /// A device block.
    Block,
}

impl RandomProgram {
    /// The program of `seed` with the [default options](RandomOptions::default).
    pub fn new(seed: u64) -> RandomProgram {
        RandomProgram::with_options(seed, RandomOptions::default())
    }

    /// The program of `seed` under `options`. Counts beyond what a program can hold are
    /// clamped: at most [`RandomProgram::MAX_STREAMS`] streams, [`RandomProgram::MAX_EVENTS`]
    /// events, buffers and kernels, [`RandomProgram::MAX_STATEMENTS`] statements and
    /// [`RandomProgram::MAX_BUFFER_LEN`] elements per buffer.
    pub fn with_options(seed: u64, options: RandomOptions) -> RandomProgram {
        let mut rng = XorShift::new(seed);
        let clamp = |n: usize, max: usize| n.min(max);
        let stream_count = rng.between(
            clamp(options.streams.0, Self::MAX_STREAMS).max(1),
            clamp(options.streams.1, Self::MAX_STREAMS).max(1),
        );
        let event_count = rng.between(
            clamp(options.events.0, Self::MAX_EVENTS),
            clamp(options.events.1, Self::MAX_EVENTS),
        );
        let statement_count = rng.between(
            1,
            clamp(options.max_statements, Self::MAX_STATEMENTS).max(1),
        );
        let shape = Shape::of(&options);

        // The control structure first: which statements are issued, how often, in what order.
        let blocks = structure(&mut rng, &options, 0..statement_count, 0);
        let mut order = Vec::new();
        blocks.iter().for_each(|b| b.issue_order(&mut order));
        let mut issued = vec![false; statement_count];
        for &id in &order {
            issued[id] = true;
        }
        let mut in_body = vec![false; statement_count];
        let mut headers: Vec<(usize, u32)> = Vec::new();
        blocks
            .iter()
            .for_each(|b| b.device_bodies(false, &mut in_body, &mut headers));
        let mut header_of = vec![None; statement_count];
        for (flag, &(h, _)) in headers.iter().enumerate() {
            header_of[h] = Some(flag);
        }
        let mut extents = vec![None; statement_count];
        blocks.iter().for_each(|b| block_extents(b, &mut extents));
        // Inside device bodies: no host functions, no host copies.
        let body_options = RandomOptions {
            host_fns: false,
            host_copies: false,
            ..options.clone()
        };
        let body_shape = Shape { pinned: 0, ..shape };

        let mut b = ProgramBuilder::new(&format!("Random{seed:#x}"));
        b.file(&format!("<random program {seed:#x}>"));
        for s in 0..stream_count {
            b.stream(&format!("s{s}"));
        }
        for e in 0..event_count {
            b.event(&format!("e{e}"));
        }
        // The first issues of statements come in source order (a loop's first iteration
        // issues its body in order), so "recorded before" is tracked in source order over the
        // statements that are issued.
        let mut work: Vec<Work> = Vec::with_capacity(statement_count);
        let mut recorded = vec![false; event_count];
        // The innermost device body of each statement, each statement's stream, and the events
        // recorded in each body so far (in source order).
        let mut bodies = vec![None; statement_count];
        blocks
            .iter()
            .for_each(|b| b.innermost_bodies(None, &mut bodies));
        let mut streams = Vec::with_capacity(statement_count);
        let mut recorded_in: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
        for (id, &issued) in issued.iter().enumerate() {
            let mut stream = rng.below(stream_count);
            let body = bodies[id];
            if let (true, Some((header, _))) = (options.body_orderings, body)
                && rng.below(2) == 0
            {
                stream = streams[header];
            }
            streams.push(stream);
            if let (Some(flag), Some((otherwise, end))) = (header_of[id], extents[id]) {
                match otherwise {
                    None => b.while_block(stream, &format!("f{flag}"), end),
                    Some(o) => b.if_block(stream, &format!("f{flag}"), o, end),
                };
                work.push(Work::Block);
                continue;
            }
            let roll = rng.below(100);
            let mut event = (event_count > 0).then(|| rng.below(event_count));
            let other = (stream + 1 + rng.below(stream_count.max(2) - 1)) % stream_count;
            if options.body_orderings && (65..=84).contains(&roll) {
                let here = body.and_then(|k| recorded_in.get(&k));
                if let (Some(here), Some((header, _))) = (here.filter(|h| !h.is_empty()), body)
                    && rng.below(4) != 0
                {
                    event = Some(here[rng.below(here.len())]);
                    if rng.below(2) == 0 {
                        stream = streams[header];
                        streams[id] = stream;
                    }
                }
            }
            match (roll, event) {
                (45..=64, Some(e)) => {
                    b.record(stream, e);
                    recorded[e] |= issued;
                    if let Some(k) = body {
                        recorded_in.entry(k).or_default().push(e);
                    }
                    work.push(Work::Order);
                    continue;
                }
                (65..=84, Some(e)) if options.waits_on_unrecorded || recorded[e] => {
                    b.wait(stream, e);
                    work.push(Work::Order);
                    continue;
                }
                (85.., _) if other != stream => {
                    b.wait_stream(stream, other);
                    work.push(Work::Order);
                    continue;
                }
                _ => {}
            }
            let w = if in_body[id] {
                operation(&mut rng, &body_options, body_shape)
            } else {
                operation(&mut rng, &options, shape)
            };
            let name = |p: Place| {
                if p.pinned {
                    format!("h{}", p.buffer)
                } else {
                    format!("b{}", p.buffer)
                }
            };
            match w {
                Work::Launch {
                    kernel,
                    buffer,
                    mode,
                } => b.launch(
                    stream,
                    &format!("k{kernel}"),
                    &[(&format!("b{buffer}"), mode)],
                ),
                Work::Fill { buffer, .. } => b.fill(stream, &format!("b{buffer}")),
                Work::Call { dst, src, .. } => b.call(
                    stream,
                    "op",
                    &[
                        (&format!("b{dst}"), AccessMode::Write),
                        (&format!("b{src}"), AccessMode::Read),
                    ],
                ),
                Work::Copy { dst, src } => b.copy(stream, &name(dst), &name(src)),
                // `operation` makes no `Order` nor `Block`.
                Work::Host | Work::Order | Work::Block => b.host(stream),
            };
            work.push(w);
        }
        let program = b.build();

        let mut calls = Vec::with_capacity(order.len());
        let mut ops = 0u32;
        emit(&blocks, program, &work, &headers, &mut calls, &mut ops);
        RandomProgram {
            seed,
            options,
            program,
            blocks,
            calls,
            flag_values: headers.iter().map(|&(_, v)| v).collect(),
        }
    }
}

/// Groups `range` into runs, `for`s and `if`s, nested at most [`RandomProgram::MAX_NESTING`]
/// deep.
fn structure(
    rng: &mut XorShift,
    options: &RandomOptions,
    range: Range<usize>,
    depth: usize,
) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut at = range.start;
    while at < range.end {
        // Bodies made to exercise their orderings are longer.
        let most = if options.body_orderings { 24 } else { 12 };
        let len = rng.between(1, (range.end - at).min(most));
        let part = at..at + len;
        let nest = depth < RandomProgram::MAX_NESTING;
        // Bodies made to exercise their orderings nest one device block deeper.
        let device_depth = RandomProgram::MAX_NESTING + usize::from(options.body_orderings);
        let device = depth < device_depth && options.device_blocks && len >= 2;
        let block = match rng.below(5) {
            0 if nest && options.loops => Block::For {
                times: rng.between(2, 3),
                body: structure(rng, options, part, depth + 1),
            },
            1 if nest && options.conditionals => Block::If {
                taken: rng.below(2) == 0,
                body: structure(rng, options, part, depth + 1),
            },
            2 if device => Block::DeviceWhile {
                header: part.start,
                limit: rng.below(4) as u32,
                body: structure(rng, options, part.start + 1..part.end, depth + 1),
            },
            3 if device => {
                let mid = rng.between(part.start + 1, part.end);
                Block::DeviceIf {
                    header: part.start,
                    taken: rng.below(2) == 0,
                    then: structure(rng, options, part.start + 1..mid, depth + 1),
                    otherwise: structure(rng, options, mid..part.end, depth + 1),
                }
            }
            _ => Block::Run(part),
        };
        // Consecutive runs are one run.
        match (blocks.last_mut(), block) {
            (Some(Block::Run(last)), Block::Run(next)) => last.end = next.end,
            (_, block) => blocks.push(block),
        }
        at += len;
    }
    blocks
}

/// The calls of `blocks` in issue order, operations numbered from `*ops` (each device body
/// numbers its own from 0).
fn emit(
    blocks: &[Block],
    program: &'static Program,
    work: &[Work],
    headers: &[(usize, u32)],
    calls: &mut Vec<Call>,
    ops: &mut u32,
) {
    for block in blocks {
        match block {
            Block::Run(r) => {
                for id in r.clone() {
                    let call = call_of(program, id, work[id], *ops);
                    if call.value().is_some() {
                        *ops += 1;
                    }
                    calls.push(call);
                }
            }
            Block::For { times, body } => {
                for _ in 0..*times {
                    emit(body, program, work, headers, calls, ops);
                }
            }
            Block::If { taken, body } => {
                if *taken {
                    emit(body, program, work, headers, calls, ops);
                }
            }
            Block::DeviceWhile {
                header,
                limit,
                body,
            } => emit_block(
                *header,
                Some(*limit),
                [body, &[]],
                program,
                work,
                headers,
                calls,
                ops,
            ),
            Block::DeviceIf {
                header,
                then,
                otherwise,
                ..
            } => emit_block(
                *header,
                None,
                [then, otherwise],
                program,
                work,
                headers,
                calls,
                ops,
            ),
        }
    }
}

/// A device block's call, then its bodies' calls (`then`, then `otherwise`), each body's
/// operations numbered from 0; the block itself is operation `*ops`.
#[allow(clippy::too_many_arguments)]
fn emit_block(
    header: usize,
    limit: Option<u32>,
    [then, otherwise]: [&[Block]; 2],
    program: &'static Program,
    work: &[Work],
    headers: &[(usize, u32)],
    calls: &mut Vec<Call>,
    ops: &mut u32,
) {
    let at = calls.len();
    let statement = &program.statements[header];
    let flag = headers.iter().position(|&(h, _)| h == header).unwrap_or(0);
    // A placeholder until the bodies' extents are known.
    calls.push(Call::Record(statement));
    emit(then, program, work, headers, calls, &mut 0);
    let mid = calls.len();
    emit(otherwise, program, work, headers, calls, &mut 0);
    let end = calls.len();
    calls[at] = Call::Block {
        statement,
        flag,
        limit,
        then: at + 1..mid,
        otherwise: mid..end,
        value: *ops,
    };
    *ops += 1;
}

/// The call of statement `id`, which generated as `work`, numbered `value` if an operation.
fn call_of(program: &'static Program, id: usize, work: Work, value: u32) -> Call {
    let statement = &program.statements[id];
    match (statement.kind, work) {
        (
            StatementKind::Launch { .. },
            Work::Launch {
                kernel,
                buffer,
                mode,
            },
        ) => Call::Launch {
            statement,
            kernel,
            buffer,
            mode,
            value,
        },
        (StatementKind::Fill, Work::Fill { buffer, start, end }) => Call::Fill {
            statement,
            buffer,
            start,
            end,
            value,
        },
        (StatementKind::Copy, Work::Copy { dst, src }) => Call::Copy {
            statement,
            dst,
            src,
            value,
        },
        (StatementKind::Host, _) => Call::Host { statement, value },
        (StatementKind::Call { .. }, Work::Call { kernel, dst, src }) => Call::Call {
            statement,
            kernel,
            dst,
            src,
            value,
        },
        (StatementKind::Record { .. }, _) => Call::Record(statement),
        (StatementKind::Wait { .. }, _) => Call::Wait(statement),
        _ => Call::WaitStream(statement),
    }
}

/// A random element range of `len` elements: the whole of it, or (when `sub`) half the time
/// a random non-empty part.
fn range_in(rng: &mut XorShift, len: usize, sub: bool) -> (usize, usize) {
    if !sub || rng.below(2) == 0 {
        (0, len)
    } else {
        let n = rng.between(1, len);
        let start = rng.below(len - n + 1);
        (start, start + n)
    }
}

/// A random operation among those `options` allow.
fn operation(rng: &mut XorShift, options: &RandomOptions, shape: Shape) -> Work {
    let (len, sub) = (shape.buffer_len, options.sub_ranges);
    let weights = [
        (8, true),
        (3, options.fills),
        (4, options.copies),
        (2, shape.pinned > 0),
        (2, shape.pinned > 0),
        (2, options.host_fns),
        (3, options.calls && shape.buffers >= 2),
    ];
    let total: usize = weights.iter().filter(|w| w.1).map(|w| w.0).sum();
    let mut roll = rng.below(total);
    let mut kind = 0;
    for (i, &(weight, on)) in weights.iter().enumerate() {
        if !on {
            continue;
        }
        if roll < weight {
            kind = i;
            break;
        }
        roll -= weight;
    }
    let device = |buffer: usize, (start, end): (usize, usize)| Place {
        pinned: false,
        buffer,
        start,
        end,
    };
    let work = match kind {
        1 => {
            let buffer = rng.below(shape.buffers);
            let (start, end) = range_in(rng, len, sub);
            Some(Work::Fill { buffer, start, end })
        }
        2 => {
            let src = rng.below(shape.buffers);
            let same = sub && len >= 2 && (shape.buffers == 1 || rng.below(4) == 0);
            if same {
                // Two disjoint ranges of one buffer.
                let n = rng.between(1, len / 2);
                let first = rng.below(len - 2 * n + 1);
                let second = first + n + rng.below(len - 2 * n - first + 1);
                let (a, b) = ((first, first + n), (second, second + n));
                let (d, s) = if rng.below(2) == 0 { (a, b) } else { (b, a) };
                Some(Work::Copy {
                    dst: device(src, d),
                    src: device(src, s),
                })
            } else if shape.buffers >= 2 {
                let dst = (src + 1 + rng.below(shape.buffers - 1)) % shape.buffers;
                let (d, s) = if !sub || rng.below(2) == 0 {
                    ((0, len), (0, len))
                } else {
                    let n = rng.between(1, len);
                    let (a, b) = (rng.below(len - n + 1), rng.below(len - n + 1));
                    ((a, a + n), (b, b + n))
                };
                Some(Work::Copy {
                    dst: device(dst, d),
                    src: device(src, s),
                })
            } else {
                None
            }
        }
        3 | 4 => {
            let pinned = Place {
                pinned: true,
                buffer: rng.below(shape.pinned),
                start: 0,
                end: shape.pinned_len,
            };
            let start = if sub {
                rng.below(len - shape.pinned_len + 1)
            } else {
                0
            };
            let dev = device(rng.below(shape.buffers), (start, start + shape.pinned_len));
            Some(if kind == 3 {
                Work::Copy {
                    dst: dev,
                    src: pinned,
                }
            } else {
                Work::Copy {
                    dst: pinned,
                    src: dev,
                }
            })
        }
        5 => Some(Work::Host),
        6 => {
            let src = rng.below(shape.buffers);
            let dst = (src + 1 + rng.below(shape.buffers - 1)) % shape.buffers;
            Some(Work::Call {
                kernel: rng.below(shape.kernels),
                dst,
                src,
            })
        }
        _ => None,
    };
    work.unwrap_or_else(|| Work::Launch {
        buffer: rng.below(shape.buffers),
        kernel: rng.below(shape.kernels),
        mode: if rng.below(2) == 0 {
            AccessMode::Read
        } else {
            AccessMode::Write
        },
    })
}
