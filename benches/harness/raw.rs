//! The hand-written baseline: every workload issued with `cudarc::driver::sys` calls and nothing
//! else in the timed regions — what a careful engineer writes against the driver by hand.
//!
//! Streams are non-blocking, dependency events are created with `CU_EVENT_DISABLE_TIMING`,
//! captures use `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`, graphs are instantiated with no flags.
//! Every driver status is checked; every sample ends with a synchronisation, which also reports
//! errors of the kernels themselves.

use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::ptr;
use std::time::Instant;

use cudarc::driver::sys;

use crate::gpu::{check, edges, streams, BenchError, DeviceWord, Event, Exec, Gpu, Graph, Stream};
use crate::kernels::{BLOCK, GRID};
use crate::runner::Case;
use crate::workloads::{Chain, Diamond, Eager1, Fanout, Loop, Replays, Update, W5_STEPS};

type Result<T> = std::result::Result<T, BenchError>;

/// Microseconds since `t0`.
fn us_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e6
}

/// `empty<<<1, 1, 0, stream>>>()`.
#[inline(always)]
pub(crate) fn launch_empty(gpu: &Gpu, stream: &Stream) -> Result<()> {
    // SAFETY: `empty` takes no parameters, so null parameter and extra arrays are valid; the
    // function and the stream are alive for as long as `gpu` and `stream` are borrowed.
    let r = unsafe {
        sys::cuLaunchKernel(
            gpu.empty,
            GRID,
            1,
            1,
            BLOCK,
            1,
            1,
            0,
            stream.0,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    check(r, "cuLaunchKernel")
}

/// Arguments of `stamp(unsigned int *slot, unsigned int value)`, in one place so that the
/// pointer array handed to the driver points at live, non-aliased storage.
#[repr(C)]
struct StampArgs {
    slot: sys::CUdeviceptr,
    value: u32,
}

impl StampArgs {
    fn pointers(&mut self) -> [*mut c_void; 2] {
        [
            ptr::addr_of_mut!(self.slot).cast(),
            ptr::addr_of_mut!(self.value).cast(),
        ]
    }
}

/// `stamp<<<1, 1, 0, stream>>>(args.slot, args.value)`.
#[inline(always)]
fn launch_stamp(gpu: &Gpu, stream: &Stream, args: &mut StampArgs) -> Result<()> {
    let mut ptrs = args.pointers();
    // SAFETY: `ptrs` holds one pointer per parameter of `stamp`, to values of the parameter
    // types (a device pointer and an unsigned int) that outlive the call; the driver copies them.
    let r = unsafe {
        sys::cuLaunchKernel(
            gpu.stamp,
            GRID,
            1,
            1,
            BLOCK,
            1,
            1,
            0,
            stream.0,
            ptrs.as_mut_ptr(),
            ptr::null_mut(),
        )
    };
    check(r, "cuLaunchKernel")
}

#[inline(always)]
fn record(event: &Event, stream: &Stream) -> Result<()> {
    check(
        // SAFETY: event and stream are alive (borrowed) and belong to the current context.
        unsafe { sys::cuEventRecord(event.0, stream.0) },
        "cuEventRecord",
    )
}

#[inline(always)]
fn wait(stream: &Stream, event: &Event) -> Result<()> {
    check(
        // SAFETY: event and stream are alive (borrowed); flags 0 is the only defined value.
        unsafe { sys::cuStreamWaitEvent(stream.0, event.0, 0) },
        "cuStreamWaitEvent",
    )
}

/// Captures what `issue` puts on `origin` (and on streams that join it through events) into a
/// graph. The capture is ended even when `issue` fails, so the stream stays usable.
pub(crate) fn capture(origin: &Stream, issue: impl FnOnce() -> Result<()>) -> Result<Graph> {
    let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    check(
        // SAFETY: the stream is alive and not capturing.
        unsafe { sys::cuStreamBeginCapture_v2(origin.0, mode) },
        "cuStreamBeginCapture_v2",
    )?;
    let issued = issue();
    let mut graph = ptr::null_mut();
    // SAFETY: the stream is capturing; writes the graph handle through a valid pointer.
    let ended = check(
        unsafe { sys::cuStreamEndCapture(origin.0, &mut graph) },
        "cuStreamEndCapture",
    );
    let graph = Graph(graph);
    issued?;
    ended?;
    Ok(graph)
}

/// Replays `exec` once on `stream` between two timing events: (device µs, host µs to launch).
fn timed_replay(exec: &Exec, stream: &Stream, start: &Event, end: &Event) -> Result<(f64, f64)> {
    record(start, stream)?;
    let t0 = Instant::now();
    check(
        // SAFETY: executable graph and stream are alive (borrowed).
        unsafe { sys::cuGraphLaunch(exec.0, stream.0) },
        "cuGraphLaunch",
    )?;
    let host = us_since(t0);
    record(end, stream)?;
    let device = start.elapsed_ms(end)? * 1e3;
    Ok((device, host))
}

// ---------------------------------------------------------------------------------------------
// W1: eager launches on one stream.

struct W1<'g> {
    gpu: &'g Gpu,
    p: Eager1,
    stream: Stream,
    start: Event,
    end: Event,
}

/// W1: `p.kernels` launches of `empty` on one stream, no events between them.
pub fn w1<'g>(gpu: &'g Gpu, p: &Eager1) -> Result<Box<dyn Case + 'g>> {
    Ok(Box::new(W1 {
        gpu,
        p: *p,
        stream: Stream::new()?,
        start: Event::timing()?,
        end: Event::timing()?,
    }))
}

impl Case for W1<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let n = self.p.kernels;
        record(&self.start, &self.stream)?;
        let t0 = Instant::now();
        for _ in 0..n {
            launch_empty(self.gpu, &self.stream)?;
        }
        let host = us_since(t0);
        record(&self.end, &self.stream)?;
        let device = self.start.elapsed_ms(&self.end)? * 1e3;
        self.stream.synchronize()?;
        Ok(vec![host / n as f64, device / n as f64, 0.0])
    }
}

// ---------------------------------------------------------------------------------------------
// W2 and W7: chains of `empty` on one stream.

pub(crate) fn issue_chain(gpu: &Gpu, stream: &Stream, nodes: usize) -> Result<()> {
    for _ in 0..nodes {
        launch_empty(gpu, stream)?;
    }
    Ok(())
}

struct W2<'g> {
    gpu: &'g Gpu,
    p: Chain,
    stream: Stream,
    exec: Exec,
    _graph: Graph,
    start: Event,
    end: Event,
}

/// W2: a chain of `p.nodes` launches captured once; each sample replays it and also runs it
/// eagerly, both between timing events.
pub fn w2<'g>(gpu: &'g Gpu, p: &Chain) -> Result<Box<dyn Case + 'g>> {
    let stream = Stream::new()?;
    let graph = capture(&stream, || issue_chain(gpu, &stream, p.nodes))?;
    let exec = graph.instantiate()?;
    Ok(Box::new(W2 {
        gpu,
        p: *p,
        stream,
        exec,
        _graph: graph,
        start: Event::timing()?,
        end: Event::timing()?,
    }))
}

impl Case for W2<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let n = self.p.nodes as f64;
        let (replay_dev, replay_host) =
            timed_replay(&self.exec, &self.stream, &self.start, &self.end)?;
        record(&self.start, &self.stream)?;
        let t0 = Instant::now();
        issue_chain(self.gpu, &self.stream, self.p.nodes)?;
        let eager_host = us_since(t0);
        record(&self.end, &self.stream)?;
        let eager_dev = self.start.elapsed_ms(&self.end)? * 1e3;
        self.stream.synchronize()?;
        Ok(vec![
            replay_dev / n,
            replay_host,
            eager_dev / n,
            eager_host / n,
        ])
    }
}

struct W7<'g> {
    gpu: &'g Gpu,
    p: Chain,
    stream: Stream,
}

/// W7: captures a chain of `p.nodes` launches and instantiates it, every sample anew.
pub fn w7<'g>(gpu: &'g Gpu, p: &Chain) -> Result<Box<dyn Case + 'g>> {
    Ok(Box::new(W7 {
        gpu,
        p: *p,
        stream: Stream::new()?,
    }))
}

impl Case for W7<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let t0 = Instant::now();
        let graph = capture(&self.stream, || {
            issue_chain(self.gpu, &self.stream, self.p.nodes)
        })?;
        let cap = us_since(t0);
        let t1 = Instant::now();
        let exec = graph.instantiate()?;
        let inst = us_since(t1);
        drop(exec);
        drop(graph);
        let total = cap + inst;
        Ok(vec![cap, inst, total, total / self.p.nodes as f64])
    }
}

// ---------------------------------------------------------------------------------------------
// W3 and W6: the diamond.

/// Streams and events of the diamond: `streams[0]` is the origin and runs branch 0 of every
/// fan-out; `joins[b]` (b ≥ 1) is recorded after branch b.
pub(crate) struct DiamondStreams {
    p: Diamond,
    streams: Vec<Stream>,
    fork: Event,
    joins: Vec<Event>,
}

impl DiamondStreams {
    pub(crate) fn new(p: &Diamond) -> Result<DiamondStreams> {
        Ok(DiamondStreams {
            p: *p,
            streams: streams(p.branches)?,
            fork: Event::edge()?,
            joins: edges(p.branches)?,
        })
    }

    pub(crate) fn origin(&self) -> &Stream {
        &self.streams[0]
    }

    /// Record and wait calls one [`issue`](Self::issue) makes.
    fn event_calls(&self) -> usize {
        let sides = self.p.branches - 1;
        self.p.layers * (1 + sides + sides + sides)
    }

    /// Each layer: `empty` on the origin, fork, `empty` on every branch, and the next layer's
    /// origin kernel (or the end) joins every branch.
    fn issue(&self, gpu: &Gpu) -> Result<()> {
        self.issue_with(|s| launch_empty(gpu, s))
    }

    /// [`issue`](Self::issue) with `launch` for every kernel (W12: `spin`).
    pub(crate) fn issue_with(&self, launch: impl Fn(&Stream) -> Result<()>) -> Result<()> {
        let (origin, sides) = (&self.streams[0], &self.streams[1..]);
        for layer in 0..self.p.layers {
            if layer > 0 {
                for join in &self.joins[1..] {
                    wait(origin, join)?;
                }
            }
            launch(origin)?;
            record(&self.fork, origin)?;
            for s in sides {
                wait(s, &self.fork)?;
            }
            launch(origin)?;
            for s in sides {
                launch(s)?;
            }
            for (s, join) in sides.iter().zip(&self.joins[1..]) {
                record(join, s)?;
            }
        }
        for join in &self.joins[1..] {
            wait(origin, join)?;
        }
        Ok(())
    }

    fn capture(&self, gpu: &Gpu) -> Result<Graph> {
        capture(self.origin(), || self.issue(gpu))
    }
}

struct W3<'g> {
    gpu: &'g Gpu,
    d: DiamondStreams,
    exec: Exec,
    _graph: Graph,
    start: Event,
    end: Event,
}

/// W3: the diamond captured once; each sample replays it, runs it eagerly, and captures and
/// instantiates it anew.
pub fn w3<'g>(gpu: &'g Gpu, p: &Diamond) -> Result<Box<dyn Case + 'g>> {
    let d = DiamondStreams::new(p)?;
    let graph = d.capture(gpu)?;
    let exec = graph.instantiate()?;
    Ok(Box::new(W3 {
        gpu,
        d,
        exec,
        _graph: graph,
        start: Event::timing()?,
        end: Event::timing()?,
    }))
}

impl Case for W3<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let nodes = self.d.p.kernels() as f64;
        let origin = self.d.origin();
        let (replay_dev, replay_host) = timed_replay(&self.exec, origin, &self.start, &self.end)?;

        record(&self.start, origin)?;
        let t0 = Instant::now();
        self.d.issue(self.gpu)?;
        let eager_host = us_since(t0);
        record(&self.end, origin)?;
        let eager_dev = self.start.elapsed_ms(&self.end)? * 1e3;
        origin.synchronize()?;

        let t0 = Instant::now();
        let graph = self.d.capture(self.gpu)?;
        let cap = us_since(t0);
        let t1 = Instant::now();
        let exec = graph.instantiate()?;
        let inst = us_since(t1);
        drop(exec);
        drop(graph);
        Ok(vec![
            replay_dev / nodes,
            replay_dev,
            replay_host,
            eager_dev,
            eager_host,
            self.d.event_calls() as f64,
            cap,
            inst,
            cap + inst,
        ])
    }
}

struct W6<'g> {
    gpu: &'g Gpu,
    p: Replays,
    d: DiamondStreams,
    exec: Exec,
    _graph: Graph,
    events: [Event; 4],
}

/// W6: the diamond replayed `p.replays` times with no synchronisation in between. The GPU's
/// busy time is `p.replays` × the replay time measured back to back behind a `spin` gate
/// (which lets the host queue `p.gated` replays before any runs); idle is the rest of the wall
/// time from the first launch to the end of the last replay.
pub fn w6<'g>(gpu: &'g Gpu, p: &Replays) -> Result<Box<dyn Case + 'g>> {
    let d = DiamondStreams::new(&p.diamond)?;
    let graph = d.capture(gpu)?;
    let exec = graph.instantiate()?;
    let events = [
        Event::timing()?,
        Event::timing()?,
        Event::timing()?,
        Event::timing()?,
    ];
    Ok(Box::new(W6 {
        gpu,
        p: *p,
        d,
        exec,
        _graph: graph,
        events,
    }))
}

impl W6<'_> {
    /// Device µs per replay when replays run back to back with no host gaps.
    fn saturated_replay(&self) -> Result<f64> {
        let origin = self.d.origin();
        let [a, b, _, _] = &self.events;
        let mut ns: u64 = self.p.gate_ns;
        let mut ptrs: [*mut c_void; 1] = [ptr::addr_of_mut!(ns).cast()];
        // SAFETY: `spin` takes one unsigned long long; `ptrs` points at a live u64 for the call.
        let r = unsafe {
            sys::cuLaunchKernel(
                self.gpu.spin,
                GRID,
                1,
                1,
                BLOCK,
                1,
                1,
                0,
                origin.0,
                ptrs.as_mut_ptr(),
                ptr::null_mut(),
            )
        };
        check(r, "cuLaunchKernel")?;
        record(a, origin)?;
        let t0 = Instant::now();
        for _ in 0..self.p.gated {
            self.exec.launch(origin)?;
        }
        let queued = us_since(t0);
        record(b, origin)?;
        let device = a.elapsed_ms(b)? * 1e3;
        if queued * 1e3 > 0.8 * self.p.gate_ns as f64 {
            return Err(BenchError::Check(format!(
                "queueing {} replays took {queued:.0} µs, close to the {} µs gate: raise gate_ns",
                self.p.gated,
                self.p.gate_ns / 1000
            )));
        }
        Ok(device / self.p.gated as f64)
    }
}

impl Case for W6<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let saturated = self.saturated_replay()?;
        let origin = self.d.origin();
        let [_, _, start, end] = &self.events;
        let n = self.p.replays as f64;
        let t0 = Instant::now();
        record(start, origin)?;
        for _ in 0..self.p.replays {
            check(
                // SAFETY: executable graph and stream are alive (borrowed).
                unsafe { sys::cuGraphLaunch(self.exec.0, origin.0) },
                "cuGraphLaunch",
            )?;
        }
        record(end, origin)?;
        check(
            // SAFETY: the event is alive and recorded.
            unsafe { sys::cuEventSynchronize(end.0) },
            "cuEventSynchronize",
        )?;
        let wall = us_since(t0);
        let device = start.elapsed_ms(end)? * 1e3;
        let idle = (1.0 - n * saturated / wall).max(0.0) * 100.0;
        Ok(vec![idle, wall / n, saturated, device / n])
    }
}

// ---------------------------------------------------------------------------------------------
// W4: independent kernels over several streams.

struct W4 {
    p: Fanout,
    streams: Vec<Stream>,
    exec: Exec,
    _graph: Graph,
    start: Event,
    end: Event,
}

/// W4: `p.kernels` launches of `empty` round-robin over `p.width` streams (the origin is the
/// first), forked from and joined to the origin, captured once; samples replay it.
pub fn w4<'g>(gpu: &'g Gpu, p: &Fanout) -> Result<Box<dyn Case + 'g>> {
    let streams = streams(p.width)?;
    let fork = Event::edge()?;
    let joins = edges(p.width)?;
    let (origin, sides) = (&streams[0], &streams[1..]);
    let graph = capture(origin, || {
        record(&fork, origin)?;
        for s in sides {
            wait(s, &fork)?;
        }
        for k in 0..p.kernels {
            launch_empty(gpu, &streams[k % p.width])?;
        }
        for (s, join) in sides.iter().zip(&joins[1..]) {
            record(join, s)?;
            wait(origin, join)?;
        }
        Ok(())
    })?;
    let exec = graph.instantiate()?;
    Ok(Box::new(W4 {
        p: *p,
        streams,
        exec,
        _graph: graph,
        start: Event::timing()?,
        end: Event::timing()?,
    }))
}

impl Case for W4 {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let (device, host) = timed_replay(&self.exec, &self.streams[0], &self.start, &self.end)?;
        Ok(vec![device / self.p.kernels as f64, host])
    }
}

// ---------------------------------------------------------------------------------------------
// W5: new kernel arguments every iteration.

struct W5<'g> {
    gpu: &'g Gpu,
    p: Update,
    stream: Stream,
    slot: DeviceWord,
    nodes: Vec<sys::CUgraphNode>,
    exec: Exec,
    _graph: Graph,
    start: Event,
    end: Event,
    iteration: u32,
    /// The keyed partial update's chain: a graph, slot and nodes of its own, as streamgraph's
    /// `Keyed` has, its first 1 % set at the same point of the sample.
    keyed: Exec,
    _keyed_graph: Graph,
    keyed_slot: DeviceWord,
    keyed_nodes: Vec<sys::CUgraphNode>,
}

/// Captures a chain of `nodes` `stamp` launches writing `base + i`; also returns the node of
/// each launch (from `cuStreamGetCaptureInfo_v3`) when `track` is set.
fn capture_stamps(
    gpu: &Gpu,
    stream: &Stream,
    slot: &DeviceWord,
    nodes: usize,
    base: u32,
    track: bool,
) -> Result<(Graph, Vec<sys::CUgraphNode>)> {
    let mut handles = Vec::with_capacity(if track { nodes } else { 0 });
    let graph = capture(stream, || {
        let mut args = StampArgs {
            slot: slot.0,
            value: 0,
        };
        for i in 0..nodes {
            args.value = base.wrapping_add(i as u32);
            launch_stamp(gpu, stream, &mut args)?;
            if track {
                let mut status = MaybeUninit::uninit();
                let mut deps: *const sys::CUgraphNode = ptr::null();
                let mut edge_data: *const sys::CUgraphEdgeData = ptr::null();
                let mut count = 0usize;
                check(
                    // SAFETY: the stream is capturing; every out-pointer is valid; the id and graph
                    // outputs are optional and passed as null.
                    unsafe {
                        sys::cuStreamGetCaptureInfo_v3(
                            stream.0,
                            status.as_mut_ptr(),
                            ptr::null_mut(),
                            ptr::null_mut(),
                            &mut deps,
                            &mut edge_data,
                            &mut count,
                        )
                    },
                    "cuStreamGetCaptureInfo_v3",
                )?;
                if count != 1 || deps.is_null() {
                    return Err(BenchError::Check(format!(
                        "launch {i} left {count} capture dependencies, not 1"
                    )));
                }
                // SAFETY: the driver returned an array of `count` (= 1) nodes, valid until the
                // next call on this stream.
                handles.push(unsafe { *deps });
            }
        }
        Ok(())
    })?;
    Ok((graph, handles))
}

/// W5: W2's chain shape with `stamp` kernels; every sample gives all nodes new arguments three
/// ways: through `cuGraphExecKernelNodeSetParams_v2` on the instantiated graph (then replays it
/// and checks the value the last node stored), by capturing anew and `cuGraphExecUpdate_v2`,
/// and by capturing anew and instantiating again.
pub fn w5<'g>(gpu: &'g Gpu, p: &Update) -> Result<Box<dyn Case + 'g>> {
    let stream = Stream::new()?;
    let slot = DeviceWord::new()?;
    let (graph, nodes) = capture_stamps(gpu, &stream, &slot, p.nodes, 0, true)?;
    let exec = graph.instantiate()?;
    let keyed_slot = DeviceWord::new()?;
    let (keyed_graph, keyed_nodes) = capture_stamps(gpu, &stream, &keyed_slot, p.nodes, 0, true)?;
    let keyed = keyed_graph.instantiate()?;
    Ok(Box::new(W5 {
        gpu,
        p: *p,
        stream,
        slot,
        nodes,
        exec,
        _graph: graph,
        start: Event::timing()?,
        end: Event::timing()?,
        iteration: 0,
        keyed,
        _keyed_graph: keyed_graph,
        keyed_slot,
        keyed_nodes,
    }))
}

impl Case for W5<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let n = self.p.nodes as f64;
        self.iteration = self.iteration.wrapping_add(1);
        let base = self.iteration.wrapping_mul(2 * self.p.nodes as u32);

        // Whole-graph update: capture with other values, update the executable in place, and
        // destroy the captured graph, as a loop that updates every iteration must (streamgraph
        // destroys the previous update's graph in its update).
        let t0 = Instant::now();
        let (fresh, _) = capture_stamps(
            self.gpu,
            &self.stream,
            &self.slot,
            self.p.nodes,
            base,
            false,
        )?;
        let mut info = MaybeUninit::<sys::CUgraphExecUpdateResultInfo>::uninit();
        check(
            // SAFETY: both graphs are alive; `info` is a valid out-pointer the driver fills.
            unsafe { sys::cuGraphExecUpdate_v2(self.exec.0, fresh.0, info.as_mut_ptr()) },
            "cuGraphExecUpdate_v2",
        )?;
        drop(fresh);
        let exec_update = us_since(t0);

        // Re-instantiation: capture with other values, instantiate a new executable.
        let t0 = Instant::now();
        let (fresh, _) = capture_stamps(
            self.gpu,
            &self.stream,
            &self.slot,
            self.p.nodes,
            base,
            false,
        )?;
        let exec = fresh.instantiate()?;
        let reinstantiate = us_since(t0);
        drop(exec);
        drop(fresh);

        // Kernel-node fast path: new arguments for every node of the instantiated graph.
        let base = base.wrapping_add(self.p.nodes as u32);
        let mut args = StampArgs {
            slot: self.slot.0,
            value: 0,
        };
        let t0 = Instant::now();
        for (i, node) in self.nodes.iter().enumerate() {
            args.value = base.wrapping_add(i as u32);
            let mut ptrs = args.pointers();
            set_stamp(self.gpu, &self.exec, *node, &mut ptrs)?;
        }
        let set_params = us_since(t0);
        let (replay_dev, _) = timed_replay(&self.exec, &self.stream, &self.start, &self.end)?;
        self.stream.synchronize()?;
        let expected = base.wrapping_add(self.p.nodes as u32 - 1);
        let got = self.slot.read()?;
        if got != expected {
            return Err(BenchError::Check(format!(
                "last node stored {got}, expected {expected}"
            )));
        }

        // Partial updates: new values for 1 %, 10 %, 100 % of the nodes, only those set
        // (the caller knows which changed: the floor an argument update can reach).
        let mut partial = [0.0; 3];
        for (k, step) in W5_STEPS.into_iter().enumerate() {
            let t0 = Instant::now();
            for i in (0..self.nodes.len()).step_by(step) {
                args.value = base.wrapping_add(i as u32).wrapping_add(1 + k as u32);
                let mut ptrs = args.pointers();
                self.set_stamp(self.nodes[i], &mut ptrs)?;
            }
            partial[k] = us_since(t0);
        }
        let base = base.wrapping_add(W5_STEPS.len() as u32);
        timed_replay(&self.exec, &self.stream, &self.start, &self.end)?;
        self.stream.synchronize()?;
        let expected = base.wrapping_add(self.p.nodes as u32 - 1);
        let got = self.slot.read()?;
        if got != expected {
            return Err(BenchError::Check(format!(
                "last node stored {got}, expected {expected}"
            )));
        }

        // The keyed 1 %: the first 1 % of the nodes of another executable graph (streamgraph's
        // `Keyed` has one of its own), set at the same point of the sample as streamgraph's.
        let m = self.p.nodes.div_ceil(W5_STEPS[0]);
        let head = base.wrapping_add(7);
        let mut keyed_args = StampArgs {
            slot: self.keyed_slot.0,
            value: 0,
        };
        let t0 = Instant::now();
        for (i, node) in self.keyed_nodes.iter().take(m).enumerate() {
            keyed_args.value = head.wrapping_add(i as u32);
            let mut ptrs = keyed_args.pointers();
            set_stamp(self.gpu, &self.keyed, *node, &mut ptrs)?;
        }
        let keyed = us_since(t0);
        Ok(vec![
            set_params / n,
            replay_dev / n,
            0.0,
            exec_update / n,
            reinstantiate / n,
            partial[0],
            partial[1],
            partial[2],
            keyed,
        ])
    }
}

// ---------------------------------------------------------------------------------------------
// W8: a loop of `iterations` iterations, each 4 + 3 + 3 `empty` kernels on three streams joined
// into `countdown`.

/// The hand-written conditional node's kernel: sets the WHILE handle from `*go`.
const SET_HANDLE: &str = r#"
typedef unsigned long long handle_t;
extern "C" __device__ void cudaGraphSetConditional(handle_t handle, unsigned int value);
extern "C" __global__ void set_handle(handle_t handle, const unsigned int* go) {
    cudaGraphSetConditional(handle, *go != 0u ? 1u : 0u);
}
extern "C" __global__ void countdown_signal(unsigned int* left, unsigned int* go, handle_t handle) {
    unsigned int v = *left - 1u;
    *left = v;
    *go = v != 0u ? 1u : 0u;
    cudaGraphSetConditional(handle, v != 0u ? 1u : 0u);
}
"#;

/// Compiles [`SET_HANDLE`] to PTX (relocatable device code, then whole-program) and loads it;
/// its `set_handle` and `countdown_signal`.
fn set_handle_kernel(
    gpu: &Gpu,
) -> Result<(
    std::sync::Arc<cudarc::driver::CudaModule>,
    sys::CUfunction,
    sys::CUfunction,
)> {
    let mut why = Vec::new();
    for rdc in [true, false] {
        let opts = cudarc::nvrtc::CompileOptions {
            options: if rdc {
                vec!["--relocatable-device-code=true".into()]
            } else {
                Vec::new()
            },
            ..Default::default()
        };
        let ptx = match cudarc::nvrtc::compile_ptx_with_opts(SET_HANDLE, opts) {
            Ok(p) => p,
            Err(e) => {
                why.push(format!("{e}"));
                continue;
            }
        };
        match gpu.ctx().load_module(ptx) {
            Ok(m) => {
                let function = |name: &str| {
                    m.load_function(name)
                        .map(|f| f.cu_function())
                        .map_err(|e| BenchError::Setup(format!("{name}: {e}")))
                };
                let (set, signal) = (function("set_handle")?, function("countdown_signal")?);
                return Ok((m, set, signal));
            }
            Err(e) => why.push(format!("load: {e}")),
        }
    }
    Err(BenchError::Setup(format!(
        "the conditional-handle kernel did not build: {}",
        why.join("; ")
    )))
}

/// Adds a one-thread kernel node of `func` with `args` after `deps` to `graph`.
fn kernel_node(
    graph: sys::CUgraph,
    func: sys::CUfunction,
    args: *mut *mut c_void,
    deps: &[sys::CUgraphNode],
) -> Result<sys::CUgraphNode> {
    let params = sys::CUDA_KERNEL_NODE_PARAMS {
        func,
        gridDimX: GRID,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: BLOCK,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        kernelParams: args,
        extra: ptr::null_mut(),
        kern: ptr::null_mut(),
        ctx: ptr::null_mut(),
    };
    let mut node = ptr::null_mut();
    check(
        // SAFETY: `graph` is alive; `deps` are nodes of it; `args` is null or points at one pointer
        // per kernel parameter, to live values of the parameter types, which the driver copies now.
        unsafe {
            sys::cuGraphAddKernelNode_v2(&mut node, graph, deps.as_ptr(), deps.len(), &params)
        },
        "cuGraphAddKernelNode_v2",
    )?;
    Ok(node)
}

/// The body as explicit nodes: chains of 4, 3 and 3 `empty`, `countdown` after their ends.
/// Returns the `countdown` node.
fn body_nodes(
    gpu: &Gpu,
    graph: sys::CUgraph,
    words: &mut [sys::CUdeviceptr; 2],
) -> Result<sys::CUgraphNode> {
    let mut args: [*mut c_void; 2] = [
        ptr::addr_of_mut!(words[0]).cast(),
        ptr::addr_of_mut!(words[1]).cast(),
    ];
    body_nodes_ending(gpu, graph, gpu.countdown, args.as_mut_ptr())
}

/// The 4 + 3 + 3 `empty` kernels of W8's body on three branches, then `last` with `args` after
/// all three; returns `last`'s node.
fn body_nodes_ending(
    gpu: &Gpu,
    graph: sys::CUgraph,
    last: sys::CUfunction,
    args: *mut *mut c_void,
) -> Result<sys::CUgraphNode> {
    let mut tails = Vec::new();
    for len in [4, 3, 3] {
        let mut prev: Option<sys::CUgraphNode> = None;
        for _ in 0..len {
            let deps: Vec<_> = prev.into_iter().collect();
            prev = Some(kernel_node(graph, gpu.empty, ptr::null_mut(), &deps)?);
        }
        tails.extend(prev);
    }
    kernel_node(graph, last, args, &tails)
}

/// W8's loop graph: `stamp(left, iterations)`, then a WHILE node (its handle created with the
/// default value 1, assigned at each launch) whose body is the 4 + 3 + 3 `empty` kernels and
/// then `countdown` and `set_handle` (the handle set from `go`), or with `signal`, that kernel
/// alone (`countdown_signal`: it writes `go` and sets the handle itself).
fn w8_loop(
    gpu: &Gpu,
    words: &mut [sys::CUdeviceptr; 2],
    iterations: u32,
    set_handle: sys::CUfunction,
    signal: Option<sys::CUfunction>,
) -> Result<(Graph, Exec)> {
    let (left, go) = (words[0], words[1]);
    let mut loop_graph = ptr::null_mut();
    check(
        // SAFETY: writes a new graph's handle through a valid pointer.
        unsafe { sys::cuGraphCreate(&mut loop_graph, 0) },
        "cuGraphCreate",
    )?;
    let loop_graph = Graph(loop_graph);
    let mut stamp = StampArgs {
        slot: left,
        value: iterations,
    };
    let mut stamp_ptrs = stamp.pointers();
    let first = kernel_node(loop_graph.0, gpu.stamp, stamp_ptrs.as_mut_ptr(), &[])?;
    let mut handle: sys::CUgraphConditionalHandle = 0;
    check(
        // SAFETY: the graph is alive; the context is the current one; `handle` is a valid
        // out-pointer; default value 1, assigned at every launch.
        unsafe {
            sys::cuGraphConditionalHandleCreate(
                &mut handle,
                loop_graph.0,
                gpu.ctx().cu_ctx(),
                1,
                sys::CU_GRAPH_COND_ASSIGN_DEFAULT,
            )
        },
        "cuGraphConditionalHandleCreate",
    )?;
    // SAFETY: all-zero bytes are a valid `CUgraphNodeParams` (integers and raw pointers).
    let mut params: sys::CUgraphNodeParams = unsafe { MaybeUninit::zeroed().assume_init() };
    params.type_ = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL;
    params.__bindgen_anon_1.conditional = sys::CUDA_CONDITIONAL_NODE_PARAMS {
        handle,
        type_: sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE,
        size: 1,
        phGraph_out: ptr::null_mut(),
        ctx: gpu.ctx().cu_ctx(),
    };
    let mut node = ptr::null_mut();
    check(
        // SAFETY: the graph is alive and `first` is its node; `params` describes a WHILE node of
        // the current context; the driver writes the node and its body graph array.
        unsafe {
            sys::cuGraphAddNode_v2(&mut node, loop_graph.0, &first, ptr::null(), 1, &mut params)
        },
        "cuGraphAddNode_v2",
    )?;
    // SAFETY: the member the driver filled in; the array holds one body graph, owned by the
    // node.
    let body_of_loop = unsafe { *params.__bindgen_anon_1.conditional.phGraph_out };
    if let Some(signal) = signal {
        let (mut left_arg, mut go_arg, mut handle_arg) = (left, go, handle);
        let mut args: [*mut c_void; 3] = [
            ptr::addr_of_mut!(left_arg).cast(),
            ptr::addr_of_mut!(go_arg).cast(),
            ptr::addr_of_mut!(handle_arg).cast(),
        ];
        body_nodes_ending(gpu, body_of_loop, signal, args.as_mut_ptr())?;
    } else {
        let countdown = body_nodes(gpu, body_of_loop, words)?;
        let mut handle_arg = handle;
        let mut go_arg = go;
        let mut set_args: [*mut c_void; 2] = [
            ptr::addr_of_mut!(handle_arg).cast(),
            ptr::addr_of_mut!(go_arg).cast(),
        ];
        kernel_node(
            body_of_loop,
            set_handle,
            set_args.as_mut_ptr(),
            &[countdown],
        )?;
    }
    let exec = loop_graph.instantiate()?;
    Ok((loop_graph, exec))
}

struct W8<'g> {
    gpu: &'g Gpu,
    iterations: usize,
    streams: Vec<Stream>,
    fork: Event,
    joins: Vec<Event>,
    left: DeviceWord,
    go: DeviceWord,
    start: Event,
    end: Event,
    /// One iteration (b).
    body: Exec,
    _body_graph: Graph,
    /// The whole loop (d): `stamp(left, iterations)`, then WHILE { body, set_handle }.
    device_loop: Exec,
    _loop_graph: Graph,
    /// (e): WHILE { body ending in `countdown_signal` }, which sets the handle itself.
    signalled_loop: Exec,
    _signal_graph: Graph,
    _module: std::sync::Arc<cudarc::driver::CudaModule>,
}

/// W8 by hand: (a) the body issued eagerly on three streams with fork/join events and `go`
/// read back after each iteration, (b) the body as a graph of explicit nodes launched while
/// `go` reads back non-zero, (d) one graph with a WHILE conditional node (its handle created
/// with the default value 1, assigned at each launch) whose body is the same nodes followed by
/// a kernel that sets the handle from `go`, (e) the same loop whose `countdown` sets the handle
/// itself (the signalled loop's shape).
pub fn w8<'g>(gpu: &'g Gpu, p: &Loop) -> Result<Box<dyn Case + 'g>> {
    let iterations = u32::try_from(p.iterations)
        .map_err(|_| BenchError::Setup("W8: too many iterations for a u32".into()))?;
    let (module, set_handle, signal) = set_handle_kernel(gpu)?;
    let left = DeviceWord::new()?;
    let go = DeviceWord::new()?;

    // (b): one iteration.
    let mut body_graph = ptr::null_mut();
    check(
        // SAFETY: writes a new graph's handle through a valid pointer.
        unsafe { sys::cuGraphCreate(&mut body_graph, 0) },
        "cuGraphCreate",
    )?;
    let body_graph = Graph(body_graph);
    let mut words = [left.0, go.0];
    body_nodes(gpu, body_graph.0, &mut words)?;
    let body = body_graph.instantiate()?;

    // (d): the loop; (e): the same with `countdown_signal` setting the handle itself.
    let (loop_graph, device_loop) = w8_loop(gpu, &mut words, iterations, set_handle, None)?;
    let (signal_graph, signalled_loop) =
        w8_loop(gpu, &mut words, iterations, set_handle, Some(signal))?;
    Ok(Box::new(W8 {
        gpu,
        iterations: p.iterations,
        streams: streams(3)?,
        fork: Event::edge()?,
        joins: edges(3)?,
        left,
        go,
        start: Event::timing()?,
        end: Event::timing()?,
        body,
        _body_graph: body_graph,
        device_loop,
        _loop_graph: loop_graph,
        signalled_loop,
        _signal_graph: signal_graph,
        _module: module,
    }))
}

impl W8<'_> {
    /// `left = iterations`, `go = 1`, outside the timing.
    fn reset(&self) -> Result<()> {
        let s = &self.streams[0];
        check(
            // SAFETY: two live words; the stream is alive.
            unsafe { sys::cuMemsetD32Async(self.left.0, self.iterations as u32, 1, s.0) },
            "cuMemsetD32Async",
        )?;
        check(
            // SAFETY: as above.
            unsafe { sys::cuMemsetD32Async(self.go.0, 1, 1, s.0) },
            "cuMemsetD32Async",
        )?;
        s.synchronize()
    }

    /// `go`, read after the work queued on the origin (a copy and a synchronize).
    fn read_go(&self) -> Result<u32> {
        self.streams[0].synchronize()?;
        self.go.read()
    }

    /// One iteration issued eagerly: fork, 4 + 3 + 3 `empty`, join, `countdown`.
    fn eager_iteration(&self) -> Result<()> {
        let s = &self.streams;
        record(&self.fork, &s[0])?;
        wait(&s[1], &self.fork)?;
        wait(&s[2], &self.fork)?;
        for (i, len) in [4, 3, 3].into_iter().enumerate() {
            for _ in 0..len {
                launch_empty(self.gpu, &s[i])?;
            }
        }
        for i in 1..3 {
            record(&self.joins[i], &s[i])?;
            wait(&s[0], &self.joins[i])?;
        }
        let mut left = self.left.0;
        let mut go = self.go.0;
        let mut args: [*mut c_void; 2] =
            [ptr::addr_of_mut!(left).cast(), ptr::addr_of_mut!(go).cast()];
        check(
            // SAFETY: `countdown` takes two device pointers: `args` points at two live locals
            // holding them, which the driver copies now; the stream is alive.
            unsafe {
                sys::cuLaunchKernel(
                    self.gpu.countdown,
                    GRID,
                    1,
                    1,
                    BLOCK,
                    1,
                    1,
                    0,
                    s[0].0,
                    args.as_mut_ptr(),
                    ptr::null_mut(),
                )
            },
            "cuLaunchKernel",
        )
    }

    fn finish(&self, what: &str, ran: usize) -> Result<()> {
        if ran != self.iterations || self.left.read()? != 0 {
            return Err(BenchError::Setup(format!(
                "W8 {what} ran {ran} iterations instead of {}",
                self.iterations
            )));
        }
        Ok(())
    }
}

impl Case for W8<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let n = self.iterations as f64;
        let origin = &self.streams[0];

        self.reset()?;
        record(&self.start, origin)?;
        let t0 = Instant::now();
        let mut ran = 0;
        loop {
            self.eager_iteration()?;
            ran += 1;
            if self.read_go()? == 0 || ran > self.iterations {
                break;
            }
        }
        let eager_host = us_since(t0);
        record(&self.end, origin)?;
        let eager_dev = self.start.elapsed_ms(&self.end)? * 1e3;
        self.finish("eager loop", ran)?;

        self.reset()?;
        record(&self.start, origin)?;
        let t0 = Instant::now();
        let mut ran = 0;
        loop {
            self.body.launch(origin)?;
            ran += 1;
            if self.read_go()? == 0 || ran > self.iterations {
                break;
            }
        }
        let host_loop_host = us_since(t0);
        record(&self.end, origin)?;
        let host_loop_dev = self.start.elapsed_ms(&self.end)? * 1e3;
        self.finish("host loop", ran)?;

        let (loop_dev, loop_host) =
            timed_replay(&self.device_loop, origin, &self.start, &self.end)?;
        origin.synchronize()?;
        self.finish("device loop", self.iterations)?;
        let (signalled_dev, signalled_host) =
            timed_replay(&self.signalled_loop, origin, &self.start, &self.end)?;
        origin.synchronize()?;
        self.finish("signalled loop", self.iterations)?;
        Ok(vec![
            eager_host / n,
            eager_dev / n,
            host_loop_host / n,
            host_loop_dev / n,
            loop_host / n,
            loop_dev / n,
            signalled_host / n,
            signalled_dev / n,
        ])
    }
}

impl W5<'_> {
    /// `cuGraphExecKernelNodeSetParams_v2` of a `stamp` node with `ptrs`.
    fn set_stamp(&self, node: sys::CUgraphNode, ptrs: &mut [*mut c_void; 2]) -> Result<()> {
        set_stamp(self.gpu, &self.exec, node, ptrs)
    }
}

/// New arguments (`ptrs`, `stamp`'s two) for `node`, a `stamp` node of the graph `exec` was
/// instantiated from. In line: W5's timed loop of every node calls it.
#[inline(always)]
fn set_stamp(
    gpu: &Gpu,
    exec: &Exec,
    node: sys::CUgraphNode,
    ptrs: &mut [*mut c_void; 2],
) -> Result<()> {
    let params = sys::CUDA_KERNEL_NODE_PARAMS_v2 {
        func: gpu.stamp,
        gridDimX: GRID,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: BLOCK,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        kernelParams: ptrs.as_mut_ptr(),
        extra: ptr::null_mut(),
        kern: ptr::null_mut(),
        ctx: ptr::null_mut(),
    };
    check(
        // SAFETY: `node` is a kernel node of the graph `exec` was instantiated from; the
        // parameter pointers point at live values of `stamp`'s parameter types; the driver
        // copies them before returning.
        unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec.0, node, &params) },
        "cuGraphExecKernelNodeSetParams_v2",
    )
}
