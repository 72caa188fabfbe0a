//! Reliability runs on a GPU: soak (memory over many replays, eager runs and updates) and
//! threads (captures, replays and updates on eight threads, plus a global-mode capture while
//! the others synchronize). Prints figures for docs/RELIABILITY.md.
//!
//! ```text
//! bench-reliability soak [--replays N] [--eager N] [--updates N]
//! bench-reliability threads [--seconds S]
//! ```
#![allow(clippy::unwrap_used)] // a measurement binary: a failed driver call ends the run

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use streamgraph::{
    pipeline, Capture, CaptureMode, Device, DeviceBuffer, Eager, Error, Kernel, KernelArg, Module,
    OpRef, Stream,
};

const SOURCE: &str = r#"
extern "C" __global__ void empty() {}
extern "C" __global__ void stamp(unsigned* slot, unsigned v) { slot[0] = v; }
extern "C" __global__ void add(unsigned* slot, unsigned k) { slot[0] += k; }
"#;

struct Kernels {
    empty: Kernel,
    stamp: Kernel,
    add: Kernel,
}

fn kernels(device: &Device) -> Kernels {
    let module = Module::from_cuda_source(device, "reliability", SOURCE).unwrap();
    // SAFETY: each kernel is launched with the arguments of its C signature above.
    unsafe {
        Kernels {
            empty: module.kernel("empty").unwrap(),
            stamp: module.kernel("stamp").unwrap(),
            add: module.kernel("add").unwrap(),
        }
    }
}

pipeline! {
    /// `layers` diamonds over four streams (5 kernels a layer), then a stamp of `v`.
    pipeline Diamond(k: &Kernels, slot: &mut DeviceBuffer<u32>, layers: usize, v: u32) {
        stream main;
        stream s1;
        stream s2;
        stream s3;
        event fork;
        event j1;
        event j2;
        event j3;
        for layer in 0..layers {
            if layer > 0 {
                main: wait j1;
                main: wait j2;
                main: wait j3;
            }
            main: launch k.empty<<<1, 32>>>();
            main: record fork;
            s1: wait fork;
            s2: wait fork;
            s3: wait fork;
            main: launch k.empty<<<1, 32>>>();
            s1: launch k.empty<<<1, 32>>>();
            s2: launch k.empty<<<1, 32>>>();
            s3: launch k.empty<<<1, 32>>>();
            s1: record j1;
            s2: record j2;
            s3: record j3;
        }
        main: launch k.stamp<<<1, 1>>>(&mut slot, v);
    }
}

pipeline! {
    /// `slot += k`, `times` times on one stream.
    pipeline Adds(kk: &Kernels, slot: &mut DeviceBuffer<u32>, times: usize, k: u32) {
        stream main;
        for _ in 0..times {
            main: launch kk.add<<<1, 1>>>(&mut slot, k);
        }
    }
}

/// Resident set size of this process in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Samples of (used device bytes, RSS KiB) and what grew after the warm-up sample.
struct Samples {
    what: &'static str,
    device: Device,
    points: Vec<(u64, u64)>,
}

impl Samples {
    fn new(what: &'static str, device: &Device) -> Samples {
        Samples {
            what,
            device: device.clone(),
            points: Vec::new(),
        }
    }

    fn take(&mut self) {
        let (free, total) = self.device.memory_info().unwrap();
        self.points.push(((total - free) as u64, rss_kib()));
    }

    /// Prints growth from the first sample after warm-up (the second) to the maximum after it.
    fn report(&self, count: u64, took: Duration) {
        let after = &self.points[1..];
        let (d0, r0) = after[0];
        let dmax = after.iter().map(|p| p.0).max().unwrap_or(d0);
        let rmax = after.iter().map(|p| p.1).max().unwrap_or(r0);
        let (dl, rl) = *after.last().unwrap();
        println!(
            "{:<34} {:>9} in {:>7.1} s | device used {:>8.1} MiB, growth after warm-up {:>6} B (max) {:>6} B (last) | RSS {:>7} KiB, growth {:>5} KiB (max) {:>5} KiB (last) | {} samples",
            self.what,
            count,
            took.as_secs_f64(),
            d0 as f64 / 1048576.0,
            dmax - d0,
            dl as i64 - d0 as i64,
            r0,
            rmax - r0,
            rl as i64 - r0 as i64,
            self.points.len()
        );
    }
}

/// Runs `step(i)` for `i` in `0..count`, sampling memory 20 times (after a synchronize) and
/// at the end, then prints the phase's row.
fn sampled(
    what: &'static str,
    device: &Device,
    stream: &Stream,
    count: u64,
    mut step: impl FnMut(u64),
) {
    let mut s = Samples::new(what, device);
    let t = Instant::now();
    let batch = (count / 20).max(1);
    for i in 0..count {
        step(i);
        if i % batch == 0 {
            stream.synchronize().unwrap();
            s.take();
        }
    }
    stream.synchronize().unwrap();
    s.take();
    s.report(count, t.elapsed());
}

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn soak(args: &[String]) {
    let device = Device::new(None).unwrap();
    let k = kernels(&device);
    let stream = Stream::new(&device, 0).unwrap();
    let mut slot = DeviceBuffer::<u32>::zeros(&device, 1).unwrap();
    let (replays, eager_runs, updates) = (
        arg(args, "--replays", 1_000_000),
        arg(args, "--eager", 100_000),
        arg(args, "--updates", 10_000),
    );

    // 1. Replays of a 255-node graph over four streams (+ the stamp).
    let exec = streamgraph::capture(&stream, Diamond::new(&k, &mut slot, 51, 7))
        .unwrap()
        .instantiate()
        .unwrap();
    sampled(
        "replays (255 kernels, 4 streams)",
        &device,
        &stream,
        replays,
        |_| {
            exec.launch(&stream).unwrap();
        },
    );
    drop(exec);

    // 2. Eager runs of a 10-kernel diamond.
    let mut eager = Eager::new(&stream);
    sampled(
        "eager runs (10 kernels, 4 streams)",
        &device,
        &stream,
        eager_runs,
        |_| {
            eager.run(&Diamond::new(&k, &mut slot, 2, 3)).unwrap();
        },
    );

    // 3. Update cycles: update_with (re-capture + cuGraphExecUpdate) and set_kernel_args.
    let mut exec = streamgraph::capture(&stream, Diamond::new(&k, &mut slot, 51, 0))
        .unwrap()
        .instantiate()
        .unwrap();
    let stamp = OpRef::new(&Diamond::PROGRAM.statements[Diamond::PROGRAM.statements.len() - 1]);
    sampled(
        "update cycles (update_with + args)",
        &device,
        &stream,
        updates,
        |i| {
            let v = i as u32;
            exec.update_with(|p| p.v = v).unwrap();
            exec.launch(&stream).unwrap();
            let w = v.wrapping_add(1);
            {
                let slot_arg = exec.pipeline().slot.as_view();
                exec.set_kernel_args(
                    stamp,
                    &k.stamp,
                    &[KernelArg::read(&slot_arg), KernelArg::value(&w)],
                )
                .unwrap();
            }
            exec.launch(&stream).unwrap();
        },
    );
    let last = exec.into_pipeline().slot.to_vec().unwrap()[0];
    assert_eq!(last, updates as u32, "the last set_kernel_args value");
}

/// Runs `f` until it succeeds, counting the typed capture errors that another thread's
/// global-mode capture causes; any other error ends the run.
fn retry<T>(typed: &AtomicU64, mut f: impl FnMut() -> streamgraph::Result<T>) -> T {
    loop {
        match f() {
            Ok(v) => return v,
            Err(Error::Capture { .. }) => {
                typed.fetch_add(1, Ordering::Relaxed);
                std::thread::yield_now();
            }
            Err(e) => panic!("untyped error: {e}"),
        }
    }
}

/// One worker: its own stream, buffer and pipeline; capture, replay, update, check, again.
fn worker(
    k: Arc<Kernels>,
    device: Device,
    stop: Arc<AtomicBool>,
    typed: Arc<AtomicU64>,
) -> (u64, u64) {
    let typed = &*typed;
    let stream = retry(typed, || Stream::new(&device, 0));
    let mut slot = retry(typed, || DeviceBuffer::<u32>::zeros(&device, 1));
    let (mut cycles, mut expected) = (0u64, 0u32);
    let mut capture = Capture::new(&stream).mode(CaptureMode::ThreadLocal);
    while !stop.load(Ordering::Relaxed) {
        let graph = loop {
            match capture.capture(Adds::new(&k, &mut slot, 8, 1)) {
                Ok(g) => break g,
                Err(Error::Capture { .. }) => {
                    typed.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => panic!("untyped error: {e}"),
            }
        };
        let mut exec = match graph.instantiate() {
            Ok(exec) => exec,
            Err(Error::Capture { .. }) => {
                typed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Err(e) => panic!("untyped error: {e}"),
        };
        for _ in 0..100 {
            retry(typed, || exec.launch(&stream));
        }
        expected = expected.wrapping_add(800);
        retry(typed, || exec.update_with(|p| p.k = 2));
        for _ in 0..10 {
            retry(typed, || exec.launch(&stream));
        }
        expected = expected.wrapping_add(160);
        retry(typed, || stream.synchronize());
        drop(exec);
        let got = retry(typed, || slot.to_vec_on(&stream))[0];
        assert_eq!(got, expected, "a worker's result");
        cycles += 1;
    }
    (cycles, u64::from(expected))
}

fn threads(args: &[String]) {
    let device = Device::new(None).unwrap();
    let k = Arc::new(kernels(&device));
    let seconds = arg(args, "--seconds", 60);
    let workers = arg(args, "--workers", 8);
    let with_global = !args.iter().any(|a| a == "--no-global");
    let stop = Arc::new(AtomicBool::new(false));
    let typed = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for _ in 0..workers {
        let (k, d, s, t) = (k.clone(), device.clone(), stop.clone(), typed.clone());
        handles.push(std::thread::spawn(move || worker(k, d, s, t)));
    }
    // One thread captures in global mode while the workers synchronize and allocate.
    let global = {
        let (k, d, s) = (k.clone(), device.clone(), stop.clone());
        std::thread::spawn(move || {
            if !with_global {
                return (0, 0);
            }
            let ignored = AtomicU64::new(0);
            let stream = retry(&ignored, || Stream::new(&d, 0));
            let mut slot = retry(&ignored, || DeviceBuffer::<u32>::zeros(&d, 1));
            let mut capture = Capture::new(&stream).mode(CaptureMode::Global);
            let (mut ok, mut refused) = (0u64, 0u64);
            while !s.load(Ordering::Relaxed) {
                match capture.capture(Adds::new(&k, &mut slot, 64, 1)) {
                    Ok(g) => {
                        ok += 1;
                        drop(g);
                    }
                    Err(Error::Capture { .. }) => refused += 1,
                    Err(e) => panic!("untyped error in the global capture: {e}"),
                }
            }
            (ok, refused)
        })
    };
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for (i, h) in handles.into_iter().enumerate() {
        let (cycles, value) = h.join().unwrap();
        println!(
            "worker {i}: {cycles} capture/replay/update cycles, final value {value} as expected"
        );
        total += cycles;
    }
    let (ok, refused) = global.join().unwrap();
    println!(
        "threads: {workers} workers, {seconds} s, {total} cycles, all results as expected; {} typed capture errors seen by workers (retried); global-mode thread: {ok} captures, {refused} refused with a typed capture error",
        typed.load(Ordering::Relaxed)
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if !Device::driver_available() {
        println!("no CUDA driver found: the reliability runs need a GPU");
        return;
    }
    match args.first().map(String::as_str) {
        Some("soak") => soak(&args),
        Some("threads") => threads(&args),
        _ => {
            println!("usage: bench-reliability soak [--replays N] [--eager N] [--updates N] | threads [--seconds S]");
        }
    }
}
