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
//! its C signature. Everything after that is safe. [`Module::from_ptx`] loads PTX instead of
//! compiling CUDA C++.
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
//! The pipeline borrows its buffers, so `compare` takes a state and a closure that builds the
//! pipeline from it; the outputs are read from the same state between runs.
//! `examples/eager_vs_captured.rs` is a whole program around it. The same module has seeded
//! random programs and the edge comparison behind [`Graph::verify`] for edge sets given by hand.
//!
//! ## Features
//!
//! streamgraph drives CUDA through [cudarc](https://crates.io/crates/cudarc) 0.19 (re-exported
//! as [`cudarc`]) and needs a CUDA 12.4 or later driver (conditional graph nodes). It picks
//! cudarc's CUDA version and loading mode through features of its own, one of each:
//!
//! | feature | meaning |
//! | --- | --- |
//! | `cuda-13000` (default), `cuda-13010` … `cuda-13040`, `cuda-12040` … `cuda-12090` | the CUDA driver API version cudarc binds; the driver must support at least that version |
//! | `cuda-version-from-build-system` | cudarc asks `nvcc` at build time |
//! | `dynamic-loading` (default) | `libcuda`/`libnvrtc` are opened at run time: builds without CUDA; no driver is [`Error::NoDriver`] |
//! | `fallback-dynamic-loading`, `dynamic-linking` | cudarc's other modes (`dynamic-linking` needs the CUDA libraries at link time) |
//!
//! and, optionally, `testing` (the `testing` module: eager runs against graph replays, seeded
//! random programs), `tracing` and `nvtx` ([Observability](#observability)), `nccl`
//! (collective statements run through NCCL, loaded at run time: docs/COLLECTIVES.md), and
//! `cublas` (the cuBLAS and cuBLASLt ops of `ops` for `call` statements, the libraries loaded at
//! run time: without them, `Error::NoLibrary`).
//!
//! A crate that uses cudarc itself must enable the **same** CUDA version feature on both
//! (cudarc accepts only one), e.g. next to a CUDA 12.8 cudarc:
//!
//! ```toml
//! [dependencies]
//! cudarc = { version = "0.19", default-features = false, features = ["std", "driver", "nvrtc", "cuda-12080", "dynamic-loading"] }
//! streamgraph = { version = "0.1", default-features = false, features = ["cuda-12080", "dynamic-loading"] }
//! ```
//!
//! CI builds the default set, a CUDA 12.8 set, and such a user crate (`tests/user-crate`).
//!
//! ## The race check
//!
//! Two statements on different streams that touch the same buffer, one of them writing, with no
//! happens-before path between them (docs/MODEL.md) are a compile error that names both, where
//! they are, and the record and wait that would order them.
//!
//! **What writes.** `&mut x` in launch arguments, a `copy` destination and a `fill` target
//! write; `&x` and a `copy` source read. A statement writes only a parameter declared `&mut`
//! whose buffer it borrows exclusively — `x: &mut DeviceBuffer<T>`, `&mut PinnedBuffer<T>`,
//! `&mut DeviceViewMut<'_, T>`, `&mut [DeviceBuffer<T>]` — and names it whole (`x`), as an
//! element (`xs[i]`) or as one part of either (`x.slice_mut(a..b)`; `x.slice(a..b)` as a write
//! means the same); a written part or element out of bounds is a typed error of its statement.
//! A buffer borrowed shared under the `&mut` (`x: &mut &DeviceBuffer<T>`,
//! `&mut DeviceView<'_, T>`) is refused with a message on the parameter's type.
//!
//! **Loops and branches.** The check follows the model through `for` loops (a body is checked
//! against its own next iteration) and `if`s (only races certain on every path are reported).
//! Its work grows with statements × streams (loops are iterated to a fixed point, never
//! unrolled per stream), so large pipelines compile quickly; at most 20 races are listed, then
//! one error counts the rest. If a pipeline's branches and loops give some pairs of statements
//! more orderings than the check follows, a warning (`use of deprecated unit struct
//! PIPELINE::static_race_check_incomplete`) says that those pairs are left to
//! [`Plan::check_races`]. `for` and `if` nest at most 128 levels deep.
//!
//! **At run time.** What the check cannot decide statically — sub-ranges such as
//! `x.slice(0..n)`, aliasing buffers — the plan checks on real address ranges
//! ([`Plan::check_races`]). [`Eager::check`] does so before each run; [`Capture::check`] also
//! compares each captured graph with the plan, edge for edge. Both are on by default in debug
//! builds and off in release builds, like overflow checks; the environment variable
//! `STREAMGRAPH_CHECKS=1` (or `0`) turns them on (or off) by default in any build.
//! [`Graph::verify`] runs the comparison on demand. Two parts of one buffer, planned without a
//! GPU:
//!
//! ```
//! use streamgraph::{pipeline, DeviceBuffer, Error, Kernel, Plan};
//!
//! pipeline! {
//!     /// Two streams update two parts of `x`; no wait orders them, so they must not overlap.
//!     pipeline Parts(x: &mut DeviceBuffer<f32>, k: &Kernel, split: usize, rest: usize) {
//!         stream left;
//!         stream right;
//!         left: launch k<<<1, 256>>>(&mut x.slice_mut(0..split));
//!         right: launch k<<<1, 256>>>(&mut x.slice_mut(rest..1024));
//!     }
//! }
//!
//! let k = Kernel::for_planning("k");
//! let mut x = DeviceBuffer::<f32>::for_planning(1024)?;
//! let apart = Plan::build(&Parts::new(&mut x, &k, 512, 512))?;
//! apart.check_races()?; // [0, 512) and [512, 1024): no race
//! let overlapping = Plan::build(&Parts::new(&mut x, &k, 600, 500))?;
//! assert!(matches!(overlapping.check_races(), Err(Error::Race(_))));
//! # Ok::<(), Error>(())
//! ```
//!
//! **Other mistakes** get a message on the user's tokens that says what to write instead, e.g.
//!
//! ```text
//! error: statements are not method calls on streams: write `side: wait ready;`
//! error: unknown stream `sied`: did you mean `side`? (declared streams are `main`, `side`; ...)
//! error: buffer `x` is passed by value: write `&mut x` if the kernel writes it, or `&x` if it only reads it ...
//! error[E0277]: `DeviceBuffer<f32>` is not a kernel
//! ```
//!
//! (`tests/ui/` holds one case per message.) While a statement has an unknown name, the race
//! check waits for the fix, so no race follows from the misspelt name.
//!
//! ## Captures
//!
//! [`capture`]`(origin, pipeline)` is [`Capture::new`]`(origin).capture(pipeline)`; the builder
//! also sets the [`CaptureMode`], [`Capture::check`], [`Capture::fallback_to_eager`] and
//! `Capture::cross_check_nodes` (the `testing` feature). Keep the default mode, [`CaptureMode::ThreadLocal`]: while a
//! [`CaptureMode::Global`] capture runs, streamgraph's synchronizations, queries, allocations,
//! instantiations and module loads on other threads fail with a typed
//! [`CaptureFault::Implicit`] that they must retry (docs/RELIABILITY.md, "Threads", counts
//! them). Capture faults — a
//! synchronize inside a capture, waiting on an event recorded outside it, unjoined work, another
//! thread's synchronisation in global mode, a global-mode capture begun inside another on the
//! same thread — are typed errors ([`Error::Capture`], [`CaptureFault`]) that name the statement
//! and its source location; the capture is ended cleanly and the streams stay usable.
//!
//! ## Loops and branches on the device
//!
//! `STREAM: while FLAG { … }` (optionally `while FLAG, limit = N`) and
//! `STREAM: if FLAG { … } else { … }` are **device blocks**, decided by a [`DeviceFlag`]
//! parameter that kernels write (`&mut flag` is an `unsigned int*` on the device;
//! `fill flag = 1u32` sets it in stream order; [`DeviceFlag::new`], `set`, `get` from the host).
//!
//! - **Eagerly**, the runtime issues the body, reads the flag back (a copy and a synchronize of
//!   the block's stream) and repeats while it is non-zero, at most `limit` times.
//! - **Captured**, the block is one CUDA conditional node (WHILE; an `if` with `else` is two IF
//!   nodes): a built-in kernel (compiled once per device with NVRTC) copies the flag into the
//!   node's handle before it and, for a `while`, at the end of every iteration, counting
//!   iterations for `limit`; the body is captured into the node's body graph. One graph launch
//!   runs the whole loop. User kernels never see a graph handle.
//! - The body is a **nested pipeline** on the block's stream: its other streams fork from it at
//!   the body's start and join it at the end, and events do not cross its boundary.
//! - **Checks.** In the plan and in the static race check the block is one operation on its
//!   stream that reads the flag and does everything its body does; the body itself is checked
//!   as a pipeline of its own. Compile errors: a flag that is not a parameter or not a
//!   `DeviceFlag`, a `host` function in a body (it would need a round trip to the host), a
//!   `wait` in a body on an event recorded outside it (unless the body records it before the
//!   `wait`, outside any host `if` or `for` the `wait` is not in: then it waits for its own
//!   record, so several arms may record and wait the same event) or outside on one recorded
//!   inside it, `else if` (nest another block instead).
//! - **`switch`.** `STREAM: switch INDEX { 0 => { … } 2 => { … } _ => { … } }` runs the body of
//!   the arm whose value equals the [`DeviceFlag`]'s (a `u32`), else the `_` arm's, else none.
//!   Each arm is a body as above ([`StatementKind::Switch`]). Eagerly, the index is read back
//!   once; captured, the block is one SWITCH conditional node with a body graph per arm, after a
//!   built-in kernel that maps the index to its arm's body (a value no arm takes maps past the
//!   last body: nothing runs); on a driver older than CUDA 12.8 (`cuDriverGetVersion`), one IF
//!   node per arm after a kernel that sets only the chosen one's handle. Compile errors besides
//!   those of bodies: an arm pattern that is not a non-negative integer literal fitting a `u32`
//!   or `_`, a value given twice, `_` not last or twice, no arm, more than 64 valued arms.
//! - **Signalled loops.** `STREAM: while FLAG, signalled { … }` is a `while` whose body's
//!   kernels set the loop's condition themselves as they write the flag:
//!   `streamgraph_signal(flag, value)` of [`SIGNAL_HEADER`], in kernels compiled with
//!   [`Module::from_signalling_source`]. Captured, a built-in kernel before the node copies the
//!   flag into the condition and leaves the condition's handle in the flag's memory (words 2–3
//!   of its allocation), the body ends without the built-in kernel that reads the flag back (one
//!   node an iteration less), and a memset after the node clears the handle, so that the same
//!   kernels outside the loop (or eagerly, where the loop reads the flag back as any `while`
//!   does) only write the flag. Compile errors: a `limit` (no built-in kernel counts), a
//!   `fill`, `copy` or `call` writing the flag in the body, a launch writing it inside a device
//!   block nested in the body, and a signalled loop on the same flag nested in it.
//! - **Verification.** [`Graph::verify`] checks the outer graph against the plan and each body
//!   graph against its nested plan ([`Plan::bodies`]), and that the end of each body (the
//!   built-in kernel after its join, which the next iteration waits for) follows all of the
//!   body's work: directly from operations of the body's join, or through them (the join does
//!   not wait again for a stream whose last command was a record the block's stream already
//!   waited for, so the end follows that stream's work through what the block's stream ran
//!   since); [`Plan::to_dot`] and [`Graph::to_dot`] draw bodies as clusters, nested as the
//!   blocks are. Graphs with device blocks replay, upload and update (`update_with` new
//!   arguments of kernels inside a body, `set_kernel_args` on a launch inside a body) like any
//!   other.
//!
//! ## Observability
//!
//! Two optional features show what a pipeline issues, at no cost when they are off (the hooks
//! are compiled out):
//!
//! - `tracing`: a span per pipeline run, capture or plan (`pipeline`, fields `name`, `mode`,
//!   `location`; level INFO) and per statement issued (`statement`, fields `pipeline`,
//!   `statement` (its text), `location`, `stream`; level DEBUG), target `streamgraph`.
//! - `nvtx`: NVTX ranges per pipeline and per statement, so Nsight Systems shows the
//!   pipeline's name and each statement's text on the CPU timeline. Ranges are made only while
//!   a profiler listens (it sets `NVTX_INJECTION64_PATH`, as `nsys profile` does); otherwise a
//!   statement pays one check of a static. The NVTX library (`libnvToolsExt`, or
//!   `libnvtx3interop` from CUDA 12.8 on) is loaded at run time; without it there are no
//!   ranges, and no error.
//!
//! ```toml
//! streamgraph = { version = "0.1", features = ["tracing", "nvtx"] }
//! ```
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
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use streamgraph_runtime::*;

#[doc(inline)]
pub use streamgraph_macros::pipeline;

/// The README's examples, compiled (and, where they need no GPU, run) as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// docs/COLLECTIVES.md's examples, compiled as doctests.
#[doc = include_str!("../docs/COLLECTIVES.md")]
#[cfg(doctest)]
pub struct CollectivesDoctests;

#[cfg(test)]
mod tests {
    /// The README's first code block, the program it tells a newcomer to paste into a fresh
    /// crate, is `examples/pipeline_basics.rs` (its `//!` header aside), which its Setup runs.
    #[test]
    fn readme_first_block_is_the_pipeline_basics_example() {
        let readme = include_str!("../README.md");
        let open = "```rust\n";
        let start = readme.find(open).expect("the README has a Rust block") + open.len();
        let len = readme[start..].find("```\n").expect("the block ends");
        let example = include_str!("../examples/pipeline_basics.rs");
        let code: String = example
            .lines()
            .skip_while(|l| l.starts_with("//!") || l.is_empty())
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(&readme[start..start + len], code);
    }
}
