//! Pass 1: one abstract state per program point, over all paths at once.

use super::model::{Model, Node, Pairs, Seen, Sync};
use super::MAX_PASS1_WORDS;

/// Pass 1's abstract state: `occ` over sites; `may` and `unord`, per target, over sites.
#[derive(Clone)]
pub(super) struct Hb {
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

pub(super) struct GaveUp;

pub(super) struct Pass1<'m> {
    model: &'m Model,
    pairs: &'m mut Pairs,
    /// Words per set of sites.
    w: usize,
    /// Each loop's head state from its previous visit: visits only grow, so iteration may
    /// resume from there.
    heads: Vec<Option<Hb>>,
    words: u64,
}

pub(super) fn bit(i: usize) -> (usize, u64) {
    (i / 64, 1u64 << (i % 64))
}

impl<'m> Pass1<'m> {
    pub(super) fn new(model: &'m Model, pairs: &'m mut Pairs) -> Self {
        Pass1 {
            w: model.sites.len().div_ceil(64),
            heads: vec![None; model.loops],
            model,
            pairs,
            words: 0,
        }
    }

    pub(super) fn initial(&self) -> Hb {
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

    pub(super) fn run(&mut self, nodes: &[Node], hb: &mut Hb) -> Result<(), GaveUp> {
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
