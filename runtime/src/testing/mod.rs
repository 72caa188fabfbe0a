//! Support for tests of programs that use streamgraph (the `testing` feature).
//!
//! - [`compare`]: one call that runs a pipeline eagerly, captures it, verifies the graph
//!   against the plan, replays it, and compares chosen outputs bitwise (or within a
//!   [`Tolerance`]); the first differing element comes back as [`Error::OutputMismatch`](crate::Error::OutputMismatch).
//! - Seeded random programs ([`RandomProgram`]) and the edge comparison and pictures behind
//!   [`Graph::verify`](crate::Graph::verify) on edge sets given by hand ([`verify_edges`], and
//!   [`verify_body_edges`] for the body graph of a device block).
//!
//! A pipeline borrows its buffers, so [`compare`] does not take a pipeline but a closure that
//! builds one from a state the comparison owns for the duration (`&mut S`) and hands it to a
//! [`Runner`]; between runs the comparison reads the outputs from the same state through
//! [`Compare::output`]'s closures and brings the inputs back with [`Compare::reset`].
//!
//! ```no_run
//! use streamgraph::pipeline;
//! use streamgraph::{testing, Device, DeviceBuffer, Kernel, Module, Stream};
//!
//! pipeline! {
//!     pub pipeline Scale(x: &mut DeviceBuffer<f32>, k: &Kernel, n: u32) {
//!         stream main;
//!         main: launch k<<<n.div_ceil(256), 256>>>(&mut x, 2.0f32, n);
//!     }
//! }
//!
//! # fn main() -> streamgraph::Result<()> {
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
//!     .tolerance(testing::Tolerance::EXACT) // the default: bitwise
//!     .run()?;
//! println!("{report}");
//! # Ok(())
//! # }
//! ```

mod comparison;
mod random;
mod tolerance;

#[cfg(feature = "cublas")]
pub use crate::ffi::blas::blas_bindings;
pub use crate::ffi::lane::{lanes_made, parked_streams};
pub use crate::graph::{captured_dot, side_by_side_dot, verify_body_edges, verify_edges};
pub use comparison::{compare, Compare, Report, Runner};
pub use random::{
    Block, Call, Memory, Operands, Place, RandomCallOp, RandomHostFn, RandomMemory, RandomOptions,
    RandomProgram,
};
pub use tolerance::{Compared, Tolerance};
