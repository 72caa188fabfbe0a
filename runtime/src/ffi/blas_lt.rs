//! cuBLASLt through cudarc's `cublaslt` module, loaded at run time: a matmul with a fused
//! epilogue (bias, ReLU, GELU), planned once when its op is made.
//!
//! The descriptors, layouts and algorithm (`cublasLtMatmulAlgoGetHeuristic`) are made with
//! the op, for its one shape, so that an issue is one `cublasLtMatmul` on the call's stream,
//! with the op's own workspace: a capture records no allocation and no host-side search. As in
//! [`super::blas`], nothing calls cuBLASLt before [`super::blas::require`] said it loads, and
//! every issue checks its memory against the shape.

use std::ffi::c_void;
use std::mem::size_of;
use std::sync::{Arc, Mutex};

use cudarc::cublaslt::result::{self as lt, CublasError};
use cudarc::cublaslt::sys;
use cudarc::driver::{CudaContext, CudaStream};

use super::blas::{device_ptr, require, CheckedGemm, ElemType, Library};
use super::cudarc_order::cudarc_ordered;
use super::device_alloc::DeviceAlloc;
use super::memory::{MemoryMut, MemoryRef};
use crate::error::{Error, Result};

/// The alignment in bytes that a matmul's operands (and its bias) must have: its algorithm
/// is chosen for it.
pub(crate) const ALIGNMENT: u64 = 16;

/// What a matmul applies to its result before it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    None,
    Relu,
    Gelu,
}

fn failed(call: &'static str, e: CublasError) -> Error {
    Error::Library {
        call,
        status: format!("{:?}", e.0),
    }
}

fn data_type(elem: ElemType) -> Result<sys::cudaDataType> {
    Ok(match elem {
        ElemType::F32 => sys::cudaDataType_t::CUDA_R_32F,
        ElemType::F16 => sys::cudaDataType_t::CUDA_R_16F,
        ElemType::BF16 => sys::cudaDataType_t::CUDA_R_16BF,
        ElemType::F64 => return Err(Error::InvalidArgument(
            "cuBLASLt matmuls with epilogues take f32, f16 or bf16 matrices; use a Gemm for f64"
                .into(),
        )),
    })
}

/// The cuBLASLt objects of one matmul; destroyed on drop, each once.
#[derive(Debug)]
struct Raw {
    handle: sys::cublasLtHandle_t,
    desc: sys::cublasLtMatmulDesc_t,
    layouts: [sys::cublasLtMatrixLayout_t; 3],
    algo: sys::cublasLtMatmulAlgo_t,
}

// SAFETY: cuBLASLt objects are tied to no thread; `Matmul` uses them under its lock only.
unsafe impl Send for Raw {}

impl Drop for Raw {
    fn drop(&mut self) {
        super::after_global_capture(|| {
            for layout in self.layouts {
                if !layout.is_null() {
                    // SAFETY: made by `cublasLtMatrixLayoutCreate`, destroyed once, here.
                    let _ = unsafe { lt::destroy_matrix_layout(layout) };
                }
            }
            if !self.desc.is_null() {
                // SAFETY: made by `cublasLtMatmulDescCreate`, destroyed once, here.
                let _ = unsafe { lt::destroy_matmul_desc(self.desc) };
            }
            if !self.handle.is_null() {
                // SAFETY: made by `cublasLtCreate`, destroyed once, here, after the objects
                // made for it; graphs that replay its work keep its owner alive.
                let _ = unsafe { lt::destroy_handle(self.handle) };
            }
        });
    }
}

/// A heuristic-search preference, destroyed on drop.
struct Pref(sys::cublasLtMatmulPreference_t);

impl Drop for Pref {
    fn drop(&mut self) {
        // SAFETY: made by `cublasLtMatmulPreferenceCreate`, destroyed once, here.
        let _ = unsafe { lt::destroy_matmul_pref(self.0) };
    }
}

/// Sets one attribute of `desc` to `value`.
fn set_desc<T>(
    desc: sys::cublasLtMatmulDesc_t,
    attr: sys::cublasLtMatmulDescAttributes_t,
    value: &T,
) -> Result<()> {
    // SAFETY: `desc` is live; `value` points at `size_of::<T>()` readable bytes, the type
    // cuBLASLt documents for `attr` (the callers pass it).
    unsafe { lt::set_matmul_desc_attribute(desc, attr, (value as *const T).cast(), size_of::<T>()) }
        .map_err(|e| failed("cublasLtMatmulDescSetAttribute", e))
}

/// A cuBLASLt matmul `C = act(alpha op(A) op(B) + beta C [+ bias])` of one shape, with its
/// handle, plan and workspace. Shared by the threads that issue the op, one at a time.
#[derive(Debug)]
pub(crate) struct Matmul {
    raw: Mutex<Raw>,
    ctx: Arc<CudaContext>,
    workspace: Arc<DeviceAlloc>,
    workspace_bytes: usize,
    elem: ElemType,
    /// The shape, checked when the op was made.
    gemm: CheckedGemm,
    bias: bool,
}

impl Matmul {
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

    /// Plans the matmul of `gemm` (no batches) in `ctx`: its handle, descriptors, layouts and
    /// the heuristic's best algorithm for `workspace_bytes` of workspace, allocated here.
    pub(crate) fn new(
        ctx: &Arc<CudaContext>,
        elem: ElemType,
        gemm: &CheckedGemm,
        act: Activation,
        bias: bool,
        workspace_bytes: usize,
    ) -> Result<Matmul> {
        let ty = data_type(elem)?;
        let dims = gemm.dims();
        if dims.batch.is_some() {
            return Err(Error::InvalidArgument(
                "a cuBLASLt matmul op takes one matrix product, not batches".into(),
            ));
        }
        require(Library::CublasLt)?;
        super::ensure_current(ctx).map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        let workspace = DeviceAlloc::new(ctx, workspace_bytes)?;
        let mut raw = Raw {
            handle: lt::create_handle().map_err(|e| failed("cublasLtCreate", e))?,
            desc: std::ptr::null_mut(),
            layouts: [std::ptr::null_mut(); 3],
            algo: sys::cublasLtMatmulAlgo_t { data: [0; 8] },
        };
        let (a, b) = (
            if dims.trans_a {
                (dims.k, dims.m, dims.lda)
            } else {
                (dims.m, dims.k, dims.lda)
            },
            if dims.trans_b {
                (dims.n, dims.k, dims.ldb)
            } else {
                (dims.k, dims.n, dims.ldb)
            },
        );
        for (i, (rows, cols, ld)) in [a, b, (dims.m, dims.n, dims.ldc)].into_iter().enumerate() {
            raw.layouts[i] = lt::create_matrix_layout(ty, rows as u64, cols as u64, ld as i64)
                .map_err(|e| failed("cublasLtMatrixLayoutCreate", e))?;
        }
        raw.desc = lt::create_matmul_desc(
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            sys::cudaDataType_t::CUDA_R_32F,
        )
        .map_err(|e| failed("cublasLtMatmulDescCreate", e))?;
        let op = |t: bool| if t { 1i32 } else { 0i32 }; // CUBLAS_OP_T, CUBLAS_OP_N
        use sys::cublasLtMatmulDescAttributes_t as D;
        set_desc(raw.desc, D::CUBLASLT_MATMUL_DESC_TRANSA, &op(dims.trans_a))?;
        set_desc(raw.desc, D::CUBLASLT_MATMUL_DESC_TRANSB, &op(dims.trans_b))?;
        use sys::cublasLtEpilogue_t as E;
        let epilogue = match (act, bias) {
            (Activation::None, false) => E::CUBLASLT_EPILOGUE_DEFAULT,
            (Activation::None, true) => E::CUBLASLT_EPILOGUE_BIAS,
            (Activation::Relu, false) => E::CUBLASLT_EPILOGUE_RELU,
            (Activation::Relu, true) => E::CUBLASLT_EPILOGUE_RELU_BIAS,
            (Activation::Gelu, false) => E::CUBLASLT_EPILOGUE_GELU,
            (Activation::Gelu, true) => E::CUBLASLT_EPILOGUE_GELU_BIAS,
        };
        set_desc(raw.desc, D::CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue)?;
        let pref = Pref(
            lt::create_matmul_pref().map_err(|e| failed("cublasLtMatmulPreferenceCreate", e))?,
        );
        use sys::cublasLtMatmulPreferenceAttributes_t as P;
        let set_pref = |attr: P, value: &dyn Fn() -> (*const c_void, usize)| {
            let (ptr, size) = value();
            // SAFETY: `pref` is live; `ptr` points at `size` readable bytes of the type
            // cuBLASLt documents for `attr` (a `u64` for these).
            unsafe { lt::set_matmul_pref_attribute(pref.0, attr, ptr, size) }
                .map_err(|e| failed("cublasLtMatmulPreferenceSetAttribute", e))
        };
        let max_workspace = workspace_bytes as u64;
        set_pref(P::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &|| {
            ((&max_workspace as *const u64).cast(), size_of::<u64>())
        })?;
        let alignment: u32 = ALIGNMENT as u32;
        for attr in [
            P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
            P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
            P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
        ] {
            set_pref(attr, &|| {
                ((&alignment as *const u32).cast(), size_of::<u32>())
            })?;
        }
        // SAFETY: every object is live (made above); C and D share one layout (in place).
        let found = unsafe {
            lt::get_matmul_algo_heuristic(
                raw.handle,
                raw.desc,
                raw.layouts[0],
                raw.layouts[1],
                raw.layouts[2],
                raw.layouts[2],
                pref.0,
            )
        }
        .map_err(|e| failed("cublasLtMatmulAlgoGetHeuristic", e))?;
        raw.algo = found.algo;
        Ok(Matmul {
            raw: Mutex::new(raw),
            ctx: ctx.clone(),
            workspace,
            workspace_bytes,
            elem,
            gemm: *gemm,
            bias,
        })
    }

    /// The device ordinal of the matmul's context.
    pub(crate) fn ordinal(&self) -> i32 {
        self.ctx.ordinal() as i32
    }

    /// Issues the matmul on `stream` after checking `a`, `b`, `c` and `bias` (one element per
    /// row of `C`, present exactly when the matmul was planned with one) against its shape.
    pub(crate) fn issue(
        &self,
        stream: &Arc<CudaStream>,
        (alpha, beta): (f32, f32),
        a: &MemoryRef<'_>,
        b: &MemoryRef<'_>,
        c: &MemoryMut<'_>,
        bias: Option<&MemoryRef<'_>>,
    ) -> Result<()> {
        if stream.context().ordinal() != self.ctx.ordinal() {
            return Err(Error::DeviceMismatch {
                what: "a cuBLASLt op issued on a stream of another device than its handle's",
                left: self.ordinal(),
                right: stream.context().ordinal() as i32,
            });
        }
        let needs = self.gemm.needs();
        let c_ref = c.memory_ref();
        let pa = device_ptr(a, self.elem, needs[0])?;
        let pb = device_ptr(b, self.elem, needs[1])?;
        let pc = device_ptr(&c_ref, self.elem, needs[2])?;
        let pbias = match (bias, self.bias) {
            (Some(bias), true) => Some(device_ptr(bias, self.elem, self.gemm.dims().m)?),
            (None, false) => None,
            _ => {
                return Err(Error::Internal {
                    invariant: "a matmul is issued with a bias exactly when planned with one",
                })
            }
        };
        let aligned = [pa, pb, pc]
            .iter()
            .chain(pbias.iter())
            .all(|p| p.is_multiple_of(ALIGNMENT));
        if !aligned {
            return Err(Error::Internal {
                invariant: "a matmul's operands are aligned as its op checked",
            });
        }
        let mut holders = vec![a.holder(), b.holder(), c_ref.holder()];
        holders.extend(bias.map(|b| b.holder()));
        cudarc_ordered(stream, holders, || {
            let raw = self.raw.lock().unwrap_or_else(|p| p.into_inner());
            super::ensure_current(stream.context())
                .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
            if let Some(p) = pbias {
                // The bias pointer is read when the matmul is issued (the lock keeps another
                // issue from changing it in between).
                set_desc(
                    raw.desc,
                    sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                    &p,
                )?;
            }
            let ws = self.workspace.ptr() as *mut c_void;
            let (pa, pb) = (pa as *const c_void, pb as *const c_void);
            // SAFETY: the handle, descriptor, layouts and algorithm are live and were made
            // for this shape; `a`, `b`, `c` (and the bias) are live device memory of the
            // matmul's element type on the handle's device that hold what the shape reads and
            // writes (checked above), aligned as the algorithm was chosen for; `alpha` and
            // `beta` are host values of the scale type (f32), live for the call; the
            // workspace is the op's own live allocation of `workspace_bytes`, kept by graphs
            // that capture the call; the stream is live.
            unsafe {
                lt::matmul(
                    raw.handle,
                    raw.desc,
                    (&alpha as *const f32).cast(),
                    (&beta as *const f32).cast(),
                    pa,
                    raw.layouts[0],
                    pb,
                    raw.layouts[1],
                    pc as *const c_void,
                    raw.layouts[2],
                    pc as *mut c_void,
                    raw.layouts[2],
                    &raw.algo,
                    ws,
                    self.workspace_bytes,
                    stream.cu_stream() as sys::cudaStream_t,
                )
            }
            .map_err(|e| failed("cublasLtMatmul", e))
        })
    }
}
