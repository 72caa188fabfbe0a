//! Neighbour lists of a plan's operations.

/// Neighbour lists of every operation in one array: operation `i`'s are
/// `targets[starts[i]..starts[i + 1]]`, in increasing order.
#[derive(Debug)]
pub(super) struct Adjacency {
    starts: Vec<usize>,
    targets: Vec<usize>,
}

impl Adjacency {
    /// The lists of `n` operations from `(operation, neighbour)` pairs sorted by both.
    pub(super) fn new(n: usize, pairs: impl Iterator<Item = (usize, usize)>) -> Adjacency {
        let mut starts = vec![0; n + 1];
        let mut targets = Vec::new();
        for (a, b) in pairs {
            starts[a + 1] += 1;
            targets.push(b);
        }
        for i in 0..n {
            starts[i + 1] += starts[i];
        }
        Adjacency { starts, targets }
    }

    pub(super) fn of(&self, op: usize) -> &[usize] {
        match (self.starts.get(op), self.starts.get(op + 1)) {
            (Some(&from), Some(&to)) => &self.targets[from..to],
            _ => &[],
        }
    }
}
