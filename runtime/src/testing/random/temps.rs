//! Temporaries in random programs ([`RandomOptions::temps`](super::RandomOptions::temps)):
//! drawing the statements in source order, choosing which of them use a temporary in place of
//! a device buffer, and placing each temporary's allocation and release.
//!
//! Each temporary is allocated at the top level before one of the program's top-level items
//! (a statement outside every block, or a block), on a random stream, and filled whole right
//! after, on that stream: every later use follows the fill, so nothing reads it unwritten.
//! Statements are drawn as without temporaries; a drawn operation then swaps some operands
//! for temporaries, on numbers of its own, where the happens-before order so far puts its
//! stream after every earlier use of the temporary (a write) or after every earlier write
//! (a read): the uses of a temporary never race, with one another or with its allocation.
//! That order is followed with vector clocks over the issue order of the top-level
//! statements: an operation ticks its stream's clock, `record`, `wait` and `wait_stream`
//! carry clocks as the rules of the model carry frontiers. Clocks only grow along the issue
//! order, so a statement issued again (in a `for`) is checked again and given back its drawn
//! operands if the check fails there; a device block is one operation on its stream, and its
//! bodies use a temporary only on that stream (and on the streams of blocks nested on it),
//! which orders those uses inside the body too.
//!
//! After the last top-level item that uses a temporary, it is released on a stream whose
//! clock covers every use, or, when none does, on the origin after it waits for each stream
//! that used it.

use std::ops::Range;

use crate::program::AccessMode;

use super::blocks::Block;
use super::calls::{Memory, Place};
use super::options::RandomOptions;
use super::program::{RandomProgram, Shape};
use super::rng::XorShift;
use super::statements::{disjoint, range_in, Statements, Work};

/// A program's statements with its temporaries placed, in source order.
pub(super) struct Placed {
    /// Each statement's stream and work.
    pub(super) statements: Vec<(usize, Work)>,
    /// The control structure over them.
    pub(super) blocks: Vec<Block>,
    /// Each temporary's length (elements).
    pub(super) lens: Vec<usize>,
}

/// What a statement may do with a temporary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Right {
    None,
    Read,
    Write,
}

/// The clocks of the happens-before order at the top level: per stream, the latest tick of
/// every stream that it follows; per event, its snapshot.
struct Clocks {
    streams: Vec<Vec<u32>>,
    events: Vec<Option<Vec<u32>>>,
}

impl Clocks {
    fn new(streams: usize, events: usize) -> Clocks {
        Clocks {
            streams: vec![vec![0; streams]; streams],
            events: vec![None; events],
        }
    }

    /// An operation on `stream`: its tick.
    fn tick(&mut self, stream: usize) -> (usize, u32) {
        let clock = &mut self.streams[stream][stream];
        *clock += 1;
        (stream, *clock)
    }

    /// Whether `stream` follows the operation of tick `at`.
    fn covers(&self, stream: usize, (on, tick): (usize, u32)) -> bool {
        self.streams[stream][on] >= tick
    }

    fn record(&mut self, event: usize, stream: usize) {
        self.events[event] = Some(self.streams[stream].clone());
    }

    fn join(&mut self, stream: usize, other: &[u32]) {
        for (mine, &theirs) in self.streams[stream].iter_mut().zip(other) {
            *mine = (*mine).max(theirs);
        }
    }

    fn wait(&mut self, stream: usize, event: usize) {
        if let Some(snapshot) = self.events[event].take() {
            self.join(stream, &snapshot);
            self.events[event] = Some(snapshot);
        }
    }

    fn wait_stream(&mut self, stream: usize, other: usize) {
        if stream != other {
            let theirs = self.streams[other].clone();
            self.join(stream, &theirs);
        }
    }
}

/// One use of a temporary: by a statement (a device block for its bodies' uses, `None` for
/// the fill after the allocation) at a tick.
#[derive(Debug, Clone, Copy)]
struct Use {
    by: Option<usize>,
    at: (usize, u32),
    write: bool,
}

/// A temporary while the program is drawn.
struct Temp {
    len: usize,
    /// Allocated before top-level item `unit`, on `stream`.
    unit: usize,
    stream: usize,
    allocated: bool,
    uses: Vec<Use>,
    /// Whether `uses` grew since the end of the last top-level item.
    dirty: bool,
    /// The last top-level item that used it (its fill counts) and the streams that follow
    /// every use at its end.
    last: usize,
    cover: Vec<usize>,
}

/// How far a walk over the blocks draws and follows statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Issued at the top level, first time: drawn and followed.
    First,
    /// Issued at the top level again (a later iteration of a `for`): followed.
    Again,
    /// Never issued: drawn.
    Unissued,
    /// In a device block's body: drawn; uses temporaries when on the stream given, that of
    /// every enclosing block.
    Body(Option<usize>),
}

/// One top-level item: a statement outside every block, or a block.
enum Unit<'b> {
    Statement(usize),
    Block(&'b Block),
}

fn units(blocks: &[Block]) -> Vec<Unit<'_>> {
    let mut out = Vec::new();
    for b in blocks {
        match b {
            Block::Run(r) => out.extend(r.clone().map(Unit::Statement)),
            _ => out.push(Unit::Block(b)),
        }
    }
    out
}

/// The walk that draws the statements and places the temporaries.
struct Walk<'g, 'r> {
    statements: &'g mut Statements<'r>,
    rng: XorShift,
    sub: bool,
    shape: Shape,
    /// The statements' work as drawn, and with temporaries.
    drawn: Vec<Work>,
    works: Vec<Work>,
    clocks: Clocks,
    temps: Vec<Temp>,
    /// What the bodies of the top-level device block being drawn may do with each temporary.
    block_rights: Vec<Right>,
}

/// Draws every statement of `blocks` from `statements`, and places the temporaries that
/// `options` asks for (drawn from `seed`): see the module.
pub(super) fn place(
    statements: &mut Statements<'_>,
    blocks: Vec<Block>,
    seed: u64,
    options: &RandomOptions,
    shape: Shape,
    (stream_count, event_count): (usize, usize),
) -> Placed {
    let all = units(&blocks);
    let mut rng = XorShift::new(seed ^ 0x7e4d_9a11_5c3b_2f68);
    let most = |n: usize| n.min(RandomProgram::MAX_TEMPS);
    let count = match options.temps {
        (_, 0) => 0,
        (lo, hi) => rng.between(most(lo), most(hi)),
    };
    let len = |n: usize| n.clamp(1, RandomProgram::MAX_BUFFER_LEN);
    let lens = (len(options.temp_len.0), len(options.temp_len.1));
    let temps: Vec<Temp> = (0..count)
        .map(|_| Temp {
            len: rng.between(lens.0, lens.1),
            unit: rng.below(all.len()),
            stream: rng.below(stream_count),
            allocated: false,
            uses: Vec::new(),
            dirty: false,
            last: 0,
            cover: Vec::new(),
        })
        .collect();
    let mut walk = Walk {
        statements,
        rng,
        sub: options.sub_ranges,
        shape,
        drawn: Vec::new(),
        works: Vec::new(),
        clocks: Clocks::new(
            if count > 0 { stream_count } else { 0 },
            if count > 0 { event_count } else { 0 },
        ),
        temps,
        block_rights: Vec::new(),
    };
    for (k, unit) in all.iter().enumerate() {
        walk.allocate(k);
        match *unit {
            Unit::Statement(id) => walk.statement(id, Pass::First),
            Unit::Block(b) => walk.walk(std::slice::from_ref(b), Pass::First),
        }
        walk.item_end(k);
    }
    // The temporaries' statements before each top-level item (and after the last): releases
    // first, then allocations.
    let mut inserted: Vec<Vec<(usize, Work)>> = vec![Vec::new(); all.len() + 1];
    for (t, temp) in walk.temps.iter().enumerate() {
        let at = &mut inserted[temp.last + 1];
        if temp.cover.is_empty() {
            let mut used: Vec<usize> = temp.uses.iter().map(|u| u.at.0).collect();
            used.sort_unstable();
            used.dedup();
            at.extend(
                used.into_iter()
                    .filter(|&s| s != 0)
                    .map(|s| (0, Work::WaitStream(s))),
            );
            at.push((0, Work::Free(t)));
        } else {
            let stream = temp.cover[walk.rng.below(temp.cover.len())];
            at.push((stream, Work::Free(t)));
        }
    }
    for (t, temp) in walk.temps.iter().enumerate() {
        let memory = Memory::Temp(t);
        inserted[temp.unit].extend([
            (temp.stream, Work::Alloc(t)),
            (
                temp.stream,
                Work::Fill {
                    memory,
                    start: 0,
                    end: temp.len,
                },
            ),
        ]);
    }
    let streams = &walk.statements.streams;
    let drawn: Vec<(usize, Work)> = streams.iter().copied().zip(walk.works).collect();
    let (statements, blocks) = lay_out(&all, &drawn, inserted);
    Placed {
        statements,
        blocks,
        lens: walk.temps.iter().map(|t| t.len).collect(),
    }
}

/// The statements in source order with `inserted[k]` before top-level item `k` (the last
/// after every item), and the blocks over them.
fn lay_out(
    units: &[Unit<'_>],
    drawn: &[(usize, Work)],
    inserted: Vec<Vec<(usize, Work)>>,
) -> (Vec<(usize, Work)>, Vec<Block>) {
    let mut out = Vec::with_capacity(drawn.len());
    let mut blocks = Vec::new();
    let mut run: Option<Range<usize>> = None;
    let flush = |run: &mut Option<Range<usize>>, blocks: &mut Vec<Block>| {
        if let Some(r) = run.take() {
            blocks.push(Block::Run(r));
        }
    };
    let mut inserted = inserted.into_iter();
    for unit in units {
        for s in inserted.next().unwrap_or_default() {
            out.push(s);
            run.get_or_insert(out.len() - 1..out.len()).end = out.len();
        }
        match *unit {
            Unit::Statement(id) => {
                out.push(drawn[id]);
                run.get_or_insert(out.len() - 1..out.len()).end = out.len();
            }
            Unit::Block(b) => {
                flush(&mut run, &mut blocks);
                let ids = b.statements();
                let by = out.len() - ids.start;
                out.extend(ids.map(|id| drawn[id]));
                blocks.push(b.shifted(by));
            }
        }
    }
    for s in inserted.flatten() {
        out.push(s);
        run.get_or_insert(out.len() - 1..out.len()).end = out.len();
    }
    flush(&mut run, &mut blocks);
    (out, blocks)
}

impl Walk<'_, '_> {
    /// Allocates the temporaries placed before top-level item `unit`, each filled whole.
    fn allocate(&mut self, unit: usize) {
        for t in 0..self.temps.len() {
            if self.temps[t].unit != unit {
                continue;
            }
            let stream = self.temps[t].stream;
            self.clocks.tick(stream);
            let at = self.clocks.tick(stream);
            let temp = &mut self.temps[t];
            temp.allocated = true;
            temp.uses.push(Use {
                by: None,
                at,
                write: true,
            });
            temp.dirty = true;
        }
    }

    /// At the end of top-level item `unit`: which streams follow every use of each
    /// temporary used in it.
    fn item_end(&mut self, unit: usize) {
        let streams = self.clocks.streams.len();
        for temp in self.temps.iter_mut().filter(|t| t.dirty) {
            temp.dirty = false;
            temp.last = unit;
            temp.cover = (0..streams)
                .filter(|&s| temp.uses.iter().all(|u| self.clocks.covers(s, u.at)))
                .collect();
        }
    }

    /// What an operation on `stream`, issued now, may do with each temporary.
    fn rights(&self, stream: usize) -> Vec<Right> {
        self.temps
            .iter()
            .map(|t| {
                let covered = |u: &Use| self.clocks.covers(stream, u.at);
                if !t.allocated {
                    Right::None
                } else if t.uses.iter().all(covered) {
                    Right::Write
                } else if t.uses.iter().filter(|u| u.write).all(covered) {
                    Right::Read
                } else {
                    Right::None
                }
            })
            .collect()
    }

    fn walk(&mut self, blocks: &[Block], pass: Pass) {
        for block in blocks {
            match block {
                Block::Run(r) => r.clone().for_each(|id| self.statement(id, pass)),
                Block::For { times, body } => {
                    self.walk(body, pass);
                    if matches!(pass, Pass::First | Pass::Again) {
                        for _ in 1..*times {
                            self.walk(body, Pass::Again);
                        }
                    }
                }
                Block::If { taken, body } => match pass {
                    _ if *taken => self.walk(body, pass),
                    // Not issued, and drawn the first time.
                    Pass::Again => {}
                    _ => self.walk(body, Pass::Unissued),
                },
                Block::DeviceWhile { header, body, .. } => {
                    self.device_block(*header, block.statements(), &[body], pass)
                }
                Block::DeviceIf {
                    header,
                    then,
                    otherwise,
                    ..
                } => self.device_block(*header, block.statements(), &[then, otherwise], pass),
                Block::DeviceSwitch { header, arms, .. } => {
                    let bodies: Vec<&[Block]> = arms.iter().map(|(_, b)| b.as_slice()).collect();
                    self.device_block(*header, block.statements(), &bodies, pass)
                }
            }
        }
    }

    /// Draws statement `id` (unless it is issued again) and follows it at the top level.
    fn statement(&mut self, id: usize, pass: Pass) {
        if pass != Pass::Again {
            let (stream, work) = self.statements.next(id);
            let rights = match pass {
                Pass::First if !self.temps.is_empty() => self.rights(stream),
                Pass::Body(Some(on)) if on == stream => self.block_rights.clone(),
                _ => Vec::new(),
            };
            self.drawn.push(work);
            let work = self.substitute(work, stream, &rights);
            self.works.push(work);
        }
        if self.temps.is_empty() || !matches!(pass, Pass::First | Pass::Again) {
            return;
        }
        let stream = self.statements.streams[id];
        match self.works[id] {
            Work::Record(e) => self.clocks.record(e, stream),
            Work::Wait(e) => self.clocks.wait(stream, e),
            Work::WaitStream(other) => self.clocks.wait_stream(stream, other),
            work => {
                let rights = self.rights(stream);
                let permitted = |(t, write): (usize, bool)| rights[t] >= need(write);
                if !work.temp_uses().into_iter().all(permitted) {
                    self.give_back(id);
                }
                let at = self.clocks.tick(stream);
                self.used(Some(id), self.works[id].temp_uses(), at);
            }
        }
    }

    /// Device block `header` over statements `range` with `bodies`.
    fn device_block(
        &mut self,
        header: usize,
        range: Range<usize>,
        bodies: &[&[Block]],
        pass: Pass,
    ) {
        let inner = match pass {
            Pass::Again => None,
            _ => {
                let (stream, work) = self.statements.next(header);
                self.drawn.push(work);
                self.works.push(work);
                Some(stream)
            }
        };
        let stream = self.statements.streams[header];
        let body_pass = match pass {
            Pass::First => Some(Pass::Body(Some(stream))),
            Pass::Again => None,
            Pass::Unissued => Some(Pass::Unissued),
            Pass::Body(on) => Some(Pass::Body(on.filter(|&s| Some(s) == inner))),
        };
        let rights = if self.temps.is_empty() || !matches!(pass, Pass::First | Pass::Again) {
            Vec::new()
        } else {
            self.rights(stream)
        };
        if pass == Pass::First {
            self.block_rights = rights.clone();
        }
        if let Some(body_pass) = body_pass {
            for body in bodies {
                self.walk(body, body_pass);
            }
        }
        if rights.is_empty() {
            return;
        }
        // Issued again: the bodies' uses may no longer be permitted.
        let body = range.start + 1..range.end;
        for (t, write) in self.uses_in(body.clone()) {
            if rights[t] < need(write) {
                for id in body.clone() {
                    if self.works[id].temp_uses().iter().any(|&(u, _)| u == t) {
                        self.give_back(id);
                    }
                }
            }
        }
        let at = self.clocks.tick(stream);
        let uses = self.uses_in(body);
        self.used(Some(header), uses, at);
    }

    /// The temporaries the statements `range` use, each once, with whether any writes it.
    fn uses_in(&self, range: Range<usize>) -> Vec<(usize, bool)> {
        let mut uses: Vec<(usize, bool)> = Vec::new();
        for (t, write) in range.flat_map(|id| self.works[id].temp_uses()) {
            match uses.iter_mut().find(|(u, _)| *u == t) {
                Some(u) => u.1 |= write,
                None => uses.push((t, write)),
            }
        }
        uses
    }

    fn used(&mut self, by: Option<usize>, uses: Vec<(usize, bool)>, at: (usize, u32)) {
        for (t, write) in uses {
            let temp = &mut self.temps[t];
            temp.uses.push(Use { by, at, write });
            temp.dirty = true;
        }
    }

    /// Statement `id` gets back the operands it was drawn with; its uses so far did not
    /// happen (a use that stays recorded only orders more).
    fn give_back(&mut self, id: usize) {
        self.works[id] = self.drawn[id];
        for temp in &mut self.temps {
            temp.uses.retain(|u| u.by != Some(id));
        }
    }

    /// `work` on `stream` with some operands swapped for temporaries that `rights` allows.
    fn substitute(&mut self, work: Work, stream: usize, rights: &[Right]) -> Work {
        let writable: Vec<usize> = (0..rights.len())
            .filter(|&t| rights[t] == Right::Write)
            .collect();
        let readable: Vec<usize> = (0..rights.len())
            .filter(|&t| rights[t] >= Right::Read)
            .collect();
        if readable.is_empty() {
            return work;
        }
        match work {
            Work::Launch {
                memory,
                mode,
                kernel,
            } => {
                let from = if mode == AccessMode::Write {
                    &writable
                } else {
                    &readable
                };
                let memory = self.pick(from, stream).map_or(memory, Memory::Temp);
                Work::Launch {
                    kernel,
                    memory,
                    mode,
                }
            }
            Work::Fill { .. } => match self.pick(&writable, stream) {
                Some(t) => {
                    let (start, end) = range_in(&mut self.rng, self.temps[t].len, self.sub);
                    Work::Fill {
                        memory: Memory::Temp(t),
                        start,
                        end,
                    }
                }
                None => work,
            },
            Work::Call { kernel, dst, src } => {
                let d = self.pick(&writable, stream);
                let s = self.pick(&readable, stream).filter(|&s| Some(s) != d);
                Work::Call {
                    kernel,
                    dst: d.map_or(dst, Memory::Temp),
                    src: s.map_or(src, Memory::Temp),
                }
            }
            Work::Copy { dst, src } => {
                let d = if dst.is_pinned() {
                    None
                } else {
                    self.pick(&writable, stream)
                };
                let s = if src.is_pinned() {
                    None
                } else {
                    self.pick(&readable, stream)
                };
                self.copy(dst, d, src, s).unwrap_or(work)
            }
            _ => work,
        }
    }

    /// One of `from`, half the time; three times in four one not used on `stream` yet, where
    /// there is one (so that temporaries spread over the streams that may use them).
    fn pick(&mut self, from: &[usize], stream: usize) -> Option<usize> {
        let fresh: Vec<usize> = from
            .iter()
            .copied()
            .filter(|&t| self.temps[t].uses.iter().all(|u| u.at.0 != stream))
            .collect();
        if !fresh.is_empty() && self.rng.below(4) != 0 {
            Some(fresh[self.rng.below(fresh.len())])
        } else if from.is_empty() || self.rng.below(2) == 0 {
            None
        } else {
            Some(from[self.rng.below(from.len())])
        }
    }

    fn len_of(&self, memory: Memory) -> usize {
        match memory {
            Memory::Buffer(_) => self.shape.buffer_len,
            Memory::Pinned(_) => self.shape.pinned_len,
            Memory::Temp(t) => self.temps[t].len,
        }
    }

    /// The copy `dst <- src` with temporary `d` written and `s` read instead (where given),
    /// with ranges that fit them; `None` where none fit.
    fn copy(&mut self, dst: Place, d: Option<usize>, src: Place, s: Option<usize>) -> Option<Work> {
        if d.is_none() && s.is_none() {
            return None;
        }
        let dst_memory = d.map_or(dst.memory, Memory::Temp);
        let src_memory = s.map_or(src.memory, Memory::Temp);
        let (ld, ls) = (self.len_of(dst_memory), self.len_of(src_memory));
        let at = |memory: Memory, start: usize, n: usize| Place {
            memory,
            start,
            end: start + n,
        };
        let (dst, src) = if dst.is_pinned() || src.is_pinned() {
            // A whole pinned buffer and as many elements of the temporary.
            let n = dst.len();
            let len = if dst.is_pinned() { ls } else { ld };
            if len < n {
                return None;
            }
            let start = if self.sub {
                self.rng.below(len - n + 1)
            } else {
                0
            };
            if dst.is_pinned() {
                (dst, at(src_memory, start, n))
            } else {
                (at(dst_memory, start, n), src)
            }
        } else if dst_memory == src_memory {
            // Two disjoint ranges of one temporary.
            if !self.sub || ld < 2 {
                return None;
            }
            let n = self.rng.between(1, ld / 2);
            let (a, b) = disjoint(&mut self.rng, ld, n);
            (
                Place {
                    memory: dst_memory,
                    ..a
                },
                Place {
                    memory: src_memory,
                    ..b
                },
            )
        } else if self.sub {
            let n = self.rng.between(1, ld.min(ls));
            let (a, b) = (self.rng.below(ld - n + 1), self.rng.below(ls - n + 1));
            (at(dst_memory, a, n), at(src_memory, b, n))
        } else if ld == ls {
            (at(dst_memory, 0, ld), at(src_memory, 0, ls))
        } else {
            return None;
        };
        Some(Work::Copy { dst, src })
    }
}

/// What a use needs: a write, that the stream follows every use; a read, every write.
fn need(write: bool) -> Right {
    if write {
        Right::Write
    } else {
        Right::Read
    }
}
