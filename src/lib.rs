//! # streamgraph
//!
//! Declarative multi-stream CUDA pipelines: one [`pipeline!`] declares the streams, the
//! kernels, copies, fills and host functions issued on them, and the event records and waits
//! that order them. The same pipeline is checked for cross-stream data races at compile time,
//! then run eagerly on CUDA streams, captured into a CUDA graph and replayed, or only planned
//! (its happens-before model built, without a GPU).
//!
//! ## 1. Load kernels
//!
//! ```no_run
//! use streamgraph::{Device, Kernel, Module, Stream};
//!
//! const SOURCE: &str = r#"
//! extern "C" __global__ void scale(float* x, float k, unsigned n) {
//!     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < n) x[i] *= k;
//! }"#;
//!
//! let device = Device::new(None)?; // the current device; Error::NoDriver without CUDA
//! let stream = Stream::new(&device, 0)?;
//! let module = Module::from_cuda_source(&device, "scale", SOURCE)?; // NVRTC, for this GPU
//! // SAFETY: every launch of `scale` passes (float*, float, unsigned).
//! let scale: Kernel = unsafe { module.kernel("scale")? };
//! # Ok::<(), streamgraph::Error>(())
//! ```
//!
//! Loading a kernel is the one `unsafe` promise: that every launch passes arguments matching
//! its C signature. Everything after that is safe.
//!
//! ## 2. Declare a pipeline
//!
//! ```
//! use streamgraph::{pipeline, DeviceBuffer, Kernel};
//!
//! pub struct Kernels { pub scale: Kernel, pub axpy: Kernel }
//!
//! pipeline! {
//!     /// Scale `x` on the origin while a side stream waits for it and updates `y`.
//!     pub pipeline Diamond(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &Kernels, n: u32) {
//!         stream main;                 // the first stream is the origin
//!         stream side(priority = -1);
//!         event ready;
//!
//!         main: launch k.scale<<<n.div_ceil(256), 256>>>(&mut x, 2.0f32, n);
//!         main: record ready;
//!         side: wait ready;
//!         side: launch k.axpy<<<n.div_ceil(256), 256>>>(&mut y, &x, 0.5f32, n);
//!     }
//! }
//! ```
//!
//! Remove `side: wait ready;` and the pipeline no longer compiles: `side` reads `x` while
//! `main` writes it, and nothing orders the two. The error names both statements and the
//! record/wait that would order them.
//!
//! ```compile_fail
//! # use streamgraph::{pipeline, DeviceBuffer, Kernel};
//! # pub struct Kernels { pub scale: Kernel, pub axpy: Kernel }
//! pipeline! {
//!     pub pipeline Racy(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &Kernels, n: u32) {
//!         stream main;
//!         stream side;
//!         main: launch k.scale<<<n.div_ceil(256), 256>>>(&mut x, 2.0f32, n);
//!         side: launch k.axpy<<<n.div_ceil(256), 256>>>(&mut y, &x, 0.5f32, n); // error: data race on `x`
//!     }
//! }
//! ```
//!
//! ## 3. Run it eagerly, or plan it
//!
//! ```no_run
//! # use streamgraph::{pipeline, DeviceBuffer, Kernel};
//! # pub struct Kernels { pub scale: Kernel, pub axpy: Kernel }
//! # pipeline! {
//! #     pub pipeline Diamond(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &Kernels, n: u32) {
//! #         stream main; stream side; event ready;
//! #         main: launch k.scale<<<n.div_ceil(256), 256>>>(&mut x, 2.0f32, n);
//! #         main: record ready; side: wait ready;
//! #         side: launch k.axpy<<<n.div_ceil(256), 256>>>(&mut y, &x, 0.5f32, n);
//! #     }
//! # }
//! # fn kernels() -> Kernels { unimplemented!() }
//! use streamgraph::{Device, Eager, Plan, Stream};
//!
//! let device = Device::new(None)?;
//! let stream = Stream::new(&device, 0)?;
//! let (mut x, mut y) = (DeviceBuffer::zeros(&device, 1024)?, DeviceBuffer::zeros(&device, 1024)?);
//! let k = kernels();
//!
//! // Eagerly: the pipeline runs as one operation on `stream` (side streams fork from it and
//! // join back into it).
//! let mut eager = Eager::new(&stream);
//! eager.run(&Diamond::new(&mut x, &mut y, &k, 1024))?;
//!
//! // Planned: the happens-before model, its race check on real address ranges, and DOT.
//! let plan = Plan::build(&Diamond::new(&mut x, &mut y, &k, 1024))?;
//! plan.check_races()?;
//! println!("{}", plan.to_dot());
//! # Ok::<(), streamgraph::Error>(())
//! ```
//!
//! Without a GPU, [`Kernel::for_planning`], [`DeviceBuffer::for_planning`] and
//! [`PinnedBuffer::for_planning`] make handles that can be planned but not run; this runs
//! anywhere:
//!
//! ```
//! use streamgraph::{pipeline, DeviceBuffer, Kernel, Plan};
//!
//! pub struct Kernels { pub scale: Kernel, pub axpy: Kernel }
//!
//! pipeline! {
//!     pub pipeline Diamond(x: &mut DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>, k: &Kernels, n: u32) {
//!         stream main;
//!         stream side(priority = -1);
//!         event ready;
//!
//!         main: launch k.scale<<<n.div_ceil(256), 256>>>(&mut x, 2.0f32, n);
//!         main: record ready;
//!         side: wait ready;
//!         side: launch k.axpy<<<n.div_ceil(256), 256>>>(&mut y, &x, 0.5f32, n);
//!     }
//! }
//!
//! let k = Kernels { scale: Kernel::for_planning("scale"), axpy: Kernel::for_planning("axpy") };
//! let mut x = DeviceBuffer::<f32>::for_planning(1024)?;
//! let mut y = DeviceBuffer::<f32>::for_planning(1024)?;
//! let plan = Plan::build(&Diamond::new(&mut x, &mut y, &k, 1024))?;
//! assert_eq!(plan.edges().into_iter().collect::<Vec<_>>(), [(0, 1)]); // through `ready`
//! plan.check_races()?;
//! print!("{plan}"); // the op table: index, stream, statement, grid, location, memory
//! # Ok::<(), streamgraph::Error>(())
//! ```
//!
//! ## 4. Test it: eager runs against graph replays
//!
//! With the `testing` feature, `testing::compare` runs a pipeline eagerly,
//! captures it, verifies the graph against the plan, replays it and compares chosen outputs
//! bitwise (or within a tolerance), reporting the first differing element as
//! [`Error::OutputMismatch`]:
//!
//! ```no_run
//! use streamgraph::{pipeline, testing, Device, DeviceBuffer, Kernel, Module, Stream};
//!
//! pipeline! {
//!     pub pipeline Scale(x: &mut DeviceBuffer<f32>, k: &Kernel, n: u32) {
//!         stream main;
//!         main: launch k<<<n.div_ceil(256), 256>>>(&mut x, 2.0f32, n);
//!     }
//! }
//!
//! let device = Device::new(None)?;
//! let stream = Stream::new(&device, 0)?;
//! let module = Module::from_cuda_source(&device, "scale", r#"
//!     extern "C" __global__ void scale(float* x, float k, unsigned n) {
//!         unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!         if (i < n) x[i] *= k;
//!     }"#)?;
//! // SAFETY: every launch passes (float*, float, unsigned).
//! let k = unsafe { module.kernel("scale")? };
//! let input: Vec<f32> = (0..1000).map(|i| i as f32).collect();
//! let mut x = DeviceBuffer::from_host(&device, &input)?;
//!
//! let report = testing::compare(&stream, &mut x, |x, run| run.pipeline(Scale::new(x, &k, 1000)))
//!     .reset(|x| x.copy_from_host(&input)) // `x` is scaled in place: each side starts afresh
//!     .output("x", |x| x.to_vec())
//!     .replays(3)                          // 3 eager runs against 3 replays of one graph
//!     .run()?;
//! println!("{report}");
//! # Ok::<(), streamgraph::Error>(())
//! ```
//!
//! ## Observability
//!
//! The `tracing` feature opens a span per pipeline run, capture or plan and per statement
//! issued (pipeline name, statement text, source location, stream); the `nvtx` feature opens
//! NVTX ranges with the same names for Nsight Systems, loading the NVTX library at run time
//! (no ranges, and no error, without it). Both compile to nothing when off.
//!
//! ## Checks
//!
//! [`Eager::check`] builds each pipeline's plan and refuses races on real address ranges before
//! a run; [`Capture::check`] also compares each captured graph with the plan, edge for edge.
//! Both are on by default in debug builds and off in release builds, like overflow checks;
//! the environment variable `STREAMGRAPH_CHECKS=1` (or `0`) turns them on (or off) by default
//! in any build. [`Graph::verify`] runs the comparison on demand.
//!
//! ## What safe code cannot do
//!
//! Nothing written without `unsafe` can make the driver touch memory that is not live, or
//! memory Rust is reading: memory reaches the driver only through the `unsafe` traits
//! [`DeviceMemory`], [`CopySource`] and [`CopyTarget`] (implemented by the runtime's buffers
//! and by cudarc's slices, whose work is ordered with their own stream and never captured);
//! a graph keeps the memory, modules and host functions it uses until its launches finish; a
//! [`PinnedBuffer`] is read through guards that wait for the copies writing it and refuse new
//! ones while they live; buffer elements are [`Pod`]. Writes need exclusive borrows: a copy,
//! fill or `&mut` kernel argument writes only memory borrowed `&mut` (or owned), never a
//! shared borrow or a read-only view, so a buffer that a pipeline or graph borrows shared is
//! written by no one. The one promise asked of users is [`Module::kernel`]'s: that launches
//! pass the kernel's C signature, with the pointers it writes passed as writes.
//!
//! ## The stream contract
//!
//! [`Stream`] and [`Event`] follow `torch.cuda.Stream`: [`Stream::new`] clamps priorities into
//! the device's range, [`Stream::query`] never blocks, [`Stream::wait_event`] and
//! [`Stream::wait_stream`] order later work only and return at once, [`Stream::scope`] sets the
//! stream that stream-less operations use ([`current_stream`]).
#![warn(missing_docs)]

pub use streamgraph_runtime::*;

#[doc(inline)]
pub use streamgraph_macros::pipeline;

/// The README's examples, compiled (and, where they need no GPU, run) as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
