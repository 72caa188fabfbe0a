//! streamgraph's benchmark harness: every workload (W1–W14, see `docs/BENCHMARKS.md`) through
//! hand-written driver calls (`raw`) and through streamgraph, in one process, alternating
//! (W10, collectives, through streamgraph only; PyTorch's column comes from a peer; W11, an
//! MLP step through cuBLAS; W12, a decode-like step of 200 short kernels replayed back to back;
//! W13, the device memory of 32 graphs of one step at 32 batch sizes, through streamgraph with
//! temporaries and with buffers per graph; W14, the same step at 32 batch sizes serving
//! requests of random sizes through a graph set, eagerly, and through one graph whose device
//! `switch` picks the bucket),
//! after warm-up; p50 and p90 of device time (CUDA events) and host time (`Instant`).
//!
//! ```text
//! bench-harness [--json PATH] [--reps N] [--quick] [--only W1,W3] [--self-test]
//! bench-harness --probe-launch   # what one graph launch's host time depends on
//! bench-harness --probe-loop     # W8's default loop, its body issued interleaved and branchwise
//! ```
//! Prints one table on stdout (progress on stderr) and writes every row to the JSON file
//! (default `benches/out/harness.json`). Without a CUDA driver it says so and exits 0.

#[path = "harness/collective.rs"]
mod collective;
#[path = "harness/decode.rs"]
mod decode;
#[path = "harness/decode_shapes.rs"]
mod decode_shapes;
#[path = "harness/diamond.rs"]
mod diamond;
#[path = "harness/few_graphs.rs"]
mod few_graphs;
#[path = "harness/gpu.rs"]
mod gpu;
#[path = "harness/kernels.rs"]
mod kernels;
#[path = "harness/launch_probe.rs"]
mod launch_probe;
#[path = "harness/many_shapes.rs"]
mod many_shapes;
#[path = "harness/mlp.rs"]
mod mlp;
#[path = "harness/one_graph.rs"]
mod one_graph;
#[path = "harness/overlap.rs"]
mod overlap;
#[path = "harness/raw.rs"]
mod raw;
#[path = "harness/report.rs"]
mod report;
#[path = "harness/runner.rs"]
mod runner;
#[path = "harness/stats.rs"]
mod stats;
#[path = "harness/streamgraph.rs"]
mod streamgraph;
#[path = "harness/workloads.rs"]
mod workloads;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;

/// Systems in table order; the first is the base of the ratio columns.
const SYSTEMS: &[&str] = &["raw", "streamgraph"];

/// The issue asks for at least this many samples per measurement.
const MIN_REPS: usize = 30;

struct Options {
    json: PathBuf,
    sizes: workloads::Sizes,
    self_test: bool,
    /// `--probe-launch`: the graph-launch host-time probe (`launch_probe.rs`) instead of the
    /// workloads.
    probe_launch: bool,
    /// `--probe-loop`: W8's default loop built in two orders (`streamgraph::probe_loop`).
    probe_loop: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut json = PathBuf::from("benches/out/harness.json");
    let mut sizes = workloads::Sizes::full(MIN_REPS);
    let mut reps = None;
    let mut only = Vec::new();
    let mut self_test = false;
    let mut probe_launch = false;
    let mut probe_loop = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--json" => json = PathBuf::from(value("--json")?),
            "--reps" => {
                let v = value("--reps")?;
                reps = Some(v.parse::<usize>().map_err(|_| format!("--reps: `{v}` is not a count"))?);
            }
            "--quick" => sizes = workloads::Sizes::quick(),
            "--only" => only = value("--only")?.split(',').map(|s| s.trim().to_owned()).collect(),
            "--self-test" => self_test = true,
            "--probe-launch" => probe_launch = true,
            "--probe-loop" => probe_loop = true,
            // `cargo bench` passes `--bench`; nothing to do with it.
            "--bench" => {}
            "-h" | "--help" => {
                return Err("usage: bench-harness [--json PATH] [--reps N] [--quick] [--only W1,W3] [--self-test] [--probe-launch] [--probe-loop]".into())
            }
            other => return Err(format!("unknown argument `{other}`; try --help")),
        }
    }
    if let Some(r) = reps {
        if r == 0 {
            return Err("--reps must be at least 1".into());
        }
        sizes.reps = r;
    }
    sizes.only = only;
    Ok(Options {
        json,
        sizes,
        self_test,
        probe_launch,
        probe_loop,
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match parse(&args) {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    if opts.self_test {
        return match self_test() {
            Ok(()) => {
                println!("self-test passed");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("self-test failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    // SAFETY: only tries to open the driver library; cudarc panics on first use without it.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        println!("no CUDA driver found");
        return ExitCode::SUCCESS;
    }
    let gpu = match gpu::Gpu::open() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("bench-harness: {e}");
            return ExitCode::FAILURE;
        }
    };
    if opts.sizes.reps < MIN_REPS {
        eprintln!(
            "bench-harness: {} repetitions (fewer than {MIN_REPS}): a smoke run, not a result",
            opts.sizes.reps
        );
    }
    eprintln!(
        "bench-harness: {} (driver CUDA {})",
        gpu.name, gpu.driver_version
    );
    if opts.probe_loop {
        return match streamgraph::probe_loop(60) {
            Ok(rows) => {
                println!("K,interleaved_us_per_iteration,branchwise_us_per_iteration,ratio");
                for (k, a, b) in rows {
                    println!("{k},{a:.4},{b:.4},{:.4}", b / a);
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("bench-harness: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if opts.probe_launch {
        return match launch_probe::run(&gpu) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bench-harness: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut rows = workloads::run_all(&gpu, &opts.sizes);
    rows.extend(report::derived(&rows));
    // W13's and W14's systems (`streamgraph-params`, `streamgraph-set`, …) get columns of their own after the usual ones.
    let mut systems = SYSTEMS.to_vec();
    for r in &rows {
        if !systems.contains(&r.system.as_str()) {
            systems.push(r.system.as_str());
        }
    }
    print!("{}", report::table(&rows, &systems));

    // Raw is every workload's baseline; W13 and W14 have none, so their own systems count
    // there.
    let failed = rows
        .iter()
        .filter(|r| {
            (r.system == "raw" || r.workload == "W13" || r.workload == "W14") && r.p50.is_none()
        })
        .count();
    let doc = json!({
        "schema": 1,
        "meta": {
            "source": "bench-harness",
            "device": gpu.name,
            "driver_cuda_version": gpu.driver_version,
            "unix_time": SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
            "reps": opts.sizes.reps,
            "args": args,
            "kernel_launch": {"grid": kernels::GRID, "block": kernels::BLOCK},
        },
        "rows": rows.iter().map(report::Row::to_json).collect::<Vec<_>>(),
    });
    if let Some(dir) = opts.json.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("bench-harness: cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let text = match serde_json::to_string_pretty(&doc) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("bench-harness: cannot encode results: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::write(&opts.json, text + "\n") {
        eprintln!("bench-harness: cannot write {}: {e}", opts.json.display());
        return ExitCode::FAILURE;
    }
    eprintln!("bench-harness: wrote {}", opts.json.display());
    if failed > 0 {
        eprintln!(
            "bench-harness: {failed} raw, W13 or W14 measurements failed (see the notes under the table)"
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Checks that need no GPU: statistics, W11's CPU reference, W14's request sizes, the alternating runner with a fake system and a missing
/// one, and the table.
fn self_test() -> Result<(), String> {
    stats::self_test()?;
    mlp::self_test()?;
    few_graphs::self_test()?;
    struct Counter(f64);
    impl runner::Case for Counter {
        fn sample(&mut self) -> Result<Vec<f64>, gpu::BenchError> {
            self.0 += 1.0;
            Ok(vec![self.0, 2.0 * self.0])
        }
    }
    let spec = runner::Spec {
        workload: "W7",
        params: json!({"nodes": 10}),
        metrics: vec![
            runner::metric("v", "total", "us"),
            runner::metric("v", "other", "us"),
        ],
        warmup: 2,
        reps: 10,
    };
    let rows = runner::run(
        &spec,
        vec![
            ("raw", Ok(Box::new(Counter(0.0)) as Box<dyn runner::Case>)),
            ("streamgraph", Err(gpu::BenchError::NotWired)),
        ],
    );
    let raw_total = rows
        .iter()
        .find(|r| r.system == "raw" && r.metric == "total")
        .ok_or("no raw row")?;
    // Warm-up samples 1 and 2 are dropped; 3..=12 remain, median 7.5.
    if raw_total.p50 != Some(7.5) || raw_total.n != 10 {
        return Err(format!("runner kept the wrong samples: {raw_total:?}"));
    }
    let missing = rows
        .iter()
        .filter(|r| r.system == "streamgraph" && r.p50.is_none())
        .count();
    if missing != 2 {
        return Err(format!(
            "expected 2 rows without numbers for streamgraph, got {missing}"
        ));
    }
    let text = report::table(&rows, SYSTEMS);
    if !text.contains("7.500") || !text.contains("[1] not yet wired") {
        return Err(format!("unexpected table:\n{text}"));
    }
    print!("{text}");
    Ok(())
}
