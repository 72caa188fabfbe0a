//! W12, a decode-like step: `layers` layers of W3's diamond over four streams (one kernel on
//! the origin, a fork, one kernel on each of the four streams, joins into the next layer's
//! origin kernel), every kernel `spin` holding its block for `kernel_ns` (about 2 µs): 200
//! short kernels a step at 40 layers. The step is captured once and replayed `steps` times
//! back to back, as a decoder replays its step graph token after token.
//!
//! Each sample: the start event, `steps` launches of the executable graph with nothing in
//! between, the end event, and a wait for it. Metrics: steps per second of wall time (first
//! launch to the end event's completion), host µs per launch call, device µs per step between
//! the events, and wall µs per step.
//!
//! Systems: `raw`, the driver by hand (`cuStreamBeginCapture_v2` … `cuGraphLaunch`), and
//! `streamgraph`, the [`Decode4`] pipeline captured by `Capture` and launched by
//! `GraphExec::replay`; the peers (`torch_peer.py`, `cuda_core_peer.py`) build the same graph.

use std::time::Instant;

use ::streamgraph::{pipeline, Capture, GraphExec, Kernel, Stream as SgStream};
use cudarc::driver::sys;

use crate::gpu::{check, BenchError, Event, Exec, Gpu, Graph};
use crate::kernels::{BLOCK, GRID};
use crate::raw::{capture, DiamondStreams};
use crate::runner::{metric, Case, Metric};
use crate::workloads::Diamond;

type Result<T> = std::result::Result<T, BenchError>;

/// W12's size.
#[derive(Debug, Clone, Copy)]
pub struct Decode {
    /// Diamond layers (five kernels each).
    pub layers: usize,
    /// How long each kernel spins, in ns.
    pub kernel_ns: u64,
    /// Replays per sample.
    pub steps: usize,
}

impl Decode {
    /// Kernels per step.
    pub fn kernels(&self) -> usize {
        self.layers * 5
    }
}

/// The streams of the diamond: the origin and three side streams.
const STREAMS: usize = 4;

/// Samples of W12 at most: each takes about two seconds at full size.
pub const MAX_REPS: usize = 10;

pub const W12_METRICS: &[Metric] = &[
    metric("replay_loop", "steps_per_second", "1/s"),
    metric("replay_loop", "host_per_step", "us"),
    metric("replay_loop", "device_per_step", "us"),
    metric("replay_loop", "wall_per_step", "us"),
];

/// One sample's metrics from its measurements: `steps` launches that took `host` µs to make,
/// `wall` µs to finish and `device` µs between the events.
fn metrics(steps: usize, host: f64, wall: f64, device: f64) -> Vec<f64> {
    let n = steps as f64;
    vec![n / (wall * 1e-6), host / n, device / n, wall / n]
}

/// Microseconds since `t0`.
fn us_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e6
}

// ---------------------------------------------------------------------------------------------
// raw.

struct Raw<'g> {
    gpu: &'g Gpu,
    p: Decode,
    d: DiamondStreams,
    start: Event,
    end: Event,
    exec: Option<Exec>,
    graph: Option<Graph>,
}

/// W12 by hand: `raw.rs`'s diamond with `spin` kernels, captured on the origin through events
/// and instantiated once.
pub fn raw<'g>(gpu: &'g Gpu, p: &Decode) -> Result<Box<dyn Case + 'g>> {
    let diamond = Diamond {
        layers: p.layers,
        branches: STREAMS,
    };
    let mut case = Raw {
        gpu,
        p: *p,
        d: DiamondStreams::new(&diamond)?,
        start: Event::timing()?,
        end: Event::timing()?,
        exec: None,
        graph: None,
    };
    let graph = capture(case.d.origin(), || {
        case.d
            .issue_with(|s| case.gpu.launch_spin(s.0, case.p.kernel_ns))
    })?;
    case.exec = Some(graph.instantiate()?);
    case.graph = Some(graph);
    Ok(Box::new(case))
}

impl Case for Raw<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let (Some(exec), origin) = (&self.exec, self.d.origin()) else {
            return Err(BenchError::Setup("W12: no executable graph".into()));
        };
        let t0 = Instant::now();
        self.start.record_on(origin.0)?;
        for _ in 0..self.p.steps {
            check(
                // SAFETY: executable graph and stream are alive (borrowed).
                unsafe { sys::cuGraphLaunch(exec.0, origin.0) },
                "cuGraphLaunch",
            )?;
        }
        let host = us_since(t0);
        self.end.record_on(origin.0)?;
        self.end.synchronize()?;
        let wall = us_since(t0);
        let device = self.start.elapsed_ms(&self.end)? * 1e3;
        Ok(metrics(self.p.steps, host, wall, device))
    }
}

impl Drop for Raw<'_> {
    fn drop(&mut self) {
        // Nothing may run when the graph and streams go.
        let _ = self.gpu.synchronize();
        self.exec = None;
        self.graph = None;
    }
}

// ---------------------------------------------------------------------------------------------
// streamgraph.

pipeline! {
    /// W12's step: W3's diamond with `spin(ns)` kernels, `layers` layers on four streams.
    pub pipeline Decode4(spin: &Kernel, ns: u64, layers: usize) {
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
            main: launch spin<<<GRID, BLOCK>>>(ns);
            main: record fork;
            s1: wait fork;
            s2: wait fork;
            s3: wait fork;
            main: launch spin<<<GRID, BLOCK>>>(ns);
            s1: launch spin<<<GRID, BLOCK>>>(ns);
            s2: launch spin<<<GRID, BLOCK>>>(ns);
            s3: launch spin<<<GRID, BLOCK>>>(ns);
            s1: record j1;
            s2: record j2;
            s3: record j3;
        }
    }
}

struct Streamgraph<'g> {
    gpu: &'g Gpu,
    p: Decode,
    origin: SgStream,
    exec: GraphExec<Decode4<'static>>,
    start: Event,
    end: Event,
}

/// W12 through streamgraph: [`Decode4`] captured (checks off), verified once against its plan
/// and instantiated; samples launch it with `GraphExec::replay`.
pub fn streamgraph<'g>(
    gpu: &'g Gpu,
    p: &Decode,
    device: &::streamgraph::Device,
    spin: &'static Kernel,
) -> Result<Box<dyn Case + 'g>> {
    let origin = SgStream::new(device, 0)?;
    let graph =
        Capture::new(&origin)
            .check(false)
            .capture(Decode4::new(spin, p.kernel_ns, p.layers))?;
    graph.verify()?;
    let exec = graph.instantiate()?;
    Ok(Box::new(Streamgraph {
        gpu,
        p: *p,
        origin,
        exec,
        start: Event::timing()?,
        end: Event::timing()?,
    }))
}

impl Case for Streamgraph<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let raw = self.origin.as_cudarc().cu_stream();
        let t0 = Instant::now();
        self.start.record_on(raw)?;
        self.exec.replay(&self.origin, self.p.steps)?;
        let host = us_since(t0);
        self.end.record_on(raw)?;
        self.end.synchronize()?;
        let wall = us_since(t0);
        let device = self.start.elapsed_ms(&self.end)? * 1e3;
        Ok(metrics(self.p.steps, host, wall, device))
    }
}

impl Drop for Streamgraph<'_> {
    fn drop(&mut self) {
        let _ = self.gpu.synchronize();
    }
}
