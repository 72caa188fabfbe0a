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
use crate::workloads::{Chain, Diamond, Eager1, Fanout, Replays, Update, W5_STEPS};

type Result<T> = std::result::Result<T, BenchError>;

/// Microseconds since `t0`.
fn us_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e6
}

/// `empty<<<1, 1, 0, stream>>>()`.
#[inline(always)]
fn launch_empty(gpu: &Gpu, stream: &Stream) -> Result<()> {
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
    // SAFETY: event and stream are alive (borrowed) and belong to the current context.
    check(
        unsafe { sys::cuEventRecord(event.0, stream.0) },
        "cuEventRecord",
    )
}

#[inline(always)]
fn wait(stream: &Stream, event: &Event) -> Result<()> {
    // SAFETY: event and stream are alive (borrowed); flags 0 is the only defined value.
    check(
        unsafe { sys::cuStreamWaitEvent(stream.0, event.0, 0) },
        "cuStreamWaitEvent",
    )
}

/// Captures what `issue` puts on `origin` (and on streams that join it through events) into a
/// graph. The capture is ended even when `issue` fails, so the stream stays usable.
fn capture(origin: &Stream, issue: impl FnOnce() -> Result<()>) -> Result<Graph> {
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

fn issue_chain(gpu: &Gpu, stream: &Stream, nodes: usize) -> Result<()> {
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
struct DiamondStreams {
    p: Diamond,
    streams: Vec<Stream>,
    fork: Event,
    joins: Vec<Event>,
}

impl DiamondStreams {
    fn new(p: &Diamond) -> Result<DiamondStreams> {
        Ok(DiamondStreams {
            p: *p,
            streams: streams(p.branches)?,
            fork: Event::edge()?,
            joins: edges(p.branches)?,
        })
    }

    fn origin(&self) -> &Stream {
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
        let (origin, sides) = (&self.streams[0], &self.streams[1..]);
        for layer in 0..self.p.layers {
            if layer > 0 {
                for join in &self.joins[1..] {
                    wait(origin, join)?;
                }
            }
            launch_empty(gpu, origin)?;
            record(&self.fork, origin)?;
            for s in sides {
                wait(s, &self.fork)?;
            }
            launch_empty(gpu, origin)?;
            for s in sides {
                launch_empty(gpu, s)?;
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
    }))
}

impl Case for W5<'_> {
    fn sample(&mut self) -> Result<Vec<f64>> {
        let n = self.p.nodes as f64;
        self.iteration = self.iteration.wrapping_add(1);
        let base = self.iteration.wrapping_mul(2 * self.p.nodes as u32);

        // Whole-graph update: capture with other values, update the executable in place.
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
        let exec_update = us_since(t0);
        drop(fresh);

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
            let params = sys::CUDA_KERNEL_NODE_PARAMS_v2 {
                func: self.gpu.stamp,
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
                unsafe { sys::cuGraphExecKernelNodeSetParams_v2(self.exec.0, *node, &params) },
                "cuGraphExecKernelNodeSetParams_v2",
            )?;
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
        Ok(vec![
            set_params / n,
            replay_dev / n,
            0.0,
            exec_update / n,
            reinstantiate / n,
            partial[0],
            partial[1],
            partial[2],
        ])
    }
}

impl W5<'_> {
    /// `cuGraphExecKernelNodeSetParams_v2` of a `stamp` node with `ptrs`.
    fn set_stamp(&self, node: sys::CUgraphNode, ptrs: &mut [*mut c_void; 2]) -> Result<()> {
        let params = sys::CUDA_KERNEL_NODE_PARAMS_v2 {
            func: self.gpu.stamp,
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
            unsafe { sys::cuGraphExecKernelNodeSetParams_v2(self.exec.0, node, &params) },
            "cuGraphExecKernelNodeSetParams_v2",
        )
    }
}
