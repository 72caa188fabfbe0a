//! cuBLAS GEMMs as ops: [`Gemm`] and [`StridedBatchedGemm`].

use std::any::Any;
use std::sync::Arc;

use super::elem::{default_workspace, elem_type, one_zero, scalars, GemmElem, OnDevice};
use super::shape::{Call, Layout, Shape};
use crate::call::{BodyOp, CallStream, In, Out, StreamOp};
use crate::error::Result;
use crate::ffi::blas::BlasHandle;
use crate::ffi::memory::MemoryRef;

/// The shape and scalars of a GEMM `C = alpha · op(A) · op(B) + beta · C`: `C` is `m × n`,
/// `op(A)` is `m × k` and `op(B)` is `k × n`, where `op(X)` is `X` or, with `transa` /
/// `transb`, `X` transposed (then `A` is stored as `k × m`, `B` as `n × k`).
///
/// Leading dimensions are in elements, in the [`Layout`]'s terms: for row-major matrices the
/// distance between rows (at least the columns of the matrix as stored), for column-major
/// ones between columns (at least its rows).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmConfig<T> {
    /// How `A`, `B` and `C` are stored.
    pub layout: Layout,
    /// Whether `A` is stored transposed (`k × m`).
    pub transa: bool,
    /// Whether `B` is stored transposed (`n × k`).
    pub transb: bool,
    /// Rows of `C` and of `op(A)`.
    pub m: usize,
    /// Columns of `C` and of `op(B)`.
    pub n: usize,
    /// Columns of `op(A)`, rows of `op(B)`.
    pub k: usize,
    /// The factor of the product.
    pub alpha: T,
    /// The factor of `C`'s old value (`0`: `C` is only written).
    pub beta: T,
    /// Leading dimension of `A`.
    pub lda: usize,
    /// Leading dimension of `B`.
    pub ldb: usize,
    /// Leading dimension of `C`.
    pub ldc: usize,
}

impl<T: GemmElem> GemmConfig<T> {
    /// `C = A · B` of contiguous row-major matrices: `A` is `m × k` (`lda = k`), `B` is
    /// `k × n` (`ldb = n`), `C` is `m × n` (`ldc = n`); `alpha = 1`, `beta = 0`.
    pub fn row_major(m: usize, n: usize, k: usize) -> GemmConfig<T> {
        let (one, zero) = one_zero::<T>();
        GemmConfig {
            layout: Layout::RowMajor,
            transa: false,
            transb: false,
            m,
            n,
            k,
            alpha: one,
            beta: zero,
            lda: k,
            ldb: n,
            ldc: n,
        }
    }

    /// `C = A · B` of contiguous column-major matrices (cuBLAS's order): `lda = m`,
    /// `ldb = k`, `ldc = m`; `alpha = 1`, `beta = 0`.
    pub fn column_major(m: usize, n: usize, k: usize) -> GemmConfig<T> {
        GemmConfig {
            layout: Layout::ColumnMajor,
            lda: m,
            ldb: k,
            ldc: m,
            ..GemmConfig::row_major(m, n, k)
        }
    }

    /// The same shape with `alpha` and `beta`.
    pub fn with_scalars(self, alpha: T, beta: T) -> GemmConfig<T> {
        GemmConfig {
            alpha,
            beta,
            ..self
        }
    }

    /// The elements `A`, `B` and `C` must hold, or an [`crate::Error::InvalidArgument`]
    /// saying what is wrong with the shape (a leading dimension too small, a size over
    /// cuBLAS's `i32`). Needs no GPU.
    pub fn needs(&self) -> Result<[usize; 3]> {
        Ok(self.shape(None).call()?.needs)
    }

    /// Checks operands of `a_len`, `b_len` and `c_len` elements against the shape: the
    /// check every issue makes first. Needs no GPU.
    pub fn check(&self, a_len: usize, b_len: usize, c_len: usize) -> Result<()> {
        let shape = self.shape(None);
        shape.check_lengths(&shape.call()?.needs, [a_len, b_len, c_len])
    }

    pub(super) fn shape(&self, batch: Option<(usize, [usize; 3])>) -> Shape {
        Shape {
            layout: self.layout,
            transa: self.transa,
            transb: self.transb,
            m: self.m,
            n: self.n,
            k: self.k,
            lda: self.lda,
            ldb: self.ldb,
            ldc: self.ldc,
            batch,
        }
    }
}

/// The handle and shape of a cuBLAS op, shared by both GEMMs.
#[derive(Debug)]
struct Planned {
    handle: Arc<BlasHandle>,
    shape: Shape,
    call: Call,
}

impl Planned {
    fn new(on: &dyn OnDevice, shape: Shape, workspace: Option<usize>) -> Result<Planned> {
        let call = shape.call()?;
        let device = on.op_device()?;
        let bytes = match workspace {
            Some(b) => b,
            None => default_workspace(&device)?,
        };
        let handle = Arc::new(BlasHandle::new(device.ctx(), bytes)?);
        Ok(Planned {
            handle,
            shape,
            call,
        })
    }

    fn issue<T: GemmElem>(
        &self,
        stream: &CallStream<'_>,
        (alpha, beta): (T, T),
        (c, a, b): &mut (Out<'_, T>, In<'_, T>, In<'_, T>),
    ) -> Result<()> {
        self.shape
            .check_lengths(&self.call.needs, [a.len(), b.len(), c.len()])?;
        let (first, second) = if self.call.swapped {
            (b.memory(), a.memory())
        } else {
            (a.memory(), b.memory())
        };
        self.handle.gemm(
            stream.as_cudarc(),
            !stream.is_capturing(),
            elem_type::<T>(),
            &self.call.gemm,
            scalars(alpha, beta),
            &first,
            &second,
            c.memory(),
        )
    }

    fn keep(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        Some(self.handle.clone())
    }

    fn scratch(&self) -> Option<MemoryRef<'_>> {
        self.handle.workspace_ref()
    }
}

/// A cuBLAS GEMM `C = alpha · op(A) · op(B) + beta · C` of one shape ([`GemmConfig`]), in
/// `f32`, `f64`, `f16` or `bf16`: `call gemm(&mut c, &a, &b)`.
///
/// Made once with its handle and workspace ([`Gemm::new`]); each issue binds the handle to
/// the statement's stream and checks the operands' lengths first. See [`crate::ops`].
#[derive(Debug)]
pub struct Gemm<T> {
    config: GemmConfig<T>,
    planned: Planned,
}

impl<T: GemmElem> Gemm<T> {
    /// A GEMM of `config` on `on` (a [`crate::Device`] or a [`crate::Stream`]'s device), with
    /// the default workspace (32 MiB on Hopper and later, 4 MiB before).
    ///
    /// Errors: the shape's ([`GemmConfig::needs`]), [`crate::Error::NoLibrary`] without
    /// `libcublas`, and the driver's and cuBLAS's.
    pub fn new(on: &impl OnDevice, config: GemmConfig<T>) -> Result<Gemm<T>> {
        Gemm::make(on, config, None)
    }

    /// As [`Gemm::new`] with a workspace of `bytes` (0: none, at the cost of some algorithms).
    pub fn with_workspace(
        on: &impl OnDevice,
        config: GemmConfig<T>,
        bytes: usize,
    ) -> Result<Gemm<T>> {
        Gemm::make(on, config, Some(bytes))
    }

    fn make(on: &dyn OnDevice, config: GemmConfig<T>, bytes: Option<usize>) -> Result<Gemm<T>> {
        let planned = Planned::new(on, config.shape(None), bytes)?;
        Ok(Gemm { config, planned })
    }

    /// The shape and scalars.
    pub fn config(&self) -> &GemmConfig<T> {
        &self.config
    }

    /// The workspace's size in bytes.
    pub fn workspace_bytes(&self) -> usize {
        self.planned.handle.workspace_bytes()
    }
}

// SAFETY: `issue` issues one cuBLAS GEMM on the call's stream (the handle is bound to it
// first) and nothing else; it reads `a` and `b` and writes `c` within the elements the shape
// needs (checked against their lengths before the call, and again against their memory in
// `BlasHandle::gemm`), and uses the handle's own workspace, which `keep` returns with the
// handle. Pointer mode host: nothing else on the device is read. No allocation, event or
// synchronization: the workspace is set whenever the handle is bound to a stream (it stays set
// until the next binding), so cuBLAS allocates none.
unsafe impl<T: GemmElem> StreamOp for Gemm<T> {
    type Operands<'a> = (Out<'a, T>, In<'a, T>, In<'a, T>);

    fn issue(&self, stream: &CallStream<'_>, operands: &mut Self::Operands<'_>) -> Result<()> {
        let scalars = (self.config.alpha, self.config.beta);
        self.planned.issue(stream, scalars, operands)
    }

    fn keep(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        self.planned.keep()
    }

    /// The workspace: two calls of one op that nothing orders share it, a race.
    fn scratch(&self) -> Option<MemoryRef<'_>> {
        self.planned.scratch()
    }

    /// The shape and scalars are the op's from its making, with its own handle.
    fn fixed_work(&self, _parameters: &mut Vec<u8>) -> bool {
        true
    }
}

/// A GEMM's work is cuBLAS's kernels (and, for some algorithms, memsets): a device
/// `while`/`if`/`switch` body may hold it. The capture checks every node the call adds and
/// refuses, naming the statement, any a body cannot hold.
impl<T: GemmElem> BodyOp for Gemm<T> {}

/// The shape of a strided-batched GEMM: `count` GEMMs of one [`GemmConfig`], the `i`-th
/// on the matrices starting `i · stride_x` elements into each operand. A stride of 0 shares
/// one `A` or `B` among the batches; `C`'s batches must not overlap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StridedBatchedConfig<T> {
    /// The shape of each GEMM.
    pub gemm: GemmConfig<T>,
    /// How many GEMMs.
    pub count: usize,
    /// Elements from one `A` to the next.
    pub stride_a: usize,
    /// Elements from one `B` to the next.
    pub stride_b: usize,
    /// Elements from one `C` to the next.
    pub stride_c: usize,
}

impl<T: GemmElem> StridedBatchedConfig<T> {
    /// `count` GEMMs of `gemm` whose matrices lie end to end (each stride is one matrix:
    /// `m·k`, `k·n` and `m·n` elements for contiguous matrices).
    pub fn contiguous(gemm: GemmConfig<T>, count: usize) -> StridedBatchedConfig<T> {
        let extent = |rows: usize, cols: usize, ld: usize, row_major: bool| {
            if row_major {
                rows * ld
            } else {
                cols * ld
            }
        };
        let row_major = gemm.layout == Layout::RowMajor;
        let (ar, ac) = if gemm.transa {
            (gemm.k, gemm.m)
        } else {
            (gemm.m, gemm.k)
        };
        let (br, bc) = if gemm.transb {
            (gemm.n, gemm.k)
        } else {
            (gemm.k, gemm.n)
        };
        StridedBatchedConfig {
            gemm,
            count,
            stride_a: extent(ar, ac, gemm.lda, row_major),
            stride_b: extent(br, bc, gemm.ldb, row_major),
            stride_c: extent(gemm.m, gemm.n, gemm.ldc, row_major),
        }
    }

    /// The elements `A`, `B` and `C` must hold over all batches (see [`GemmConfig::needs`]).
    pub fn needs(&self) -> Result<[usize; 3]> {
        Ok(self.shape().call()?.needs)
    }

    /// Checks operands of `a_len`, `b_len` and `c_len` elements against all batches.
    pub fn check(&self, a_len: usize, b_len: usize, c_len: usize) -> Result<()> {
        let shape = self.shape();
        shape.check_lengths(&shape.call()?.needs, [a_len, b_len, c_len])
    }

    fn shape(&self) -> Shape {
        let strides = [self.stride_a, self.stride_b, self.stride_c];
        self.gemm.shape(Some((self.count, strides)))
    }
}

/// A cuBLAS strided-batched GEMM (`cublasGemmStridedBatchedEx`) of one shape
/// ([`StridedBatchedConfig`]): `call gemms(&mut c, &a, &b)`, each operand holding every
/// batch.
#[derive(Debug)]
pub struct StridedBatchedGemm<T> {
    config: StridedBatchedConfig<T>,
    planned: Planned,
}

impl<T: GemmElem> StridedBatchedGemm<T> {
    /// The batched GEMM of `config` on `on`, with the default workspace (see [`Gemm::new`]).
    pub fn new(on: &impl OnDevice, config: StridedBatchedConfig<T>) -> Result<Self> {
        let planned = Planned::new(on, config.shape(), None)?;
        Ok(StridedBatchedGemm { config, planned })
    }

    /// As [`StridedBatchedGemm::new`] with a workspace of `bytes`.
    pub fn with_workspace(
        on: &impl OnDevice,
        config: StridedBatchedConfig<T>,
        bytes: usize,
    ) -> Result<Self> {
        let planned = Planned::new(on, config.shape(), Some(bytes))?;
        Ok(StridedBatchedGemm { config, planned })
    }

    /// The shape and scalars.
    pub fn config(&self) -> &StridedBatchedConfig<T> {
        &self.config
    }
}

// SAFETY: as for `Gemm`: one cuBLAS call on the call's stream, within the elements of every
// batch (checked), with the handle's own workspace, which `keep` returns.
unsafe impl<T: GemmElem> StreamOp for StridedBatchedGemm<T> {
    type Operands<'a> = (Out<'a, T>, In<'a, T>, In<'a, T>);

    fn issue(&self, stream: &CallStream<'_>, operands: &mut Self::Operands<'_>) -> Result<()> {
        let scalars = (self.config.gemm.alpha, self.config.gemm.beta);
        self.planned.issue(stream, scalars, operands)
    }

    fn keep(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        self.planned.keep()
    }

    /// The workspace: two calls of one op that nothing orders share it, a race.
    fn scratch(&self) -> Option<MemoryRef<'_>> {
        self.planned.scratch()
    }

    /// The shape and scalars are the op's from its making, with its own handle.
    fn fixed_work(&self, _parameters: &mut Vec<u8>) -> bool {
        true
    }
}

/// As for [`Gemm`]: a device block's body may hold it.
impl<T: GemmElem> BodyOp for StridedBatchedGemm<T> {}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn the_constructors_describe_contiguous_matrices() {
        let c = GemmConfig::<f32>::row_major(4, 3, 2);
        assert_eq!((c.lda, c.ldb, c.ldc), (2, 3, 3));
        assert_eq!((c.alpha, c.beta), (1.0, 0.0));
        assert_eq!(c.needs().unwrap(), [8, 6, 12]);
        let c = GemmConfig::<half::bf16>::column_major(4, 3, 2);
        assert_eq!((c.lda, c.ldb, c.ldc), (4, 2, 4));
        assert_eq!(c.needs().unwrap(), [8, 6, 12]);
        let c = GemmConfig::<f64>::row_major(4, 3, 2).with_scalars(2.0, 1.0);
        assert_eq!((c.alpha, c.beta), (2.0, 1.0));
    }

    #[test]
    fn check_refuses_short_operands_and_bad_shapes_without_a_gpu() {
        let c = GemmConfig::<f32>::row_major(4, 3, 2);
        assert!(c.check(8, 6, 12).is_ok());
        let e = c.check(7, 6, 12).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        assert!(e.to_string().contains("operand `a` holds 7"), "{e}");
        let bad = GemmConfig { ldc: 2, ..c };
        let e = bad.check(8, 6, 12).unwrap_err().to_string();
        assert!(e.contains("ldc is 2"), "{e}");
    }

    #[test]
    fn contiguous_batches_lie_end_to_end() {
        let b = StridedBatchedConfig::contiguous(GemmConfig::<f32>::row_major(4, 3, 2), 5);
        assert_eq!((b.stride_a, b.stride_b, b.stride_c), (8, 6, 12));
        assert_eq!(b.needs().unwrap(), [40, 30, 60]);
        let e = b.check(40, 30, 59).unwrap_err().to_string();
        assert!(e.contains("operand `c`") && e.contains("5 batches"), "{e}");
        let t = GemmConfig {
            transa: true,
            lda: 4,
            ..GemmConfig::<f32>::column_major(4, 3, 2)
        };
        // Column-major A stored as 2×4 with lda 4: 4 columns of 4.
        let b = StridedBatchedConfig::contiguous(t, 2);
        assert_eq!(b.stride_a, 16);
        assert!(b.needs().is_ok());
    }

    #[test]
    fn without_a_driver_an_op_is_a_typed_error_not_a_panic() {
        // No GPU here is the usual case; with one, the op is made.
        match crate::device::Device::new(None) {
            Ok(device) => match Gemm::new(&device, GemmConfig::<f32>::row_major(2, 2, 2)) {
                Ok(_) | Err(Error::NoLibrary { .. }) => {}
                Err(e) => panic!("{e}"),
            },
            Err(e) => assert!(e.is_unavailable(), "{e}"),
        }
    }
}
