//! cuBLASLt matmuls with a fused epilogue as ops: [`Matmul`] and [`MatmulBias`].

use std::any::Any;
use std::sync::Arc;

use super::elem::{default_workspace, elem_type, MatmulElem, OnDevice};
use super::gemm::GemmConfig;
use super::shape::{Call, Layout, Shape};
use crate::call::{CallStream, In, Out, StreamOp};
use crate::error::{Error, Result};
use crate::ffi::blas_lt::{self, Activation};
use crate::ffi::memory::MemoryRef;

/// What a [`Matmul`] applies to each element of its result before storing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Epilogue {
    /// Nothing.
    #[default]
    None,
    /// `max(x, 0)`.
    Relu,
    /// GELU, in cuBLASLt's tanh approximation.
    Gelu,
}

/// The shape, scalars and epilogue of a cuBLASLt matmul
/// `C = epilogue(alpha · op(A) · op(B) + beta · C [+ bias])`.
///
/// The shape is a [`GemmConfig`]'s, with `f32` scalars whatever the element type (cuBLASLt
/// scales in `f32`). A [`MatmulBias`]'s bias has one element per row of `C` for
/// [`Layout::ColumnMajor`] matrices (`m`), and one per column of `C` for
/// [`Layout::RowMajor`] ones (`n`: one per output feature of a row-major `[batch × features]`
/// result), added before the activation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatmulConfig {
    /// The shape and scalars.
    pub gemm: GemmConfig<f32>,
    /// The activation.
    pub epilogue: Epilogue,
}

impl MatmulConfig {
    /// `C = A · B` of contiguous row-major matrices (see [`GemmConfig::row_major`]), no
    /// epilogue.
    pub fn row_major(m: usize, n: usize, k: usize) -> MatmulConfig {
        MatmulConfig {
            gemm: GemmConfig::row_major(m, n, k),
            epilogue: Epilogue::None,
        }
    }

    /// The same matmul with `epilogue`.
    pub fn with_epilogue(self, epilogue: Epilogue) -> MatmulConfig {
        MatmulConfig { epilogue, ..self }
    }

    /// The elements the bias must hold: `n` for row-major matrices, `m` for column-major.
    pub fn bias_len(&self) -> usize {
        match self.gemm.layout {
            Layout::RowMajor => self.gemm.n,
            Layout::ColumnMajor => self.gemm.m,
        }
    }

    /// Checks operands of `a_len`, `b_len`, `c_len` elements and a bias of `bias_len` (when
    /// there is one) against the shape: the check every issue makes first. Needs no GPU.
    pub fn check(
        &self,
        a_len: usize,
        b_len: usize,
        c_len: usize,
        bias_len: Option<usize>,
    ) -> Result<()> {
        self.gemm.check(a_len, b_len, c_len)?;
        self.check_bias(bias_len)
    }

    fn check_bias(&self, bias_len: Option<usize>) -> Result<()> {
        match bias_len {
            Some(len) if len < self.bias_len() => Err(Error::InvalidArgument(format!(
                "operand `bias` holds {len} element(s), but {} needs one per {} of `c`: {}",
                self.gemm.shape(None).describe("c"),
                match self.gemm.layout {
                    Layout::RowMajor => "column",
                    Layout::ColumnMajor => "row",
                },
                self.bias_len()
            ))),
            _ => Ok(()),
        }
    }
}

/// Refuses an operand whose address is not aligned as the matmul's algorithm was chosen for.
fn check_aligned(name: &str, ptr: u64) -> Result<()> {
    if ptr.is_multiple_of(blas_lt::ALIGNMENT) {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "operand `{name}` starts at {ptr:#x}, not on a {}-byte boundary: a Matmul's operands \
         start at a buffer's start or at a view's offset of a multiple of {0} bytes (a Gemm \
         takes any)",
        blas_lt::ALIGNMENT
    )))
}

/// The plan of a cuBLASLt matmul, shared by both ops.
#[derive(Debug)]
struct Planned {
    plan: Arc<blas_lt::Matmul>,
    config: MatmulConfig,
    shape: Shape,
    call: Call,
}

impl Planned {
    fn new<T: MatmulElem>(
        on: &dyn OnDevice,
        config: MatmulConfig,
        bias: bool,
        workspace: Option<usize>,
    ) -> Result<Planned> {
        let shape = config.gemm.shape(None);
        let call = shape.call()?;
        let device = on.op_device()?;
        let bytes = match workspace {
            Some(b) => b,
            None => default_workspace(&device)?,
        };
        let act = match config.epilogue {
            Epilogue::None => Activation::None,
            Epilogue::Relu => Activation::Relu,
            Epilogue::Gelu => Activation::Gelu,
        };
        let plan =
            blas_lt::Matmul::new(device.ctx(), elem_type::<T>(), &call.gemm, act, bias, bytes)?;
        Ok(Planned {
            plan: Arc::new(plan),
            config,
            shape,
            call,
        })
    }

    fn issue<T: MatmulElem>(
        &self,
        stream: &CallStream<'_>,
        c: &mut Out<'_, T>,
        a: &In<'_, T>,
        b: &In<'_, T>,
        bias: Option<&In<'_, T>>,
    ) -> Result<()> {
        self.shape
            .check_lengths(&self.call.needs, [a.len(), b.len(), c.len()])?;
        self.config.check_bias(bias.map(In::len))?;
        check_aligned("a", a.device_ptr())?;
        check_aligned("b", b.device_ptr())?;
        check_aligned("c", c.device_ptr())?;
        if let Some(bias) = bias {
            check_aligned("bias", bias.device_ptr())?;
        }
        let (first, second) = if self.call.swapped {
            (b.memory(), a.memory())
        } else {
            (a.memory(), b.memory())
        };
        let bias = bias.map(In::memory);
        let scalars = (self.config.gemm.alpha, self.config.gemm.beta);
        self.plan.issue(
            stream.as_cudarc(),
            scalars,
            &first,
            &second,
            c.memory(),
            bias.as_ref(),
        )
    }

    fn keep(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        Some(self.plan.clone())
    }

    fn scratch(&self) -> Option<MemoryRef<'_>> {
        self.plan.workspace_ref()
    }
}

/// A cuBLASLt matmul of one shape with a fused activation ([`MatmulConfig`]), in `f32`,
/// `f16` or `bf16`: `call mm(&mut c, &a, &b)`. With a bias, see [`MatmulBias`].
///
/// Planned once (descriptors and the heuristic's algorithm) with its handle and workspace,
/// so an issue is one `cublasLtMatmul`. Operands start on 16-byte boundaries.
#[derive(Debug)]
pub struct Matmul<T> {
    planned: Planned,
    _elem: std::marker::PhantomData<fn() -> T>,
}

impl<T: MatmulElem> Matmul<T> {
    /// The matmul of `config` on `on` (a [`crate::Device`] or a [`crate::Stream`]'s
    /// device), with the default workspace (32 MiB on Hopper and later, 4 MiB before).
    ///
    /// Errors: the shape's, [`crate::Error::NoLibrary`] without `libcublasLt`, and the
    /// driver's and cuBLASLt's (`CUBLAS_STATUS_NOT_SUPPORTED` when no algorithm fits).
    pub fn new(on: &impl OnDevice, config: MatmulConfig) -> Result<Matmul<T>> {
        Matmul::with_workspace_opt(on, config, None)
    }

    /// As [`Matmul::new`] with a workspace of `bytes`.
    pub fn with_workspace(on: &impl OnDevice, config: MatmulConfig, bytes: usize) -> Result<Self> {
        Matmul::with_workspace_opt(on, config, Some(bytes))
    }

    fn with_workspace_opt(
        on: &dyn OnDevice,
        config: MatmulConfig,
        bytes: Option<usize>,
    ) -> Result<Self> {
        Ok(Matmul {
            planned: Planned::new::<T>(on, config, false, bytes)?,
            _elem: std::marker::PhantomData,
        })
    }

    /// The shape, scalars and epilogue.
    pub fn config(&self) -> &MatmulConfig {
        &self.planned.config
    }
}

// SAFETY: `issue` issues one `cublasLtMatmul` on the call's stream, planned for the shape
// whose element counts are checked against the operands (and again against their memory in
// `blas_lt::Matmul::issue`), reading `a` and `b` and writing `c` within them; it uses the
// op's own workspace, which `keep` returns with the handle and plan. No allocation, event
// or synchronization.
unsafe impl<T: MatmulElem> StreamOp for Matmul<T> {
    type Operands<'a> = (Out<'a, T>, In<'a, T>, In<'a, T>);

    fn issue(&self, stream: &CallStream<'_>, (c, a, b): &mut Self::Operands<'_>) -> Result<()> {
        self.planned.issue(stream, c, a, b, None)
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

/// A cuBLASLt matmul with a bias added before its activation: `call mm(&mut c, &a, &b,
/// &bias)`, the bias one element per output feature (see [`MatmulConfig`]).
#[derive(Debug)]
pub struct MatmulBias<T> {
    planned: Planned,
    _elem: std::marker::PhantomData<fn() -> T>,
}

impl<T: MatmulElem> MatmulBias<T> {
    /// The matmul of `config` with a bias, on `on` (see [`Matmul::new`]).
    pub fn new(on: &impl OnDevice, config: MatmulConfig) -> Result<MatmulBias<T>> {
        MatmulBias::with_workspace_opt(on, config, None)
    }

    /// As [`MatmulBias::new`] with a workspace of `bytes`.
    pub fn with_workspace(on: &impl OnDevice, config: MatmulConfig, bytes: usize) -> Result<Self> {
        MatmulBias::with_workspace_opt(on, config, Some(bytes))
    }

    fn with_workspace_opt(
        on: &dyn OnDevice,
        config: MatmulConfig,
        bytes: Option<usize>,
    ) -> Result<Self> {
        Ok(MatmulBias {
            planned: Planned::new::<T>(on, config, true, bytes)?,
            _elem: std::marker::PhantomData,
        })
    }

    /// The shape, scalars and epilogue.
    pub fn config(&self) -> &MatmulConfig {
        &self.planned.config
    }
}

// SAFETY: as for `Matmul`, with the bias read within the elements the shape needs (checked).
unsafe impl<T: MatmulElem> StreamOp for MatmulBias<T> {
    type Operands<'a> = (Out<'a, T>, In<'a, T>, In<'a, T>, In<'a, T>);

    fn issue(
        &self,
        stream: &CallStream<'_>,
        (c, a, b, bias): &mut Self::Operands<'_>,
    ) -> Result<()> {
        self.planned.issue(stream, c, a, b, Some(bias))
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

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod tests {
    use super::*;

    #[test]
    fn the_bias_has_one_element_per_output_feature() {
        let c = MatmulConfig::row_major(8, 3, 4).with_epilogue(Epilogue::Relu);
        assert_eq!(c.bias_len(), 3);
        assert!(c.check(32, 12, 24, Some(3)).is_ok());
        assert!(c.check(32, 12, 24, None).is_ok());
        let e = c.check(32, 12, 24, Some(2)).unwrap_err().to_string();
        assert!(e.contains("operand `bias` holds 2"), "{e}");
        assert!(e.contains("one per column of `c`: 3"), "{e}");
        let col = MatmulConfig {
            gemm: GemmConfig::column_major(8, 3, 4),
            ..c
        };
        assert_eq!(col.bias_len(), 8);
        let e = col.check(32, 12, 24, Some(3)).unwrap_err().to_string();
        assert!(e.contains("one per row of `c`: 8"), "{e}");
    }

    #[test]
    fn operands_off_a_16_byte_boundary_are_refused() {
        assert!(check_aligned("a", 0x1000).is_ok());
        let e = check_aligned("b", 0x1004).unwrap_err().to_string();
        assert!(e.contains("operand `b` starts at 0x1004"), "{e}");
    }
}
