//! W9, copy/compute overlap: `total` bytes of floats go host → device in chunks, each chunk
//! through an elementwise kernel, and back device → host, over three streams (H2D on the
//! origin, the kernel on a second, D2H on a third) with `buffers` device buffers in rotation
//! (double or triple buffering). Host memory is pinned, one buffer per chunk in each direction.
//!
//! Per chunk `c` with device buffer `b = c % buffers`: the H2D stream waits until the D2H of
//! the chunk that used `b` before has finished (`freed[b]`), copies, records `loaded[b]`; the
//! kernel stream waits for `loaded[b]`, runs `work`, records `done[b]`; the D2H stream waits
//! for `done[b]`, copies back, records `freed[b]`. The origin joins the other two at the end.
//!
//! Each sample measures, with CUDA events on the origin: the whole pipeline eagerly and as a
//! replayed graph (end to end), and the three bounds in the same process — all H2D copies
//! alone, all kernels alone, all D2H copies alone, each on one stream. Overlap is end to end
//! divided by the largest bound: 1.0 is perfect overlap, 3.0 none at all. One more time says
//! what the host link allows: `duplex`, all H2D copies on one stream while all D2H copies run on
//! another (from device buffers of their own, so nothing orders or races them), which no
//! pipeline moving the same bytes both ways can beat.

use std::ffi::c_void;
use std::ptr;

use ::streamgraph::__private::{arg_place, copy_with, place};
use ::streamgraph::{
    Capture, CopySource, Device, DeviceBuffer, Eager, Error, GraphExec, Issuer, Kernel, KernelArg,
    LaunchConfig, PinnedBuffer, Pipeline, Program, ProgramBuilder, Stream, StreamOptions,
};
use cudarc::driver::sys;

use crate::gpu::{check, BenchError, Event, Gpu, Stream as RawStream};
use crate::kernels::WORK_BLOCK;
use crate::runner::Case;

type Result<T> = std::result::Result<T, BenchError>;

/// W9's size.
#[derive(Debug, Clone, Copy)]
pub struct Overlap {
    /// Bytes moved each way.
    pub total: usize,
    /// Bytes per chunk (1–8 MiB).
    pub chunk: usize,
    /// Device buffers in rotation (2 = double, 3 = triple buffering).
    pub buffers: usize,
    /// Multiply-add rounds per element of the kernel: sets its time per chunk.
    pub iters: u32,
}

impl Overlap {
    /// Chunks per run.
    pub fn chunks(&self) -> usize {
        self.total.div_ceil(self.chunk)
    }

    /// Floats per chunk.
    pub fn floats(&self) -> usize {
        self.chunk / std::mem::size_of::<f32>()
    }

    fn check(&self) -> Result<()> {
        if self.chunk == 0
            || !self.chunk.is_multiple_of(4)
            || self.buffers == 0
            || self.total < self.chunk
        {
            return Err(BenchError::Setup(format!("W9: unusable sizes {self:?}")));
        }
        Ok(())
    }
}

/// The input value of element `i` of a chunk, and what `work` makes of it.
fn input(c: usize, i: usize) -> f32 {
    ((c * 7 + i) % 1024) as f32
}

fn expected(x: f32, iters: u32) -> f32 {
    let mut v = x;
    for _ in 0..iters {
        v = v * 0.999 + 0.5;
    }
    v
}

/// Whether `got` is `work`'s result for `x` (the device may fuse the multiply-add).
fn close(got: f32, x: f32, iters: u32) -> bool {
    let want = expected(x, iters);
    (got - want).abs() <= 1e-3 * want.abs().max(1.0)
}

/// The bounds and end-to-end times of one sample, in µs, as the metrics list them.
fn metrics(eager: f64, replay: f64, h2d: f64, kernel: f64, d2h: f64, duplex: f64) -> Vec<f64> {
    let bound = h2d.max(kernel).max(d2h);
    vec![
        eager,
        eager / bound,
        replay,
        replay / bound,
        h2d,
        kernel,
        d2h,
        duplex,
    ]
}

// ---------------------------------------------------------------------------------------------
// Raw driver calls.

/// Pinned host memory from `cuMemHostAlloc`.
struct Pinned {
    ptr: *mut c_void,
}

impl Pinned {
    fn new(bytes: usize) -> Result<Pinned> {
        let mut ptr = ptr::null_mut();
        check(
            // SAFETY: writes the new allocation's address through a valid pointer.
            unsafe { sys::cuMemHostAlloc(&mut ptr, bytes, 0) },
            "cuMemHostAlloc",
        )?;
        Ok(Pinned { ptr })
    }

    #[allow(clippy::mut_from_ref)] // the harness's own allocation, touched by one thread
    fn floats(&self, len: usize) -> &mut [f32] {
        // SAFETY: the allocation holds at least `len` floats (callers allocate `len * 4`
        // bytes), is aligned for them, and is only touched by the host between samples, after
        // synchronisation.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<f32>(), len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: owned allocation, freed once; callers synchronise before dropping.
        unsafe { sys::cuMemFreeHost(self.ptr) };
    }
}

struct DeviceMem(sys::CUdeviceptr);

impl DeviceMem {
    fn new(bytes: usize) -> Result<DeviceMem> {
        let mut p = 0;
        check(
            // SAFETY: writes the new allocation's address through a valid pointer.
            unsafe { sys::cuMemAlloc_v2(&mut p, bytes) },
            "cuMemAlloc_v2",
        )?;
        Ok(DeviceMem(p))
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        // SAFETY: owned allocation, freed once; callers synchronise before dropping.
        unsafe { sys::cuMemFree_v2(self.0) };
    }
}

struct RawW9<'g> {
    gpu: &'g Gpu,
    p: Overlap,
    /// H2D (and origin), kernel, D2H.
    streams: [RawStream; 3],
    host_in: Pinned,
    host_out: Pinned,
    dev: Vec<DeviceMem>,
    /// The D2H side's buffers of the duplex bound.
    dev_out: Vec<DeviceMem>,
    loaded: Vec<Event>,
    done: Vec<Event>,
    freed: Vec<Event>,
    join: [Event; 2],
    exec: crate::gpu::Exec,
    start: Event,
    end: Event,
}

/// W9 through raw driver calls: the same three streams and events as streamgraph's pipeline,
/// issued by hand; the graph is a capture of the same calls.
pub fn raw<'g>(gpu: &'g Gpu, p: &Overlap) -> Result<Box<dyn Case + 'g>> {
    p.check()?;
    let n = p.chunks() * p.floats();
    let host_in = Pinned::new(n * 4)?;
    let host_out = Pinned::new(n * 4)?;
    for c in 0..p.chunks() {
        for (i, x) in host_in.floats(n)[c * p.floats()..(c + 1) * p.floats()]
            .iter_mut()
            .enumerate()
        {
            *x = input(c, i);
        }
    }
    let buffers = || {
        (0..p.buffers)
            .map(|_| DeviceMem::new(p.chunk))
            .collect::<Result<Vec<_>>>()
    };
    let (dev, dev_out) = (buffers()?, buffers()?);
    let events = |n: usize| (0..n).map(|_| Event::edge()).collect::<Result<Vec<_>>>();
    let mut case = RawW9 {
        gpu,
        p: *p,
        streams: [RawStream::new()?, RawStream::new()?, RawStream::new()?],
        host_in,
        host_out,
        dev,
        dev_out,
        loaded: events(p.buffers)?,
        done: events(p.buffers)?,
        freed: events(p.buffers)?,
        join: [Event::edge()?, Event::edge()?],
        exec: crate::gpu::Exec(ptr::null_mut()),
        start: Event::timing()?,
        end: Event::timing()?,
    };
    let origin = case.streams[0].0;
    check(
        // SAFETY: the stream is alive; thread-local capture as everywhere in `raw.rs`.
        unsafe {
            sys::cuStreamBeginCapture_v2(
                origin,
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
        },
        "cuStreamBeginCapture",
    )?;
    let issued = case.issue(true);
    let mut graph = ptr::null_mut();
    // SAFETY: ends the capture begun above; writes the graph through a valid pointer.
    let ended = check(
        unsafe { sys::cuStreamEndCapture(origin, &mut graph) },
        "cuStreamEndCapture",
    );
    let graph = crate::gpu::Graph(graph);
    issued?;
    ended?;
    case.exec = graph.instantiate()?;
    Ok(Box::new(case))
}

impl RawW9<'_> {
    fn h2d(&self, c: usize, b: usize) -> Result<()> {
        let f = self.p.floats();
        // SAFETY: chunk `c` of the pinned input and device buffer `b` both hold `chunk` bytes.
        let src = unsafe { self.host_in.ptr.cast::<f32>().add(c * f) };
        check(
            // SAFETY: `src` points at `chunk` bytes of pinned memory, device buffer `b` holds
            // `chunk` bytes; both outlive the copy (the case owns them and synchronises).
            unsafe {
                sys::cuMemcpyHtoDAsync_v2(
                    self.dev[b].0,
                    src.cast_const().cast(),
                    self.p.chunk,
                    self.streams[0].0,
                )
            },
            "cuMemcpyHtoDAsync",
        )
    }

    fn kernel(&self, b: usize, stream: sys::CUstream) -> Result<()> {
        let mut ptr_arg = self.dev[b].0;
        let mut n = self.p.floats() as u32;
        let mut iters = self.p.iters;
        let mut args: [*mut c_void; 3] = [
            ptr::addr_of_mut!(ptr_arg).cast(),
            ptr::addr_of_mut!(n).cast(),
            ptr::addr_of_mut!(iters).cast(),
        ];
        let grid = n.div_ceil(WORK_BLOCK);
        // SAFETY: the arguments match `work(float*, unsigned, unsigned)` and point at locals
        // that outlive the call; the buffer holds `n` floats.
        check(
            unsafe {
                sys::cuLaunchKernel(
                    self.gpu.work,
                    grid,
                    1,
                    1,
                    WORK_BLOCK,
                    1,
                    1,
                    0,
                    stream,
                    args.as_mut_ptr(),
                    ptr::null_mut(),
                )
            },
            "cuLaunchKernel",
        )
    }

    fn d2h(&self, c: usize, b: usize, stream: sys::CUstream) -> Result<()> {
        self.d2h_from(c, &self.dev[b], stream)
    }

    fn d2h_from(&self, c: usize, src: &DeviceMem, stream: sys::CUstream) -> Result<()> {
        let f = self.p.floats();
        // SAFETY: as in `h2d`, for the output side.
        let dst = unsafe { self.host_out.ptr.cast::<f32>().add(c * f) };
        check(
            // SAFETY: as in `h2d`, device to host.
            unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src.0, self.p.chunk, stream) },
            "cuMemcpyDtoHAsync",
        )
    }

    /// The duplex bound: every H2D copy on the origin while every D2H copy (from `dev_out`)
    /// runs on the third stream, forked from and joined into the origin.
    fn duplex(&self) -> Result<()> {
        let [s0, s2] = [self.streams[0].0, self.streams[2].0];
        self.join[0].record_on(s0)?;
        wait(s2, &self.join[0])?;
        for c in 0..self.p.chunks() {
            let b = c % self.p.buffers;
            self.h2d(c, b)?;
            self.d2h_from(c, &self.dev_out[b], s2)?;
        }
        self.join[1].record_on(s2)?;
        wait(s0, &self.join[1])
    }

    /// The whole pipeline on the three streams (forked from and joined into the origin).
    fn issue(&self, capturing: bool) -> Result<()> {
        let [s0, s1, s2] = [self.streams[0].0, self.streams[1].0, self.streams[2].0];
        // Fork: the other streams wait for the origin's work so far.
        self.join[0].record_on(s0)?;
        for s in [s1, s2] {
            wait(s, &self.join[0])?;
        }
        let _ = capturing;
        for c in 0..self.p.chunks() {
            let b = c % self.p.buffers;
            if c >= self.p.buffers {
                wait(s0, &self.freed[b])?;
            }
            self.h2d(c, b)?;
            self.loaded[b].record_on(s0)?;
            wait(s1, &self.loaded[b])?;
            self.kernel(b, s1)?;
            self.done[b].record_on(s1)?;
            wait(s2, &self.done[b])?;
            self.d2h(c, b, s2)?;
            self.freed[b].record_on(s2)?;
        }
        self.join[0].record_on(s1)?;
        wait(s0, &self.join[0])?;
        self.join[1].record_on(s2)?;
        wait(s0, &self.join[1])
    }

    fn timed(&self, f: impl FnOnce() -> Result<()>) -> Result<f64> {
        let origin = self.streams[0].0;
        self.start.record_on(origin)?;
        f()?;
        self.end.record_on(origin)?;
        Ok(self.start.elapsed_ms(&self.end)? * 1e3)
    }

    fn verify(&self) -> Result<()> {
        let f = self.p.floats();
        let out = self.host_out.floats(self.p.chunks() * f);
        for c in 0..self.p.chunks() {
            for i in [0, f / 2, f - 1] {
                let got = out[c * f + i];
                if !close(got, input(c, i), self.p.iters) {
                    return Err(BenchError::Check(format!(
                        "chunk {c} element {i}: {got}, expected {}",
                        expected(input(c, i), self.p.iters)
                    )));
                }
            }
        }
        out.fill(0.0);
        Ok(())
    }
}

fn wait(stream: sys::CUstream, event: &Event) -> Result<()> {
    // SAFETY: both handles are alive.
    check(
        unsafe { sys::cuStreamWaitEvent(stream, event.0, 0) },
        "cuStreamWaitEvent",
    )
}

impl Case for RawW9<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let origin = self.streams[0].0;
        let chunks = self.p.chunks();
        let eager = self.timed(|| self.issue(false))?;
        self.streams[0].synchronize()?;
        self.verify()?;
        let replay = self.timed(|| self.exec.launch(&self.streams[0]))?;
        self.streams[0].synchronize()?;
        self.verify()?;
        let h2d = self.timed(|| (0..chunks).try_for_each(|c| self.h2d(c, c % self.p.buffers)))?;
        let kernel =
            self.timed(|| (0..chunks).try_for_each(|c| self.kernel(c % self.p.buffers, origin)))?;
        let d2h =
            self.timed(|| (0..chunks).try_for_each(|c| self.d2h(c, c % self.p.buffers, origin)))?;
        let duplex = self.timed(|| self.duplex())?;
        self.streams[0].synchronize()?;
        Ok(metrics(eager, replay, h2d, kernel, d2h, duplex))
    }
}

// ---------------------------------------------------------------------------------------------
// streamgraph.

/// Which part of W9 a [`Chunks`] pipeline issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    All,
    H2d,
    Kernel,
    D2h,
    /// The duplex bound: the H2D copies on one stream, the D2H copies (from buffers of their
    /// own) on another, nothing between them.
    Duplex,
}

/// The statements of W9's pipeline: per device buffer one statement of each step.
struct Statements {
    program: &'static Program,
    /// Per buffer: wait freed, copy in, record loaded, wait loaded, launch, record done,
    /// wait done, copy out, record freed.
    per_buffer: Vec<[usize; 9]>,
}

fn statements(buffers: usize, phase: Phase) -> Statements {
    let mut b = ProgramBuilder::new(match phase {
        Phase::All => "Overlap",
        Phase::H2d => "OverlapH2d",
        Phase::Kernel => "OverlapKernel",
        Phase::D2h => "OverlapD2h",
        Phase::Duplex => "OverlapDuplex",
    });
    let s0 = b.stream("h2d");
    let (s1, s2) = match phase {
        Phase::All => (b.stream("compute"), b.stream("d2h")),
        Phase::Duplex => (s0, b.stream("d2h")),
        _ => (s0, s0),
    };
    let mut per_buffer = Vec::new();
    for i in 0..buffers {
        let (loaded, done, freed) = (
            b.event(&format!("loaded{i}")),
            b.event(&format!("done{i}")),
            b.event(&format!("freed{i}")),
        );
        let dev = format!("dev{i}");
        let from = if phase == Phase::Duplex {
            format!("out{i}")
        } else {
            dev.clone()
        };
        per_buffer.push([
            b.wait(s0, freed),
            b.copy(s0, &dev, "host_in"),
            b.record(s0, loaded),
            b.wait(s1, loaded),
            b.launch(s1, "work", &[(&dev, ::streamgraph::AccessMode::Write)]),
            b.record(s1, done),
            b.wait(s2, done),
            b.copy(s2, "host_out", &from),
            b.record(s2, freed),
        ]);
    }
    Statements {
        program: b.build(),
        per_buffer,
    }
}

/// W9's pipeline (or one of its bounds) over chunked pinned buffers.
struct Chunks<'a> {
    st: &'a Statements,
    phase: Phase,
    work: &'a Kernel,
    ins: &'a [PinnedBuffer<f32>],
    outs: &'a mut [PinnedBuffer<f32>],
    dev: &'a mut [DeviceBuffer<f32>],
    /// The D2H side's buffers of [`Phase::Duplex`] (empty otherwise).
    dev_out: &'a [DeviceBuffer<f32>],
    iters: u32,
}

impl Pipeline for Chunks<'_> {
    fn program(&self) -> &'static Program {
        self.st.program
    }

    fn stream_options(&self) -> std::borrow::Cow<'static, [StreamOptions]> {
        std::borrow::Cow::Owned(vec![
            StreamOptions::default();
            self.st.program.streams.len()
        ])
    }

    fn issue<I: Issuer + ?Sized>(&self, issuer: &mut I) -> std::result::Result<(), Error> {
        let s = &self.st.program.statements;
        let n = self.dev.first().map_or(0, |d| d.len()) as u32;
        let config = LaunchConfig {
            grid: n.div_ceil(WORK_BLOCK).into(),
            block: WORK_BLOCK.into(),
            shared_mem_bytes: 0,
        };
        let (h2d, kernel, d2h) = match self.phase {
            Phase::All => (true, true, true),
            Phase::H2d => (true, false, false),
            Phase::Kernel => (false, true, false),
            Phase::D2h => (false, false, true),
            Phase::Duplex => (true, false, true),
        };
        let all = self.phase == Phase::All;
        for (c, input) in self.ins.iter().enumerate().take(self.outs.len()) {
            let b = c % self.dev.len();
            let ids = &self.st.per_buffer[b];
            let dev = &self.dev[b];
            if h2d {
                if all {
                    issuer.wait(&s[ids[0]])?;
                }
                let into = place(&self.dev).index(b);
                copy_with(issuer, &s[ids[1]], into, input, CopySource::copy_source_of)?;
                if all {
                    issuer.record(&s[ids[2]])?;
                }
            }
            if kernel {
                if all {
                    issuer.wait(&s[ids[3]])?;
                }
                issuer.launch(
                    &s[ids[4]],
                    self.work,
                    config,
                    &[
                        arg_place(place(&self.dev).index(b))?,
                        KernelArg::value(&n),
                        KernelArg::value(&self.iters),
                    ],
                )?;
                if all {
                    issuer.record(&s[ids[5]])?;
                }
            }
            if d2h {
                if all {
                    issuer.wait(&s[ids[6]])?;
                }
                let from = if self.phase == Phase::Duplex {
                    self.dev_out.get(b).ok_or(Error::InvalidArgument(
                        "W9: the duplex bound has no buffers of its own".into(),
                    ))?
                } else {
                    dev
                };
                let into = place(&self.outs).index(c);
                copy_with(issuer, &s[ids[7]], into, from, CopySource::copy_source_of)?;
                if all {
                    issuer.record(&s[ids[8]])?;
                }
            }
        }
        Ok(())
    }
}

struct SgW9 {
    p: Overlap,
    origin: Stream,
    raw: sys::CUstream,
    eager: Eager,
    /// One issuer per bound: an issuer keeps its streams and events while it runs one program
    /// and makes new ones for another, which would happen inside the timed regions if the
    /// pipeline and the bounds shared one.
    bound_eagers: [Eager; 4],
    exec: GraphExec<Chunks<'static>>,
    /// H2D, kernel, D2H, duplex.
    bounds: [Chunks<'static>; 4],
    start: Event,
    end: Event,
}

/// W9 through streamgraph: a hand-written [`Pipeline`] (the chunk count is a run-time size)
/// run by `Eager` and captured once by `Capture`; the bounds are pipelines of one step each on
/// one stream (the duplex bound: two steps on two streams), each run eagerly by an issuer of
/// its own. Buffers live as long as the process.
pub fn streamgraph<'g>(
    _gpu: &'g Gpu,
    p: &Overlap,
    work: &'static Kernel,
) -> Result<Box<dyn Case + 'g>> {
    p.check()?;
    let device = Device::new(Some(0))?;
    let origin = Stream::new(&device, 0)?;
    let f = p.floats();
    let leak = |v| -> &'static Statements { Box::leak(Box::new(v)) };
    let mut sets = Vec::new();
    // One set of buffers for the whole pipeline and one for each bound, so that no two
    // pipelines borrow the same buffer mutably.
    for phase in [
        Phase::All,
        Phase::H2d,
        Phase::Kernel,
        Phase::D2h,
        Phase::Duplex,
    ] {
        let ins = (0..p.chunks())
            .map(|c| {
                let data: Vec<f32> = (0..f).map(|i| input(c, i)).collect();
                PinnedBuffer::from_slice(&device, &data)
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let outs = (0..p.chunks())
            .map(|_| PinnedBuffer::<f32>::zeros(&device, f))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let dev = (0..p.buffers)
            .map(|_| DeviceBuffer::<f32>::zeros(&device, f))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let ins: &'static [PinnedBuffer<f32>] = Box::leak(ins.into_boxed_slice());
        let outs: &'static mut [PinnedBuffer<f32>] = Box::leak(outs.into_boxed_slice());
        let dev: &'static mut [DeviceBuffer<f32>] = Box::leak(dev.into_boxed_slice());
        let dev_out = if phase == Phase::Duplex {
            (0..p.buffers)
                .map(|_| DeviceBuffer::<f32>::zeros(&device, f))
                .collect::<std::result::Result<Vec<_>, _>>()?
        } else {
            Vec::new()
        };
        let dev_out: &'static [DeviceBuffer<f32>] = Box::leak(dev_out.into_boxed_slice());
        sets.push(Chunks {
            st: leak(statements(p.buffers, phase)),
            phase,
            work,
            ins,
            outs,
            dev,
            dev_out,
            iters: p.iters,
        });
    }
    let mut sets = sets.into_iter();
    let (Some(all), Some(h2d), Some(kernel), Some(d2h), Some(duplex)) = (
        sets.next(),
        sets.next(),
        sets.next(),
        sets.next(),
        sets.next(),
    ) else {
        return Err(BenchError::Setup("W9: pipelines missing".into()));
    };
    let graph = Capture::new(&origin).check(false).capture(all)?;
    graph.verify()?;
    let exec = graph.instantiate()?;
    let issuer = || {
        let mut eager = Eager::new(&origin);
        eager.check(false);
        eager
    };
    let eager = issuer();
    let bound_eagers = [issuer(), issuer(), issuer(), issuer()];
    let raw = origin.as_cudarc().cu_stream();
    Ok(Box::new(SgW9 {
        p: *p,
        origin,
        raw,
        eager,
        bound_eagers,
        exec,
        bounds: [h2d, kernel, d2h, duplex],
        start: Event::timing()?,
        end: Event::timing()?,
    }))
}

impl SgW9 {
    fn timed(&mut self, which: Option<usize>) -> Result<f64> {
        self.start.record_on(self.raw)?;
        match which {
            None => self.exec.launch(&self.origin)?,
            Some(i) if i < 4 => self.bound_eagers[i].run(&self.bounds[i])?,
            Some(_) => self.eager.run(self.exec.pipeline())?,
        }
        self.end.record_on(self.raw)?;
        Ok(self.start.elapsed_ms(&self.end)? * 1e3)
    }

    fn verify(&self) -> Result<()> {
        let f = self.p.floats();
        for (c, out) in self.exec.pipeline().outs.iter().enumerate() {
            let got = out.to_vec()?;
            for i in [0, f / 2, f - 1] {
                if !close(got[i], input(c, i), self.p.iters) {
                    return Err(BenchError::Check(format!(
                        "chunk {c} element {i}: {}, expected {}",
                        got[i],
                        expected(input(c, i), self.p.iters)
                    )));
                }
            }
        }
        Ok(())
    }
}

impl Case for SgW9 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let eager = self.timed(Some(4))?;
        self.origin.synchronize()?;
        self.verify()?;
        let replay = self.timed(None)?;
        self.origin.synchronize()?;
        self.verify()?;
        let h2d = self.timed(Some(0))?;
        let kernel = self.timed(Some(1))?;
        let d2h = self.timed(Some(2))?;
        let duplex = self.timed(Some(3))?;
        self.origin.synchronize()?;
        Ok(metrics(eager, replay, h2d, kernel, d2h, duplex))
    }
}
