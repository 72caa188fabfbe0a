//! The workloads (W1–W14): their sizes, what each measures, and the loop that runs every system
//! on each of them.

use serde_json::json;

use crate::collective::{self, AllReduce};
use crate::decode::{self, Decode};
use crate::few_graphs::{self, Served, ServedStep};
use crate::gpu::Gpu;
use crate::many_shapes::{self, Shapes};
use crate::mlp::{self, Mlp};
use crate::overlap::{self, Overlap};
use crate::report::Row;
use crate::runner::{self, metric, Metric, Spec};
use crate::{raw, streamgraph};

/// W1's size.
#[derive(Debug, Clone, Copy)]
pub struct Eager1 {
    /// Launches per sample.
    pub kernels: usize,
}

/// A chain of kernels on one stream (W2, W7).
#[derive(Debug, Clone, Copy)]
pub struct Chain {
    pub nodes: usize,
}

/// W5: a chain whose kernels get new arguments every iteration.
#[derive(Debug, Clone, Copy)]
pub struct Update {
    pub nodes: usize,
}

/// W3's DAG: `layers` times (one kernel on the origin, then `branches` kernels in parallel:
/// branch 0 on the origin, branch b on stream b), each layer's origin kernel after every branch
/// of the layer before; the end joins every branch.
#[derive(Debug, Clone, Copy)]
pub struct Diamond {
    pub layers: usize,
    /// Parallel kernels per layer = streams used (the origin included).
    pub branches: usize,
}

impl Diamond {
    /// Kernels per run.
    pub fn kernels(&self) -> usize {
        self.layers * (1 + self.branches)
    }
}

/// W4: `kernels` independent kernels round-robin over `width` streams (the origin first).
#[derive(Debug, Clone, Copy)]
pub struct Fanout {
    pub kernels: usize,
    pub width: usize,
}

/// W6: the diamond replayed `replays` times without synchronising.
#[derive(Debug, Clone, Copy)]
pub struct Replays {
    pub diamond: Diamond,
    pub replays: usize,
    /// Replays queued behind the `spin` gate to measure back-to-back replay time.
    pub gated: usize,
    /// How long the gate holds the stream, in ns.
    pub gate_ns: u64,
}

/// W8: a loop of `iterations` iterations, each a 3-stream body of 10 `empty` kernels and the
/// `countdown` kernel that clears the loop's flag after the last.
#[derive(Debug, Clone, Copy)]
pub struct Loop {
    pub iterations: usize,
}

/// Sizes and repetition counts of one run.
#[derive(Debug, Clone)]
pub struct Sizes {
    pub reps: usize,
    pub w1: Eager1,
    pub w2: Chain,
    pub w3: Diamond,
    pub w4_kernels: usize,
    pub w4_widths: Vec<usize>,
    pub w5: Update,
    pub w6: Replays,
    pub w7_nodes: Vec<usize>,
    pub w8_iterations: Vec<usize>,
    pub w9: Vec<Overlap>,
    /// W10's all-reduce sizes, bytes per rank.
    pub w10_bytes: Vec<usize>,
    /// W11's networks: the two-layer MLP step, and eight layers of 4096 at batch 1 and 64.
    pub w11: Vec<Mlp>,
    /// W12's decode-like step: 40 diamond layers of 2 µs kernels (200 a step).
    pub w12: Decode,
    /// W13's many shapes: three layers of 1,024, one graph per batch of 8, 16, …, 256 (the
    /// issue's), and of 256, 512, …, 8,192.
    pub w13: Vec<Shapes>,
    /// W14's many shapes, few graphs: W13's step, then W12's decode-like step with a batch
    /// (40 layers), at 8, 16, …, 256 rows, one graph per batch size, serving a seeded sequence
    /// of requests of 1 … 256 rows.
    pub w14: Vec<Served>,
    /// Workloads to run (`W1` …); all when empty.
    pub only: Vec<String>,
}

impl Sizes {
    /// The sizes the issue specifies, `reps` samples of each.
    pub fn full(reps: usize) -> Sizes {
        let diamond = Diamond {
            layers: 51,
            branches: 4,
        };
        Sizes {
            reps,
            w1: Eager1 { kernels: 10_000 },
            w2: Chain { nodes: 1_000 },
            w3: diamond,
            w4_kernels: 4_096,
            w4_widths: vec![1, 2, 4, 8, 16, 32],
            w5: Update { nodes: 1_000 },
            w6: Replays {
                diamond,
                replays: 10_000,
                gated: 64,
                gate_ns: 5_000_000,
            },
            w7_nodes: vec![10, 100, 1_000, 10_000],
            w8_iterations: vec![10, 100, 1_000, 10_000],
            w9: [
                (4, 3, W9_ITERS),
                (1, 3, W9_ITERS),
                (8, 2, W9_ITERS),
                (4, 3, W9_COMPUTE_ITERS),
            ]
            .into_iter()
            .map(|(mib, buffers, iters)| Overlap {
                total: 64 << 20,
                chunk: mib << 20,
                buffers,
                iters,
            })
            .collect(),
            w10_bytes: vec![4 << 10, 1 << 20, 64 << 20],
            w11: [(2, 1024, 64, 2), (8, 4096, 1, 1), (8, 4096, 64, 2)]
                .into_iter()
                .map(|(layers, width, batch, streams)| Mlp {
                    layers,
                    width,
                    batch,
                    streams,
                })
                .collect(),
            w12: Decode {
                layers: 40,
                kernel_ns: 2_000,
                steps: 10_000,
            },
            // At 8 … 256 rows the largest graph's activations (2 MiB) fit in one 32 MiB
            // granule of the driver's graph memory; at 256 … 8,192 they are two whole granules
            // (2 × 32 MiB): docs/BENCHMARKS.md, W13.
            w13: [8, 256]
                .into_iter()
                .map(|step| Shapes {
                    width: 1_024,
                    batches: (1..=32).map(|k| k * step).collect(),
                })
                .collect(),
            w14: [ServedStep::Mlp, ServedStep::Decode { layers: 40 }]
                .into_iter()
                .map(|step| Served {
                    step,
                    shapes: Shapes {
                        width: 1_024,
                        batches: (1..=32).map(|k| k * 8).collect(),
                    },
                    requests: W14_REQUESTS,
                    seed: W14_SEED,
                })
                .collect(),
            only: Vec::new(),
        }
    }

    /// Smaller sizes for a smoke run: same shapes, a tenth of the repetitions and replays.
    pub fn quick() -> Sizes {
        let mut p = Sizes::full(5);
        p.w6.replays = 1_000;
        p.w12.steps = 1_000;
        p
    }

    fn wants(&self, workload: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|w| w.eq_ignore_ascii_case(workload))
    }
}

pub const W1_METRICS: &[Metric] = &[
    metric("eager", "host_per_launch", "us"),
    metric("eager", "device_per_launch", "us"),
    metric("eager", "event_calls", "count"),
];
pub const W2_METRICS: &[Metric] = &[
    metric("replay", "device_per_node", "us"),
    metric("replay", "host_launch", "us"),
    metric("eager", "device_per_node", "us"),
    metric("eager", "host_per_launch", "us"),
];
pub const W3_METRICS: &[Metric] = &[
    metric("replay", "device_per_node", "us"),
    metric("replay", "device_total", "us"),
    metric("replay", "host_launch", "us"),
    metric("eager", "device_total", "us"),
    metric("eager", "host_issue", "us"),
    metric("eager", "event_calls", "count"),
    metric("capture", "capture", "us"),
    metric("capture", "instantiate", "us"),
    metric("capture", "total", "us"),
];
pub const W4_METRICS: &[Metric] = &[
    metric("replay", "device_per_kernel", "us"),
    metric("replay", "host_launch", "us"),
];
pub const W5_METRICS: &[Metric] = &[
    metric("set_params", "host_per_node", "us"),
    metric("set_params", "replay_device_per_node", "us"),
    metric("set_params", "instantiations", "count"),
    metric("exec_update", "host_per_node", "us"),
    metric("reinstantiate", "host_per_node", "us"),
    metric("update_args", "host_1pct", "us"),
    metric("update_args", "host_10pct", "us"),
    metric("update_args", "host_100pct", "us"),
    metric("update_args", "host_1pct_keyed", "us"),
];

/// W14's requests per sample, and their seed (`few_graphs::requests`).
pub const W14_REQUESTS: usize = 256;
pub const W14_SEED: u64 = 14;

/// W5's partial updates: every `step`-th node gets a new value (1 %, 10 %, 100 % of them).
pub const W5_STEPS: [usize; 3] = [100, 10, 1];
pub const W6_METRICS: &[Metric] = &[
    metric("replay_loop", "gpu_idle", "%"),
    metric("replay_loop", "wall_per_replay", "us"),
    metric("replay_loop", "saturated_replay", "us"),
    metric("replay_loop", "device_per_replay", "us"),
];
/// W9's kernel rounds per element: on an H200 a 4 MiB chunk's kernel then takes about as long
/// as its copy over PCIe (the three stages balanced).
pub const W9_ITERS: u32 = 2_000;
/// W9's rounds for a compute-bound pipeline: the kernels take about three times as long as
/// either direction's copies, which overlap should hide behind them.
pub const W9_COMPUTE_ITERS: u32 = 6_000;

pub const W9_METRICS: &[Metric] = &[
    metric("eager", "end_to_end", "us"),
    metric("eager", "overlap", "x"),
    metric("replay", "end_to_end", "us"),
    metric("replay", "overlap", "x"),
    metric("bounds", "h2d", "us"),
    metric("bounds", "kernel", "us"),
    metric("bounds", "d2h", "us"),
    metric("bounds", "duplex", "us"),
];

pub const W7_METRICS: &[Metric] = &[
    metric("capture+instantiate", "capture", "us"),
    metric("capture+instantiate", "instantiate", "us"),
    metric("capture+instantiate", "total", "us"),
    metric("capture+instantiate", "total_per_node", "us"),
];

pub const W8_METRICS: &[Metric] = &[
    metric("eager", "host_per_iteration", "us"),
    metric("eager", "device_per_iteration", "us"),
    metric("host_loop", "host_per_iteration", "us"),
    metric("host_loop", "device_per_iteration", "us"),
    metric("device_loop", "host_per_iteration", "us"),
    metric("device_loop", "device_per_iteration", "us"),
    metric("signalled_loop", "host_per_iteration", "us"),
    metric("signalled_loop", "device_per_iteration", "us"),
];

fn spec(
    workload: &'static str,
    params: serde_json::Value,
    metrics: &[Metric],
    warmup: usize,
    reps: usize,
) -> Spec {
    Spec {
        workload,
        params,
        metrics: metrics.to_vec(),
        warmup,
        reps,
    }
}

/// Runs every wanted workload on every system; progress goes to stderr.
pub fn run_all(gpu: &Gpu, plan: &Sizes) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut step = |name: &str, spec: Spec, setups: Vec<runner::Setup<'_>>| {
        eprintln!(
            "running {name} {} ({} reps)",
            crate::report::params_text(&spec.params),
            spec.reps
        );
        rows.extend(runner::run(&spec, setups));
        if let Err(e) = gpu.synchronize() {
            eprintln!("after {name}: {e}");
        }
    };
    let reps = plan.reps;
    if plan.wants("W1") {
        let p = plan.w1;
        let s = spec("W1", json!({"kernels": p.kernels}), W1_METRICS, 3, reps);
        step(
            "W1",
            s,
            vec![
                ("raw", raw::w1(gpu, &p)),
                ("streamgraph", streamgraph::w1(gpu, &p)),
            ],
        );
    }
    if plan.wants("W2") {
        let p = plan.w2;
        let s = spec("W2", json!({"nodes": p.nodes}), W2_METRICS, 5, reps);
        step(
            "W2",
            s,
            vec![
                ("raw", raw::w2(gpu, &p)),
                ("streamgraph", streamgraph::w2(gpu, &p)),
            ],
        );
    }
    if plan.wants("W3") {
        let p = plan.w3;
        let params = json!({"layers": p.layers, "branches": p.branches, "kernels": p.kernels()});
        let s = spec("W3", params, W3_METRICS, 5, reps);
        step(
            "W3",
            s,
            vec![
                ("raw", raw::w3(gpu, &p)),
                ("streamgraph", streamgraph::w3(gpu, &p)),
            ],
        );
    }
    if plan.wants("W4") {
        for &width in &plan.w4_widths {
            let p = Fanout {
                kernels: plan.w4_kernels,
                width,
            };
            let s = spec(
                "W4",
                json!({"kernels": p.kernels, "width": width}),
                W4_METRICS,
                5,
                reps,
            );
            step(
                "W4",
                s,
                vec![
                    ("raw", raw::w4(gpu, &p)),
                    ("streamgraph", streamgraph::w4(gpu, &p)),
                ],
            );
        }
    }
    if plan.wants("W5") {
        let p = plan.w5;
        let s = spec("W5", json!({"nodes": p.nodes}), W5_METRICS, 3, reps);
        step(
            "W5",
            s,
            vec![
                ("raw", raw::w5(gpu, &p)),
                ("streamgraph", streamgraph::w5(gpu, &p)),
            ],
        );
    }
    if plan.wants("W6") {
        let p = plan.w6;
        let params = json!({"replays": p.replays, "kernels_per_replay": p.diamond.kernels()});
        let s = spec("W6", params, W6_METRICS, 1, reps);
        step(
            "W6",
            s,
            vec![
                ("raw", raw::w6(gpu, &p)),
                ("streamgraph", streamgraph::w6(gpu, &p)),
            ],
        );
    }
    if plan.wants("W7") {
        for &nodes in &plan.w7_nodes {
            let p = Chain { nodes };
            let s = spec("W7", json!({"nodes": nodes}), W7_METRICS, 2, reps);
            step(
                "W7",
                s,
                vec![
                    ("raw", raw::w7(gpu, &p)),
                    ("streamgraph", streamgraph::w7(gpu, &p)),
                ],
            );
        }
    }
    if plan.wants("W8") {
        for &iterations in &plan.w8_iterations {
            let p = Loop { iterations };
            let s = spec(
                "W8",
                json!({"iterations": iterations, "kernels_per_iteration": 11}),
                W8_METRICS,
                2,
                reps,
            );
            step(
                "W8",
                s,
                vec![
                    ("raw", raw::w8(gpu, &p)),
                    ("streamgraph", streamgraph::w8(gpu, &p)),
                ],
            );
        }
    }
    if plan.wants("W9") {
        for p in &plan.w9 {
            let params = json!({
                "total_mib": p.total >> 20,
                "chunk_mib": p.chunk >> 20,
                "buffers": p.buffers,
                "iters": p.iters,
            });
            let s = spec("W9", params, W9_METRICS, 2, reps);
            step(
                "W9",
                s,
                vec![
                    ("raw", overlap::raw(gpu, p)),
                    ("streamgraph", streamgraph::w9(gpu, p)),
                ],
            );
        }
    }
    if plan.wants("W10") {
        let ranks = collective::ranks();
        for &bytes in &plan.w10_bytes {
            let p = AllReduce { bytes };
            let params = json!({
                "bytes": bytes,
                "ranks": ranks,
                "all_reduces": collective::ALL_REDUCES,
            });
            let s = spec("W10", params, collective::W10_METRICS, 2, reps);
            step("W10", s, vec![("streamgraph", collective::w10(&p, ranks))]);
        }
    }
    if plan.wants("W11") {
        for p in &plan.w11 {
            let params = json!({
                "layers": p.layers,
                "width": p.width,
                "batch": p.batch,
                "streams": p.streams,
                "steps_per_sample": mlp::STEPS,
            });
            let s = spec("W11", params, mlp::W11_METRICS, 3, reps);
            step(
                "W11",
                s,
                vec![
                    ("raw", mlp::raw(gpu, p)),
                    ("streamgraph", streamgraph::w11(gpu, p)),
                ],
            );
        }
    }
    if plan.wants("W12") {
        let p = plan.w12;
        let params = json!({
            "layers": p.layers,
            "kernels_per_step": p.kernels(),
            "kernel_ns": p.kernel_ns,
            "steps": p.steps,
        });
        let s = spec(
            "W12",
            params,
            decode::W12_METRICS,
            1,
            reps.min(decode::MAX_REPS),
        );
        step(
            "W12",
            s,
            vec![
                ("raw", decode::raw(gpu, &p)),
                ("streamgraph", streamgraph::w12(gpu, &p)),
            ],
        );
    }
    if plan.wants("W13") {
        for p in &plan.w13 {
            let params = json!({
                "layers": many_shapes::LAYERS,
                "width": p.width,
                "graphs": p.batches.len(),
                "batch_min": p.batches.first(),
                "batch_max": p.max_batch(),
            });
            let s = spec("W13", params, many_shapes::W13_METRICS, 1, reps);
            step("W13", s, streamgraph::w13(p));
        }
    }
    if plan.wants("W14") {
        for p in &plan.w14 {
            let (name, layers) = match p.step {
                ServedStep::Mlp => ("mlp", many_shapes::LAYERS),
                ServedStep::Decode { layers } => ("decode", layers),
            };
            let params = json!({
                "step": name,
                "layers": layers,
                "width": p.shapes.width,
                "graphs": p.shapes.batches.len(),
                "batch_min": p.shapes.batches.first(),
                "batch_max": p.shapes.max_batch(),
                "requests": p.requests,
                "seed": p.seed,
            });
            let s = spec("W14", params, few_graphs::W14_METRICS, 1, reps);
            step("W14", s, streamgraph::w14(p));
        }
    }
    rows
}
