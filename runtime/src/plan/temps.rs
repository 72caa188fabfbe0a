//! The temporaries of a plan: each one's allocation and release, and the most memory a run
//! holds for them at once.
//!
//! Two temporaries can share memory only when one is released before the other is allocated
//! in the happens-before order (the driver reuses a graph's memory on exactly that
//! condition, and a stream-ordered pool on the same one). So the bytes a run needs at most
//! are the heaviest set of temporaries no two of which are so ordered: a maximum-weight
//! antichain of the order "released before allocated", which by Dilworth's theorem is the
//! total weight minus a maximum flow through the order's bipartite graph (each temporary a
//! source side and a sink side of capacity its size, an edge of unbounded capacity from `a`'s
//! source side to `b`'s sink side when `a` is released before `b` is allocated).

use petgraph::algo::dinics;
use petgraph::graph::DiGraph;

use super::{Plan, Reach};

/// One temporary of a plan: its allocation and release operations and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanTemp {
    /// Which temporary of the program (an index into `Program::temps`).
    pub temp: usize,
    /// Its size in bytes.
    pub bytes: usize,
    /// The operation that allocates it.
    pub alloc: usize,
    /// The operation that releases it; `None` when the pipeline never did.
    pub free: Option<usize>,
}

/// The most bytes of `temps` allocated at once on any execution that follows `reach`.
pub(crate) fn peak_bytes(temps: &[PlanTemp], reach: &Reach) -> usize {
    let before = |a: &PlanTemp, b: &PlanTemp| a.free.is_some_and(|f| reach.reaches(f, b.alloc));
    let total: u64 = temps.iter().map(|t| t.bytes as u64).sum();
    let ordered = temps.iter().enumerate().any(|(i, a)| {
        temps
            .iter()
            .enumerate()
            .any(|(j, b)| i != j && before(a, b))
    });
    if !ordered {
        return total as usize;
    }
    let mut g: DiGraph<(), u64> = DiGraph::new();
    let source = g.add_node(());
    let sink = g.add_node(());
    let out: Vec<_> = temps.iter().map(|_| g.add_node(())).collect();
    let inn: Vec<_> = temps.iter().map(|_| g.add_node(())).collect();
    for (i, t) in temps.iter().enumerate() {
        g.add_edge(source, out[i], t.bytes as u64);
        g.add_edge(inn[i], sink, t.bytes as u64);
    }
    for (i, a) in temps.iter().enumerate() {
        for (j, b) in temps.iter().enumerate() {
            if i != j && before(a, b) {
                g.add_edge(out[i], inn[j], total);
            }
        }
    }
    let (flow, _) = dinics(&g, source, sink);
    (total - flow) as usize
}

/// Where a run's temporaries sit in one block of memory they share ([`Plan::temp_layout`]):
/// what a [`GraphSet`](crate::GraphSet)'s captures place them by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TempLayout {
    /// Each temporary's offset in the block, in the order of [`Plan::temporaries`].
    pub offsets: Vec<usize>,
    /// The block's size in bytes: the end of the temporary that ends last.
    pub extent: usize,
}

/// Offsets of `temps` in one block, each a multiple of `align`, such that two temporaries
/// share bytes only when one is released before the other is allocated in the order `reach`
/// (the condition on which the driver shares a graph's memory). Largest first, each at the
/// lowest offset clear of the temporaries already placed that it may be live with: for
/// temporaries live one after another (a chain of layers) the block is the peak
/// ([`peak_bytes`]); it is never more than their sum.
pub(crate) fn temp_layout(temps: &[PlanTemp], reach: &Reach, align: usize) -> TempLayout {
    let align = align.max(1);
    let before = |a: &PlanTemp, b: &PlanTemp| a.free.is_some_and(|f| reach.reaches(f, b.alloc));
    let span = |t: &PlanTemp| t.bytes.max(1).next_multiple_of(align);
    let mut order: Vec<usize> = (0..temps.len()).collect();
    order.sort_by(|&a, &b| span(&temps[b]).cmp(&span(&temps[a])).then(a.cmp(&b)));
    let mut offsets = vec![0usize; temps.len()];
    let mut placed: Vec<usize> = Vec::with_capacity(temps.len());
    let mut busy: Vec<(usize, usize)> = Vec::new();
    let mut extent = 0;
    for &i in &order {
        let t = &temps[i];
        busy.clear();
        busy.extend(
            placed
                .iter()
                .filter(|&&j| !before(t, &temps[j]) && !before(&temps[j], t))
                .map(|&j| (offsets[j], offsets[j] + span(&temps[j]))),
        );
        busy.sort_unstable();
        let mut at = 0;
        for &(start, end) in &busy {
            if at + span(t) <= start {
                break;
            }
            at = at.max(end);
        }
        offsets[i] = at;
        extent = extent.max(at + span(t));
        placed.push(i);
    }
    TempLayout { offsets, extent }
}

impl Plan {
    /// The temporaries the pipeline allocated (`temp NAME: T[LEN];`), in allocation order:
    /// each one's size and its allocation and release operations.
    ///
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>, n: usize) {
    ///     stream s;
    ///     temp h: f32[n];
    ///     s: copy h <- x;
    ///     s: copy x <- h;
    /// } }
    /// let mut x = DeviceBuffer::for_planning(256)?;
    /// let plan = Plan::build(&P::new(&mut x, 256))?;
    /// assert_eq!(plan.temporaries()[0].bytes, 1024);
    /// assert_eq!(plan.temp_peak_bytes(), 1024);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn temporaries(&self) -> &[PlanTemp] {
        &self.temps
    }

    /// The most bytes of temporaries a run holds at once: the heaviest set of temporaries no
    /// two of which are ordered (one released before the other is allocated), which is what
    /// a captured graph's memory must hold at its high-water mark (before the allocator's
    /// rounding). Computed from the plan alone, without a GPU.
    pub fn temp_peak_bytes(&self) -> usize {
        peak_bytes(&self.temps, self.graph_reach())
    }

    /// Where the temporaries sit when they share one block of memory, each at an offset that
    /// is a multiple of `align` and taking a multiple of it: two share bytes only when one is
    /// released before the other is allocated in the happens-before order (the condition of
    /// [`Plan::temp_peak_bytes`]). Placed largest first, each at the lowest offset clear of
    /// those already placed that it may be live with, so the block is at least the peak and
    /// at most the temporaries' sum; for temporaries live one after another (layers) it is
    /// the peak. A [`GraphSet`](crate::GraphSet) places its graphs' temporaries so, with an
    /// `align` of 256.
    ///
    /// # Examples
    /// ```
    /// use streamgraph::{pipeline, DeviceBuffer, Plan};
    /// pipeline! { pipeline Layers(x: &mut DeviceBuffer<f32>, n: usize) {
    ///     stream s;
    ///     temp a: f32[n];
    ///     temp b: f32[n];
    ///     s: copy a <- x;
    ///     s: copy b <- a;
    ///     s: copy x <- b;
    /// } }
    /// let mut x = DeviceBuffer::for_planning(1000)?;
    /// let plan = Plan::build(&Layers::new(&mut x, 1000))?;
    /// let layout = plan.temp_layout(256);
    /// assert_eq!(layout.offsets, [0, 4096]); // `a` and `b` are live at once
    /// assert_eq!(layout.extent, 8192);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn temp_layout(&self, align: usize) -> TempLayout {
        temp_layout(&self.temps, self.graph_reach(), align)
    }

    /// [`Plan::check_races`] restricted to the races on a temporary's memory (its allocation
    /// and release write all of it): what every run and capture of a pipeline with
    /// temporaries checks, checks on or off, since such a race would touch freed memory.
    pub fn check_temp_races(&self) -> Result<(), crate::error::Error> {
        let temps: Vec<crate::operand::DeviceRange> = self
            .temps
            .iter()
            .filter_map(|t| self.ops().get(t.alloc)?.accesses.first().map(|a| a.range))
            .collect();
        let on_temp = |r: &crate::operand::DeviceRange| {
            temps.iter().any(|t| {
                t.device == r.device && r.ptr >= t.ptr && r.ptr < t.ptr + t.bytes.max(1) as u64
            })
        };
        let races: Vec<_> = self
            .races()
            .into_iter()
            .filter(|r| on_temp(&r.first.access.range) || on_temp(&r.second.access.range))
            .collect();
        if races.is_empty() {
            Ok(())
        } else {
            Err(crate::error::Error::Race(races))
        }
    }
}
