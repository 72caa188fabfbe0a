//! The static race analysis: a pure function over a tiny model of a program.
//!
//! Straight-line programs follow DESIGN.md §2 exactly (frontiers per stream, snapshots per
//! event; at the start every stream's frontier is empty, as after the fork from the
//! origin). [`straight_line_races`] reports every unordered conflicting pair.
//!
//! Control flow is handled by enumerating the executions the program can take:
//! each `if` instance takes either branch; each `for` instance runs 0, 1, …, `streams + 2`
//! times (more iterations cannot change which earlier operation reaches which stream: the
//! "reaches" bits of streams only grow and each event copies a stream's bit, so they settle
//! within `streams + 1` iterations). [`certain_races`] reports a pair of statements only
//! when it races in **every** enumerated execution in which both run, counting only runs in
//! which each enclosing loop iterates at least twice (so a loop body is checked against its
//! own next iteration, and a loop that happens to run once does not excuse a loop-carried
//! race). When the enumeration would be too large, or checking its executions too costly,
//! the analysis reports nothing and leaves the program to the run-time plan check; it
//! follows a few thousand racing pairs at most, so that of a program with a great many races
//! it reports some. Accesses to sub-ranges (`whole == false`) are never reported: only the
//! run-time plan knows their addresses.

use std::collections::{BTreeMap, BTreeSet};

/// One buffer access of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Touch {
    /// Buffer identity (the parameter's index).
    pub buffer: usize,
    /// `true` for a write.
    pub write: bool,
    /// `true` for the whole buffer, `false` for a sub-range.
    pub whole: bool,
}

/// A command of the model (DESIGN.md §2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cmd {
    /// `op(stream)`: statement `stmt`, touching `touches`.
    Op {
        stmt: usize,
        stream: usize,
        touches: Vec<Touch>,
    },
    /// `record(event, stream)`.
    Record { stream: usize, event: usize },
    /// `wait(stream, event)`.
    Wait { stream: usize, event: usize },
    /// `wait_stream(stream, other)`.
    WaitStream { stream: usize, other: usize },
}

/// Control flow over commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow {
    /// One command.
    Cmd(Cmd),
    /// A `for` loop's body.
    Loop(Vec<Flow>),
    /// An `if` with its two branches (the second empty without `else`).
    If(Vec<Flow>, Vec<Flow>),
}

/// Two unordered conflicting operations: `first` was issued before `second`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Race {
    /// Statement issued first.
    pub first: usize,
    /// Statement issued second.
    pub second: usize,
    /// The buffer both touch.
    pub buffer: usize,
    /// Whether `first` writes it.
    pub first_writes: bool,
    /// Whether `second` writes it.
    pub second_writes: bool,
    /// Whether `first` comes from an earlier loop iteration than `second` (its statement
    /// is not before `second`'s in the source).
    pub loop_carried: bool,
}

/// A set of operation occurrences, as a bit set.
#[derive(Clone, Default)]
struct Bits(Vec<u64>);

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
/// reported as indices into `program` (first issued first); only the first `limit` found
/// (in the order of their second operation) are kept.
pub fn straight_line_pairs(
    streams: usize,
    events: usize,
    program: &[Cmd],
    limit: usize,
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
                                if pairs.len() == limit {
                                    return pairs;
                                }
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
/// runs once, these are exactly the static races. (The tests' reference: [`certain_races`]
/// bounds the pairs it collects.)
#[cfg(test)]
pub fn straight_line_races(streams: usize, events: usize, program: &[Cmd]) -> Vec<Race> {
    by_statement(
        program,
        straight_line_pairs(streams, events, program, usize::MAX),
    )
}

/// Pairs of operations of `program` as races of their statements, sorted, without duplicates.
fn by_statement(program: &[Cmd], pairs: Vec<(usize, usize, Touch, Touch)>) -> Vec<Race> {
    let stmt = |i: usize| match &program[i] {
        Cmd::Op { stmt, .. } => *stmt,
        _ => usize::MAX,
    };
    let mut races: Vec<Race> = pairs
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

/// How many executions and commands the enumeration may build before giving up.
const MAX_TRACES: usize = 4096;
const MAX_COMMANDS: usize = 1 << 20;
/// How much the straight-line checks of the executions may cost before giving up: the sum of
/// their squared lengths (each operation is compared with every earlier one).
const MAX_CHECKS: usize = 1 << 24;
/// How many racing operation pairs the check of one execution collects, and how many racing
/// statement pairs the analysis follows; it looks for no more than that.
const MAX_RACES: usize = 1 << 12;

/// One command of an execution; `short` when an enclosing loop instance runs fewer than
/// two iterations.
#[derive(Clone)]
struct Occ<'a> {
    cmd: &'a Cmd,
    short: bool,
}

fn expand<'a>(flow: &'a [Flow], short: bool, max_iter: usize) -> Option<Vec<Vec<Occ<'a>>>> {
    let mut traces: Vec<Vec<Occ<'a>>> = vec![Vec::new()];
    for node in flow {
        let options: Vec<Vec<Occ<'a>>> = match node {
            Flow::Cmd(cmd) => {
                // The product with a single command, without copying every trace.
                let total = traces.iter().map(|t| t.len() + 1).sum::<usize>();
                if total > MAX_COMMANDS {
                    return None;
                }
                for t in &mut traces {
                    t.push(Occ { cmd, short });
                }
                continue;
            }
            Flow::If(then, otherwise) => {
                let mut o = expand(then, short, max_iter)?;
                o.extend(expand(otherwise, short, max_iter)?);
                o
            }
            Flow::Loop(body) => {
                // Runs of 0, 1, …, `max_iter` iterations. The body's executions depend on the
                // count only through `short`, and a run of `count` iterations extends one of
                // `count - 1`, so each is built once. The options' commands are counted as they
                // grow: the product with `traces` below refuses more than `MAX_COMMANDS` anyway.
                let short_body = expand(body, true, max_iter)?;
                let full_body = if short {
                    short_body.clone()
                } else {
                    expand(body, false, max_iter)?
                };
                let mut o: Vec<Vec<Occ<'a>>> = vec![Vec::new()];
                let mut full_runs: Vec<Vec<Occ<'a>>> = vec![Vec::new()];
                let mut commands = 0usize;
                for count in 1..=max_iter {
                    full_runs = product(&full_runs, &full_body)?;
                    let runs = if count < 2 { &short_body } else { &full_runs };
                    commands += runs.iter().map(Vec::len).sum::<usize>();
                    if o.len() + runs.len() > MAX_TRACES || commands > MAX_COMMANDS {
                        return None;
                    }
                    o.extend(runs.iter().cloned());
                }
                o
            }
        };
        traces = product(&traces, &options)?;
    }
    Some(traces)
}

fn product<'a>(a: &[Vec<Occ<'a>>], b: &[Vec<Occ<'a>>]) -> Option<Vec<Vec<Occ<'a>>>> {
    if a.len().saturating_mul(b.len()) > MAX_TRACES {
        return None;
    }
    let mut out = Vec::with_capacity(a.len() * b.len());
    let mut total = 0usize;
    for x in a {
        for y in b {
            total += x.len() + y.len();
            if total > MAX_COMMANDS {
                return None;
            }
            let mut t = x.clone();
            t.extend(y.iter().cloned());
            out.push(t);
        }
    }
    Some(out)
}

/// The races certain on every execution of `program` in which both statements run (see
/// the module documentation for the executions considered).
pub fn certain_races(streams: usize, events: usize, program: &[Flow]) -> Vec<Race> {
    let Some(traces) = expand(program, false, streams + 2) else {
        return Vec::new();
    };
    let checks = traces.iter().fold(0usize, |sum, t| {
        sum.saturating_add(t.len().saturating_mul(t.len()))
    });
    if checks > MAX_CHECKS {
        return Vec::new();
    }
    // Key: (lower statement, higher statement, buffer).
    let mut racing: BTreeMap<(usize, usize, usize), (usize, Race)> = BTreeMap::new();
    // Per trace, the statements that run in it with every enclosing loop iterating twice.
    let mut fulls: Vec<Bits> = Vec::with_capacity(traces.len());
    for trace in &traces {
        let cmds: Vec<Cmd> = trace.iter().map(|o| o.cmd.clone()).collect();
        let mut full = Bits::default();
        for o in trace.iter().filter(|o| !o.short) {
            if let Cmd::Op { stmt, .. } = o.cmd {
                full.insert(*stmt);
            }
        }
        let pairs = straight_line_pairs(streams, events, &cmds, MAX_RACES);
        let mut seen_here = BTreeSet::new();
        for r in by_statement(&cmds, pairs) {
            let key = (r.first.min(r.second), r.first.max(r.second), r.buffer);
            if !full.contains(key.0) || !full.contains(key.1) || !seen_here.insert(key) {
                continue;
            }
            if racing.len() == MAX_RACES && !racing.contains_key(&key) {
                continue;
            }
            let entry = racing.entry(key).or_insert((0, r));
            entry.0 += 1;
            if entry.1.loop_carried && !r.loop_carried {
                entry.1 = r;
            }
        }
        fulls.push(full);
    }
    // A pair that races somewhere conflicts in every trace in which both statements run in
    // full; it is certain when it races in each of those.
    racing
        .into_iter()
        .filter(|(key, (count, _))| {
            fulls
                .iter()
                .filter(|f| f.contains(key.0) && f.contains(key.1))
                .count()
                == *count
        })
        .map(|(_, (_, r))| r)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{certain_races, straight_line_races, Cmd, Flow, Race, Touch, MAX_RACES};

    fn op(stmt: usize, stream: usize, touches: &[(usize, bool)]) -> Cmd {
        Cmd::Op {
            stmt,
            stream,
            touches: touches
                .iter()
                .map(|&(buffer, write)| Touch {
                    buffer,
                    write,
                    whole: true,
                })
                .collect(),
        }
    }

    #[test]
    fn unordered_write_and_read_race() {
        let p = [op(0, 0, &[(0, true)]), op(1, 1, &[(0, false)])];
        let races = straight_line_races(2, 0, &p);
        assert_eq!(
            races,
            [Race {
                first: 0,
                second: 1,
                buffer: 0,
                first_writes: true,
                second_writes: false,
                loop_carried: false
            }]
        );
    }

    #[test]
    fn record_and_wait_order_the_pair() {
        let p = [
            op(0, 0, &[(0, true)]),
            Cmd::Record {
                stream: 0,
                event: 0,
            },
            Cmd::Wait {
                stream: 1,
                event: 0,
            },
            op(1, 1, &[(0, false)]),
        ];
        assert!(straight_line_races(2, 1, &p).is_empty());
    }

    #[test]
    fn wait_before_the_record_does_not_order() {
        let p = [
            Cmd::Record {
                stream: 0,
                event: 0,
            },
            op(0, 0, &[(0, true)]),
            Cmd::Wait {
                stream: 1,
                event: 0,
            },
            op(1, 1, &[(0, false)]),
        ];
        assert_eq!(straight_line_races(2, 1, &p).len(), 1);
    }

    #[test]
    fn re_record_overwrites_the_snapshot() {
        let p = [
            op(0, 0, &[(0, true)]),
            Cmd::Record {
                stream: 0,
                event: 0,
            },
            Cmd::Record {
                stream: 2,
                event: 0,
            },
            Cmd::Wait {
                stream: 1,
                event: 0,
            },
            op(1, 1, &[(0, false)]),
        ];
        assert_eq!(straight_line_races(3, 1, &p).len(), 1);
    }

    #[test]
    fn wait_stream_and_transitive_paths_order() {
        let p = [
            op(0, 0, &[(0, true)]),
            Cmd::WaitStream {
                stream: 2,
                other: 0,
            },
            op(1, 2, &[]),
            Cmd::WaitStream {
                stream: 1,
                other: 2,
            },
            op(2, 1, &[(0, true)]),
        ];
        assert!(straight_line_races(3, 0, &p).is_empty());
    }

    #[test]
    fn reads_do_not_race_and_sub_ranges_are_not_decided() {
        let p = [op(0, 0, &[(0, false)]), op(1, 1, &[(0, false)])];
        assert!(straight_line_races(2, 0, &p).is_empty());
        let sub = Cmd::Op {
            stmt: 1,
            stream: 1,
            touches: vec![Touch {
                buffer: 0,
                write: true,
                whole: false,
            }],
        };
        assert!(straight_line_races(2, 0, &[op(0, 0, &[(0, true)]), sub]).is_empty());
    }

    #[test]
    fn loop_body_is_checked_against_its_next_iteration() {
        // for _ { main: write x; main: record e; side: wait e; side: read x; }
        // Iteration k+1's write is not ordered after iteration k's read.
        let body = vec![
            Flow::Cmd(op(0, 0, &[(0, true)])),
            Flow::Cmd(Cmd::Record {
                stream: 0,
                event: 0,
            }),
            Flow::Cmd(Cmd::Wait {
                stream: 1,
                event: 0,
            }),
            Flow::Cmd(op(1, 1, &[(0, false)])),
        ];
        let races = certain_races(2, 2, &[Flow::Loop(body.clone())]);
        assert_eq!(races.len(), 1);
        assert_eq!(
            (races[0].first, races[0].second, races[0].loop_carried),
            (1, 0, true)
        );
        // Adding the back edge (side records, main waits at the top) removes the race.
        let mut fixed = vec![Flow::Cmd(Cmd::Wait {
            stream: 0,
            event: 1,
        })];
        fixed.extend(body);
        fixed.push(Flow::Cmd(Cmd::Record {
            stream: 1,
            event: 1,
        }));
        assert!(certain_races(2, 2, &[Flow::Loop(fixed)]).is_empty());
    }

    #[test]
    fn branches_report_only_races_on_every_path() {
        let write = Flow::Cmd(op(0, 0, &[(0, true)]));
        let read = Flow::Cmd(op(1, 1, &[(0, false)]));
        let order = vec![
            Flow::Cmd(Cmd::Record {
                stream: 0,
                event: 0,
            }),
            Flow::Cmd(Cmd::Wait {
                stream: 1,
                event: 0,
            }),
        ];
        // Ordered on one path only: not reported.
        let maybe = [write.clone(), Flow::If(order.clone(), vec![]), read.clone()];
        assert!(certain_races(2, 1, &maybe).is_empty());
        // Ordered on both paths: not reported.
        let both = [write.clone(), Flow::If(order.clone(), order), read.clone()];
        assert!(certain_races(2, 1, &both).is_empty());
        // Unordered on every path where both run: reported, even inside a branch.
        let inside = [write, Flow::If(vec![read], vec![])];
        assert_eq!(certain_races(2, 1, &inside).len(), 1);
    }

    #[test]
    fn a_loop_that_may_not_run_does_not_excuse_nor_accuse() {
        // The wait inside the loop orders the pair only when the loop runs: not certain.
        let p = [
            Flow::Cmd(op(0, 0, &[(0, true)])),
            Flow::Cmd(Cmd::Record {
                stream: 0,
                event: 0,
            }),
            Flow::Loop(vec![Flow::Cmd(Cmd::Wait {
                stream: 1,
                event: 0,
            })]),
            Flow::Cmd(op(1, 1, &[(0, false)])),
        ];
        assert!(certain_races(2, 1, &p).is_empty());
    }

    /// Runs `f`, failing if it takes longer than `limit` (far more than it needs).
    fn promptly<T>(limit: Duration, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        let elapsed = start.elapsed();
        assert!(elapsed < limit, "took {elapsed:?}");
        out
    }

    /// Regression (found by fuzzing): each iteration count of a loop rebuilt its runs from
    /// scratch and expanded the body again, cubic in the number of streams; a pipeline with
    /// 251 streams and loops took 20 s.
    #[test]
    fn loops_over_many_streams_are_enumerated_promptly() {
        let body = vec![
            Flow::Cmd(op(0, 0, &[(0, true)])),
            Flow::Cmd(op(1, 1, &[(0, true)])),
        ];
        let few = certain_races(2, 0, &[Flow::Loop(body.clone())]);
        assert_eq!(few.len(), 1);
        assert_eq!(certain_races(60, 0, &[Flow::Loop(body)]), few);
        // 502 iterations of 50 commands: too many to enumerate, found out early.
        let big: Vec<Flow> = (0..50)
            .map(|i| Flow::Cmd(op(i, i % 7, &[(0, true)])))
            .collect();
        let races = promptly(Duration::from_secs(5), || {
            certain_races(500, 0, &[Flow::Loop(big)])
        });
        assert!(races.is_empty());
    }

    /// Regression (found by fuzzing): every command after an `if` copied every execution built
    /// so far, quadratic in the length of the code that follows.
    #[test]
    fn code_after_branches_is_appended_in_place() {
        let mut p: Vec<Flow> = (0..10)
            .map(|i| Flow::If(vec![Flow::Cmd(op(i, 0, &[]))], vec![]))
            .collect();
        p.extend((10..3000).map(|i| Flow::Cmd(op(i, i % 2, &[(0, false)]))));
        // 1024 executions of 3000 commands: more than the enumeration takes.
        let races = promptly(Duration::from_secs(5), || certain_races(2, 0, &p));
        assert!(races.is_empty());
    }

    /// Regression (found by fuzzing): every execution was checked whatever the cost, quadratic
    /// in its length; 2,000 executions of 200 commands took seconds. Programs that costly are
    /// left to the run-time plan.
    #[test]
    fn executions_too_costly_to_check_are_left_to_the_plan() {
        let program = |ops: usize| {
            let mut p = vec![
                Flow::Cmd(op(0, 0, &[(0, true)])),
                Flow::Cmd(op(1, 1, &[(0, true)])),
            ];
            p.extend((0..4).map(|i| Flow::If(vec![Flow::Cmd(op(2 + i, 0, &[]))], vec![])));
            p.extend((6..6 + ops).map(|i| Flow::Cmd(op(i, i % 2, &[(1, false)]))));
            p
        };
        // 16 executions of 1,000 commands are checked; of 1,100, too costly.
        assert_eq!(certain_races(2, 0, &program(1000)).len(), 1);
        let races = promptly(Duration::from_secs(5), || {
            certain_races(2, 0, &program(1100))
        });
        assert!(races.is_empty());
    }

    /// Regression (found by fuzzing): every racing pair was collected, and became a diagnostic;
    /// 3,000 unordered writes on two streams made 2.25 million. The first `MAX_RACES` are kept.
    #[test]
    fn races_collected_are_bounded() {
        let p: Vec<Flow> = (0..3000)
            .map(|i| Flow::Cmd(op(i, i % 2, &[(0, true)])))
            .collect();
        let races = promptly(Duration::from_secs(5), || certain_races(2, 0, &p));
        assert_eq!(races.len(), MAX_RACES);
        for r in &races {
            assert!(r.first < r.second && (r.second - r.first) % 2 == 1, "{r:?}");
            assert!(r.first_writes && r.second_writes && !r.loop_carried);
        }
        // The first found: those of the earliest second statements.
        let last_second = races.iter().map(|r| r.second).max().unwrap_or(0);
        assert!(last_second < 200, "{last_second}");
    }
}
