//! The static race analysis: a pure function over a tiny model of a program.
//!
//! Straight-line programs follow the happens-before model (README "The model") exactly (frontiers per stream, snapshots per
//! event; at the start every stream's frontier is empty, as after the fork from the
//! origin). `straight_line_races`, the direct transcription the tests compare with, reports
//! every unordered conflicting pair.
//!
//! With control flow, [`certain_races`] reports a pair of statements only when it races on
//! **every** execution in which both run, where an execution takes either branch of each `if`
//! instance and runs each `for` instance either not at all or at least twice (so a loop body
//! is checked against its own next iteration, and a loop that happens to run once does not
//! excuse a loop-carried race). Accesses to sub-ranges (`whole == false`) are never reported:
//! only the run-time plan knows their addresses.
//!
//! The executions are never enumerated. Two passes decide the pairs:
//!
//! 1. **Over all paths at once.** One abstract state per program point: which statements may
//!    have run, and per stream and event which statements' latest runs may be ordered before
//!    it (exact over all paths) and may not be (over-approximated). `if`s join both branches;
//!    a loop's state is iterated to its fixed point, resuming from the previous visit's: a few
//!    passes over the body (each pass can only add facts, carried along the body's own
//!    record/wait chains), never a number of passes that grows with the stream count. Each
//!    statement keeps the facts about every conflicting partner as it is issued. Work:
//!    statements × (conflicting partners + streams + events) per pass. With the structure of
//!    the program (which statements always run in the same iteration, which can be kept apart)
//!    this decides nearly every pair: a race unordered on every path, a pair that some
//!    execution runs and orders, a pair that never runs together.
//! 2. **Per undecided pair, exactly.** The pair's own state (the streams and events that the
//!    latest run of each of the two statements reaches, whether each has run, and whether
//!    they have raced) is tiny, so the set of distinct states reachable at each point is
//!    followed, loops to their fixed point (memoised per loop and entry state); only the
//!    streams and events through which ordering can reach the two statements' streams are
//!    kept, and parts of the program that cannot change the state are skipped. Typically a
//!    pair whose first loop iteration races while later ones are ordered ends up here. A pair
//!    whose state set grows past [`MAX_STATES`] at some point is left undecided, as are the
//!    rest once the work of this pass passes [`MAX_PAIR_STEPS`]: the analysis then reports
//!    [`Analysis::complete`] `false`, and the run-time plan check decides those pairs.
//!
//! Pass 1 is sound for both answers (it over-approximates the paths), and pass 2 is exact, so
//! the answers are those of the executions described above (the tests check this against an
//! enumeration of executions, and against pass 2 alone).

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::ops::Range;
use std::rc::Rc;

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod differential;
#[cfg(test)]
mod enumerate;

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

/// A command of the model (README "The model").
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

/// What [`certain_races`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    /// The certain races, ordered by (lower statement, higher statement, buffer).
    pub races: Vec<Race>,
    /// `false` when some pair could not be decided within the limits (see the module
    /// documentation); such pairs are not reported and are left to the run-time plan.
    pub complete: bool,
}

/// Distinct states of one pair at one program point before pass 2 gives up on the pair.
pub const MAX_STATES: usize = 4096;
/// State transitions and program nodes pass 2 may visit over all pairs before it gives up on
/// the rest.
pub const MAX_PAIR_STEPS: u64 = 1 << 22;
/// Words pass 1 may touch before the analysis gives up on the whole program.
const MAX_PASS1_WORDS: u64 = 1 << 28;
/// Conflicting statement pairs the analysis keeps facts for before it gives up.
const MAX_PAIRS: usize = 1 << 22;

/// The races certain on every execution of `program` in which both statements run (see the
/// module documentation for the executions considered). Each statement id appears at most
/// once in `program`.
pub fn certain_races(streams: usize, events: usize, program: &[Flow]) -> Analysis {
    let model = Model::new(streams, events, program);
    let Some(mut pairs) = model.pairs() else {
        return Analysis {
            races: Vec::new(),
            complete: false,
        };
    };
    let mut pass1 = Pass1::new(&model, &mut pairs);
    let mut state = pass1.initial();
    if pass1.run(&model.tree, &mut state).is_err() {
        return Analysis {
            races: Vec::new(),
            complete: false,
        };
    }
    let mut complete = true;
    let mut steps = 0u64;
    let mut found = Vec::new();
    for pair in &pairs.list {
        let verdict = match model.verdict(pair) {
            Verdict::Clean => continue,
            Verdict::Race { forward: Some(f) } => Some(f),
            verdict => match model.exact(pair.a(), pair.b(), &mut steps) {
                Some(exact) => exact,
                None => {
                    if let Verdict::Race { .. } = verdict {
                        // Certain; some path may issue `a` first, unordered.
                        Some(true)
                    } else {
                        complete = false;
                        None
                    }
                }
            },
        };
        if let Some(forward) = verdict {
            model.push_races(pair, &pairs.conflicts, forward, &mut found);
        }
    }
    found.sort_by_key(|r: &Race| (r.first.min(r.second), r.first.max(r.second), r.buffer));
    found.dedup_by_key(|r| (r.first.min(r.second), r.first.max(r.second), r.buffer));
    Analysis {
        races: found,
        complete,
    }
}

/// Exactly [`certain_races`], with pass 2 deciding every conflicting pair: the reference the
/// tests compare pass 1's shortcuts with.
#[cfg(test)]
pub fn exhaustive_races(streams: usize, events: usize, program: &[Flow]) -> Option<Vec<Race>> {
    let model = Model::new(streams, events, program);
    let pairs = model.pairs()?;
    let mut steps = 0u64;
    let mut found = Vec::new();
    for pair in &pairs.list {
        if let Some(forward) = model.exact(pair.a(), pair.b(), &mut steps)? {
            model.push_races(pair, &pairs.conflicts, forward, &mut found);
        }
    }
    found.sort_by_key(|r: &Race| (r.first.min(r.second), r.first.max(r.second), r.buffer));
    Some(found)
}

/// An operation statement of the program, numbered in source (pre-)order.
struct Site {
    stmt: usize,
    stream: usize,
    touches: Vec<Touch>,
    /// The enclosing loops and branches, outermost first.
    anc: Vec<Anc>,
}

/// An enclosing construct of a site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anc {
    Loop(usize),
    Then(usize),
    Else(usize),
}

/// A record, wait or `wait_stream` over "targets": streams `0..streams`, then events.
#[derive(Debug, Clone, Copy)]
struct Sync {
    dst: usize,
    src: usize,
    /// `true` for a record (`dst` becomes `src`), `false` for a wait (`dst` gains `src`).
    copy: bool,
}

/// The sites and syncs inside a node: contiguous, since both are numbered in pre-order.
#[derive(Debug, Clone)]
struct Extent {
    sites: Range<usize>,
    syncs: Range<usize>,
}

/// The program with sites and syncs numbered; commands naming unknown streams or events are
/// dropped (as the straight-line model ignores them), and empty branches and loops with them.
enum Node {
    Op(usize),
    Sync(usize),
    If {
        then: Vec<Node>,
        otherwise: Vec<Node>,
        extent: Extent,
    },
    Loop {
        id: usize,
        body: Vec<Node>,
        extent: Extent,
    },
}

/// The program as both passes walk it.
struct Model {
    /// Streams, then events.
    targets: usize,
    sites: Vec<Site>,
    syncs: Vec<Sync>,
    tree: Vec<Node>,
    loops: usize,
    ifs: usize,
}

/// Facts kept per conflicting pair of sites `a < b` by pass 1: `seen[0]` at `b` about `a`
/// (`a` issued first), `seen[1]` at `a` about `b`. Compact: there can be millions.
struct Pair {
    sites: [u32; 2],
    /// The range of its [`Conflict`]s.
    conflicts: [u32; 2],
    seen: [Seen; 2],
}

impl Pair {
    fn a(&self) -> usize {
        self.sites[0] as usize
    }
    fn b(&self) -> usize {
        self.sites[1] as usize
    }
    fn conflicts(&self) -> Range<usize> {
        self.conflicts[0] as usize..self.conflicts[1] as usize
    }
}

/// Pass 1's facts about the partner at a statement, over all paths reaching it.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// The partner may have run before.
    poss: bool,
    /// On some path, the partner's latest run is ordered before this statement.
    ordered: bool,
    /// On some path, the partner ran and its latest run is not ordered before this statement
    /// (over-approximated).
    unordered: bool,
}

/// One buffer two statements conflict on, with the access flags reported for each issue order
/// (the first issued's first).
#[derive(Debug, Clone, Copy)]
struct Conflict {
    buffer: usize,
    forward: (bool, bool),
    backward: (bool, bool),
}

struct Pairs {
    list: Vec<Pair>,
    conflicts: Vec<Conflict>,
    /// Per site, the pairs it belongs to.
    by_site: Vec<Vec<u32>>,
}

enum Verdict {
    /// Not reported: the two never run together, or some execution runs both and orders every
    /// run of one after the runs of the other before it.
    Clean,
    /// Reported; `forward` is whether a path has the lower site issued first and unordered,
    /// when pass 1 knows.
    Race { forward: Option<bool> },
    /// Pass 2 decides.
    Unknown,
}

impl Model {
    fn new(streams: usize, events: usize, program: &[Flow]) -> Model {
        let mut model = Model {
            targets: streams + events,
            sites: Vec::new(),
            syncs: Vec::new(),
            tree: Vec::new(),
            loops: 0,
            ifs: 0,
        };
        let mut anc = Vec::new();
        model.tree = model.lower(program, streams, events, &mut anc);
        debug_assert!(
            {
                let mut ids: Vec<usize> = model.sites.iter().map(|s| s.stmt).collect();
                ids.sort_unstable();
                ids.windows(2).all(|w| w[0] != w[1])
            },
            "a statement id appears twice"
        );
        model
    }

    fn lower(
        &mut self,
        flow: &[Flow],
        streams: usize,
        events: usize,
        anc: &mut Vec<Anc>,
    ) -> Vec<Node> {
        let mut nodes = Vec::new();
        for f in flow {
            let sync = |dst: usize, src: usize, copy: bool| Sync { dst, src, copy };
            match f {
                Flow::Cmd(Cmd::Op {
                    stmt,
                    stream,
                    touches,
                }) => {
                    if *stream < streams {
                        nodes.push(Node::Op(self.sites.len()));
                        self.sites.push(Site {
                            stmt: *stmt,
                            stream: *stream,
                            touches: touches.clone(),
                            anc: anc.clone(),
                        });
                    }
                }
                Flow::Cmd(cmd) => {
                    let s = match *cmd {
                        Cmd::Record { stream, event } if stream < streams && event < events => {
                            sync(streams + event, stream, true)
                        }
                        Cmd::Wait { stream, event } if stream < streams && event < events => {
                            sync(stream, streams + event, false)
                        }
                        Cmd::WaitStream { stream, other }
                            if stream < streams && other < streams =>
                        {
                            sync(stream, other, false)
                        }
                        _ => continue,
                    };
                    nodes.push(Node::Sync(self.syncs.len()));
                    self.syncs.push(s);
                }
                Flow::Loop(body) => {
                    let id = self.loops;
                    self.loops += 1;
                    let start = (self.sites.len(), self.syncs.len());
                    anc.push(Anc::Loop(id));
                    let body = self.lower(body, streams, events, anc);
                    anc.pop();
                    if !body.is_empty() {
                        let extent = self.extent(start);
                        nodes.push(Node::Loop { id, body, extent });
                    }
                }
                Flow::If(then, otherwise) => {
                    let id = self.ifs;
                    self.ifs += 1;
                    let start = (self.sites.len(), self.syncs.len());
                    anc.push(Anc::Then(id));
                    let then = self.lower(then, streams, events, anc);
                    anc.pop();
                    anc.push(Anc::Else(id));
                    let otherwise = self.lower(otherwise, streams, events, anc);
                    anc.pop();
                    if !then.is_empty() || !otherwise.is_empty() {
                        let extent = self.extent(start);
                        nodes.push(Node::If {
                            then,
                            otherwise,
                            extent,
                        });
                    }
                }
            }
        }
        nodes
    }

    fn extent(&self, (sites, syncs): (usize, usize)) -> Extent {
        Extent {
            sites: sites..self.sites.len(),
            syncs: syncs..self.syncs.len(),
        }
    }

    /// Every pair of sites on different streams touching a whole buffer, one writing.
    fn pairs(&self) -> Option<Pairs> {
        // Per site: (buffer, reads, writes), sorted by buffer, whole accesses only.
        let modes: Vec<Vec<(usize, bool, bool)>> = self
            .sites
            .iter()
            .map(|s| {
                let mut m: Vec<(usize, bool, bool)> = Vec::new();
                for t in s.touches.iter().filter(|t| t.whole) {
                    match m.iter_mut().find(|e| e.0 == t.buffer) {
                        Some(e) => {
                            e.1 |= !t.write;
                            e.2 |= t.write;
                        }
                        None => m.push((t.buffer, !t.write, t.write)),
                    }
                }
                m.sort_unstable();
                m
            })
            .collect();
        let mut pairs = Pairs {
            list: Vec::new(),
            conflicts: Vec::new(),
            by_site: vec![Vec::new(); self.sites.len()],
        };
        for b in 0..self.sites.len() {
            for a in 0..b {
                if self.sites[a].stream == self.sites[b].stream {
                    continue;
                }
                let start = pairs.conflicts.len();
                let (ma, mb) = (&modes[a], &modes[b]);
                let (mut i, mut j) = (0, 0);
                while i < ma.len() && j < mb.len() {
                    match ma[i].0.cmp(&mb[j].0) {
                        std::cmp::Ordering::Less => i += 1,
                        std::cmp::Ordering::Greater => j += 1,
                        std::cmp::Ordering::Equal => {
                            let (x, y) = ((ma[i].1, ma[i].2), (mb[j].1, mb[j].2));
                            if let (Some(forward), Some(backward)) =
                                (min_flags(x, y), min_flags(y, x))
                            {
                                pairs.conflicts.push(Conflict {
                                    buffer: ma[i].0,
                                    forward,
                                    backward,
                                });
                            }
                            i += 1;
                            j += 1;
                        }
                    }
                }
                if pairs.conflicts.len() > start {
                    if pairs.list.len() >= MAX_PAIRS {
                        return None;
                    }
                    let index = pairs.list.len() as u32;
                    pairs.by_site[a].push(index);
                    pairs.by_site[b].push(index);
                    pairs.list.push(Pair {
                        sites: [a as u32, b as u32],
                        conflicts: [start as u32, pairs.conflicts.len() as u32],
                        seen: [Seen::default(); 2],
                    });
                }
            }
        }
        Some(pairs)
    }

    /// Pass 1's answer for a pair.
    fn verdict(&self, pair: &Pair) -> Verdict {
        let [ab, ba] = pair.seen;
        if !ab.poss && !ba.poss {
            return Verdict::Clean;
        }
        let ab_certain = ab.poss && !ab.ordered;
        let ba_certain = ba.poss && !ba.ordered;
        let race = (ab_certain && self.precedes(pair.a(), pair.b()))
            || (ba_certain && self.precedes(pair.b(), pair.a()))
            || ((ab_certain || !ab.poss) && (ba_certain || !ba.poss));
        if race {
            let forward = if ab_certain {
                Some(true)
            } else if !ab.unordered {
                Some(false)
            } else {
                None
            };
            Verdict::Race { forward }
        } else if (!ab.unordered && (!ba.unordered || self.isolable(pair.a(), pair.b())))
            || (!ba.unordered && self.isolable(pair.b(), pair.a()))
        {
            // Some execution runs both and leaves every run of one that follows a run of the
            // other ordered after it.
            Verdict::Clean
        } else {
            Verdict::Unknown
        }
    }

    /// Whether some execution runs both sites with every run of `x` before every run of `y`
    /// (by structure alone, given that some execution runs both; `false` when not sure).
    fn isolable(&self, x: usize, y: usize) -> bool {
        let (ax, ay) = (&self.sites[x].anc, &self.sites[y].anc);
        let common = ax.iter().zip(ay).take_while(|(p, q)| p == q).count();
        let inner_loop = ax[..common].iter().rposition(|a| matches!(a, Anc::Loop(_)));
        match inner_loop {
            None => x < y,
            // Two iterations: the second skips `x` or the first skips `y` (or the second skips
            // both) through a branch or loop inside the common loop.
            Some(l) if x < y => ax.len() > l + 1 || ay.len() > l + 1,
            // One iteration runs `x` but not `y`, a later one `y` but not `x`.
            Some(_) => ax.len() > common && ay.len() > common,
        }
    }

    /// Whether, on every execution running both, some run of site `x` is issued before some
    /// run of site `y` (by structure alone; `false` when not sure).
    fn precedes(&self, x: usize, y: usize) -> bool {
        let (ax, ay) = (&self.sites[x].anc, &self.sites[y].anc);
        let common = ax.iter().zip(ay).take_while(|(p, q)| p == q).count();
        let inner_loop = ax[..common].iter().rposition(|a| matches!(a, Anc::Loop(_)));
        match inner_loop {
            // Without a common loop, all runs of the earlier site come first.
            None => x < y,
            // In the same iteration: one runs whenever the other does, the earlier first.
            Some(_) if x < y => ax.len() == common || ay.len() == common,
            // Across iterations: both run in every iteration, and there are at least two.
            Some(l) => ax.len() == l + 1 && ay.len() == l + 1,
        }
    }

    fn push_races(&self, pair: &Pair, conflicts: &[Conflict], forward: bool, out: &mut Vec<Race>) {
        let (first, second) = if forward {
            (&self.sites[pair.a()], &self.sites[pair.b()])
        } else {
            (&self.sites[pair.b()], &self.sites[pair.a()])
        };
        for c in &conflicts[pair.conflicts()] {
            let (first_writes, second_writes) = if forward { c.forward } else { c.backward };
            out.push(Race {
                first: first.stmt,
                second: second.stmt,
                buffer: c.buffer,
                first_writes,
                second_writes,
                loop_carried: first.stmt >= second.stmt,
            });
        }
    }

    /// Pass 2: decides the pair of sites `a < b` exactly. `Some(None)`: not reported;
    /// `Some(Some(forward))`: reported, `forward` when some execution issues `a` first with
    /// the two unordered. `None` past the limits.
    fn exact(&self, a: usize, b: usize, steps: &mut u64) -> Option<Option<bool>> {
        let view = PairView::new(self, a, b);
        if view.count <= Small::TARGETS {
            Pass2::<Small>::new(self, view, steps).decide()
        } else {
            Pass2::<Wide>::new(self, view, steps).decide()
        }
    }
}

/// The lexicographically least `(first writes, second writes)` over the conflicting access
/// combinations, given each side's `(reads, writes)`.
fn min_flags(first: (bool, bool), second: (bool, bool)) -> Option<(bool, bool)> {
    let modes = |(reads, writes): (bool, bool)| {
        [(false, reads), (true, writes)]
            .into_iter()
            .filter(|m| m.1)
            .map(|m| m.0)
    };
    let mut best: Option<(bool, bool)> = None;
    for x in modes(first) {
        for y in modes(second) {
            if x || y {
                best = Some(best.map_or((x, y), |b| b.min((x, y))));
            }
        }
    }
    best
}

/// Pass 1's abstract state: `occ` over sites; `may` and `unord`, per target, over sites.
#[derive(Clone)]
struct Hb {
    occ: Vec<u64>,
    may: Vec<u64>,
    unord: Vec<u64>,
}

impl Hb {
    /// Joins `other` into `self`; whether anything changed.
    fn join(&mut self, other: &Hb) -> bool {
        let mut changed = false;
        for (x, y) in [
            (&mut self.occ, &other.occ),
            (&mut self.may, &other.may),
            (&mut self.unord, &other.unord),
        ] {
            for (a, b) in x.iter_mut().zip(y) {
                let n = *a | b;
                changed |= n != *a;
                *a = n;
            }
        }
        changed
    }
}

struct GaveUp;

struct Pass1<'m> {
    model: &'m Model,
    pairs: &'m mut Pairs,
    /// Words per set of sites.
    w: usize,
    /// Each loop's head state from its previous visit: visits only grow, so iteration may
    /// resume from there.
    heads: Vec<Option<Hb>>,
    words: u64,
}

fn bit(i: usize) -> (usize, u64) {
    (i / 64, 1u64 << (i % 64))
}

impl<'m> Pass1<'m> {
    fn new(model: &'m Model, pairs: &'m mut Pairs) -> Self {
        Pass1 {
            w: model.sites.len().div_ceil(64),
            heads: vec![None; model.loops],
            model,
            pairs,
            words: 0,
        }
    }

    fn initial(&self) -> Hb {
        let n = self.model.targets * self.w;
        Hb {
            occ: vec![0; self.w],
            may: vec![0; n],
            unord: vec![0; n],
        }
    }

    fn charge(&mut self, words: usize) -> Result<(), GaveUp> {
        self.words += words as u64 + 1;
        if self.words > MAX_PASS1_WORDS {
            Err(GaveUp)
        } else {
            Ok(())
        }
    }

    fn run(&mut self, nodes: &[Node], hb: &mut Hb) -> Result<(), GaveUp> {
        let w = self.w;
        for node in nodes {
            match node {
                Node::Op(x) => {
                    let stream = self.model.sites[*x].stream;
                    let pairs = &mut *self.pairs;
                    for &p in &pairs.by_site[*x] {
                        let pair = &mut pairs.list[p as usize];
                        let (partner, side) = if pair.a() == *x {
                            (pair.b(), 1)
                        } else {
                            (pair.a(), 0)
                        };
                        let (word, mask) = bit(partner);
                        pair.seen[side] = Seen {
                            poss: hb.occ[word] & mask != 0,
                            ordered: hb.may[stream * w + word] & mask != 0,
                            unordered: hb.unord[stream * w + word] & mask != 0,
                        };
                    }
                    let conflicts = self.pairs.by_site[*x].len();
                    let (word, mask) = bit(*x);
                    for t in 0..self.model.targets {
                        hb.may[t * w + word] &= !mask;
                        hb.unord[t * w + word] |= mask;
                    }
                    hb.may[stream * w + word] |= mask;
                    hb.unord[stream * w + word] &= !mask;
                    hb.occ[word] |= mask;
                    self.charge(conflicts + self.model.targets)?;
                }
                Node::Sync(i) => {
                    let Sync { dst, src, copy } = self.model.syncs[*i];
                    let (d, s) = (dst * w, src * w);
                    for k in 0..w {
                        if copy {
                            hb.may[d + k] = hb.may[s + k];
                            hb.unord[d + k] = hb.unord[s + k];
                        } else {
                            hb.may[d + k] |= hb.may[s + k];
                            hb.unord[d + k] &= hb.unord[s + k];
                        }
                    }
                    self.charge(w)?;
                }
                Node::If {
                    then, otherwise, ..
                } => {
                    let mut other = hb.clone();
                    self.run(then, hb)?;
                    self.run(otherwise, &mut other)?;
                    hb.join(&other);
                    self.charge(3 * hb.may.len())?;
                }
                Node::Loop { id, body, .. } => {
                    let mut head = match self.heads[*id].take() {
                        Some(mut h) => {
                            h.join(hb);
                            h
                        }
                        None => hb.clone(),
                    };
                    loop {
                        let mut out = head.clone();
                        self.run(body, &mut out)?;
                        self.charge(3 * out.may.len())?;
                        if !head.join(&out) {
                            break;
                        }
                    }
                    hb.clone_from(&head);
                    self.heads[*id] = Some(head);
                }
            }
        }
        Ok(())
    }
}

/// Pass 2's flags: whether `a` (`b`) has run; whether `b` was issued after `a`'s latest run,
/// unordered with it (`a` after `b`'s).
const OCC_A: u8 = 1;
const OCC_B: u8 = 2;
const RACE_AB: u8 = 4;
const RACE_BA: u8 = 8;
/// Both ran and `b` followed `a` unordered: the execution's answer is settled.
const DONE: u8 = OCC_A | OCC_B | RACE_AB | RACE_BA;

/// Pass 2's state of a pair: the flags, and per side (`a`, `b`) the targets its latest run
/// reaches, over the pair's relevant targets numbered from 0.
trait PairState: Clone + Eq + Ord + std::hash::Hash {
    fn new(targets: usize) -> Self;
    fn flags(&self) -> u8;
    fn add_flags(&mut self, f: u8);
    fn reaches(&self, side: usize, t: usize) -> bool;
    fn set_reaches(&mut self, side: usize, t: usize, on: bool);
    /// The side's latest run reaches only `t`.
    fn reset(&mut self, side: usize, t: usize);
}

/// A [`PairState`] in one word, for up to [`Small::TARGETS`] relevant targets.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Small(u128);

impl Small {
    const TARGETS: usize = 62;
    fn bit(side: usize, t: usize) -> u128 {
        1u128 << (4 + side * Self::TARGETS + t)
    }
}

impl PairState for Small {
    fn new(_: usize) -> Self {
        Small(0)
    }
    fn flags(&self) -> u8 {
        (self.0 & 0xf) as u8
    }
    fn add_flags(&mut self, f: u8) {
        self.0 |= u128::from(f);
    }
    fn reaches(&self, side: usize, t: usize) -> bool {
        self.0 & Self::bit(side, t) != 0
    }
    fn set_reaches(&mut self, side: usize, t: usize, on: bool) {
        if on {
            self.0 |= Self::bit(side, t);
        } else {
            self.0 &= !Self::bit(side, t);
        }
    }
    fn reset(&mut self, side: usize, t: usize) {
        let all = ((1u128 << Self::TARGETS) - 1) << (4 + side * Self::TARGETS);
        self.0 = (self.0 & !all) | Self::bit(side, t);
    }
}

/// A [`PairState`] for any number of relevant targets: flags, then each side's words.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Wide(Box<[u64]>);

impl Wide {
    fn words(&self) -> usize {
        (self.0.len() - 1) / 2
    }
}

impl PairState for Wide {
    fn new(targets: usize) -> Self {
        Wide(vec![0; 1 + 2 * targets.div_ceil(64)].into_boxed_slice())
    }
    fn flags(&self) -> u8 {
        self.0[0] as u8
    }
    fn add_flags(&mut self, f: u8) {
        self.0[0] |= u64::from(f);
    }
    fn reaches(&self, side: usize, t: usize) -> bool {
        let (word, mask) = bit(t);
        self.0[1 + side * self.words() + word] & mask != 0
    }
    fn set_reaches(&mut self, side: usize, t: usize, on: bool) {
        let (word, mask) = bit(t);
        let i = 1 + side * self.words() + word;
        if on {
            self.0[i] |= mask;
        } else {
            self.0[i] &= !mask;
        }
    }
    fn reset(&mut self, side: usize, t: usize) {
        let w = self.words();
        self.0[1 + side * w..1 + (side + 1) * w].fill(0);
        self.set_reaches(side, t, true);
    }
}

type Hasher = BuildHasherDefault<DefaultHasher>;

/// The targets pass 2 keeps for a pair: those whose ordering can reach the stream of `a` or of
/// `b` through the program's syncs, numbered from 0.
struct PairView {
    a: usize,
    b: usize,
    /// Per target, its number, or `None` when not kept.
    local: Vec<Option<usize>>,
    count: usize,
    /// Prefix counts of the syncs that write a kept target.
    kept_syncs: Vec<usize>,
}

impl PairView {
    fn new(model: &Model, a: usize, b: usize) -> PairView {
        let mut sources: Vec<Vec<usize>> = vec![Vec::new(); model.targets];
        for s in &model.syncs {
            sources[s.dst].push(s.src);
        }
        let mut local = vec![None; model.targets];
        let mut count = 0;
        let mut work = vec![model.sites[a].stream, model.sites[b].stream];
        while let Some(t) = work.pop() {
            if local[t].is_none() {
                local[t] = Some(count);
                count += 1;
                work.extend(sources[t].iter().copied());
            }
        }
        let mut kept_syncs = Vec::with_capacity(model.syncs.len() + 1);
        kept_syncs.push(0);
        for s in &model.syncs {
            let last = kept_syncs.last().copied().unwrap_or(0);
            kept_syncs.push(last + usize::from(local[s.dst].is_some()));
        }
        PairView {
            a,
            b,
            local,
            count,
            kept_syncs,
        }
    }

    /// Whether anything in `extent` can change the pair's state.
    fn matters(&self, extent: &Extent) -> bool {
        extent.sites.contains(&self.a)
            || extent.sites.contains(&self.b)
            || self.kept_syncs[extent.syncs.end] > self.kept_syncs[extent.syncs.start]
    }
}

struct Pass2<'m, S> {
    model: &'m Model,
    view: PairView,
    /// Per loop, the states after it by the state before it.
    memo: Vec<HashMap<S, Rc<Vec<S>>, Hasher>>,
    steps: &'m mut u64,
}

/// Sorts and deduplicates a state set.
fn dedup<S: PairState>(mut set: Vec<S>) -> Vec<S> {
    set.sort_unstable();
    set.dedup();
    set
}

impl<'m, S: PairState> Pass2<'m, S> {
    fn new(model: &'m Model, view: PairView, steps: &'m mut u64) -> Self {
        Pass2 {
            memo: vec![HashMap::default(); model.loops],
            model,
            view,
            steps,
        }
    }

    /// `Some(None)`: not reported; `Some(Some(forward))`: reported, `forward` when some
    /// execution issues `a` first with the two unordered. `None` past the limits.
    fn decide(&mut self) -> Option<Option<bool>> {
        let tree = &self.model.tree;
        let end = self.run(tree, vec![S::new(self.view.count)])?;
        let mut both = false;
        let mut forward = false;
        for s in &end {
            let f = s.flags();
            if f & OCC_A != 0 && f & OCC_B != 0 {
                if f & (RACE_AB | RACE_BA) == 0 {
                    return Some(None);
                }
                both = true;
                forward |= f & RACE_AB != 0;
            }
        }
        Some(both.then_some(forward))
    }

    fn step(&mut self, n: usize) -> Option<()> {
        *self.steps += n as u64 + 1;
        (*self.steps <= MAX_PAIR_STEPS).then_some(())
    }

    fn run(&mut self, nodes: &[Node], mut set: Vec<S>) -> Option<Vec<S>> {
        // Every node visited counts too: most are skipped, but not for free.
        *self.steps += nodes.len() as u64;
        for node in nodes {
            match node {
                Node::Op(x) if *x == self.view.a || *x == self.view.b => {
                    self.step(set.len())?;
                    let site = &self.model.sites[*x];
                    let t = self.view.local[site.stream]?;
                    let (side, occ_mine, occ_theirs, race) = if *x == self.view.a {
                        (0, OCC_A, OCC_B, RACE_BA)
                    } else {
                        (1, OCC_B, OCC_A, RACE_AB)
                    };
                    for s in &mut set {
                        if s.flags() == DONE {
                            continue;
                        }
                        if s.flags() & occ_theirs != 0 && !s.reaches(1 - side, t) {
                            s.add_flags(race);
                        }
                        let settled = OCC_A | OCC_B | RACE_AB;
                        if (s.flags() | occ_mine) & settled == settled {
                            // Nothing later changes the answer for this execution: one state
                            // for all of them.
                            *s = S::new(self.view.count);
                            s.add_flags(DONE);
                        } else {
                            s.reset(side, t);
                            s.add_flags(occ_mine);
                        }
                    }
                }
                Node::Op(_) => {}
                Node::Sync(i) => {
                    let sync = self.model.syncs[*i];
                    if let Some(dst) = self.view.local[sync.dst] {
                        // Kept targets' sources are kept.
                        let src = self.view.local[sync.src]?;
                        self.step(set.len())?;
                        for s in &mut set {
                            for side in 0..2 {
                                let on = s.reaches(side, src);
                                if sync.copy || on {
                                    s.set_reaches(side, dst, on);
                                }
                            }
                        }
                    }
                }
                Node::If {
                    then,
                    otherwise,
                    extent,
                } => {
                    if self.view.matters(extent) {
                        let mut t = self.run(then, set.clone())?;
                        t.extend(self.run(otherwise, set)?);
                        set = dedup(t);
                    }
                }
                Node::Loop { id, body, extent } => {
                    if self.view.matters(extent) {
                        let mut out = Vec::new();
                        for s in set {
                            out.extend(self.run_loop(*id, body, s)?.iter().cloned());
                        }
                        set = dedup(out);
                    }
                }
            }
            if set.len() > MAX_STATES {
                set = dedup(set);
                if set.len() > MAX_STATES {
                    return None;
                }
            }
        }
        Some(set)
    }

    /// The states after a loop entered in `state`: no iteration, or two or more.
    fn run_loop(&mut self, id: usize, body: &[Node], state: S) -> Option<Rc<Vec<S>>> {
        if let Some(done) = self.memo[id].get(&state) {
            return Some(Rc::clone(done));
        }
        let once = self.run(body, vec![state.clone()])?;
        let twice = dedup(self.run(body, once)?);
        let mut all: HashSet<S, Hasher> = twice.iter().cloned().collect();
        let mut fresh = twice;
        while !fresh.is_empty() {
            let next = self.run(body, fresh)?;
            fresh = next.into_iter().filter(|s| all.insert(s.clone())).collect();
            if all.len() > MAX_STATES {
                return None;
            }
        }
        all.insert(state.clone());
        let done = Rc::new(all.into_iter().collect::<Vec<_>>());
        self.memo[id].insert(state, Rc::clone(&done));
        Some(done)
    }
}

#[cfg(test)]
mod tests {
    use super::{certain_races, straight_line_races, Cmd, Flow, Race, Touch};

    /// The certain races of a program the analysis decides completely.
    fn certain(streams: usize, events: usize, program: &[Flow]) -> Vec<Race> {
        let analysis = certain_races(streams, events, program);
        assert!(analysis.complete);
        analysis.races
    }

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
        let races = certain(2, 2, &[Flow::Loop(body.clone())]);
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
        assert!(certain(2, 2, &[Flow::Loop(fixed)]).is_empty());
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
        assert!(certain(2, 1, &maybe).is_empty());
        // Ordered on both paths: not reported.
        let both = [write.clone(), Flow::If(order.clone(), order), read.clone()];
        assert!(certain(2, 1, &both).is_empty());
        // Unordered on every path where both run: reported, even inside a branch.
        let inside = [write, Flow::If(vec![read], vec![])];
        assert_eq!(certain(2, 1, &inside).len(), 1);
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
        assert!(certain(2, 1, &p).is_empty());
    }
}
