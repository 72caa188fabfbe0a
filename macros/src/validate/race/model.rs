//! The program as both passes walk it: sites and syncs numbered, the conflicting pairs, and
//! the verdicts pass 1's facts give.

use std::ops::Range;

use super::{Cmd, Flow, Race, Touch, MAX_PAIRS};

/// An operation statement of the program, numbered in source (pre-)order.
pub(super) struct Site {
    stmt: usize,
    pub(super) stream: usize,
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
pub(super) struct Sync {
    pub(super) dst: usize,
    pub(super) src: usize,
    /// `true` for a record (`dst` becomes `src`), `false` for a wait (`dst` gains `src`).
    pub(super) copy: bool,
}

/// The sites and syncs inside a node: contiguous, since both are numbered in pre-order.
#[derive(Debug, Clone)]
pub(super) struct Extent {
    pub(super) sites: Range<usize>,
    pub(super) syncs: Range<usize>,
}

/// The program with sites and syncs numbered; commands naming unknown streams or events are
/// dropped (as the straight-line model ignores them), and empty branches and loops with them.
pub(super) enum Node {
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
pub(super) struct Model {
    /// Streams, then events.
    pub(super) targets: usize,
    pub(super) sites: Vec<Site>,
    pub(super) syncs: Vec<Sync>,
    pub(super) tree: Vec<Node>,
    pub(super) loops: usize,
    ifs: usize,
}

/// Facts kept per conflicting pair of sites `a < b` by pass 1: `seen[0]` at `b` about `a`
/// (`a` issued first), `seen[1]` at `a` about `b`. Compact: there can be millions.
pub(super) struct Pair {
    sites: [u32; 2],
    /// The range of its [`Conflict`]s.
    conflicts: [u32; 2],
    pub(super) seen: [Seen; 2],
}

impl Pair {
    pub(super) fn a(&self) -> usize {
        self.sites[0] as usize
    }
    pub(super) fn b(&self) -> usize {
        self.sites[1] as usize
    }
    fn conflicts(&self) -> Range<usize> {
        self.conflicts[0] as usize..self.conflicts[1] as usize
    }
}

/// Pass 1's facts about the partner at a statement, over all paths reaching it.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Seen {
    /// The partner may have run before.
    pub(super) poss: bool,
    /// On some path, the partner's latest run is ordered before this statement.
    pub(super) ordered: bool,
    /// On some path, the partner ran and its latest run is not ordered before this statement
    /// (over-approximated).
    pub(super) unordered: bool,
}

/// One buffer two statements conflict on, with the access flags reported for each issue order
/// (the first issued's first).
#[derive(Debug, Clone, Copy)]
pub(super) struct Conflict {
    buffer: usize,
    forward: (bool, bool),
    backward: (bool, bool),
}

pub(super) struct Pairs {
    pub(super) list: Vec<Pair>,
    pub(super) conflicts: Vec<Conflict>,
    /// Per site, the pairs it belongs to.
    pub(super) by_site: Vec<Vec<u32>>,
}

pub(super) enum Verdict {
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
    pub(super) fn new(streams: usize, events: usize, program: &[Flow]) -> Model {
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
    pub(super) fn pairs(&self) -> Option<Pairs> {
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
    pub(super) fn verdict(&self, pair: &Pair) -> Verdict {
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

    pub(super) fn push_races(
        &self,
        pair: &Pair,
        conflicts: &[Conflict],
        forward: bool,
        out: &mut Vec<Race>,
    ) {
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
