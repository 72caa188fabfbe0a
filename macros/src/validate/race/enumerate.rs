//! The former analysis, kept as a test oracle: it enumerates the executions a program can take
//! (each `if` instance takes either branch, each `for` instance runs 0, 1, …, `streams + 2`
//! times) and reports a pair of statements when it races in every enumerated execution in
//! which both run, counting only runs in which each loop enclosing them iterates at least
//! twice. Exponential in the number of branches and loops, and quadratic in the iteration
//! bound; it answers `None` past a size cap. The tests compare [`super::certain_races`] with it.

use std::collections::{BTreeMap, BTreeSet};

use super::{straight_line_races, Cmd, Flow, Race, Touch};

/// How many executions and commands the enumeration may build before giving up.
const MAX_TRACES: usize = 4096;
const MAX_COMMANDS: usize = 1 << 20;

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
            Flow::Cmd(cmd) => vec![vec![Occ { cmd, short }]],
            Flow::If(then, otherwise) => {
                let mut o = expand(then, short, max_iter)?;
                o.extend(expand(otherwise, short, max_iter)?);
                o
            }
            Flow::Loop(body) => {
                let mut o = Vec::new();
                for count in 0..=max_iter {
                    let once = expand(body, short || count < 2, max_iter)?;
                    let mut runs: Vec<Vec<Occ<'a>>> = vec![Vec::new()];
                    for _ in 0..count {
                        runs = product(&runs, &once)?;
                    }
                    o.extend(runs);
                    if o.len() > MAX_TRACES {
                        return None;
                    }
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

/// The races certain on every enumerated execution of `program` in which both statements run
/// with full loops; `None` when the enumeration is too large.
pub fn enumerated_races(streams: usize, events: usize, program: &[Flow]) -> Option<Vec<Race>> {
    let traces = expand(program, false, streams + 2)?;
    // Key: (lower statement, higher statement, buffer).
    let mut relevant: BTreeMap<(usize, usize, usize), usize> = BTreeMap::new();
    let mut racing: BTreeMap<(usize, usize, usize), (usize, Race)> = BTreeMap::new();
    for trace in &traces {
        let cmds: Vec<Cmd> = trace.iter().map(|o| o.cmd.clone()).collect();
        let full: BTreeSet<usize> = trace
            .iter()
            .filter(|o| !o.short)
            .filter_map(|o| match o.cmd {
                Cmd::Op { stmt, .. } => Some(*stmt),
                _ => None,
            })
            .collect();
        let mut seen_here = BTreeSet::new();
        for r in straight_line_races(streams, events, &cmds) {
            let key = (r.first.min(r.second), r.first.max(r.second), r.buffer);
            if !full.contains(&key.0) || !full.contains(&key.1) || !seen_here.insert(key) {
                continue;
            }
            let entry = racing.entry(key).or_insert((0, r));
            entry.0 += 1;
            if entry.1.loop_carried && !r.loop_carried {
                entry.1 = r;
            }
        }
        relevant_update(&mut relevant, &full, &cmds);
    }
    Some(
        racing
            .into_iter()
            .filter(|(key, (count, _))| relevant.get(key) == Some(count))
            .map(|(_, (_, r))| r)
            .collect(),
    )
}

/// Counts the trace as relevant for every conflicting pair (by buffer) of statements that
/// both run in it with full loops.
fn relevant_update(
    relevant: &mut BTreeMap<(usize, usize, usize), usize>,
    full: &BTreeSet<usize>,
    cmds: &[Cmd],
) {
    let mut touches: BTreeMap<usize, (usize, Vec<Touch>)> = BTreeMap::new();
    for cmd in cmds {
        if let Cmd::Op {
            stmt,
            stream,
            touches: t,
        } = cmd
            && full.contains(stmt)
        {
            touches.entry(*stmt).or_insert_with(|| (*stream, t.clone()));
        }
    }
    let mut keys = BTreeSet::new();
    for (&a, (sa, ta)) in &touches {
        for (&b, (sb, tb)) in touches.range(a + 1..) {
            if sa == sb {
                continue;
            }
            for x in ta {
                for y in tb {
                    if x.buffer == y.buffer && x.whole && y.whole && (x.write || y.write) {
                        keys.insert((a, b, x.buffer));
                    }
                }
            }
        }
    }
    for key in keys {
        *relevant.entry(key).or_default() += 1;
    }
}
