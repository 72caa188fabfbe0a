//! W10: all-reduce (sum, in place, `f32`) of 4 KiB, 1 MiB and 64 MiB across the machine's GPUs
//! (two ranks on a machine with two or more GPUs, one process driving both; one rank on a
//! single GPU, which runs every code path but measures only NCCL's local work), through
//! streamgraph: eagerly, and as a captured graph replayed. Each sample issues
//! [`ALL_REDUCES`] all-reduces back to back and synchronises; host wall time over the count is
//! the latency (as `nccl-tests` measure it). PyTorch's `torch.distributed` is measured by
//! `benches/peers/torch_dist_peer.py`, one process per GPU, the same way.

use std::time::Instant;

use ::streamgraph::{
    pipeline, Capture, Communicator, Device, DeviceBuffer, Eager, GraphExec, Stream,
};

use crate::gpu::BenchError;
use crate::runner::{metric, Case, Metric};

type Result<T> = std::result::Result<T, BenchError>;

/// All-reduces per sample.
pub const ALL_REDUCES: u32 = 20;

/// W10's size: bytes per rank.
#[derive(Debug, Clone, Copy)]
pub struct AllReduce {
    pub bytes: usize,
}

pub const W10_METRICS: &[Metric] = &[
    metric("eager", "latency", "us"),
    metric("eager", "alg_bandwidth", "GB/s"),
    metric("eager", "bus_bandwidth", "GB/s"),
    metric("replay", "latency", "us"),
    metric("replay", "alg_bandwidth", "GB/s"),
    metric("replay", "bus_bandwidth", "GB/s"),
];

pipeline! {
    /// `n` all-reduces on one rank.
    pipeline OneRank(x: &mut DeviceBuffer<f32>, comm: &Communicator, n: u32) {
        stream s0;
        for _i in 0..n {
            all_reduce(comm, sum) { s0: &mut x };
        }
    }
}

pipeline! {
    /// `n` all-reduces over two ranks, one per device.
    pipeline TwoRanks(x0: &mut DeviceBuffer<f32>, x1: &mut DeviceBuffer<f32>, comm: &Communicator,
                      d1: i32, n: u32) {
        stream s0;
        stream s1(device = d1);
        for _i in 0..n {
            all_reduce(comm, sum) { s0: &mut x0, s1: &mut x1 };
        }
    }
}

/// The ranks W10 uses on this machine: two when it has two GPUs or more, else one.
pub fn ranks() -> usize {
    match Device::count() {
        Ok(n) if n >= 2 => 2,
        _ => 1,
    }
}

/// Runs the eager pipeline of `ALL_REDUCES` all-reduces.
type RunEager = Box<dyn FnMut(&mut Eager) -> ::streamgraph::Result<()>>;
/// Launches the graph of `ALL_REDUCES` all-reduces.
type Replay = Box<dyn Fn(&Stream) -> ::streamgraph::Result<()>>;

/// W10 on `ranks` ranks.
struct W10 {
    origin: Stream,
    eager: Eager,
    run: RunEager,
    replay: Replay,
    bytes: usize,
    ranks: usize,
}

/// Leaked zeroed buffers (the pipelines borrow them for the life of the process, as the
/// executable graph does): one set for eager runs, one for the graph.
fn buffers(devices: &[Device], len: usize) -> Result<Vec<&'static mut DeviceBuffer<f32>>> {
    devices
        .iter()
        .map(|d| {
            Ok(&mut *Box::leak(Box::new(DeviceBuffer::<f32>::zeros(
                d, len,
            )?)))
        })
        .collect()
}

fn verified<P: ::streamgraph::Pipeline + 'static>(
    origin: &Stream,
    pipeline: P,
) -> Result<GraphExec<P>> {
    let graph = Capture::new(origin).check(false).capture(pipeline)?;
    graph.verify()?;
    Ok(graph.instantiate()?)
}

pub fn w10(p: &AllReduce, ranks: usize) -> Result<Box<dyn Case>> {
    let devices: Vec<Device> = (0..ranks as i32)
        .map(|d| Device::new(Some(d)))
        .collect::<::streamgraph::Result<_>>()?;
    let comm: &'static Communicator = Box::leak(Box::new(Communicator::init_all(&devices)?));
    let len = p.bytes / std::mem::size_of::<f32>();
    let origin = Stream::new(&devices[0], 0)?;
    let mut eager = Eager::new(&origin);
    eager.check(false);
    let n = ALL_REDUCES;
    let (run, replay): (RunEager, Replay) = match ranks {
        1 => {
            let mut e = buffers(&devices, len)?.into_iter();
            let mut g = buffers(&devices, len)?.into_iter();
            let (Some(ex), Some(gx)) = (e.next(), g.next()) else {
                return Err(BenchError::Setup("no buffers".into()));
            };
            // NCCL sets a communicator up on its first call: eagerly, before the capture.
            eager.run(&OneRank::new(ex, comm, 1))?;
            origin.synchronize()?;
            let exec = verified(&origin, OneRank::new(gx, comm, n))?;
            (
                Box::new(move |eager: &mut Eager| eager.run(&OneRank::new(ex, comm, n))),
                Box::new(move |s: &Stream| exec.launch(s)),
            )
        }
        _ => {
            let mut e = buffers(&devices, len)?.into_iter();
            let mut g = buffers(&devices, len)?.into_iter();
            let (Some(e0), Some(e1), Some(g0), Some(g1)) = (e.next(), e.next(), g.next(), g.next())
            else {
                return Err(BenchError::Setup("no buffers".into()));
            };
            eager.run(&TwoRanks::new(e0, e1, comm, 1, 1))?;
            origin.synchronize()?;
            let exec = verified(&origin, TwoRanks::new(g0, g1, comm, 1, n))?;
            (
                Box::new(move |eager: &mut Eager| eager.run(&TwoRanks::new(e0, e1, comm, 1, n))),
                Box::new(move |s: &Stream| exec.launch(s)),
            )
        }
    };
    Ok(Box::new(W10 {
        origin,
        eager,
        run,
        replay,
        bytes: p.bytes,
        ranks,
    }))
}

impl W10 {
    /// Latency (µs), algorithm and bus bandwidth (GB/s) of `ALL_REDUCES` all-reduces that took
    /// `us` in all.
    fn measure(&self, us: f64) -> [f64; 3] {
        let latency = us / f64::from(ALL_REDUCES);
        let alg = self.bytes as f64 / (latency * 1e-6) / 1e9;
        let r = self.ranks as f64;
        [latency, alg, alg * 2.0 * (r - 1.0) / r]
    }
}

impl Case for W10 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        self.origin.synchronize()?;
        let t0 = Instant::now();
        (self.run)(&mut self.eager)?;
        self.origin.synchronize()?;
        let eager = self.measure(t0.elapsed().as_secs_f64() * 1e6);
        let t0 = Instant::now();
        (self.replay)(&self.origin)?;
        self.origin.synchronize()?;
        let replay = self.measure(t0.elapsed().as_secs_f64() * 1e6);
        Ok(eager.into_iter().chain(replay).collect())
    }
}
