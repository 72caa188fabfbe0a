//! Reachability ("happens before") of a directed graph, as one bit matrix.
//!
//! Shared by the plan and by anything that compares another graph with it (a captured CUDA
//! graph read back from the driver): two graphs order their nodes the same way exactly when
//! their [`Reach`] values are equal.

use std::collections::BTreeSet;

/// The transitive closure of a directed graph on nodes `0..len()`: `reaches(a, b)` is true
/// when a path of at least one edge leads from `a` to `b`.
///
/// Stored as one row of bits per node, so a query is one memory read and the whole relation
/// of a few thousand nodes takes a few megabytes. Equality compares the relations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    nodes: usize,
    words: usize,
    bits: Vec<u64>,
}

/// The reachability of the graph on nodes `0..n` with `edges` (pairs `(from, to)`).
///
/// Edges with an endpoint outside `0..n` are left out: callers that compare relations check
/// the endpoints first ([`crate::Plan::same_happens_before`], `Graph::verify`). Cycles are
/// allowed (a node on a cycle reaches itself).
pub(crate) fn reachability<'e, E>(n: usize, edges: E) -> Reach
where
    E: IntoIterator<Item = &'e (usize, usize)>,
{
    let mut successors = vec![Vec::new(); n];
    for &(a, b) in edges {
        if b < n {
            if let Some(list) = successors.get_mut(a) {
                list.push(b);
            }
        }
    }
    Reach::from_successors(&successors)
}

impl Reach {
    /// The reachability of the graph whose node `a` has the direct successors `successors[a]`
    /// (every successor must be below `successors.len()`).
    pub(crate) fn from_successors(successors: &[Vec<usize>]) -> Reach {
        let nodes = successors.len();
        let words = nodes.div_ceil(64);
        let mut reach = Reach {
            nodes,
            words,
            bits: vec![0; nodes * words],
        };
        match reverse_topological(successors) {
            Some(order) => {
                // Every successor's row is final before its predecessors are visited.
                for a in order {
                    for &b in &successors[a] {
                        reach.set(a, b);
                        reach.or_row_into(b, a);
                    }
                }
            }
            None => {
                for a in 0..nodes {
                    let mut stack: Vec<usize> = successors[a].clone();
                    while let Some(b) = stack.pop() {
                        if !reach.reaches(a, b) {
                            reach.set(a, b);
                            stack.extend_from_slice(&successors[b]);
                        }
                    }
                }
            }
        }
        reach
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes == 0
    }

    /// Whether a path of at least one edge leads from `a` to `b`; false for nodes out of range.
    pub fn reaches(&self, a: usize, b: usize) -> bool {
        a < self.nodes && b < self.nodes && self.bits[a * self.words + b / 64] >> (b % 64) & 1 == 1
    }

    /// Whether `a` and `b` are ordered one way or the other (or are the same node).
    pub fn ordered(&self, a: usize, b: usize) -> bool {
        a == b || self.reaches(a, b) || self.reaches(b, a)
    }

    /// Every node reachable from `a`, in increasing order.
    pub fn descendants(&self, a: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes).filter(move |&b| self.reaches(a, b))
    }

    /// The pairs `(a, b)` on which `self` and `other` disagree, in increasing order: the
    /// evidence for a message when two graphs should order their nodes the same way.
    pub fn differences(&self, other: &Reach) -> BTreeSet<(usize, usize)> {
        let n = self.nodes.max(other.nodes);
        let mut out = BTreeSet::new();
        for a in 0..n {
            for b in 0..n {
                if self.reaches(a, b) != other.reaches(a, b) {
                    out.insert((a, b));
                }
            }
        }
        out
    }

    fn set(&mut self, a: usize, b: usize) {
        self.bits[a * self.words + b / 64] |= 1 << (b % 64);
    }

    fn or_row_into(&mut self, from: usize, into: usize) {
        if from == into {
            return;
        }
        let w = self.words;
        let (src, dst) = if from < into {
            let (lo, hi) = self.bits.split_at_mut(into * w);
            (&lo[from * w..from * w + w], &mut hi[..w])
        } else {
            let (lo, hi) = self.bits.split_at_mut(from * w);
            (&hi[..w], &mut lo[into * w..into * w + w])
        };
        for (d, s) in dst.iter_mut().zip(src) {
            *d |= *s;
        }
    }
}

/// Nodes ordered so that every node comes after all its successors, or `None` on a cycle
/// (Kahn's algorithm on the reversed graph).
fn reverse_topological(successors: &[Vec<usize>]) -> Option<Vec<usize>> {
    let n = successors.len();
    let mut remaining: Vec<usize> = successors.iter().map(Vec::len).collect();
    let mut predecessors = vec![Vec::new(); n];
    for (a, succ) in successors.iter().enumerate() {
        for &b in succ {
            predecessors[b].push(a);
        }
    }
    let mut ready: Vec<usize> = (0..n).filter(|&a| remaining[a] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(b) = ready.pop() {
        order.push(b);
        for &a in &predecessors[b] {
            remaining[a] -= 1;
            if remaining[a] == 0 {
                ready.push(a);
            }
        }
    }
    (order.len() == n).then_some(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_and_diamond() {
        let r = reachability(4, &[(0, 1), (0, 2), (1, 3), (2, 3)]);
        assert!(r.reaches(0, 3));
        assert!(!r.reaches(1, 2));
        assert!(!r.reaches(3, 0));
        assert!(!r.reaches(0, 0));
        assert_eq!(r.descendants(0).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn edges_in_any_order_and_redundant_edges_give_the_same_relation() {
        let a = reachability(3, &[(0, 1), (1, 2)]);
        let b = reachability(3, &[(1, 2), (0, 2), (0, 1)]);
        assert_eq!(a, b);
        assert!(a.differences(&b).is_empty());
    }

    #[test]
    fn cycles_and_edges_outside_the_nodes() {
        let r = reachability(
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
        let plain = reachability(2, &[(0, 1)]);
        assert_ne!(plain, reachability(3, &[(0, 1)]));
        assert_eq!(
            plain.differences(&reachability(2, &[])),
            BTreeSet::from([(0, 1)])
        );
    }

    #[test]
    fn wide_graphs_cross_word_boundaries() {
        let edges: Vec<(usize, usize)> = (0..199).map(|i| (i, i + 1)).collect();
        let r = reachability(200, &edges);
        assert!(r.reaches(0, 199));
        assert!(r.reaches(63, 64));
        assert!(!r.reaches(130, 70));
        assert_eq!(r.descendants(150).count(), 49);
    }
}
