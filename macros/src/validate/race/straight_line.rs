//! The straight-line happens-before model, transcribed directly: the reference the tests
//! compare the analysis with.

use super::{Cmd, Race, Touch};

/// A set of operation occurrences, as a bit set.
#[cfg(test)]
#[derive(Clone, Default)]
struct Bits(Vec<u64>);

#[cfg(test)]
impl Bits {
    fn insert(&mut self, i: usize) {
        if self.0.len() <= i / 64 {
            self.0.resize(i / 64 + 1, 0);
        }
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    fn union(&mut self, other: &Bits) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
}

/// Every pair of operations of `program` on different streams that touch the same whole
/// buffer, at least one writing, with no happens-before path between them. Pairs are
/// reported as indices into `program` (first issued first).
#[cfg(test)]
pub fn straight_line_pairs(
    streams: usize,
    events: usize,
    program: &[Cmd],
) -> Vec<(usize, usize, Touch, Touch)> {
    let mut frontier = vec![Bits::default(); streams];
    let mut snapshot = vec![Bits::default(); events];
    let mut before: Vec<Bits> = Vec::with_capacity(program.len());
    let mut ops: Vec<usize> = Vec::new();
    let mut pairs = Vec::new();
    for (i, cmd) in program.iter().enumerate() {
        match cmd {
            Cmd::Op {
                stream, touches, ..
            } => {
                let Some(f) = frontier.get(*stream).cloned() else {
                    before.push(Bits::default());
                    continue;
                };
                for &j in &ops {
                    let Cmd::Op {
                        stream: s2,
                        touches: t2,
                        ..
                    } = &program[j]
                    else {
                        continue;
                    };
                    if s2 == stream || f.contains(j) {
                        continue;
                    }
                    for a in t2 {
                        for b in touches {
                            if a.buffer == b.buffer && a.whole && b.whole && (a.write || b.write) {
                                pairs.push((j, i, *a, *b));
                            }
                        }
                    }
                }
                let mut mine = f;
                mine.insert(i);
                frontier[*stream] = mine.clone();
                before.push(mine);
                ops.push(i);
            }
            Cmd::Record { stream, event } => {
                if let (Some(f), Some(_)) = (frontier.get(*stream), snapshot.get(*event)) {
                    snapshot[*event] = f.clone();
                }
                before.push(Bits::default());
            }
            Cmd::Wait { stream, event } => {
                if let (Some(_), Some(e)) = (frontier.get(*stream), snapshot.get(*event)) {
                    let e = e.clone();
                    frontier[*stream].union(&e);
                }
                before.push(Bits::default());
            }
            Cmd::WaitStream { stream, other } => {
                if let (Some(_), Some(t)) = (frontier.get(*stream), frontier.get(*other)) {
                    let t = t.clone();
                    frontier[*stream].union(&t);
                }
                before.push(Bits::default());
            }
        }
    }
    pairs
}

/// [`straight_line_pairs`] by statement: for straight-line programs, where each statement
/// runs once, these are exactly the static races.
#[cfg(test)]
pub fn straight_line_races(streams: usize, events: usize, program: &[Cmd]) -> Vec<Race> {
    let stmt = |i: usize| match &program[i] {
        Cmd::Op { stmt, .. } => *stmt,
        _ => usize::MAX,
    };
    let mut races: Vec<Race> = straight_line_pairs(streams, events, program)
        .into_iter()
        .map(|(i, j, a, b)| Race {
            first: stmt(i),
            second: stmt(j),
            buffer: a.buffer,
            first_writes: a.write,
            second_writes: b.write,
            loop_carried: stmt(i) >= stmt(j),
        })
        .collect();
    races.sort();
    races.dedup();
    races
}
