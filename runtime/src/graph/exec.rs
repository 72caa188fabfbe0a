//! The executable form of a captured graph: [`GraphExec`] launches, replays and updates it.

use super::executable::{Executable, GraphStats};
use super::{OpRef, VerifyReport};
use crate::error::Result;
use crate::ffi::graph_exec::GraphExecHandle;
use crate::ffi::KernelArg;
use crate::issue::Pipeline;
use crate::module::Kernel;
use crate::stream::Stream;

/// An instantiated graph, ready to launch on any stream of its device; owns the pipeline
/// value (see [`Graph`](super::Graph)). `Send` when `P` is, never `Sync`.
///
/// It keeps everything its launches touch — memory, kernels' modules, host functions — until
/// they have finished, whatever happens to the pipeline value: dropping it waits for the
/// streams it was launched on where a launch may still run. It holds those streams (dropping
/// a `Stream` it ran on keeps that stream alive until then), and lets go of the streams whose
/// work has finished as it is launched on new ones.
///
/// ```no_run
/// use streamgraph::{capture, pipeline, DeviceBuffer, Kernel, Module, Stream};
///
/// pipeline! {
///     /// Multiplies the first `n` elements of `x` by `by`.
///     pub pipeline Scale(x: &mut DeviceBuffer<f32>, k: &Kernel, by: f32, n: u32) {
///         stream main;
///         main: launch k<<<n.div_ceil(256), 256>>>(&mut x, by, n);
///     }
/// }
///
/// let stream = Stream::on(None, 0)?;
/// let module = Module::from_cuda_source(&stream.device(), "scale", r#"
///     extern "C" __global__ void scale(float* x, float by, unsigned n) {
///         unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
///         if (i < n) x[i] *= by;
///     }"#)?;
/// // SAFETY: `Scale` launches it with (float*, float, unsigned).
/// let k = unsafe { module.kernel("scale")? };
/// let mut x = DeviceBuffer::from_host(&stream.device(), &[1.0f32; 1000])?;
///
/// let mut exec = capture(&stream, Scale::new(&mut x, &k, 2.0, 1000))?.instantiate()?;
/// exec.replay(&stream, 3)?; // three launches of the whole graph: x = 8
/// // The graph holds the borrow of `x`: results are read through its pipeline meanwhile.
/// assert_eq!(exec.pipeline().x.to_vec_on(&stream)?, vec![8.0; 1000]);
/// exec.update_args_with(|p| p.by = 0.5)?; // new scalars: only the launch node is set anew
/// exec.update_with(|p| p.n = 500)?;       // any change: captured again, cuGraphExecUpdate
/// exec.launch(&stream)?;
/// drop(exec.into_pipeline()); // the pipeline value, and with it the borrow of `x`
/// let x = x.to_vec_on(&stream)?;
/// assert_eq!((x[0], x[999]), (4.0, 8.0));
/// # Ok::<(), streamgraph::Error>(())
/// ```
#[derive(Debug)]
pub struct GraphExec<P> {
    pub(super) run: Executable,
    pub(super) pipeline: P,
}

impl<P> GraphExec<P> {
    /// Launches the graph on `stream` (any stream of the graph's device); returns once queued.
    ///
    /// When the graph copies to or from a [`crate::PinnedBuffer`] whose `as_slice` /
    /// `as_mut_slice` guard is alive, the launch is refused with [`Error::PinnedBusy`](crate::Error::PinnedBusy); on a
    /// stream that code outside streamgraph is capturing, with [`Error::StreamCapturing`](crate::Error::StreamCapturing)
    /// (the driver cannot capture graph launches).
    ///
    /// See [`cuGraphLaunch`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>, v: f32) { stream s; s: fill x = v; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let exec = capture(&stream, Fill::new(&mut x, 1.0))?.instantiate()?;
    /// exec.launch(&stream)?; // queued; returns at once
    /// let other = Stream::new(&stream.device(), 0)?;
    /// exec.launch(&other)?; // any stream of the device
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    #[inline]
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.run.launch(stream)
    }

    /// Launches the graph `times` times in a row on `stream`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>, v: f32) { stream s; s: fill x = v; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let exec = capture(&stream, Fill::new(&mut x, 1.0))?.instantiate()?;
    /// exec.replay(&stream, 100)?;
    /// assert_eq!(exec.stats().launches, 100);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn replay(&self, stream: &Stream, times: usize) -> Result<()> {
        for _ in 0..times {
            self.launch(stream)?;
        }
        Ok(())
    }

    /// Uploads the graph to the device ahead of its first launch, in `stream`'s order.
    ///
    /// See [`cuGraphUpload`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>, v: f32) { stream s; s: fill x = v; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let exec = capture(&stream, Fill::new(&mut x, 1.0))?.instantiate()?;
    /// exec.upload(&stream)?; // the first launch need not upload it
    /// exec.launch(&stream)?;
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        self.run.upload(stream)
    }

    /// The pipeline the graph currently runs. Its pinned buffers can be read through it: a
    /// guard waits for the launches that write them, and refuses launches while it lives.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>, v: f32) { stream s; s: fill x = v; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let exec = capture(&stream, Fill::new(&mut x, 1.0))?.instantiate()?;
    /// exec.launch(&stream)?;
    /// // `exec` holds the borrow of `x`: read it through the pipeline, in `stream`'s order.
    /// assert_eq!(exec.pipeline().x.to_vec_on(&stream)?, vec![1.0; 1024]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn pipeline(&self) -> &P {
        &self.pipeline
    }

    /// Gives the pipeline back (and with it the borrows of its buffers); the executable graph
    /// is destroyed once the launches in flight have finished. Synchronize before reading
    /// results from device memory; pinned buffers wait for their copies themselves.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>, v: f32) { stream s; s: fill x = v; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let exec = capture(&stream, Fill::new(&mut x, 1.0))?.instantiate()?;
    /// exec.launch(&stream)?;
    /// let fill = exec.into_pipeline();
    /// assert_eq!(fill.v, 1.0);
    /// drop(fill); // the borrow of `x` ends with the pipeline value
    /// assert_eq!(x.to_vec_on(&stream)?, vec![1.0; 1024]); // in `stream`'s order: after the launch
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn into_pipeline(self) -> P {
        self.pipeline
    }

    /// Launch, update and re-instantiation counts.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, GraphStats, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>, v: f32) { stream s; s: fill x = v; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let mut exec = capture(&stream, Fill::new(&mut x, 1.0))?.instantiate()?;
    /// exec.replay(&stream, 3)?;
    /// exec.update_with(|p| p.v = 2.0)?;
    /// assert_eq!(exec.stats(), GraphStats { launches: 3, updates: 1, ..GraphStats::default() });
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn stats(&self) -> GraphStats {
        self.run.stats()
    }

    /// The option of [`GraphExec::update`] and [`GraphExec::update_with`]: whether they
    /// instantiate the new graph when the driver refuses to update in place (e.g. the topology
    /// changed) instead of failing with [`Error::UpdateRejected`](crate::Error::UpdateRejected). Off by default.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Error, Stream};
    /// pipeline! { pipeline P(x: &mut DeviceBuffer<f32>, n: u32) {
    ///     stream s; for _ in 0..n { s: fill x = 1.0f32; } } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let mut exec = capture(&stream, P::new(&mut x, 1))?.instantiate()?;
    /// let refused = exec.update_with(|p| p.n = 2); // two nodes: another topology
    /// assert!(matches!(refused, Err(Error::UpdateRejected { .. })));
    /// exec.reinstantiate_on_topology_change(true).update_with(|p| p.n = 2)?;
    /// assert_eq!(exec.stats().reinstantiations, 1);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn reinstantiate_on_topology_change(&mut self, on: bool) -> &mut Self {
        self.run.reinstantiate = on;
        self
    }

    /// Changes only the arguments of one launch operation, in place
    /// (`cuGraphExecKernelNodeSetParams`): the fast path for new scalars. Grid, block and
    /// shared memory stay those of the captured node. Takes effect from the next launch.
    ///
    /// `kernel` must be the kernel the node launches now (a later update may have changed it):
    /// `args` are arguments for it, under its [`crate::Module::kernel`] promise, and their
    /// number is checked against the captured launch. Buffer arguments must lie in memory the
    /// pipeline already uses (the executable graph keeps it allocated); to point a launch at
    /// other buffers, use [`GraphExec::update`]. A later `update` captures the pipeline's own
    /// arguments again.
    ///
    /// See [`cuGraphExecKernelNodeSetParams`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Kernel, KernelArg, Module, OpRef};
    /// use streamgraph::Stream;
    /// pipeline! { pipeline Scale(x: &mut DeviceBuffer<f32>, k: &Kernel, by: f32, n: u32) {
    ///     stream s; s: launch k<<<n.div_ceil(256), 256>>>(&mut x, by, n); } }
    /// let stream = Stream::on(None, 0)?;
    /// let module = Module::from_cuda_source(&stream.device(), "scale", r#"
    ///     extern "C" __global__ void scale(float* x, float by, unsigned n) {
    ///         unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= by; }"#)?;
    /// // SAFETY: `Scale` and the `set_kernel_args` below pass (float*, float, unsigned).
    /// let k = unsafe { module.kernel("scale")? };
    /// let mut x = DeviceBuffer::from_host(&stream.device(), &[1.0f32; 1000])?;
    /// let exec = capture(&stream, Scale::new(&mut x, &k, 2.0, 1000))?.instantiate()?;
    /// let launch = OpRef::new(&Scale::PROGRAM.statements[0]); // its first (and only) issue
    /// let (by, n) = (3.0f32, 1000u32);
    /// let x_arg = KernelArg::write_through(&exec.pipeline().x); // the buffer the node writes now
    /// exec.set_kernel_args(launch, &k, &[x_arg, KernelArg::value(&by), KernelArg::value(&n)])?;
    /// exec.launch(&stream)?; // x[i] *= 3
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn set_kernel_args(
        &self,
        op: OpRef,
        kernel: &Kernel,
        args: &[KernelArg<'_>],
    ) -> Result<()> {
        self.run.set_kernel_args(op, kernel, args)
    }
}

impl<P: Pipeline> GraphExec<P> {
    /// The executable graph's handle, for interop with code that calls the driver directly
    /// (e.g. `cuGraphExecGetFlags`). It stays valid while `self` lives; launching or updating
    /// it behind `self`'s back is outside what streamgraph can keep safe (that code is
    /// `unsafe` anyway, since it passes a raw handle to the driver).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>, v: f32) { stream s; s: fill x = v; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let exec = capture(&stream, Fill::new(&mut x, 1.0))?.instantiate()?;
    /// let raw = exec.as_raw().0; // a `CUgraphExec`, for the driver API (valid while `exec` lives)
    /// assert!(!raw.is_null());
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn as_raw(&self) -> GraphExecHandle {
        self.run.exec.as_raw()
    }

    /// Captures `pipeline` (new arguments, new buffers) into a fresh graph and applies it to
    /// this executable graph in place (`cuGraphExecUpdate`), without re-instantiating.
    /// Returns the previous pipeline (and with it the borrows of its buffers); what the
    /// launches before the update touch stays allocated until they have finished.
    ///
    /// When the driver refuses (the topology or a kernel changed) this fails with
    /// [`Error::UpdateRejected`](crate::Error::UpdateRejected) naming the reason and the statement, unless
    /// [`GraphExec::reinstantiate_on_topology_change`] is on: then the new graph is
    /// instantiated instead and counted in [`GraphStats::reinstantiations`]. On error the
    /// executable graph keeps running the previous pipeline.
    ///
    /// See [`cuGraphExecUpdate`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>, v: f32) { stream s; s: fill x = v; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut a = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let mut b = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let mut exec = capture(&stream, Fill::new(&mut a, 1.0))?.instantiate()?;
    /// let previous = exec.update(Fill::new(&mut b, 2.0))?; // the same node, now filling `b`
    /// exec.launch(&stream)?;
    /// drop(previous); // gives `a` back
    /// assert_eq!(a.to_vec_on(&stream)?, vec![0.0; 1024]); // never launched on `a`
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn update(&mut self, pipeline: P) -> Result<P> {
        self.run.update_to(&pipeline)?;
        Ok(std::mem::replace(&mut self.pipeline, pipeline))
    }

    /// Changes the pipeline in place with `f` (e.g. new scalar arguments) and updates the
    /// executable graph with it, as [`GraphExec::update`] does. On error the pipeline keeps
    /// `f`'s changes but the executable graph still runs the previous arguments — and keeps
    /// their memory allocated, even if `f` dropped the buffers: update again or re-instantiate.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>, v: f32) { stream s; s: fill x = v; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let mut exec = capture(&stream, Fill::new(&mut x, 1.0))?.instantiate()?;
    /// exec.update_with(|p| p.v = 2.0)?; // captured again, applied in place
    /// exec.launch(&stream)?;
    /// assert_eq!(exec.pipeline().x.to_vec_on(&stream)?, vec![2.0; 1024]);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn update_with(&mut self, f: impl FnOnce(&mut P)) -> Result<()> {
        f(&mut self.pipeline);
        self.run.update_to(&self.pipeline)
    }

    /// Like [`GraphExec::update`], but only the nodes whose values changed are touched: walks
    /// `pipeline` without issuing anything, compares each launch's configuration and argument
    /// values with what its node runs now, and gives only the changed launches new parameters
    /// in place (`cuGraphExecKernelNodeSetParams`). No capture, no `cuGraphExecUpdate`: the
    /// cost is one walk of the pipeline plus one driver call per changed launch, so it scales
    /// with what changed. Returns the previous pipeline.
    ///
    /// The walk skips what cannot have changed: `pipeline!` gives each launch, copy, fill and
    /// `call` the parameters its expressions name (with those of the host `for`s and `if`s
    /// around it), the update compares every parameter's [`ParamKey`](crate::ParamKey) with that of
    /// the values the nodes run, and a statement none of whose parameters changed is not
    /// evaluated at all ([`GraphStats::args_skipped`](super::GraphStats::args_skipped)). A
    /// host `for` loop of launches, copies, fills, `call`s and ordering statements none of whose
    /// parameters changed is skipped whole, once a walk has seen it run. So an update of one
    /// scalar costs the statements that read it, plus a few instructions per other statement
    /// outside such loops. Expressions are taken to be functions of what they name (a function
    /// they call must not read global state; pass such a value as a parameter): a statement
    /// that calls a macro, has an `unsafe` block or calls a method on a static
    /// (`COUNTER.load(..)`) is evaluated every time, as is one reading a parameter whose type
    /// has no key; the first update after a capture evaluates everything. When no key
    /// changed and every statement the pipeline can issue is decided by them
    /// ([`Pipeline::KEYED_WALK`](crate::Pipeline::KEYED_WALK): no statement evaluated every
    /// time, no device block or collective), the pipeline is not walked at all: the
    /// update costs the keys' comparison, whatever the pipeline's size (what a
    /// [`GraphSet`](crate::GraphSet)'s launch of a key it holds costs).
    ///
    /// New buffers of changed launches are kept allocated by the executable graph from now on,
    /// as [`GraphExec::update`] keeps them (and what earlier arguments used until the graph is
    /// updated anew or dropped). Arguments of types that are not primitive (`#[repr(C)]`
    /// structs) cannot be compared by value: their launches are always set. Host functions are
    /// not compared: the graph keeps running those it captured.
    ///
    /// Device blocks (`while`, `if`, `switch`) are walked as the capture issued them: the
    /// block's flag and limit are compared, then each body's statements once, in order, a
    /// changed launch in a body set in place like any other. A `call` keeps
    /// its nodes when its op's work is fixed ([`StreamOp::fixed_work`](crate::StreamOp::fixed_work))
    /// and the op and operands are the captured ones.
    ///
    /// Falls back to what [`GraphExec::update`] does (a capture and `cuGraphExecUpdate`, with
    /// its errors) when an argument update cannot express the change: the pipeline issued
    /// other statements, a launch runs another kernel, a copy's or fill's operands changed, a
    /// changed launch takes pinned host memory, many updates' buffers are held already, a
    /// device block's flag or limit changed, a `call`
    /// changed or its op's work cannot be compared, or the pipeline has a collective (NCCL's
    /// nodes, which argument updates do not reach). On
    /// error the previous pipeline stays the executable graph's; nodes may run some of the new
    /// arguments, whose memory stays allocated all the same.
    ///
    /// See [`cuGraphExecKernelNodeSetParams`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Kernel, Module, Stream};
    /// pipeline! { pipeline Scale(x: &mut DeviceBuffer<f32>, k: &Kernel, by: f32, n: u32) {
    ///     stream s; s: launch k<<<n.div_ceil(256), 256>>>(&mut x, by, n); } }
    /// let stream = Stream::on(None, 0)?;
    /// let module = Module::from_cuda_source(&stream.device(), "scale", r#"
    ///     extern "C" __global__ void scale(float* x, float by, unsigned n) {
    ///         unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= by; }"#)?;
    /// // SAFETY: `Scale` launches it with (float*, float, unsigned).
    /// let k = unsafe { module.kernel("scale")? };
    /// let mut x = DeviceBuffer::from_host(&stream.device(), &[1.0f32; 1000])?;
    /// let mut y = DeviceBuffer::from_host(&stream.device(), &[1.0f32; 1000])?;
    /// let mut exec = capture(&stream, Scale::new(&mut x, &k, 2.0, 1000))?.instantiate()?;
    /// let previous = exec.update_args(Scale::new(&mut y, &k, 0.5, 1000))?; // one node set anew
    /// exec.launch(&stream)?; // scales `y`
    /// assert_eq!((previous.by, exec.stats().args_updates), (2.0, 1));
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn update_args(&mut self, pipeline: P) -> Result<P> {
        self.run.apply_args(&pipeline)?;
        Ok(std::mem::replace(&mut self.pipeline, pipeline))
    }

    /// [`GraphExec::update_args`] for a pipeline changed in place with `f` (e.g. new scalar
    /// arguments, as [`GraphExec::update_with`] takes them).
    ///
    /// On error the pipeline keeps `f`'s changes while the graph runs what it ran before
    /// (nodes set before the error excepted, as for `update_args`): [`GraphExec::verify`]
    /// reports what differs, and an update that may re-instantiate
    /// ([`GraphExec::reinstantiate_on_topology_change`]) brings the two together again.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Kernel, Module, Stream};
    /// pipeline! { pipeline Scale(x: &mut DeviceBuffer<f32>, k: &Kernel, by: f32, n: u32) {
    ///     stream s; s: launch k<<<n.div_ceil(256), 256>>>(&mut x, by, n); } }
    /// let stream = Stream::on(None, 0)?;
    /// let module = Module::from_cuda_source(&stream.device(), "scale", r#"
    ///     extern "C" __global__ void scale(float* x, float by, unsigned n) {
    ///         unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= by; }"#)?;
    /// // SAFETY: `Scale` launches it with (float*, float, unsigned).
    /// let k = unsafe { module.kernel("scale")? };
    /// let mut x = DeviceBuffer::from_host(&stream.device(), &[1.0f32; 1000])?;
    /// let mut exec = capture(&stream, Scale::new(&mut x, &k, 2.0, 1000))?.instantiate()?;
    /// exec.update_args_with(|p| p.by = 3.0)?; // no capture: the launch node gets the new value
    /// exec.launch(&stream)?; // x[i] *= 3
    /// assert_eq!(exec.stats().args_updates, 1);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn update_args_with(&mut self, f: impl FnOnce(&mut P)) -> Result<()> {
        f(&mut self.pipeline);
        self.run.apply_args(&self.pipeline)
    }

    /// [`Graph::verify`](super::Graph::verify) for the graph this executable graph now runs:
    /// the latest update's capture (or the one it was instantiated from), against the plan
    /// of the pipeline it holds now.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use streamgraph::{capture, pipeline, DeviceBuffer, Stream};
    /// pipeline! { pipeline Fill(x: &mut DeviceBuffer<f32>, v: f32) { stream s; s: fill x = v; } }
    /// let stream = Stream::on(None, 0)?;
    /// let mut x = DeviceBuffer::zeros(&stream.device(), 1024)?;
    /// let mut exec = capture(&stream, Fill::new(&mut x, 1.0))?.instantiate()?;
    /// exec.update_with(|p| p.v = 2.0)?;
    /// assert_eq!(exec.verify()?.operations, 1);
    /// # Ok::<(), streamgraph::Error>(())
    /// ```
    pub fn verify(&self) -> Result<VerifyReport> {
        self.run.verify(&self.pipeline)
    }
}
