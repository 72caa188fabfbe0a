//! Pass 2: per undecided pair, the exact set of the pair's states.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::rc::Rc;

use super::model::{Extent, Model, Node};
use super::pass1::bit;
use super::{MAX_PAIR_STEPS, MAX_STATES};

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
pub(super) trait PairState: Clone + Eq + Ord + std::hash::Hash {
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
pub(super) struct Small(u128);

impl Small {
    pub(super) const TARGETS: usize = 62;
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
pub(super) struct Wide(Box<[u64]>);

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
pub(super) struct PairView {
    a: usize,
    b: usize,
    /// Per target, its number, or `None` when not kept.
    local: Vec<Option<usize>>,
    pub(super) count: usize,
    /// Prefix counts of the syncs that write a kept target.
    kept_syncs: Vec<usize>,
}

impl PairView {
    pub(super) fn new(model: &Model, a: usize, b: usize) -> PairView {
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

pub(super) struct Pass2<'m, S> {
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
    pub(super) fn new(model: &'m Model, view: PairView, steps: &'m mut u64) -> Self {
        Pass2 {
            memo: vec![HashMap::default(); model.loops],
            model,
            view,
            steps,
        }
    }

    /// `Some(None)`: not reported; `Some(Some(forward))`: reported, `forward` when some
    /// execution issues `a` first with the two unordered. `None` past the limits.
    pub(super) fn decide(&mut self) -> Option<Option<bool>> {
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

impl Model {
    /// Pass 2: decides the pair of sites `a < b` exactly. `Some(None)`: not reported;
    /// `Some(Some(forward))`: reported, `forward` when some execution issues `a` first with
    /// the two unordered. `None` past the limits.
    pub(super) fn exact(&self, a: usize, b: usize, steps: &mut u64) -> Option<Option<bool>> {
        let view = PairView::new(self, a, b);
        if view.count <= Small::TARGETS {
            Pass2::<Small>::new(self, view, steps).decide()
        } else {
            Pass2::<Wide>::new(self, view, steps).decide()
        }
    }
}
