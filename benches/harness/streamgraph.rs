//! The streamgraph column: each workload through streamgraph's own API, timed exactly like
//! `raw.rs` (same kernels from `kernels.cu`, same events around the same regions, same metrics
//! in the same order).
//!
//! NOT YET WIRED: the runtime is being rewritten, so every function returns
//! [`BenchError::NotWired`] and the table shows "not yet wired" for this column. Each doc
//! comment states what the function will do with the API being built:
//!
//! - setup: `Device::new(Some(0))`, `Stream::new(&dev, 0)` for the origin (timing events stay
//!   raw driver events on the origin's handle), `Module::from_cuda_source(&dev, "bench",
//!   kernels::SOURCE)`, `unsafe { module.kernel("empty") }` → `Kernel` (likewise `stamp`);
//! - pipelines are declared with `streamgraph::pipeline!` at module level, with a `for` loop
//!   over a size parameter, so one pipeline type serves every size;
//! - eager: `Eager::new(&stream).run(&pipeline)`, counters from `eager.stats()`;
//! - capture: `Capture::new(&stream).capture(pipeline)` → `Graph<P>`, `graph.instantiate()` →
//!   `GraphExec<P>`, `exec.launch(&stream)`, `exec.update(new_pipeline)`, and the kernel-node
//!   fast path for new arguments.
//!
//! When wiring, keep the metric order of `workloads::W*_METRICS` and add nothing to the timed
//! regions that `raw.rs` does not have there (no extra synchronisation, no allocation).

use crate::gpu::{BenchError, Gpu};
use crate::runner::Case;
use crate::workloads::{Chain, Diamond, Eager1, Fanout, Replays, Update};

type Setup<'g> = Result<Box<dyn Case + 'g>, BenchError>;

/// W1. Pipeline `Launches(k: &Kernels, n: usize) { stream main; for _ in 0..n { main: launch
/// k.empty<<<1, 1>>>(); } }`, built once with `n = p.kernels`. Each sample: record the start
/// event, `Instant`, `eager.run(&pipeline)`, host time, record the end event, synchronise.
/// Metrics: host µs per launch, device µs per launch, and the difference of
/// `eager.stats()` event records + waits before and after the run (goal: 0 on one stream).
pub fn w1<'g>(_gpu: &'g Gpu, _p: &Eager1) -> Setup<'g> {
    Err(BenchError::NotWired)
}

/// W2. The `Launches` pipeline with `n = p.nodes`, captured once with
/// `Capture::new(&stream).capture(pipeline)?.instantiate()?`. Each sample: one
/// `exec.launch(&stream)` between timing events (device µs per node; host µs of the launch call)
/// and one `Eager::run` of the same pipeline between timing events (device µs per node; host µs
/// per launch).
pub fn w2<'g>(_gpu: &'g Gpu, _p: &Chain) -> Setup<'g> {
    Err(BenchError::NotWired)
}

/// W3. Pipeline `Diamond(k, layers)` with streams `main, s1, s2, s3`, events `fork, j1, j2, j3`;
/// per layer: (after the first) `main: wait j1; wait j2; wait j3;`, `main: launch k.empty`,
/// `main: record fork`, `sN: wait fork`, one `launch k.empty` on each of the four streams,
/// `sN: record jN` — the DAG of `raw.rs` (the pipeline's implicit end join replaces the last
/// waits). Each sample: one replay of the instantiated graph (device µs per node and total, host
/// µs of `exec.launch`), one `Eager::run` (device total, host µs, event calls from
/// `eager.stats()`), and a fresh `capture` + `instantiate` (host µs of each and the sum).
pub fn w3<'g>(_gpu: &'g Gpu, _p: &Diamond) -> Setup<'g> {
    Err(BenchError::NotWired)
}

/// W4. Pipeline `Spread(k, kernels, width)` with 32 declared streams of which the first
/// `width` are used: kernel `i` on stream `i % width`; the pipeline's implicit fork and join
/// connect them to the origin. Captured and instantiated once per width; each sample is one
/// `exec.launch` between timing events (device µs per kernel, host µs of the launch call).
pub fn w4<'g>(_gpu: &'g Gpu, _p: &Fanout) -> Setup<'g> {
    Err(BenchError::NotWired)
}

/// W5. Pipeline `Stamps(k, slot: &mut DeviceBuffer<u32>, base: u32, n)`: `n` launches of
/// `k.stamp(&mut slot, base + i)` on one stream. Captured and instantiated once. Each sample, in
/// `raw.rs`'s order: capture `Stamps` with a new base and `exec.update(new_pipeline)` (host µs
/// per node); capture again and `instantiate()` a new executable (host µs per node); then the
/// kernel-node fast path sets every node's arguments for another base (host µs per node), one
/// replay between timing events (device µs per node), and a read of `slot` that must hold the
/// last node's value. The instantiation counter of `GraphExec` (before − after) is the
/// `instantiations` metric: 0 means the update never re-instantiated.
pub fn w5<'g>(_gpu: &'g Gpu, _p: &Update) -> Setup<'g> {
    Err(BenchError::NotWired)
}

/// W6. W3's `Diamond` instantiated once. Each sample: the `spin` gate on the origin (raw
/// launch), `p.gated` × `exec.launch` between timing events (back-to-back replay time), then
/// `p.replays` × `exec.launch` with no synchronisation between, wall time from the first launch
/// to the end event's completion; idle % = 1 − replays × back-to-back time / wall.
pub fn w6<'g>(_gpu: &'g Gpu, _p: &Replays) -> Setup<'g> {
    Err(BenchError::NotWired)
}

/// W7. The `Launches` pipeline with `n = p.nodes`; each sample times
/// `Capture::new(&stream).capture(pipeline)` and `graph.instantiate()` separately (host µs) and
/// drops both outside the timed region.
pub fn w7<'g>(_gpu: &'g Gpu, _p: &Chain) -> Setup<'g> {
    Err(BenchError::NotWired)
}
