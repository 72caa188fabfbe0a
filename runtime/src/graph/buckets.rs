//! [`Buckets`]: the sizes a [`GraphSet`](super::GraphSet) holds graphs for, and the one a
//! request is padded to.

use crate::error::{Error, Result};

/// Sizes to pad requests to (batch sizes, sequence lengths), ascending: each request runs
/// the graph of the smallest size that fits it, as inference engines capture one graph per
/// batch-size bucket.
///
/// ```
/// use streamgraph::Buckets;
///
/// let buckets = Buckets::new([1, 2, 4, 8, 16, 24, 32])?;
/// let b = buckets.bucket_for(19)?;
/// assert_eq!((b.size, b.padding), (24, 5)); // 19 rows, padded with 5
/// assert!(buckets.bucket_for(33).is_err()); // larger than every bucket
/// # Ok::<(), streamgraph::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buckets {
    sizes: Vec<usize>,
}

/// The bucket a request runs in: its size and the padding the caller writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bucket {
    /// The bucket's size: the key of the graph that runs the request.
    pub size: usize,
    /// `size − n`: the rows (or elements) the caller pads the request with.
    pub padding: usize,
}

impl Buckets {
    /// Buckets of `sizes` (any order, repeats merged); [`Error::InvalidArgument`] when there is
    /// none or one is 0.
    pub fn new(sizes: impl IntoIterator<Item = usize>) -> Result<Buckets> {
        let mut sizes: Vec<usize> = sizes.into_iter().collect();
        sizes.sort_unstable();
        sizes.dedup();
        match sizes.first() {
            None => Err(Error::InvalidArgument(
                "no bucket sizes given; give at least one size greater than 0".into(),
            )),
            Some(0) => Err(Error::InvalidArgument(
                "a bucket size is 0; every bucket must hold at least one element".into(),
            )),
            Some(_) => Ok(Buckets { sizes }),
        }
    }

    /// 1, 2, 4, … up to the first power of two at least `largest` (vLLM's and SGLang's small
    /// sizes are so).
    ///
    /// ```
    /// use streamgraph::Buckets;
    /// assert_eq!(Buckets::powers_of_two(100)?.sizes(), [1, 2, 4, 8, 16, 32, 64, 128]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn powers_of_two(largest: usize) -> Result<Buckets> {
        let Some(top) = largest.max(1).checked_next_power_of_two() else {
            return Err(Error::InvalidArgument(format!(
                "{largest} has no power of two above it in a usize; give a smaller largest size"
            )));
        };
        Buckets::new((0..=top.trailing_zeros()).map(|e| 1usize << e))
    }

    /// Every multiple of `step` from `step` up to the first at least `largest`.
    ///
    /// ```
    /// use streamgraph::Buckets;
    /// assert_eq!(Buckets::multiples_of(8, 30)?.sizes(), [8, 16, 24, 32]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn multiples_of(step: usize, largest: usize) -> Result<Buckets> {
        if step == 0 {
            return Err(Error::InvalidArgument(
                "a bucket step of 0; give a step greater than 0".into(),
            ));
        }
        let count = largest.max(1).div_ceil(step);
        Buckets::new((1..=count).map(|i| i * step))
    }

    /// The smallest bucket that holds `n`, and the padding; [`Error::InvalidArgument`] when
    /// `n` exceeds the largest bucket.
    pub fn bucket_for(&self, n: usize) -> Result<Bucket> {
        let i = self.sizes.partition_point(|&s| s < n);
        match self.sizes.get(i) {
            Some(&size) => Ok(Bucket {
                size,
                padding: size - n,
            }),
            None => Err(Error::InvalidArgument(format!(
                "a request of {n} is larger than the largest bucket ({}); add a bucket of at \
                 least {n} or split the request",
                self.largest()
            ))),
        }
    }

    /// The sizes, ascending.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// The largest size: what buffers shared by every bucket's graph must hold.
    pub fn largest(&self) -> usize {
        self.sizes.last().copied().unwrap_or(0)
    }

    /// How many buckets.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    /// Never true: there is at least one bucket.
    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_request_takes_the_smallest_bucket_that_holds_it() {
        let buckets = Buckets::new([32, 8, 1, 8, 16]).unwrap();
        assert_eq!(buckets.sizes(), [1, 8, 16, 32]);
        let fits = |n| buckets.bucket_for(n).map(|b| (b.size, b.padding)).ok();
        assert_eq!(fits(0), Some((1, 1)));
        assert_eq!(fits(1), Some((1, 0)));
        assert_eq!(fits(2), Some((8, 6)));
        assert_eq!(fits(8), Some((8, 0)));
        assert_eq!(fits(9), Some((16, 7)));
        assert_eq!(fits(32), Some((32, 0)));
        assert_eq!(fits(33), None);
        let e = buckets.bucket_for(33).unwrap_err().to_string();
        assert!(e.contains("33") && e.contains("largest bucket (32)"), "{e}");
    }

    #[test]
    fn bucket_lists_are_checked_and_generated() {
        assert!(Buckets::new([]).is_err());
        assert!(Buckets::new([0, 4]).is_err());
        assert_eq!(Buckets::powers_of_two(1).unwrap().sizes(), [1]);
        assert_eq!(Buckets::powers_of_two(0).unwrap().sizes(), [1]);
        assert_eq!(Buckets::powers_of_two(9).unwrap().largest(), 16);
        assert!(Buckets::powers_of_two(usize::MAX).is_err());
        assert_eq!(Buckets::multiples_of(8, 8).unwrap().sizes(), [8]);
        assert_eq!(Buckets::multiples_of(8, 0).unwrap().sizes(), [8]);
        assert!(Buckets::multiples_of(0, 8).is_err());
    }
}
