//! How a seed becomes a [`RandomProgram`]: its control structure, then each statement's
//! stream and work (with the temporaries placed), then the calls in issue order.

use std::ops::Range;

use crate::plan::ProgramBuilder;
use crate::program::{AccessMode, Program};

use super::blocks::{block_extents, Block, Extent};
use super::calls::{Call, Memory};
use super::options::RandomOptions;
use super::program::{RandomProgram, Shape};
use super::rng::XorShift;
use super::statements::{Layout, Statements, Work};
use super::temps::place;

impl RandomProgram {
    /// The program of `seed` with the [default options](RandomOptions::default).
    pub fn new(seed: u64) -> RandomProgram {
        RandomProgram::with_options(seed, RandomOptions::default())
    }

    /// The program of `seed` under `options`. Counts beyond what a program can hold are
    /// clamped: at most [`RandomProgram::MAX_STREAMS`] streams, [`RandomProgram::MAX_EVENTS`]
    /// events, buffers and kernels, [`RandomProgram::MAX_TEMPS`] temporaries,
    /// [`RandomProgram::MAX_STATEMENTS`] statements and [`RandomProgram::MAX_BUFFER_LEN`]
    /// elements per buffer or temporary.
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
        let mut header = vec![false; statement_count];
        for &(h, _) in &headers {
            header[h] = true;
        }
        // The innermost device body of each statement.
        let mut bodies = vec![None; statement_count];
        blocks
            .iter()
            .for_each(|b| b.innermost_bodies(None, &mut bodies));
        let layout = Layout {
            stream_count,
            event_count,
            issued,
            in_body,
            header,
            bodies,
        };

        // Then each statement, in source order, and the temporaries around them.
        let mut statements = Statements::new(&mut rng, &options, shape, layout);
        let placed = place(
            &mut statements,
            blocks,
            seed,
            &options,
            shape,
            (stream_count, event_count),
        );
        let blocks = placed.blocks;
        let mut headers: Vec<(usize, u32)> = Vec::new();
        let mut in_body = vec![false; placed.statements.len()];
        blocks
            .iter()
            .for_each(|b| b.device_bodies(false, &mut in_body, &mut headers));
        let program = build(
            seed,
            stream_count,
            event_count,
            &placed.statements,
            &placed.lens,
            &blocks,
            &headers,
        );

        let mut calls = Vec::with_capacity(order.len());
        let mut ops = 0u32;
        let work: Vec<Work> = placed.statements.iter().map(|&(_, w)| w).collect();
        emit(&blocks, program, &work, &headers, &mut calls, &mut ops);
        RandomProgram {
            seed,
            options,
            program,
            blocks,
            calls,
            flag_values: headers.iter().map(|&(_, v)| v).collect(),
            temp_lens: placed.lens,
        }
    }
}

/// The program of `statements` (stream and work, in source order) over `blocks`, with
/// temporaries of `lens` elements and the device blocks' flags numbered as in `headers`.
fn build(
    seed: u64,
    stream_count: usize,
    event_count: usize,
    statements: &[(usize, Work)],
    lens: &[usize],
    blocks: &[Block],
    headers: &[(usize, u32)],
) -> &'static Program {
    let mut extents = vec![None; statements.len()];
    blocks.iter().for_each(|b| block_extents(b, &mut extents));
    let mut b = ProgramBuilder::new(&format!("Random{seed:#x}"));
    b.file(&format!("<random program {seed:#x}>"));
    for s in 0..stream_count {
        b.stream(&format!("s{s}"));
    }
    for e in 0..event_count {
        b.event(&format!("e{e}"));
    }
    for t in 0..lens.len() {
        b.temp(&Memory::Temp(t).name(), "u32");
    }
    for (id, &(stream, work)) in statements.iter().enumerate() {
        match work {
            Work::Launch {
                kernel,
                memory,
                mode,
            } => b.launch(stream, &format!("k{kernel}"), &[(&memory.name(), mode)]),
            Work::Fill { memory, .. } => b.fill(stream, &memory.name()),
            Work::Call { dst, src, .. } => b.call(
                stream,
                "op",
                &[
                    (&dst.name(), AccessMode::Write),
                    (&src.name(), AccessMode::Read),
                ],
            ),
            Work::Copy { dst, src } => b.copy(stream, &dst.memory.name(), &src.memory.name()),
            Work::Host => b.host(stream),
            Work::Record(e) => b.record(stream, e),
            Work::Wait(e) => b.wait(stream, e),
            Work::WaitStream(other) => b.wait_stream(stream, other),
            Work::Alloc(t) => b.alloc(stream, t),
            Work::Free(t) => b.free(stream, t),
            Work::Block => {
                let flag = headers.iter().position(|&(h, _)| h == id).unwrap_or(0);
                match &extents[id] {
                    Some(Extent::If(otherwise, end)) => {
                        b.if_block(stream, &format!("f{flag}"), *otherwise, *end)
                    }
                    Some(Extent::While(end, false)) => {
                        b.while_block(stream, &format!("f{flag}"), *end)
                    }
                    Some(Extent::While(end, true)) => {
                        b.signalled_while_block(stream, &format!("f{flag}"), *end)
                    }
                    Some(Extent::Switch(arms, end)) => {
                        b.switch_block(stream, &format!("f{flag}"), arms, *end)
                    }
                    // A block statement is always a block's header.
                    None => b.host(stream),
                }
            }
        };
    }
    b.build()
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
                // Asked only with the option: a seed's program stays what it was without it.
                signalled: options.signalled_loops && rng.below(2) == 0,
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
            4 if device && options.switches => switch(rng, options, part, depth),
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

/// A device `switch` over `part` (its first statement the header): one to four arms of
/// distinct values 0 to 7 in random order, a last `_` arm half the time, the rest of `part`
/// cut among them (arms may be empty), the index 0 to 9.
fn switch(rng: &mut XorShift, options: &RandomOptions, part: Range<usize>, depth: usize) -> Block {
    let count = rng.between(1, 4);
    let mut values: Vec<u32> = (0..8).collect();
    for i in (1..values.len()).rev() {
        values.swap(i, rng.below(i + 1));
    }
    let default = rng.below(2) == 0;
    let mut cuts: Vec<usize> = (1..count)
        .map(|_| rng.between(part.start + 1, part.end))
        .collect();
    cuts.sort_unstable();
    cuts.push(part.end);
    let mut at = part.start + 1;
    let mut arms = Vec::with_capacity(count);
    for (k, &cut) in cuts.iter().enumerate() {
        let value = (k + 1 < count || !default).then_some(values[k]);
        arms.push((value, structure(rng, options, at..cut, depth + 1)));
        at = cut;
    }
    Block::DeviceSwitch {
        header: part.start,
        index: rng.below(10) as u32,
        arms,
    }
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
                signalled,
                body,
            } => emit_block(
                *header,
                (!signalled).then_some(*limit),
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
            Block::DeviceSwitch { header, arms, .. } => {
                let at = calls.len();
                let statement = &program.statements[*header];
                let flag = headers.iter().position(|&(h, _)| h == *header).unwrap_or(0);
                // A placeholder until the arms' extents are known.
                calls.push(Call::Record(statement));
                let mut ranges = Vec::with_capacity(arms.len());
                for (_, body) in arms {
                    let start = calls.len();
                    emit(body, program, work, headers, calls, &mut 0);
                    ranges.push(start..calls.len());
                }
                calls[at] = Call::Switch {
                    statement,
                    flag,
                    arms: ranges,
                    value: *ops,
                };
                *ops += 1;
            }
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
    match work {
        Work::Launch {
            kernel,
            memory,
            mode,
        } => Call::Launch {
            statement,
            kernel,
            memory,
            mode,
            value,
        },
        Work::Fill { memory, start, end } => Call::Fill {
            statement,
            memory,
            start,
            end,
            value,
        },
        Work::Copy { dst, src } => Call::Copy {
            statement,
            dst,
            src,
            value,
        },
        Work::Host => Call::Host { statement, value },
        Work::Call { kernel, dst, src } => Call::Call {
            statement,
            kernel,
            dst,
            src,
            value,
        },
        Work::Alloc(temp) => Call::Alloc {
            statement,
            temp,
            value,
        },
        Work::Free(temp) => Call::Free {
            statement,
            temp,
            value,
        },
        Work::Record(_) => Call::Record(statement),
        Work::Wait(_) => Call::Wait(statement),
        // A block's call is made by `emit_block`.
        Work::WaitStream(_) | Work::Block => Call::WaitStream(statement),
    }
}
