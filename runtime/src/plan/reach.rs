//! Reachability ("happens before") of a graph whose nodes lie on chains, as vector clocks.
//!
//! The nodes of a plan are operations, and the operations of one stream are totally ordered
//! in issue order: a stream is a chain. Each node keeps, per chain, the position of the
//! latest node of that chain with a path to it (its **clock**), so a node reaches another
//! exactly when its position is at most the other's clock entry for its chain. That takes
//! `nodes × chains` small numbers instead of a `nodes × nodes` matrix, and answers a query
//! with one memory read.
//!
//! Shared by the plan and by anything that compares another graph with it (a captured CUDA
//! graph read back from the driver): [`Reach::of_edges`] puts another edge set on the same
//! nodes and chains, and two relations are compared clock by clock.

use std::collections::BTreeSet;

/// The transitive closure of a directed graph on nodes `0..len()` whose nodes are grouped
/// in chains (a plan's streams): `reaches(a, b)` is true when a path of at least one edge
/// leads from `a` to `b`. Equality compares the relations.
///
/// A node's position is its rank on its chain, from 1, in node order. Its clock holds, per
/// chain, the highest position of a node of that chain with a path to it (0 for none);
/// computing it takes one pass over the nodes in index order, merging the clocks of each
/// node's direct predecessors.
///
/// The clocks answer every query when edges only go from lower to higher nodes and each
/// node of a chain reaches the next one, as in every plan (program order on a stream). A
/// graph that breaks this (a captured graph that lacks an edge or has one against issue
/// order) is still answered exactly, by search, and compared by its clocks.
#[derive(Debug, Clone)]
pub struct Reach {
    /// The chain of each node.
    chain: Vec<u32>,
    /// The position of each node on its chain, from 1.
    position: Vec<u32>,
    /// The nodes of each chain in position order.
    members: Vec<Vec<u32>>,
    /// `clocks[node * chains + c]`: the highest position on chain `c` of a node with a path
    /// to `node` (0 for none). Excludes `node` itself.
    clocks: Vec<u32>,
    /// The number of chains (the row length of `clocks`).
    chains: usize,
    /// Edges `(a, b)` with `a >= b`, sorted: against node order (a plan has none).
    backward: Vec<(usize, usize)>,
    /// Successor lists, kept only when the clocks do not answer every query.
    search: Option<Vec<Vec<usize>>>,
}

/// How two relations on the same nodes differ: the number of ordered pairs `(a, b)` on
/// which they disagree and the first of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Comparison {
    /// Pairs ordered differently; a lower bound when `at_least`.
    pub(crate) count: usize,
    /// Whether `count` only bounds the number from below (the other graph has an edge
    /// against node order, or a chain it does not keep in order).
    pub(crate) at_least: bool,
    /// The smallest differing pairs found, in increasing order.
    pub(crate) examples: Vec<(usize, usize)>,
}

impl Comparison {
    /// Whether the two relations are equal.
    pub(crate) fn is_equal(&self) -> bool {
        self.count == 0
    }
}

/// A node count, position or chain as stored: a graph of 2^32 nodes does not fit in memory
/// (a plan's operation alone takes about a hundred bytes), so the saturation never happens.
fn narrow(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

impl Reach {
    /// The reachability of the graph on nodes `0..chain_of.len()`, node `i` on chain
    /// `chain_of[i]`, with `edges` (pairs `(from, to)`).
    ///
    /// Edges with an endpoint outside the nodes are left out: callers that compare relations
    /// check the endpoints first ([`crate::Plan::same_happens_before`], `Graph::verify`).
    /// Cycles are allowed (a node on a cycle reaches itself).
    pub(crate) fn new<'e, E>(chain_of: &[usize], edges: E) -> Reach
    where
        E: IntoIterator<Item = &'e (usize, usize)>,
    {
        let n = chain_of.len();
        let chains = chain_of.iter().map(|&c| c + 1).max().unwrap_or(0);
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); chains];
        let mut position = Vec::with_capacity(n);
        for (node, &c) in chain_of.iter().enumerate() {
            members[c].push(narrow(node));
            position.push(narrow(members[c].len()));
        }
        let mut forward = Vec::new();
        let mut backward = Vec::new();
        for &(a, b) in edges {
            if a < n && b < n {
                if a < b {
                    forward.push((a, b));
                } else {
                    backward.push((a, b));
                }
            }
        }
        backward.sort_unstable();
        backward.dedup();
        // By target, latest source first: a later predecessor often covers earlier ones.
        forward.sort_unstable_by_key(|&(a, b)| (b, std::cmp::Reverse(a)));
        forward.dedup();

        let mut clocks = vec![0u32; n * chains];
        let mut exact = backward.is_empty();
        let mut next = 0;
        for b in 0..n {
            let (done, rest) = clocks.split_at_mut(b * chains);
            let row = &mut rest[..chains];
            while let Some(&(p, _)) = forward.get(next).filter(|e| e.1 == b) {
                next += 1;
                let (pc, pp) = (chain_of[p], position[p]);
                // While every chain so far is in order, a predecessor whose chain entry is
                // already covered reaches a merged one, so its clock adds nothing.
                if exact && row[pc] >= pp {
                    continue;
                }
                let from = &done[p * chains..(p + 1) * chains];
                for (r, &q) in row.iter_mut().zip(from) {
                    *r = (*r).max(q);
                }
                row[pc] = row[pc].max(pp);
            }
            // Positions start at 1: the previous node of `b`'s chain must reach `b`.
            if row[chain_of[b]].saturating_add(1) < position[b] {
                exact = false;
            }
        }

        let search = (!exact).then(|| {
            let mut successors = vec![Vec::new(); n];
            for &(a, b) in forward.iter().chain(&backward) {
                successors[a].push(b);
            }
            successors
        });
        Reach {
            chain: chain_of.iter().map(|&c| narrow(c)).collect(),
            position,
            members,
            clocks,
            chains,
            backward,
            search,
        }
    }

    /// The relation of `edges` on this relation's nodes and chains: a captured graph read
    /// back as operation indices, to compare with the plan's.
    pub(crate) fn of_edges<'e, E>(&self, edges: E) -> Reach
    where
        E: IntoIterator<Item = &'e (usize, usize)>,
    {
        let chain_of: Vec<usize> = self.chain.iter().map(|&c| c as usize).collect();
        Reach::new(&chain_of, edges)
    }

    /// The relation of `edges` on this relation's nodes less those in `dropped`, renumbered
    /// in order, with the chains they were on; and the old index of each new node.
    ///
    /// Operations that made no graph node break their stream's chain in both a plan
    /// contracted around them and its capture, so that neither relation would be exact on
    /// all the nodes; without them, each stream is a chain again and the clocks answer.
    /// Edges with an endpoint in `dropped` are left out.
    pub(crate) fn restricted<'e, E>(
        &self,
        dropped: &BTreeSet<usize>,
        edges: E,
    ) -> (Reach, Vec<usize>)
    where
        E: IntoIterator<Item = &'e (usize, usize)>,
    {
        let mut index = vec![usize::MAX; self.len()];
        let mut kept = Vec::with_capacity(self.len().saturating_sub(dropped.len()));
        let mut chain_of = Vec::with_capacity(kept.capacity());
        for (old, &c) in self.chain.iter().enumerate() {
            if !dropped.contains(&old) {
                index[old] = kept.len();
                kept.push(old);
                chain_of.push(c as usize);
            }
        }
        let renamed: Vec<(usize, usize)> = edges
            .into_iter()
            .filter_map(|&(a, b)| {
                let (x, y) = (*index.get(a)?, *index.get(b)?);
                (x != usize::MAX && y != usize::MAX).then_some((x, y))
            })
            .collect();
        (Reach::new(&chain_of, &renamed), kept)
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.position.len()
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.position.is_empty()
    }

    /// Whether a path of at least one edge leads from `a` to `b`; false for nodes out of range.
    pub fn reaches(&self, a: usize, b: usize) -> bool {
        if a >= self.len() || b >= self.len() {
            return false;
        }
        let within = self.position[a] <= self.clock(b, self.chain[a] as usize);
        match &self.search {
            None => within,
            // Without backward edges the clock's entry is the highest reaching position.
            Some(_) if self.backward.is_empty() && !within => false,
            Some(successors) => search(successors, a, b),
        }
    }

    /// Whether `a` and `b` are ordered one way or the other (or are the same node).
    pub fn ordered(&self, a: usize, b: usize) -> bool {
        a == b || self.reaches(a, b) || self.reaches(b, a)
    }

    /// Every node reachable from `a`, in increasing order.
    pub fn descendants(&self, a: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(move |&b| self.reaches(a, b))
    }

    /// The pairs `(a, b)` on which `self` and `other` disagree, in increasing order: the
    /// evidence for a message when two graphs should order their nodes the same way.
    ///
    /// Found clock by clock, in time proportional to the nodes, chains and pairs, when the
    /// two relations share their chains (as a plan's and its capture's do); otherwise by
    /// comparing every pair.
    pub fn differences(&self, other: &Reach) -> BTreeSet<(usize, usize)> {
        match self.by_clocks(other, usize::MAX) {
            Some(c) if !c.at_least => c.examples.into_iter().collect(),
            _ => self
                .pairwise(other, usize::MAX)
                .examples
                .into_iter()
                .collect(),
        }
    }

    /// How `other` orders the nodes differently, with at most `limit` example pairs.
    ///
    /// Whether the relations differ is always decided exactly. The count is exact when both
    /// graphs keep their chains in order and only have edges along node order (a plan and a
    /// faithful capture); otherwise it is a lower bound.
    pub(crate) fn compare(&self, other: &Reach, limit: usize) -> Comparison {
        self.by_clocks(other, limit)
            .unwrap_or_else(|| self.pairwise(other, limit))
    }

    /// The highest position on `chain` of a node with a path to `node` (0 for none).
    pub(crate) fn clock(&self, node: usize, chain: usize) -> u32 {
        self.clocks[node * self.chains + chain]
    }

    /// The position of `node` on its chain, from 1.
    pub(crate) fn position(&self, node: usize) -> u32 {
        self.position[node]
    }

    /// Whether the clocks alone answer every query.
    fn exact(&self) -> bool {
        self.search.is_none()
    }

    /// The comparison through clocks, when the relations share their chains and one of them
    /// is exact; `None` otherwise.
    fn by_clocks(&self, other: &Reach, limit: usize) -> Option<Comparison> {
        if self.chain != other.chain {
            return None;
        }
        let (exact, other) = match (self.exact(), other.exact()) {
            (true, _) => (self, other),
            (false, true) => (other, self),
            (false, false) => return None,
        };
        let mut found = Examples::new(limit);
        if !other.backward.is_empty() {
            // An edge against node order is a path that `exact`, whose edges all follow node
            // order, cannot have; beyond those, the other graph's paths are not counted.
            for &pair in &other.backward {
                found.add(pair);
            }
            return Some(found.finish(other.backward.len(), true));
        }
        // Both sets of clocks are the highest reaching positions, and `exact`'s reaching
        // nodes of a chain are all those up to it: when `other` is exact too, a pair differs
        // exactly where the entries differ, between the two positions. When it is not, a
        // node below its entry may still not reach: the differences found are certain, the
        // count a lower bound, and at least one is found (where a chain breaks, `exact`'s
        // entry is the higher).
        let mut count = 0usize;
        let at_least = !other.exact();
        for b in 0..self.len() {
            for c in 0..self.chains {
                let (x, y) = (exact.clock(b, c) as usize, other.clock(b, c) as usize);
                let chain = &self.members[c];
                if x > y {
                    count += x - y;
                    found.add_run(chain, y..x, b);
                } else if y > x && other.exact() {
                    count += y - x;
                    found.add_run(chain, x..y, b);
                } else if y > x {
                    // Only the node at `y` is known to reach `b` in `other`.
                    count += 1;
                    found.add_run(chain, y - 1..y, b);
                }
            }
        }
        Some(found.finish(count, at_least))
    }

    /// The comparison of every pair, for relations without common chains.
    fn pairwise(&self, other: &Reach, limit: usize) -> Comparison {
        let n = self.len().max(other.len());
        let mut found = Examples::new(limit);
        let mut count = 0;
        for a in 0..n {
            for b in 0..n {
                if self.reaches(a, b) != other.reaches(a, b) {
                    count += 1;
                    found.add((a, b));
                }
            }
        }
        found.finish(count, false)
    }
}

impl PartialEq for Reach {
    fn eq(&self, other: &Reach) -> bool {
        self.len() == other.len() && self.compare(other, 0).is_equal()
    }
}

impl Eq for Reach {}

/// Whether a path of at least one edge leads from `a` to `b` (depth-first search).
fn search(successors: &[Vec<usize>], a: usize, b: usize) -> bool {
    let mut seen = vec![false; successors.len()];
    let mut stack = successors[a].clone();
    while let Some(x) = stack.pop() {
        if x == b {
            return true;
        }
        if !std::mem::replace(&mut seen[x], true) {
            stack.extend_from_slice(&successors[x]);
        }
    }
    false
}

/// The `limit` smallest pairs seen.
struct Examples {
    limit: usize,
    pairs: BTreeSet<(usize, usize)>,
}

impl Examples {
    fn new(limit: usize) -> Examples {
        Examples {
            limit,
            pairs: BTreeSet::new(),
        }
    }

    fn add(&mut self, pair: (usize, usize)) {
        if self.limit == 0 {
            return;
        }
        self.pairs.insert(pair);
        if self.pairs.len() > self.limit {
            self.pairs.pop_last();
        }
    }

    /// The pairs `(chain[k], b)` for the chain indices `run` (positions `run` + 1): only the
    /// first `limit` can be among the smallest.
    fn add_run(&mut self, chain: &[u32], run: std::ops::Range<usize>, b: usize) {
        for &a in chain[run].iter().take(self.limit) {
            self.add((a as usize, b));
        }
    }

    fn finish(self, count: usize, at_least: bool) -> Comparison {
        Comparison {
            count,
            at_least,
            examples: self.pairs.into_iter().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every node on one chain, in node order.
    fn one_chain(n: usize, edges: &[(usize, usize)]) -> Reach {
        Reach::new(&vec![0; n], edges)
    }

    /// Every node on a chain of its own.
    fn own_chains(n: usize, edges: &[(usize, usize)]) -> Reach {
        Reach::new(&(0..n).collect::<Vec<_>>(), edges)
    }

    #[test]
    fn nodes_left_out_leave_their_chains_whole() {
        // Chain 0: 0 -> 1 -> 2; chain 1: 3 -> 4; 1 -> 4 across. Node 1 made no graph node:
        // the plan's edges contracted around it are 0 -> 2, 0 -> 4, 3 -> 4.
        let plan = Reach::new(&[0, 0, 0, 1, 1], &[(0, 1), (1, 2), (3, 4), (1, 4)]);
        let dropped = BTreeSet::from([1]);
        let contracted = [(0, 2), (0, 4), (3, 4)];
        let (model, kept) = plan.restricted(&dropped, &contracted);
        assert_eq!(kept, vec![0, 2, 3, 4]);
        assert!(model.exact(), "each chain is whole again: clocks answer");
        let pairs: Vec<(usize, usize)> = (0..4)
            .flat_map(|a| (0..4).map(move |b| (a, b)))
            .filter(|&(a, b)| model.reaches(a, b))
            .map(|(a, b)| (kept[a], kept[b]))
            .collect();
        assert_eq!(pairs, vec![(0, 2), (0, 4), (3, 4)]);
        // On all five nodes the same edges break chain 0 (1 reaches nothing and nothing
        // reaches it), so the clocks alone would not answer.
        assert!(!plan.of_edges(&contracted).exact());
        // A capture that lacks the edge across: found, exactly, by clocks.
        let (captured, _) = plan.restricted(&dropped, &[(0, 2), (3, 4)]);
        assert!(captured.exact());
        let c = model.compare(&captured, 8);
        assert_eq!((c.count, c.at_least), (1, false));
        let found: Vec<(usize, usize)> = c
            .examples
            .iter()
            .map(|&(a, b)| (kept[a], kept[b]))
            .collect();
        assert_eq!(found, vec![(0, 4)]);
        // Edges with an end left out are dropped, not renumbered onto other nodes.
        let (stray, _) = plan.restricted(&dropped, &[(0, 1), (1, 2), (0, 2)]);
        assert!(stray.reaches(0, 1) && !stray.reaches(2, 3));
    }

    #[test]
    fn chain_and_diamond() {
        // Streams: 0 and 3 on chain 0, 1 and 2 on chains of their own.
        let r = Reach::new(&[0, 1, 2, 0], &[(0, 1), (0, 2), (1, 3), (2, 3), (0, 3)]);
        assert!(
            r.search.is_none(),
            "a plan-shaped graph is answered by clocks"
        );
        assert!(r.reaches(0, 3));
        assert!(!r.reaches(1, 2));
        assert!(!r.reaches(3, 0));
        assert!(!r.reaches(0, 0));
        assert_eq!(r.descendants(0).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(
            (r.clock(3, 0), r.clock(3, 1), r.clock(3, 2), r.position(3)),
            (1, 1, 1, 2)
        );
        let d = own_chains(4, &[(0, 1), (0, 2), (1, 3), (2, 3)]);
        assert!(d.reaches(0, 3) && !d.reaches(1, 2) && !d.reaches(0, 0));
    }

    #[test]
    fn edges_in_any_order_and_redundant_edges_give_the_same_relation() {
        let a = one_chain(3, &[(0, 1), (1, 2)]);
        let b = one_chain(3, &[(1, 2), (0, 2), (0, 1)]);
        assert_eq!(a, b);
        assert!(a.differences(&b).is_empty());
        assert!(a.compare(&b, 8).is_equal());
    }

    #[test]
    fn cycles_and_edges_outside_the_nodes() {
        let r = own_chains(
            2,
            &[(0, 1), (1, 0), (1, 2), (usize::MAX, 0), (0, 10_000_000)],
        );
        assert_eq!(
            r.len(),
            2,
            "edges outside 0..n are left out, not grown into"
        );
        assert!(r.reaches(0, 0));
        assert!(r.reaches(1, 0));
        let plain = own_chains(2, &[(0, 1)]);
        assert_ne!(plain, own_chains(3, &[(0, 1)]));
        assert_eq!(
            plain.differences(&own_chains(2, &[])),
            BTreeSet::from([(0, 1)])
        );
        // Against a plan-shaped relation, the backward edge is the evidence.
        let c = plain.compare(&r, 8);
        assert_eq!((c.count, c.at_least), (1, true));
        assert_eq!(c.examples, [(1, 0)]);
        assert_eq!(
            plain.differences(&r),
            BTreeSet::from([(0, 0), (1, 0), (1, 1)])
        );
    }

    #[test]
    fn wide_graphs_cross_word_boundaries() {
        let edges: Vec<(usize, usize)> = (0..199).map(|i| (i, i + 1)).collect();
        let r = one_chain(200, &edges);
        assert!(r.reaches(0, 199));
        assert!(r.reaches(63, 64));
        assert!(!r.reaches(130, 70));
        assert_eq!(r.descendants(150).count(), 49);
    }

    #[test]
    fn a_chain_out_of_order_is_answered_by_search_and_counted_exactly_where_it_can_be() {
        // Plan: 0 → 1 on chain 0, 2 on chain 1 after 1. The capture lacks 0 → 1.
        let plan = Reach::new(&[0, 0, 1], &[(0, 1), (1, 2)]);
        let captured = plan.of_edges(&[(1, 2)]);
        assert!(captured.search.is_some());
        assert!(!captured.reaches(0, 1) && !captured.reaches(0, 2) && captured.reaches(1, 2));
        // Node 1 reaches 2 in both, so the clocks of 2 agree although 0 no longer reaches 2:
        // the count is a lower bound, the pairs found are certain.
        let c = plan.compare(&captured, 8);
        assert_eq!((c.count, c.at_least), (1, true));
        assert_eq!(c.examples, [(0, 1)]);
        assert_eq!(
            plan.differences(&captured),
            BTreeSet::from([(0, 1), (0, 2)])
        );
        assert_ne!(plan, captured);
        // An extra edge: every pair it orders is found.
        let more = plan.of_edges(&[(0, 1), (1, 2), (0, 2)]);
        assert_eq!(plan, more);
        let free = Reach::new(&[0, 1, 1], &[]);
        let joined = free.of_edges(&[(0, 2)]);
        let c = free.compare(&joined, 1);
        assert_eq!((c.count, c.at_least, c.examples), (1, false, vec![(0, 2)]));
    }

    #[test]
    fn the_clocks_agree_with_search_on_random_chained_graphs() {
        // Small pseudo-random graphs shaped like plans (each node after its chain's previous
        // one, plus random forward edges), and the same graphs with random edges removed.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        for _ in 0..200 {
            let n = 1 + next(24);
            let chains = 1 + next(4);
            let chain_of: Vec<usize> = (0..n).map(|_| next(chains)).collect();
            let mut edges = BTreeSet::new();
            for b in 0..n {
                if let Some(a) = (0..b).rev().find(|&a| chain_of[a] == chain_of[b]) {
                    edges.insert((a, b));
                }
                for _ in 0..next(3) {
                    if b > 0 {
                        edges.insert((next(b), b));
                    }
                }
            }
            let plan = Reach::new(&chain_of, &edges);
            assert!(plan.search.is_none());
            let mut fewer = edges.clone();
            for _ in 0..next(3) {
                if let Some(&e) = fewer.iter().nth(next(fewer.len().max(1))) {
                    fewer.remove(&e);
                }
            }
            let other = plan.of_edges(&fewer);
            let successors = {
                let mut s = vec![Vec::new(); n];
                for &(a, b) in &fewer {
                    s[a].push(b);
                }
                s
            };
            let mut truth = BTreeSet::new();
            for a in 0..n {
                for b in 0..n {
                    let reached = search(&successors, a, b);
                    assert_eq!(other.reaches(a, b), reached);
                    if plan.reaches(a, b) != reached {
                        truth.insert((a, b));
                    }
                }
            }
            assert_eq!(plan.differences(&other), truth);
            let c = plan.compare(&other, 8);
            assert_eq!(c.is_equal(), truth.is_empty());
            assert!(c.count <= truth.len() && (c.at_least || c.count == truth.len()));
            assert!(c.examples.iter().all(|p| truth.contains(p)));
        }
    }
}
