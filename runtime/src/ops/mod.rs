//! Streamgraph's own ops for `call` statements: library calls and kernels of streamgraph's
//! own that a pipeline issues without `unsafe`.
//!
//! Always: [`Random`], uniform or normal random numbers in `f32` or `f64` from a seed, by a
//! Philox4x32-10 kernel of streamgraph's own whose offset lives on the device, so that every
//! replay of a captured graph draws fresh numbers (cuRAND's host-side offset would repeat
//! them); it needs only the driver and NVRTC.
//!
//! With the `cublas` feature: cuBLAS GEMMs (`Gemm`, `StridedBatchedGemm`) in `f32`, `f64`,
//! `f16` and `bf16`, and cuBLASLt matmuls with a fused bias and ReLU or GELU epilogue
//! (`Matmul`, `MatmulBias`) in `f32`, `f16` and `bf16`. `libcublas` and `libcublasLt` are
//! opened at run time: without them an op's constructor returns `Error::NoLibrary`, and
//! nothing panics.
//!
//! An op is made once, for one shape: it owns its library handle and a device workspace,
//! allocated when it is made, so that a captured graph holds no allocation of the library's.
//! A cuBLAS op makes a second handle (sharing the workspace) the first time it is issued
//! outside a capture on another stream than its first handle's, so that eager runs and
//! captures in turn, whose streams differ, do not bind a handle to a stream anew each time.
//! A statement `s: call gemm(&mut c, &a, &b);` issues it on stream `s`, with `c` written and
//! `a`, `b` read, as the pipeline's race check and plan see them. Each issue checks the
//! operands' lengths against the shape first, and says which operand is too short.
//!
//! Matrices are row-major (each row contiguous, as a `Vec` of rows laid end to end) or
//! column-major (cuBLAS's own order), the same layout for `A`, `B` and `C`.
//!
//! One op's workspace serves one call at a time: issue an op from statements that are ordered
//! with each other (on one stream, or joined by `wait`s), and make one op per stream for GEMMs
//! that run concurrently. Each op declares its workspace as memory every call writes
//! (`StreamOp::scratch`), so the run-time race check (`Plan::check_races`, on in debug builds)
//! reports two calls of one op in a pipeline that nothing orders. An op may be shared by
//! threads that issue it (it is `Sync`); their issues are serialized, but pipelines run on
//! other streams at the same time must not share one: nothing orders their workspace use.
//!
//! ```no_run
//! # #[cfg(feature = "cublas")]
//! # fn main() -> streamgraph::Result<()> {
//! use streamgraph::ops::{Gemm, GemmConfig};
//! use streamgraph::{DeviceBuffer, Device};
//!
//! let device = Device::new(None)?;
//! // C[64×32] = A[64×128] · B[128×32], row-major.
//! let (m, n, k) = (64, 32, 128);
//! let gemm = Gemm::new(&device, GemmConfig::<f32>::row_major(m, n, k))?;
//! let a = DeviceBuffer::from_host(&device, &vec![1.0f32; m * k])?;
//! let b = DeviceBuffer::from_host(&device, &vec![0.5f32; k * n])?;
//! let mut c = DeviceBuffer::<f32>::zeros(&device, m * n)?;
//! // In a pipeline with parameters `gemm: &Gemm<f32>`, `a`, `b` and `c`:
//! //     main: call gemm(&mut c, &a, &b);
//! # let _ = (&gemm, &a, &b, &mut c);
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "cublas"))]
//! # fn main() {}
//! ```

#![cfg_attr(
    feature = "cublas",
    doc = "\n\nThe ops: [`Gemm`] ([`GemmConfig`]), [`StridedBatchedGemm`] \
           ([`StridedBatchedConfig`]), [`Matmul`] and [`MatmulBias`] ([`MatmulConfig`], \
           [`Epilogue`]); their element types [`GemmElem`] and [`MatmulElem`] (with \
           [`half::f16`] and [`half::bf16`]), the [`Layout`] of their matrices, and where \
           they are made ([`OnDevice`]). Errors: [`Error::NoLibrary`](crate::error::Error::NoLibrary) without \
           the library, [`Error::Library`](crate::error::Error::Library) when a call fails."
)]

#[cfg(feature = "cublas")]
mod elem;
#[cfg(feature = "cublas")]
mod gemm;
#[cfg(feature = "cublas")]
mod matmul;
mod random;
#[cfg(feature = "cublas")]
mod shape;

#[cfg(feature = "cublas")]
#[cfg_attr(docsrs, doc(cfg(feature = "cublas")))]
pub use elem::{GemmElem, MatmulElem, OnDevice};
#[cfg(feature = "cublas")]
#[cfg_attr(docsrs, doc(cfg(feature = "cublas")))]
pub use gemm::{Gemm, GemmConfig, StridedBatchedConfig, StridedBatchedGemm};
#[cfg(feature = "cublas")]
#[cfg_attr(docsrs, doc(cfg(feature = "cublas")))]
pub use matmul::{Epilogue, Matmul, MatmulBias, MatmulConfig};
pub use random::{Random, RandomElem};
#[cfg(feature = "cublas")]
#[cfg_attr(docsrs, doc(cfg(feature = "cublas")))]
pub use shape::Layout;
