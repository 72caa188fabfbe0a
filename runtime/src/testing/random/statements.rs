//! What each statement of a random program does, as generated: [`Work`], drawn statement by
//! statement in source order by a [`Statements`] generator.

use std::collections::BTreeMap;

use crate::program::AccessMode;

use super::calls::{Memory, Place};
use super::options::RandomOptions;
use super::program::Shape;
use super::rng::XorShift;

/// What one statement does, as generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Work {
    Launch {
        kernel: usize,
        memory: Memory,
        mode: AccessMode,
    },
    Fill {
        memory: Memory,
        start: usize,
        end: usize,
    },
    Copy {
        dst: Place,
        src: Place,
    },
    Host,
    /// A `call` writing `dst` and reading `src` (other memory).
    Call {
        kernel: usize,
        dst: Memory,
        src: Memory,
    },
    Record(usize),
    Wait(usize),
    WaitStream(usize),
    /// A device block (its flag and bodies come from the program's blocks).
    Block,
    Alloc(usize),
    Free(usize),
}

impl Work {
    /// The temporaries it uses, each once, with whether it writes it.
    pub(super) fn temp_uses(&self) -> Vec<(usize, bool)> {
        let mut uses: Vec<(usize, bool)> = Vec::new();
        let mut add = |m: Memory, write: bool| {
            if let Memory::Temp(t) = m {
                match uses.iter_mut().find(|(u, _)| *u == t) {
                    Some(u) => u.1 |= write,
                    None => uses.push((t, write)),
                }
            }
        };
        match *self {
            Work::Launch { memory, mode, .. } => add(memory, mode == AccessMode::Write),
            Work::Fill { memory, .. } => add(memory, true),
            Work::Copy { dst, src } => {
                add(dst.memory, true);
                add(src.memory, false);
            }
            Work::Call { dst, src, .. } => {
                add(dst, true);
                add(src, false);
            }
            _ => {}
        }
        uses
    }
}

/// Where the statements of a program sit, as [`Statements`] needs to know when it draws them.
pub(super) struct Layout {
    pub(super) stream_count: usize,
    pub(super) event_count: usize,
    /// Whether each statement is issued at all.
    pub(super) issued: Vec<bool>,
    /// Whether each statement is inside a device block's body.
    pub(super) in_body: Vec<bool>,
    /// Whether each statement is a device block.
    pub(super) header: Vec<bool>,
    /// The innermost device body holding each statement, `(header, branch)`.
    pub(super) bodies: Vec<Option<(usize, usize)>>,
}

/// Draws each statement's stream and work, in source order, from the program's numbers.
pub(super) struct Statements<'r> {
    rng: &'r mut XorShift,
    options: RandomOptions,
    shape: Shape,
    /// Inside device bodies: no host functions, no host copies.
    body_options: RandomOptions,
    body_shape: Shape,
    layout: Layout,
    /// Each statement's stream, so far.
    pub(super) streams: Vec<usize>,
    /// Which events were recorded by an issued statement so far. The first issues of statements
    /// come in source order (a loop's first iteration issues its body in order), so "recorded
    /// before" is tracked in source order over the statements that are issued.
    recorded: Vec<bool>,
    /// The events recorded in each body so far (in source order).
    recorded_in: BTreeMap<(usize, usize), Vec<usize>>,
}

impl<'r> Statements<'r> {
    pub(super) fn new(
        rng: &'r mut XorShift,
        options: &RandomOptions,
        shape: Shape,
        layout: Layout,
    ) -> Statements<'r> {
        Statements {
            rng,
            body_options: RandomOptions {
                host_fns: false,
                host_copies: false,
                ..options.clone()
            },
            body_shape: Shape { pinned: 0, ..shape },
            options: options.clone(),
            shape,
            recorded: vec![false; layout.event_count],
            streams: Vec::with_capacity(layout.issued.len()),
            recorded_in: BTreeMap::new(),
            layout,
        }
    }

    /// Statement `id` (the next one in source order): its stream and work.
    pub(super) fn next(&mut self, id: usize) -> (usize, Work) {
        debug_assert_eq!(
            id,
            self.streams.len(),
            "statements are drawn in source order"
        );
        let (stream_count, event_count) = (self.layout.stream_count, self.layout.event_count);
        let rng = &mut *self.rng;
        let mut stream = rng.below(stream_count);
        let body = self.layout.bodies[id];
        if let (true, Some((header, _))) = (self.options.body_orderings, body)
            && rng.below(2) == 0
        {
            stream = self.streams[header];
        }
        self.streams.push(stream);
        if self.layout.header[id] {
            return (stream, Work::Block);
        }
        let roll = rng.below(100);
        let mut event = (event_count > 0).then(|| rng.below(event_count));
        let other = (stream + 1 + rng.below(stream_count.max(2) - 1)) % stream_count;
        if self.options.body_orderings && (65..=84).contains(&roll) {
            let here = body.and_then(|k| self.recorded_in.get(&k));
            if let (Some(here), Some((header, _))) = (here.filter(|h| !h.is_empty()), body)
                && rng.below(4) != 0
            {
                event = Some(here[rng.below(here.len())]);
                if rng.below(2) == 0 {
                    stream = self.streams[header];
                    self.streams[id] = stream;
                }
            }
        }
        match (roll, event) {
            (45..=64, Some(e)) => {
                self.recorded[e] |= self.layout.issued[id];
                if let Some(k) = body {
                    self.recorded_in.entry(k).or_default().push(e);
                }
                return (stream, Work::Record(e));
            }
            (65..=84, Some(e)) if self.options.waits_on_unrecorded || self.recorded[e] => {
                return (stream, Work::Wait(e));
            }
            (85.., _) if other != stream => return (stream, Work::WaitStream(other)),
            _ => {}
        }
        let work = if self.layout.in_body[id] {
            operation(rng, &self.body_options, self.body_shape)
        } else {
            operation(rng, &self.options, self.shape)
        };
        (stream, work)
    }
}

/// A random element range of `len` elements: the whole of it, or (when `sub`) half the time
/// a random non-empty part.
pub(super) fn range_in(rng: &mut XorShift, len: usize, sub: bool) -> (usize, usize) {
    if !sub || rng.below(2) == 0 {
        (0, len)
    } else {
        let n = rng.between(1, len);
        let start = rng.below(len - n + 1);
        (start, start + n)
    }
}

/// Two disjoint ranges of `n` elements each in `len` elements (`2 n <= len`), in random
/// order: `(dst, src)`.
pub(super) fn disjoint(rng: &mut XorShift, len: usize, n: usize) -> (Place, Place) {
    let first = rng.below(len - 2 * n + 1);
    let second = first + n + rng.below(len - 2 * n - first + 1);
    let at = |start: usize| Place {
        memory: Memory::Buffer(0),
        start,
        end: start + n,
    };
    let (a, b) = (at(first), at(second));
    if rng.below(2) == 0 {
        (a, b)
    } else {
        (b, a)
    }
}

/// A random operation among those `options` allow, on device buffers.
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
        memory: Memory::Buffer(buffer),
        start,
        end,
    };
    let work = match kind {
        1 => {
            let buffer = rng.below(shape.buffers);
            let (start, end) = range_in(rng, len, sub);
            Some(Work::Fill {
                memory: Memory::Buffer(buffer),
                start,
                end,
            })
        }
        2 => {
            let src = rng.below(shape.buffers);
            let same = sub && len >= 2 && (shape.buffers == 1 || rng.below(4) == 0);
            if same {
                // Two disjoint ranges of one buffer.
                let n = rng.between(1, len / 2);
                let (d, s) = disjoint(rng, len, n);
                let on = |p: Place| Place {
                    memory: Memory::Buffer(src),
                    ..p
                };
                Some(Work::Copy {
                    dst: on(d),
                    src: on(s),
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
                memory: Memory::Pinned(rng.below(shape.pinned)),
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
                dst: Memory::Buffer(dst),
                src: Memory::Buffer(src),
            })
        }
        _ => None,
    };
    work.unwrap_or_else(|| Work::Launch {
        memory: Memory::Buffer(rng.below(shape.buffers)),
        kernel: rng.below(shape.kernels),
        mode: if rng.below(2) == 0 {
            AccessMode::Read
        } else {
            AccessMode::Write
        },
    })
}
