//! cuBLAS through cudarc's `cublas` module, loaded at run time: the handle of a GEMM op, its
//! workspace, and the GEMM calls (`cublasGemmEx`, `cublasGemmStridedBatchedEx`).
//!
//! cudarc's loader panics when `libcublas` is missing, so nothing here calls cuBLAS before
//! [`require`] said it loads. An op keeps up to two handles; one is bound to the call's stream
//! and to the op's own workspace on an issue on a stream neither is bound to
//! (`cublasSetStream_v2`, then `cublasSetWorkspace_v2`, which the former resets), so a capture
//! records no allocation of cuBLAS's, and an op issued alternately on two streams (an eager
//! run's lane and a capture's) binds nothing anew; their pointer mode is host
//! (`alpha` and `beta` are read when the call is issued). An op's shape is checked when the op
//! is made ([`GemmDims::checked`]) and every call checks the memory it is given against it
//! ([`device_ptr`]), so no shape reaches cuBLAS that reads or writes outside the operands.

use std::ffi::{c_int, c_longlong, c_void};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::cublas::result::{self as blas, CublasError};
use cudarc::cublas::sys;
use cudarc::driver::{CudaContext, CudaStream};

use super::cudarc_order::cudarc_ordered;
use super::device_alloc::DeviceAlloc;
use super::memory::{MemoryMut, MemoryRef};
use crate::error::{Error, Result};
use crate::operand::Memory;

/// A CUDA library an op loads at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Library {
    /// `libcublas`.
    Cublas,
    /// `libcublasLt`.
    CublasLt,
}

/// Whether `lib` can be loaded; asked once per library.
pub(crate) fn present(lib: Library) -> bool {
    static CUBLAS: OnceLock<bool> = OnceLock::new();
    static CUBLASLT: OnceLock<bool> = OnceLock::new();
    match lib {
        // SAFETY: `is_culib_present` only tries to `dlopen` the candidate library names and
        // drops what it opened; it calls no cuBLAS function.
        Library::Cublas => *CUBLAS.get_or_init(|| unsafe { sys::is_culib_present() }),
        Library::CublasLt => *CUBLASLT.get_or_init(|| {
            // SAFETY: as above, for cuBLASLt.
            unsafe { cudarc::cublaslt::sys::is_culib_present() }
        }),
    }
}

/// Fails with [`Error::NoLibrary`] unless `lib` can be loaded.
pub(crate) fn require(lib: Library) -> Result<()> {
    if present(lib) {
        return Ok(());
    }
    let (name, stem) = match lib {
        Library::Cublas => ("libcublas", "cublas"),
        Library::CublasLt => ("libcublasLt", "cublasLt"),
    };
    Err(Error::NoLibrary {
        name,
        searched: super::searched_names(stem),
    })
}

/// A failed cuBLAS call as the runtime's error.
pub(crate) fn failed(call: &'static str, e: CublasError) -> Error {
    Error::Library {
        call,
        status: format!("{:?}", e.0),
    }
}

/// The element type of a GEMM's matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ElemType {
    /// `f32`, computed in f32.
    F32,
    /// `f64`, computed in f64.
    F64,
    /// `half::f16`, computed in f32.
    F16,
    /// `half::bf16`, computed in f32.
    BF16,
}

impl ElemType {
    /// Bytes of one element.
    pub(crate) fn size(self) -> usize {
        match self {
            ElemType::F32 => 4,
            ElemType::F64 => 8,
            ElemType::F16 | ElemType::BF16 => 2,
        }
    }

    fn data_type(self) -> sys::cudaDataType {
        match self {
            ElemType::F32 => sys::cudaDataType_t::CUDA_R_32F,
            ElemType::F64 => sys::cudaDataType_t::CUDA_R_64F,
            ElemType::F16 => sys::cudaDataType_t::CUDA_R_16F,
            ElemType::BF16 => sys::cudaDataType_t::CUDA_R_16BF,
        }
    }

    fn compute_type(self) -> sys::cublasComputeType_t {
        match self {
            ElemType::F64 => sys::cublasComputeType_t::CUBLAS_COMPUTE_64F,
            _ => sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        }
    }
}

/// `alpha` and `beta` in the GEMM's compute type (f64 for f64, f32 otherwise).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scalars {
    /// For f32, f16 and bf16 matrices.
    F32 { alpha: f32, beta: f32 },
    /// For f64 matrices.
    F64 { alpha: f64, beta: f64 },
}

impl Scalars {
    fn fits(&self, elem: ElemType) -> bool {
        matches!(
            (self, elem),
            (Scalars::F64 { .. }, ElemType::F64)
                | (
                    Scalars::F32 { .. },
                    ElemType::F32 | ElemType::F16 | ElemType::BF16
                )
        )
    }

    /// Host pointers to `alpha` and `beta`, valid while `self` is borrowed.
    fn pointers(&self) -> (*const c_void, *const c_void) {
        match self {
            Scalars::F32 { alpha, beta } => (
                (alpha as *const f32).cast::<c_void>(),
                (beta as *const f32).cast::<c_void>(),
            ),
            Scalars::F64 { alpha, beta } => (
                (alpha as *const f64).cast::<c_void>(),
                (beta as *const f64).cast::<c_void>(),
            ),
        }
    }
}

/// One matrix of a GEMM, for messages: `A`, `B` or `C` of the column-major call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Matrix {
    A,
    B,
    C,
}

/// What is wrong with a GEMM's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DimsFault {
    /// A leading dimension below the rows of its matrix as stored (or below 1).
    LeadingDim {
        matrix: Matrix,
        ld: usize,
        rows: usize,
    },
    /// A size, leading dimension, stride or batch count over what cuBLAS takes.
    TooLarge { what: &'static str, value: usize },
    /// A batch stride below one matrix's extent: batches of the matrix would overlap (`C`),
    /// or a stride of 0 for a written matrix.
    Stride {
        matrix: Matrix,
        stride: usize,
        span: usize,
    },
    /// The element counts overflow `usize`.
    Overflow,
}

/// The strides of a strided-batched GEMM, in elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Batch {
    pub(crate) count: usize,
    pub(crate) stride_a: usize,
    pub(crate) stride_b: usize,
    pub(crate) stride_c: usize,
}

/// A column-major GEMM `C = alpha * op(A) op(B) + beta * C`, `C` of `m × n`, `op(A)` of
/// `m × k`, `op(B)` of `k × n`, each matrix stored with its leading dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GemmDims {
    pub(crate) trans_a: bool,
    pub(crate) trans_b: bool,
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) k: usize,
    pub(crate) lda: usize,
    pub(crate) ldb: usize,
    pub(crate) ldc: usize,
    pub(crate) batch: Option<Batch>,
}

/// Elements a column-major `rows × cols` matrix with leading dimension `ld` spans.
fn span(matrix: Matrix, rows: usize, cols: usize, ld: usize) -> Result<usize, DimsFault> {
    if ld < rows.max(1) {
        return Err(DimsFault::LeadingDim { matrix, ld, rows });
    }
    if rows == 0 || cols == 0 {
        return Ok(0);
    }
    ld.checked_mul(cols - 1)
        .and_then(|e| e.checked_add(rows))
        .ok_or(DimsFault::Overflow)
}

fn int(what: &'static str, value: usize) -> Result<c_int, DimsFault> {
    c_int::try_from(value).map_err(|_| DimsFault::TooLarge { what, value })
}

fn long(what: &'static str, value: usize) -> Result<c_longlong, DimsFault> {
    c_longlong::try_from(value).map_err(|_| DimsFault::TooLarge { what, value })
}

impl GemmDims {
    /// The rows and columns of `A` and `B` as stored.
    fn stored(&self) -> ((usize, usize), (usize, usize)) {
        let a = if self.trans_a {
            (self.k, self.m)
        } else {
            (self.m, self.k)
        };
        let b = if self.trans_b {
            (self.n, self.k)
        } else {
            (self.k, self.n)
        };
        (a, b)
    }

    /// The elements `A`, `B` and `C` must hold, or what is wrong with the shape.
    #[cfg(test)]
    fn needs(&self) -> Result<[usize; 3], DimsFault> {
        self.checked().map(|c| c.needs)
    }

    /// The GEMM checked once, for every issue of the op made with it: its sizes as cuBLAS's
    /// integers and what each matrix spans, or what is wrong with the shape.
    pub(crate) fn checked(self) -> Result<CheckedGemm, DimsFault> {
        let sizes = [
            int("m", self.m)?,
            int("n", self.n)?,
            int("k", self.k)?,
            int("lda", self.lda)?,
            int("ldb", self.ldb)?,
            int("ldc", self.ldc)?,
        ];
        let ((ar, ac), (br, bc)) = self.stored();
        let mut spans = [
            span(Matrix::A, ar, ac, self.lda)?,
            span(Matrix::B, br, bc, self.ldb)?,
            span(Matrix::C, self.m, self.n, self.ldc)?,
        ];
        if self.m == 0 || self.n == 0 {
            // cuBLAS returns at once: nothing is read.
            spans[0] = 0;
            spans[1] = 0;
        }
        let Some(batch) = self.batch else {
            return Ok(CheckedGemm {
                dims: self,
                needs: spans,
                sizes,
                batch: None,
            });
        };
        let count = int("batch count", batch.count)?;
        let strides = [batch.stride_a, batch.stride_b, batch.stride_c];
        let matrices = [Matrix::A, Matrix::B, Matrix::C];
        let mut needs = [0; 3];
        let mut longs = [0; 3];
        for i in 0..3 {
            longs[i] = long("stride", strides[i])?;
            if matrices[i] == Matrix::C && batch.count > 1 && strides[i] < spans[i].max(1) {
                return Err(DimsFault::Stride {
                    matrix: Matrix::C,
                    stride: strides[i],
                    span: spans[i],
                });
            }
            needs[i] = if batch.count == 0 || spans[i] == 0 {
                0
            } else {
                strides[i]
                    .checked_mul(batch.count - 1)
                    .and_then(|e| e.checked_add(spans[i]))
                    .ok_or(DimsFault::Overflow)?
            };
        }
        Ok(CheckedGemm {
            dims: self,
            needs,
            sizes,
            batch: Some((count, longs)),
        })
    }
}

/// A [`GemmDims`] that [`GemmDims::checked`] found valid, with what an issue needs of it
/// worked out once: `m`, `n`, `k`, `lda`, `ldb`, `ldc` as cuBLAS's integers, the batch count
/// and strides, and the elements each matrix spans. Made only by `checked`, so what
/// [`BlasHandle::gemm`] trusts of it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CheckedGemm {
    dims: GemmDims,
    needs: [usize; 3],
    sizes: [c_int; 6],
    batch: Option<(c_int, [c_longlong; 3])>,
}

impl CheckedGemm {
    /// The GEMM's dimensions.
    pub(crate) fn dims(&self) -> &GemmDims {
        &self.dims
    }

    /// The elements of `A`, `B` and `C` the GEMM reads and writes.
    pub(crate) fn needs(&self) -> [usize; 3] {
        self.needs
    }
}

/// The device address of `memory` after checking it is device memory of `elem` elements
/// holding at least `needed` of them (an internal error otherwise: the ops check first).
pub(crate) fn device_ptr(memory: &MemoryRef<'_>, elem: ElemType, needed: usize) -> Result<u64> {
    let Memory::Device(range) = memory.memory() else {
        return Err(Error::Internal {
            invariant: "a cuBLAS operand is device memory",
        });
    };
    let fits = needed
        .checked_mul(elem.size())
        .is_some_and(|bytes| bytes <= range.bytes);
    if memory.elem_size() != elem.size() || !fits {
        return Err(Error::Internal {
            invariant: "a cuBLAS operand holds the elements its op's shape checks found",
        });
    }
    Ok(range.ptr)
}

/// A raw cuBLAS handle, destroyed on drop, and the stream it was last bound to (with the op's
/// workspace), so that an issue on the same stream binds nothing again.
#[derive(Debug)]
struct RawHandle(sys::cublasHandle_t, sys::cudaStream_t);

// SAFETY: a cuBLAS handle is tied to a device, not to a thread; its owner (`BlasHandle`) uses
// it under a lock only, so no two threads call cuBLAS on it at once. The stream is only
// compared, never used through this value.
unsafe impl Send for RawHandle {}

impl RawHandle {
    /// `cublasCreate_v2` in the current context, pointer mode host, bound to no stream yet.
    fn make() -> Result<RawHandle> {
        let raw = RawHandle(
            blas::create_handle().map_err(|e| failed("cublasCreate_v2", e))?,
            std::ptr::null_mut(),
        );
        let mode = sys::cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST;
        // SAFETY: the handle is live (created above).
        unsafe { sys::cublasSetPointerMode_v2(raw.0, mode) }
            .result()
            .map_err(|e| failed("cublasSetPointerMode_v2", e))?;
        Ok(raw)
    }
}

impl Drop for RawHandle {
    fn drop(&mut self) {
        // The handle was created, so the library is loaded; `cublasDestroy` may synchronize,
        // so it waits for a global capture of another thread to end.
        super::after_global_capture(|| {
            // SAFETY: the handle came from a successful `cublasCreate_v2` and is destroyed
            // once, here; graphs that replay its work keep its owner (and so it) alive.
            let _ = unsafe { blas::destroy_handle(self.0) };
        });
    }
}

/// How many cuBLAS handles an op keeps, each bound to a stream of its own.
const HANDLES: usize = 2;

/// An op's handles (one, and a second once an issue outside a capture found the first bound
/// to another stream), each with the stream it is bound to, and the one used last.
#[derive(Debug)]
struct Handles {
    list: Vec<RawHandle>,
    last: usize,
}

thread_local! {
    /// How many times this thread bound a handle to a stream and workspace.
    static BOUND: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many times this thread bound an op's cuBLAS handle to a stream (and the op's workspace):
/// an op issued alternately on two streams, such as an eager run's lane and a capture's, binds
/// its two handles once each.
#[cfg(feature = "testing")]
pub fn blas_bindings() -> usize {
    BOUND.with(|b| b.get())
}

/// A cuBLAS op's handles with a workspace of their own: created in a device's context; an issue
/// takes the handle bound to its stream, or binds one (the least recently used) to it and the
/// workspace. Shared by the threads that issue the op, one at a time. The handles share the
/// workspace, as one handle's issues on two streams did: what orders the calls of one op is
/// the pipeline, whose race check sees the workspace as memory every call writes.
#[derive(Debug)]
pub(crate) struct BlasHandle {
    raw: Mutex<Handles>,
    ctx: Arc<CudaContext>,
    workspace: Arc<DeviceAlloc>,
    workspace_bytes: usize,
}

impl BlasHandle {
    /// `cublasCreate_v2` in `ctx`, pointer mode host, with `workspace_bytes` of device memory.
    pub(crate) fn new(ctx: &Arc<CudaContext>, workspace_bytes: usize) -> Result<BlasHandle> {
        require(Library::Cublas)?;
        super::ensure_current(ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        let workspace = DeviceAlloc::new(ctx, workspace_bytes)?;
        let mut list = Vec::with_capacity(HANDLES);
        list.push(RawHandle::make()?);
        Ok(BlasHandle {
            raw: Mutex::new(Handles { list, last: 0 }),
            ctx: ctx.clone(),
            workspace,
            workspace_bytes,
        })
    }

    /// The device ordinal of the handle's context.
    pub(crate) fn ordinal(&self) -> i32 {
        self.ctx.ordinal() as i32
    }

    /// The workspace, as memory the op's work writes (see `StreamOp::scratch`).
    pub(crate) fn workspace_ref(&self) -> Option<MemoryRef<'_>> {
        MemoryRef::device(
            &self.workspace,
            self.ctx.ordinal() as i32,
            self.workspace.ptr(),
            self.workspace_bytes,
            1,
        )
    }

    /// The workspace's size in bytes.
    pub(crate) fn workspace_bytes(&self) -> usize {
        self.workspace_bytes
    }

    /// A handle bound to `on` (a stream of the handles' context, which is current) and the
    /// workspace: a second handle made when `may_make` (outside a capture: `cublasCreate_v2`
    /// may allocate) and the op has one, else the one used least recently, bound anew.
    #[cold]
    #[inline(never)]
    fn bind(
        &self,
        raw: &mut Handles,
        on: sys::cudaStream_t,
        may_make: bool,
    ) -> Result<sys::cublasHandle_t> {
        // Made with the thread's capture mode relaxed, so that a capture other code began on
        // this thread stays whole; refused during a global capture of another thread, and then
        // (or if it fails) an older handle is bound instead.
        let made = (may_make && raw.list.len() < HANDLES)
            .then(|| super::unsafe_during_capture(|| super::relaxed(|| Ok(RawHandle::make()))))
            .and_then(|made| made.ok()?.ok());
        match made {
            Some(made) => {
                raw.list.push(made);
                raw.last = raw.list.len() - 1;
            }
            None => raw.last = (raw.last + 1) % raw.list.len(),
        }
        let (ws, bytes) = (self.workspace.ptr() as *mut c_void, self.workspace_bytes);
        let handle = &mut raw.list[raw.last];
        let h = handle.0;
        handle.1 = std::ptr::null_mut();
        // SAFETY: the handle is live and used by this thread only (the op's lock); the stream
        // is live (borrowed by the caller) and of the handle's device (checked by it).
        unsafe { blas::set_stream(h, on) }.map_err(|e| failed("cublasSetStream_v2", e))?;
        // SAFETY: the workspace is a live allocation of `bytes` bytes in the handle's context,
        // owned by the op, which graphs that captured its work keep alive.
        unsafe { sys::cublasSetWorkspace_v2(h, ws, bytes) }
            .result()
            .map_err(|e| failed("cublasSetWorkspace_v2", e))?;
        handle.1 = on;
        BOUND.with(|b| b.set(b.get() + 1));
        Ok(h)
    }

    /// Issues `C = alpha op(A) op(B) + beta C` (or its strided batches) on `stream`, after
    /// checking `a`, `b` and `c` against `dims`; `may_make`: outside a capture (see
    /// [`BlasHandle::bind`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn gemm(
        &self,
        stream: &Arc<CudaStream>,
        may_make: bool,
        elem: ElemType,
        gemm: &CheckedGemm,
        scalars: Scalars,
        a: &MemoryRef<'_>,
        b: &MemoryRef<'_>,
        c: &MemoryMut<'_>,
    ) -> Result<()> {
        if stream.context().ordinal() != self.ctx.ordinal() {
            return Err(Error::DeviceMismatch {
                what: "a cuBLAS op issued on a stream of another device than its handle's",
                left: self.ordinal(),
                right: stream.context().ordinal() as i32,
            });
        }
        if !scalars.fits(elem) {
            return Err(Error::Internal {
                invariant: "a GEMM's scalars are of its compute type",
            });
        }
        let (dims, needs) = (gemm.dims(), gemm.needs);
        let c_ref = c.memory_ref();
        let pa = device_ptr(a, elem, needs[0])?;
        let pb = device_ptr(b, elem, needs[1])?;
        let pc = device_ptr(&c_ref, elem, needs[2])?;
        let [m, n, k, lda, ldb, ldc] = gemm.sizes;
        let op = |t: bool| {
            if t {
                sys::cublasOperation_t::CUBLAS_OP_T
            } else {
                sys::cublasOperation_t::CUBLAS_OP_N
            }
        };
        let (ta, tb) = (op(dims.trans_a), op(dims.trans_b));
        let (dt, ct) = (elem.data_type(), elem.compute_type());
        let algo = sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT;
        let holders = [a.holder(), b.holder(), c_ref.holder()];
        cudarc_ordered(stream, holders, || {
            let mut raw = self.raw.lock().unwrap_or_else(|p| p.into_inner());
            super::ensure_current(stream.context())
                .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
            let on = stream.cu_stream() as sys::cudaStream_t;
            let h = match raw.list.iter().position(|h| h.1 == on) {
                Some(i) => {
                    raw.last = i;
                    raw.list[i].0
                }
                None => self.bind(&mut raw, on, may_make)?,
            };
            let (alpha, beta) = scalars.pointers();
            let (pa, pb, pc) = (pa as *const c_void, pb as *const c_void, pc as *mut c_void);
            match gemm.batch {
                None => {
                    // SAFETY: `a`, `b` and `c` are live device memory of `elem` elements that
                    // hold what `dims` reads and writes (`needs`, checked above), on the
                    // handle's device; `alpha`/`beta` are host values of the compute type
                    // (pointer mode host), live for the call.
                    unsafe {
                        blas::gemm_ex(
                            h, ta, tb, m, n, k, alpha, pa, dt, lda, pb, dt, ldb, beta, pc, dt, ldc,
                            ct, algo,
                        )
                    }
                    .map_err(|e| failed("cublasGemmEx", e))
                }
                Some((count, [sa, sb, sc])) => {
                    // SAFETY: as for one GEMM; `needs` covers every batch (stride times
                    // `count - 1` plus one matrix), and batches of `c` do not overlap.
                    unsafe {
                        blas::gemm_strided_batched_ex(
                            h, ta, tb, m, n, k, alpha, pa, dt, lda, sa, pb, dt, ldb, sb, beta, pc,
                            dt, ldc, sc, count, ct, algo,
                        )
                    }
                    .map_err(|e| failed("cublasGemmStridedBatchedEx", e))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(m: usize, n: usize, k: usize, lda: usize, ldb: usize, ldc: usize) -> GemmDims {
        GemmDims {
            trans_a: false,
            trans_b: false,
            m,
            n,
            k,
            lda,
            ldb,
            ldc,
            batch: None,
        }
    }

    #[test]
    fn a_gemm_needs_each_matrix_up_to_its_last_column() {
        assert_eq!(dims(4, 3, 2, 4, 2, 4).needs(), Ok([8, 6, 12]));
        // Padded leading dimensions: the last column needs only its rows.
        assert_eq!(dims(4, 3, 2, 6, 5, 7).needs(), Ok([10, 12, 18]));
        let t = GemmDims {
            trans_a: true,
            trans_b: true,
            ..dims(4, 3, 2, 2, 3, 4)
        };
        assert_eq!(t.needs(), Ok([8, 6, 12]));
        // Nothing to compute: nothing is read.
        assert_eq!(dims(0, 3, 2, 1, 2, 1).needs(), Ok([0, 0, 0]));
        // k = 0: C is scaled by beta.
        assert_eq!(dims(4, 3, 0, 4, 1, 4).needs(), Ok([0, 0, 12]));
    }

    #[test]
    fn leading_dimensions_below_the_rows_are_refused() {
        assert_eq!(
            dims(4, 3, 2, 3, 2, 4).needs(),
            Err(DimsFault::LeadingDim {
                matrix: Matrix::A,
                ld: 3,
                rows: 4
            })
        );
        assert_eq!(
            dims(4, 3, 2, 4, 2, 0).needs(),
            Err(DimsFault::LeadingDim {
                matrix: Matrix::C,
                ld: 0,
                rows: 4
            })
        );
        assert!(matches!(
            dims(1 << 31, 1, 1, 1 << 31, 1, 1 << 31).needs(),
            Err(DimsFault::TooLarge { what: "m", .. })
        ));
    }

    #[test]
    fn batches_need_their_strides_and_c_batches_must_not_overlap() {
        let batch = |stride_a, stride_b, stride_c| GemmDims {
            batch: Some(Batch {
                count: 3,
                stride_a,
                stride_b,
                stride_c,
            }),
            ..dims(2, 2, 2, 2, 2, 2)
        };
        assert_eq!(batch(4, 0, 4).needs(), Ok([12, 4, 12]));
        assert_eq!(
            batch(4, 4, 3).needs(),
            Err(DimsFault::Stride {
                matrix: Matrix::C,
                stride: 3,
                span: 4
            })
        );
    }
}
